"""Safety policy v1 as a classifier: a curated lexicon, an optional model signal, then overrides.

Policy: ../shared/benchmark/SAFETY-POLICY.md (frozen). An item is unsafe when its title, OCR
text, meaning or visual description hits a lexicon pattern (safety/lexicon-v1.txt, each pattern
tagged with the policy category 1-7 it evidences). Mild profanity, crude bodily humour, dark
humour about death and "stoned" jokes are safe under the policy, so the lexicon has no entries
for them. Recall matters most (one unsafe item shown fails a release gate), so ambiguous words
whose common meme use is sexual or demeaning are listed; safety/README.md gives the method and
docs/safety-review.md the measured precision and recall.

Matching (see `SafetyClassifier.hits`): case-insensitive on word boundaries, and tolerant of the
usual obfuscations: repeated letters ("seeex"), leetspeak digits and symbols ("s3x", "p0rn",
"$"), one separator between letters ("p.o.r.n", "s e x"), a vowel starred out ("n*gga") and
words run together or split ("blow job", "blowjob"). A trailing "*" in a pattern also matches
any word ending ("masturbat*").

Qualifier tags (any lower-case name instead of a category number, e.g. `minor`, `animal`) are
not unsafe alone: a combination rule (safety/combos-v1.txt, `<tag> <tag> <category> <window>`)
makes an item unsafe when hits of both tags occur within `window` words of each other (0: anywhere
in the item). "minor" with a category-1 (sexual) hit gives category 2 (sexualising minors);
an animal with a cruelty verb close by gives category 4.

Optionally the alt-profanity-check model (a linear SVM shipped with its weights) adds a second
signal: probability >= `profanity_threshold` marks the item unsafe (category None). It scores
profanity, which the policy allows, so it is off unless a threshold is given.

Per-item overrides (safety/overrides.csv: item_id,safety,reason) are applied last, so a hand
review can correct both directions.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mambomeme.errors import MamboMemeError

POLICY_VERSION = "safety-v1"
CATEGORIES = ("1", "2", "3", "4", "5", "6", "7")
MINOR = "minor"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "safety"
LEXICON_FILE = "lexicon-v1.txt"
COMBOS_FILE = "combos-v1.txt"
OVERRIDES_FILE = "overrides.csv"
_QUALIFIER = re.compile(r"[a-z][a-z-]*")

# Leetspeak: digits and look-alike symbols read as letters inside a word with letters.
_LEET = str.maketrans(
    {
        "4": "a",
        "@": "a",
        "8": "b",
        "3": "e",
        "9": "g",
        "6": "g",
        "1": "i",
        "!": "i",
        "|": "i",
        "0": "o",
        "5": "s",
        "$": "s",
        "7": "t",
        "+": "t",
    }
)
_LEET_L = str.maketrans({"1": "l", "|": "l"})  # the other reading of 1 and |
_SPACED = re.compile(r"(?<![a-z0-9])(?:[a-z0-9@$][\s._\-*]){2,}[a-z0-9@$](?![a-z0-9])")
_JOINERS = re.compile(r"[\s._\-*]")
_SUBTOKEN = re.compile(r"[a-z0-9@$!|*#+]+")
_STRETCH = re.compile(r"(.)\1\1")
_STARRED = re.compile(r"[*#]+")


class SafetyConfigError(MamboMemeError):
    """The lexicon or overrides file is malformed (names file, line and problem)."""


@dataclass(frozen=True)
class SafetyDecision:
    safety: str  # "safe" | "unsafe"
    category: str | None  # policy category "1".."7" for unsafe lexicon hits, else None
    reason: str


@dataclass(frozen=True)
class LexiconEntry:
    category: str  # "1".."7" or a qualifier tag ("minor", "animal", ...)
    pattern: str
    line: int


@dataclass(frozen=True)
class Combo:
    """Hits of tag `first` and tag `second` within `window` words (0: anywhere) -> category."""

    first: str
    second: str
    category: str
    window: int
    line: int


def _plural(word: str) -> tuple[str, ...]:
    return (word, word + "s", word + "es")


@lru_cache(maxsize=262_144)
def _variants(token: str) -> frozenset[str]:
    """The readings of one token: as written, leet decoded (1 as i and as l), and with letter
    runs of three or more squeezed to one and to two ("seeeex" -> "sex", "boooobs" -> "boobs").
    Squeezing only stretched runs keeps "bob" from reading as "boob"."""
    out = {token}
    if any(c.isalpha() for c in token):
        out.add(token.translate(_LEET_L).translate(_LEET))
        out.add(token.translate(_LEET))
    for word in list(out):
        if _STRETCH.search(word):
            out.add(re.sub(r"(.)\1+", r"\1", word))
            out.add(re.sub(r"(.)\1\1+", r"\1\1", word))
    return frozenset(out)


@lru_cache(maxsize=262_144)
def _decoded(token: str) -> str:
    return token.translate(_LEET) if any(c.isalpha() for c in token) else token


def _folded(text: str) -> str:
    """Accents and compatibility forms folded to plain letters ("$ËXÝ" -> "$exy", fullwidth
    "ｓｅｘ" -> "sex"), so that they match the lexicon and do not split a word apart."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words_of(text: str) -> tuple[list[str], list[tuple[int, frozenset[str]]]]:
    """Normalise `text` for matching: lower case, spaced-out letters joined ("s e x", "p.o.r.n"),
    split into sub-tokens at punctuation. Returns the leet-decoded tokens in order (for
    phrases) and, per token position, every reading of the token; a punctuation-joined chunk
    ("p-orn" -> "porn") is read at the position of its first part."""
    text = _SPACED.sub(lambda m: _JOINERS.sub("", m.group()), _folded(text.lower()))
    ordered: list[str] = []
    readings: list[tuple[int, frozenset[str]]] = []
    for chunk in text.split():
        parts = _SUBTOKEN.findall(chunk)
        start = len(ordered)
        for part in parts:
            readings.append((len(ordered), _variants(part)))
            ordered.append(_decoded(part))
        if len(parts) > 1:
            readings.append((start, _variants("".join(parts))))
    return ordered, readings


def parse_lexicon(text: str, name: str = LEXICON_FILE) -> list[LexiconEntry]:
    """Lines '<category> <pattern>'; '#' starts a comment; blank lines are skipped."""
    entries: list[LexiconEntry] = []
    seen: set[tuple[str, str]] = set()  # one pattern may serve several tags
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        category, _, pattern = line.partition(" ")
        pattern = " ".join(pattern.replace("/", " ").split()).lower()
        if category not in CATEGORIES and not _QUALIFIER.fullmatch(category):
            raise SafetyConfigError(f"{name}:{number}: unknown category {category!r}")
        if not pattern or not re.fullmatch(r"[a-z0-9 ]+\*?", pattern):
            raise SafetyConfigError(f"{name}:{number}: pattern must be words a-z 0-9 (/ ok)")
        if (category, pattern) in seen:
            raise SafetyConfigError(f"{name}:{number}: duplicate pattern {pattern!r}")
        seen.add((category, pattern))
        entries.append(LexiconEntry(category, pattern, number))
    if not entries:
        raise SafetyConfigError(f"{name}: no patterns")
    return entries


def parse_combos(text: str, name: str = COMBOS_FILE) -> list[Combo]:
    """Lines '<tag> <tag> <category 1-7> <window words, 0 = anywhere>'; '#' comments."""
    combos: list[Combo] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 4 or not fields[3].isdigit():
            raise SafetyConfigError(f"{name}:{number}: need '<tag> <tag> <category> <window>'")
        first, second, category, window = fields
        for tag in (first, second):
            if tag not in CATEGORIES and not _QUALIFIER.fullmatch(tag):
                raise SafetyConfigError(f"{name}:{number}: unknown tag {tag!r}")
        if category not in CATEGORIES:
            raise SafetyConfigError(f"{name}:{number}: category must be 1-7, not {category!r}")
        combos.append(Combo(first, second, category, int(window), number))
    return combos


def check_tags(lexicon: Sequence[LexiconEntry], combos: Sequence[Combo]) -> None:
    """Every qualifier tag of the lexicon is used by a combo, and every combo tag has patterns."""
    used = {tag for combo in combos for tag in (combo.first, combo.second)}
    tags = {entry.category for entry in lexicon}
    for entry in lexicon:
        if entry.category not in CATEGORIES and entry.category not in used:
            raise SafetyConfigError(
                f"{LEXICON_FILE}:{entry.line}: qualifier {entry.category!r} is in no combo"
            )
    for combo in combos:
        for tag in (combo.first, combo.second):
            if tag not in tags:
                raise SafetyConfigError(f"{COMBOS_FILE}:{combo.line}: tag {tag!r} has no patterns")


def parse_overrides(path: Path) -> dict[str, tuple[str, str]]:
    """item_id -> (safety, reason); a repeated id or an unknown class raises."""
    overrides: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return overrides
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != ["item_id", "safety", "reason"]:
            raise SafetyConfigError(f"{path.name}: header must be item_id,safety,reason")
        for number, row in enumerate(reader, start=2):
            item_id, safety = (row["item_id"] or "").strip(), (row["safety"] or "").strip()
            if not item_id or safety not in ("safe", "unsafe"):
                raise SafetyConfigError(f"{path.name}:{number}: need an item id and safe|unsafe")
            if item_id in overrides:
                raise SafetyConfigError(f"{path.name}:{number}: duplicate item id {item_id}")
            overrides[item_id] = (safety, (row["reason"] or "").strip())
    return overrides


class SafetyClassifier:
    """Lexicon and combos (+ optional model) then overrides. Build once, call per item."""

    def __init__(
        self,
        lexicon: Sequence[LexiconEntry],
        overrides: dict[str, tuple[str, str]] | None = None,
        profanity_threshold: float | None = None,
        combos: Sequence[Combo] | None = None,
    ) -> None:
        self.lexicon = tuple(lexicon)
        self.overrides = dict(overrides or {})
        self.profanity_threshold = profanity_threshold
        default = (
            (Combo("1", MINOR, "2", 0, 0),) if any(e.category == MINOR for e in lexicon) else ()
        )
        self.combos = tuple(combos) if combos is not None else default
        # single words (and phrases written together, "blowjob"): exact with plurals, or
        # prefix for a trailing "*"; phrases: consecutive tokens
        self._exact: dict[str, list[LexiconEntry]] = {}
        self._prefixes: dict[str, list[LexiconEntry]] = {}
        # phrases indexed by their first word: first -> [(the other words, open end, entry)]
        self._phrases: dict[str, list[tuple[tuple[str, ...], bool, LexiconEntry]]] = {}
        for entry in self.lexicon:
            stem = entry.pattern.rstrip("*")
            joined = stem.replace(" ", "")
            if entry.pattern.endswith("*"):
                self._prefixes.setdefault(joined, []).append(entry)
            else:
                for word in set(_plural(joined)):
                    self._exact.setdefault(word, []).append(entry)
            if " " in stem:
                first, *rest = stem.split()
                self._phrases.setdefault(first, []).append(
                    (tuple(rest), entry.pattern.endswith("*"), entry)
                )
        self._longest_prefix = max((len(k) for k in self._prefixes), default=0)
        self._model: Callable[[list[str]], Sequence[float]] | None = None
        if profanity_threshold is not None:
            from profanity_check import predict_prob  # optional dependency, imported lazily

            self._model = predict_prob

    def hits(self, text: str) -> list[LexiconEntry]:
        """Every lexicon entry matched in `text` (each at most once)."""
        found = self.hit_positions(text)
        return [entry for entry, _ in sorted(found.values(), key=lambda hit: hit[0].line)]

    def hit_positions(self, text: str) -> dict[int, tuple[LexiconEntry, set[int]]]:
        """Lexicon line -> (entry, the token positions where it matched)."""
        ordered, readings = words_of(text)
        found: dict[int, tuple[LexiconEntry, set[int]]] = {}

        def add(entry: LexiconEntry, position: int) -> None:
            found.setdefault(entry.line, (entry, set()))[1].add(position)

        for position, variants in readings:
            for word in variants:
                if "*" in word or "#" in word:
                    for entry in self._starred(word):
                        add(entry, position)
                    continue
                for entry in self._exact.get(word, ()):
                    add(entry, position)
                for size in range(2, min(len(word), self._longest_prefix) + 1):
                    for entry in self._prefixes.get(word[:size], ()):
                        add(entry, position)
        for index, word in enumerate(ordered):
            for rest, open_end, phrase in self._phrases.get(word, ()):
                if self._phrase_at(ordered, index + 1, rest, open_end):
                    add(phrase, index)
        return found

    @staticmethod
    def _phrase_at(words: list[str], start: int, rest: tuple[str, ...], open_end: bool) -> bool:
        """Do `rest` follow at `start`? The last word may take a plural (or any ending)."""
        if start + len(rest) > len(words):
            return False
        for offset, expected in enumerate(rest):
            word = words[start + offset]
            if offset < len(rest) - 1:
                if word != expected:
                    return False
            elif not (word.startswith(expected) if open_end else word in _plural(expected)):
                return False
        return True

    def _starred(self, word: str) -> list[LexiconEntry]:
        """A starred-out token ("n*gga"): each run of * or # stands for one to three letters."""
        core = word.strip("*#")
        if len(core) < 2 or not _STARRED.search(core):
            return []
        parts = [re.escape(p) for p in _STARRED.split(core)]
        regex = re.compile("[a-z]{1,3}".join(parts) + r"(?:e?s)?")
        out: list[LexiconEntry] = []
        for entry in self.lexicon:
            stem = entry.pattern.rstrip("*").replace(" ", "")
            if regex.fullmatch(stem):  # whole stems only: "sh*t" must not read as "shoot*"
                out.append(entry)
        return out

    def classify(
        self,
        title: str,
        ocr_text: str = "",
        meaning: str = "",
        visual_description: str = "",
        item_id: str | None = None,
    ) -> SafetyDecision:
        decision = self._classify_text(title, ocr_text, meaning, visual_description)
        if item_id is not None and item_id in self.overrides:
            safety, reason = self.overrides[item_id]
            category = decision.category if safety == "unsafe" else None
            return SafetyDecision(safety, category, f"override: {reason}")
        return decision

    def _classify_text(self, *fields: str) -> SafetyDecision:
        text = "\n".join(fields)
        found = self.hit_positions(text)
        by_tag: dict[str, list[tuple[LexiconEntry, set[int]]]] = {}
        for entry, positions in found.values():
            by_tag.setdefault(entry.category, []).append((entry, positions))
        # candidates: (category, reason); the reported one is 2 (critical) first, then lowest
        candidates: list[tuple[str, str]] = []
        for combo in self.combos:
            pair = self._combo_hit(combo, by_tag)
            if pair is not None:
                reason = f"combo: {pair[0].pattern!r} with {pair[1].pattern!r}"
                candidates.append((combo.category, reason))
        for category in CATEGORIES:
            for entry, _ in sorted(by_tag.get(category, []), key=lambda hit: hit[0].line)[:1]:
                candidates.append((category, f"lexicon: {entry.pattern!r}"))
        if candidates:
            category, reason = min(candidates, key=lambda c: (c[0] != "2", c[0]))
            return SafetyDecision("unsafe", category, reason)
        if self._model is not None and self.profanity_threshold is not None:
            probability = float(self._model([text])[0])
            if probability >= self.profanity_threshold:
                return SafetyDecision("unsafe", None, f"model: p={probability:.3f}")
        return SafetyDecision("safe", None, "no lexicon hit")

    @staticmethod
    def _combo_hit(
        combo: Combo, by_tag: dict[str, list[tuple[LexiconEntry, set[int]]]]
    ) -> tuple[LexiconEntry, LexiconEntry] | None:
        """The first pair of entries (tag first, tag second) close enough, or None."""
        for first, first_at in sorted(by_tag.get(combo.first, []), key=lambda h: h[0].line):
            for second, second_at in sorted(by_tag.get(combo.second, []), key=lambda h: h[0].line):
                if first is second:
                    continue
                if combo.window == 0 or any(
                    abs(x - y) <= combo.window for x in first_at for y in second_at
                ):
                    return first, second
        return None


def load_classifier(
    safety_dir: Path | None = None, profanity_threshold: float | None = None
) -> SafetyClassifier:
    folder = safety_dir or DEFAULT_DIR
    lexicon_path = folder / LEXICON_FILE
    try:
        lexicon = parse_lexicon(lexicon_path.read_text(encoding="utf-8"), lexicon_path.name)
    except OSError as exc:
        raise SafetyConfigError(f"{lexicon_path}: cannot read ({exc.strerror})") from None
    combos_path = folder / COMBOS_FILE  # optional: without it qualifier tags are an error
    try:
        combos_text = combos_path.read_text(encoding="utf-8") if combos_path.exists() else ""
    except OSError as exc:
        raise SafetyConfigError(f"{combos_path}: cannot read ({exc.strerror})") from None
    combos = parse_combos(combos_text, combos_path.name)
    check_tags(lexicon, combos)
    return SafetyClassifier(
        lexicon, parse_overrides(folder / OVERRIDES_FILE), profanity_threshold, combos
    )


@lru_cache(maxsize=4)
def default_classifier(
    safety_dir: str | None = None, profanity_threshold: float | None = None
) -> SafetyClassifier:
    """One classifier per (folder, threshold), built on first use."""
    return load_classifier(Path(safety_dir) if safety_dir else None, profanity_threshold)


def classify(
    title: str,
    ocr_text: str = "",
    meaning: str = "",
    visual_description: str = "",
    item_id: str | None = None,
) -> SafetyDecision:
    """Classify with the project's lexicon and overrides (safety/), no model signal."""
    return default_classifier().classify(title, ocr_text, meaning, visual_description, item_id)


def classifier_from_config(config: dict[str, object]) -> SafetyClassifier:
    """Adapters read an optional config["safety"] = {"dir": ..., "profanity_threshold": ...}."""
    settings = config.get("safety") or {}
    if not isinstance(settings, dict):
        raise SafetyConfigError("config 'safety' must be a mapping")
    folder = settings.get("dir")
    threshold = settings.get("profanity_threshold")
    if threshold is not None and not isinstance(threshold, int | float):
        raise SafetyConfigError("safety.profanity_threshold must be a number or null")
    return default_classifier(
        str(folder) if folder else None, float(threshold) if threshold is not None else None
    )

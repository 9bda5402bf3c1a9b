"""Safety policy v1 as a classifier: a curated lexicon, an optional model signal, then overrides.

Policy: ../shared/benchmark/SAFETY-POLICY.md (frozen). An item is unsafe when its title, OCR
text, meaning or visual description hits a lexicon pattern (safety/lexicon-v1.txt, each pattern
tagged with the policy category 1-7 it evidences). Mild profanity, crude bodily humour, dark
humour about death and "stoned" jokes are safe under the policy, so the lexicon has no entries
for them. Recall matters most (one unsafe item shown fails a release gate), so ambiguous words
whose common meme use is sexual or demeaning are listed; safety/README.md gives the method and
docs/safety-review.md the measured precision and recall.

Matching (see `_compile_pattern`): case-insensitive on word boundaries, and tolerant of the
usual obfuscations: repeated letters ("seeex"), leetspeak digits and symbols ("s3x", "p0rn",
"$"), one separator between letters ("p.o.r.n", "s e x"), a vowel starred out ("n*gga") and
words run together or split ("blow job", "blowjob"). A trailing "*" in a pattern also matches
any word ending ("masturbat*"). Lines tagged `minor` are not unsafe alone: with a category-1
(sexual) hit in the same item they raise it to category 2 (sexualising minors).

Optionally the alt-profanity-check model (a linear SVM shipped with its weights) adds a second
signal: probability >= `profanity_threshold` marks the item unsafe (category None). It scores
profanity, which the policy allows, so it is off unless a threshold is given.

Per-item overrides (safety/overrides.csv: item_id,safety,reason) are applied last, so a hand
review can correct both directions.
"""

from __future__ import annotations

import csv
import re
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
OVERRIDES_FILE = "overrides.csv"

# Obfuscations a letter may take: leetspeak digits and look-alike symbols.
_LEET = {
    "a": "a4@", "b": "b8", "e": "e3", "g": "g96", "i": "i1!|", "l": "l1|",
    "o": "o0", "s": "s5$", "t": "t7+", "z": "z2",
}
_VOWELS = set("aeiou")
_SEP = r"[\s._\-*'~]?"  # at most one separator between two letters of a word
_WORD_SEP = r"[\W_]*"  # any (or no) separators between the words of a phrase
_LEFT = r"(?<![a-z0-9])"
_RIGHT = r"(?![a-z0-9])"


class SafetyConfigError(MamboMemeError):
    """The lexicon or overrides file is malformed (names file, line and problem)."""


@dataclass(frozen=True)
class SafetyDecision:
    safety: str  # "safe" | "unsafe"
    category: str | None  # policy category "1".."7" for unsafe lexicon hits, else None
    reason: str


@dataclass(frozen=True)
class LexiconEntry:
    category: str  # "1".."7" or "minor"
    pattern: str
    line: int


def _compile_letter(char: str) -> str:
    variants = _LEET.get(char, char)
    cls = "[" + re.escape(variants) + ("*#" if char in _VOWELS else "") + "]"
    return cls + "+" if len(variants) > 1 or char in _VOWELS else re.escape(char) + "+"


def _compile_pattern(pattern: str) -> str:
    """'blow job' -> regex matching blowjob, blow-job, bl0w j0b, bloooow job, ...; word
    boundary at both ends; optional plural s/es unless the word ends in '*' (any ending)."""
    words = pattern.lower().split()
    parts: list[str] = []
    open_end = False
    for index, word in enumerate(words):
        open_end = word.endswith("*") and index == len(words) - 1
        word = word.rstrip("*")
        letters = [_compile_letter(c) if c.isalnum() else re.escape(c) for c in word]
        parts.append(_SEP.join(letters))
    body = _WORD_SEP.join(parts)
    ending = r"[a-z0-9]*" if open_end else r"(?:e?s)?"
    return _LEFT + body + ending + _RIGHT


def parse_lexicon(text: str, name: str = LEXICON_FILE) -> list[LexiconEntry]:
    """Lines '<category> <pattern>'; '#' starts a comment; blank lines are skipped."""
    entries: list[LexiconEntry] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        category, _, pattern = line.partition(" ")
        pattern = " ".join(pattern.split()).lower()
        if category not in CATEGORIES and category != MINOR:
            raise SafetyConfigError(f"{name}:{number}: unknown category {category!r}")
        if not pattern or not re.fullmatch(r"[a-z0-9/ ]+\*?", pattern):
            raise SafetyConfigError(f"{name}:{number}: pattern must be words a-z 0-9 (/ ok)")
        if pattern in seen:
            raise SafetyConfigError(f"{name}:{number}: duplicate pattern {pattern!r}")
        seen.add(pattern)
        entries.append(LexiconEntry(category, pattern, number))
    if not entries:
        raise SafetyConfigError(f"{name}: no patterns")
    return entries


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
    """Lexicon (+ optional model) then overrides. Build once, call per item."""

    def __init__(
        self,
        lexicon: Sequence[LexiconEntry],
        overrides: dict[str, tuple[str, str]] | None = None,
        profanity_threshold: float | None = None,
    ) -> None:
        self.lexicon = tuple(lexicon)
        self.overrides = dict(overrides or {})
        self.profanity_threshold = profanity_threshold
        self._groups: dict[str, LexiconEntry] = {}
        alternatives = []
        for index, entry in enumerate(self.lexicon):
            group = f"p{index}"
            self._groups[group] = entry
            alternatives.append(f"(?P<{group}>{_compile_pattern(entry.pattern)})")
        self._regex = re.compile("|".join(alternatives), re.IGNORECASE)
        self._model: Callable[[list[str]], Sequence[float]] | None = None
        if profanity_threshold is not None:
            from profanity_check import predict_prob  # optional dependency, imported lazily

            self._model = predict_prob

    def hits(self, text: str) -> list[LexiconEntry]:
        """Every lexicon entry matched in `text`, in order of appearance."""
        return [self._groups[m.lastgroup] for m in self._regex.finditer(text) if m.lastgroup]

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
        found = self.hits(text)
        sexual = [e for e in found if e.category == "1"]
        minors = [e for e in found if e.category == MINOR]
        if sexual and minors:
            return SafetyDecision(
                "unsafe", "2", f"lexicon: {sexual[0].pattern!r} with minor {minors[0].pattern!r}"
            )
        unsafe = [e for e in found if e.category != MINOR]
        if unsafe:
            # the reported category: 2 (critical) first, then the lowest number
            first = min(unsafe, key=lambda e: (e.category != "2", e.category))
            return SafetyDecision("unsafe", first.category, f"lexicon: {first.pattern!r}")
        if self._model is not None and self.profanity_threshold is not None:
            probability = float(self._model([text])[0])
            if probability >= self.profanity_threshold:
                return SafetyDecision("unsafe", None, f"model: p={probability:.3f}")
        return SafetyDecision("safe", None, "no lexicon hit")


def load_classifier(
    safety_dir: Path | None = None, profanity_threshold: float | None = None
) -> SafetyClassifier:
    folder = safety_dir or DEFAULT_DIR
    lexicon_path = folder / LEXICON_FILE
    try:
        lexicon = parse_lexicon(lexicon_path.read_text(encoding="utf-8"), lexicon_path.name)
    except OSError as exc:
        raise SafetyConfigError(f"{lexicon_path}: cannot read ({exc.strerror})") from None
    return SafetyClassifier(lexicon, parse_overrides(folder / OVERRIDES_FILE), profanity_threshold)


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

"""Chat spelling: slang, abbreviations, stretched letters and run-together words, read as English.

People type memes the way they chat: "u cant c me", "ppl be like", "sooooo tired lol",
"whenyourealize". The typo route corrects against the corpus vocabulary only, so these stay
unknown words. `Slang.rewrite` turns a cue into plain English:
  1. abbreviations from a small chat table (ABBREVIATIONS: u -> you, c -> see, w/ -> with,
     bc -> because, ppl -> people, pls -> please, gonna -> going to, ...); digits are left
     alone ("2 plus 2 is 4" is arithmetic, not "to plus to");
  2. stretched letters: a run of three or more of one letter shrinks to two, or to one, taking
     the first spelling that is a known word ("sooooo" -> "so", "nooooo" -> "no");
  3. laughter tails ("lol", "lmao", "haha...", "xd") at the end of a cue are dropped;
  4. a long unknown token is split into known words by symspellpy's word segmentation over its
     bundled English frequency dictionary ("cantseeme" -> "cant see me"), kept only when the
     parts average three letters or more ("invisibl" is not "inv i sib l"), every part of three
     letters or more is a word of this corpus and every shorter one a stop word (a misspelt
     word is the typo route's: "unsetled" is not "unset led").
"Known" means in the corpus vocabulary or in symspellpy's English dictionary (82,765 words,
shipped inside the wheel). The engine adds the rewritten text as one more cue, fused like any
other (search/engine.py), and `--explain` shows it; a cue that needs no rewrite adds nothing.
"""

from __future__ import annotations

import importlib.resources
import re
import threading
from collections.abc import Callable
from typing import Any

from mambomeme.index.fts_query import STOPWORDS

SLANG_VERSION = "chat-slang-1"
MIN_SEGMENT_CHARS = 8  # shorter unknown tokens are left to the typo route
MIN_MEAN_PART_CHARS = 3.0  # a split into many short parts ("inv i sib l") is a guess, not words
MIN_CONTENT_PART_CHARS = 3  # shorter parts must be stop words ("me", "to", "a")
ABBREVIATIONS: dict[str, str] = {
    "u": "you",
    "ur": "your",
    "r": "are",
    "c": "see",
    "y": "why",
    "n": "and",
    "b4": "before",
    "w/": "with",
    "w/o": "without",
    "bc": "because",
    "cuz": "because",
    "coz": "because",
    "bcuz": "because",
    "ppl": "people",
    "pls": "please",
    "plz": "please",
    "thx": "thanks",
    "ty": "thank you",
    "gonna": "going to",
    "wanna": "want to",
    "gotta": "got to",
    "gimme": "give me",
    "lemme": "let me",
    "dunno": "do not know",
    "idk": "i do not know",
    "imo": "in my opinion",
    "tbh": "to be honest",
    "smh": "shaking my head",
    "irl": "in real life",
    "omg": "oh my god",
    "bf": "boyfriend",
    "gf": "girlfriend",
    "bday": "birthday",
    "msg": "message",
    "rn": "right now",
    "nvm": "never mind",
    "abt": "about",
    "tho": "though",
    "thru": "through",
    "cant": "can't",
    "dont": "don't",
    "wont": "won't",
    "im": "i'm",
    "ive": "i've",
    "didnt": "didn't",
    "doesnt": "doesn't",
    "isnt": "isn't",
    "youre": "you're",
    "thats": "that's",
    "whats": "what's",
}
LAUGHTER = re.compile(r"^(?:lol+|lmf?ao+|rofl+|(?:ha){2,}h?|(?:he){2,}|xd+|kek)$")
_TOKEN = re.compile(r"w/o|w/|[^\W_]+(?:'[^\W_]+)?")
_STRETCH = re.compile(r"([a-z])\1{2,}")


def _english_words() -> set[str]:
    path = importlib.resources.files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    with path.open(encoding="utf-8") as handle:
        return {line.split(" ", 1)[0] for line in handle if line.strip()}


class Slang:
    """Rewrites cues in chat spelling; `known` says whether the corpus has a word."""

    def __init__(self, corpus_has: Callable[[str], bool]) -> None:
        self._corpus_has = corpus_has
        self._english: set[str] | None = None
        self._segmenter: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the English word list and the segmentation dictionary now (else the first
        rewrite that needs them does: ~0.5 s)."""
        self._english_list()
        self._segmentation()

    def _english_list(self) -> set[str]:
        with self._lock:
            if self._english is None:
                self._english = _english_words()
            return self._english

    def _segmentation(self) -> Any:
        with self._lock:
            if self._segmenter is None:
                from symspellpy import SymSpell

                speller = SymSpell(max_dictionary_edit_distance=0, prefix_length=7)
                path = importlib.resources.files("symspellpy")
                speller.load_dictionary(
                    str(path / "frequency_dictionary_en_82_765.txt"), term_index=0, count_index=1
                )
                self._segmenter = speller
            return self._segmenter

    def known(self, word: str) -> bool:
        return self._corpus_has(word) or word in self._english_list()

    def _segment(self, token: str) -> list[str] | None:
        parts = str(self._segmentation().word_segmentation(token).corrected_string).split()
        if len(parts) < 2 or sum(map(len, parts)) / len(parts) < MIN_MEAN_PART_CHARS:
            return None
        # a long part must be a word of this corpus, a short one a function word: a misspelt
        # word is the typo route's ("unsetled" is not "unset led")
        if all(
            p in STOPWORDS or (len(p) >= MIN_CONTENT_PART_CHARS and self._corpus_has(p))
            for p in parts
        ):
            return parts
        return None

    def _destretch(self, token: str) -> str:
        if not _STRETCH.search(token):
            return token
        double = _STRETCH.sub(r"\1\1", token)
        single = _STRETCH.sub(r"\1", token)
        for spelling in (double, single):
            if self.known(spelling):
                return spelling
        return double

    def rewrite(self, text: str) -> str | None:
        """The cue in plain English, or None when nothing in it needed a rewrite."""
        tokens = _TOKEN.findall(text.casefold())
        while tokens and LAUGHTER.match(tokens[-1]) and len(tokens) > 1:
            tokens.pop()
        out: list[str] = []
        for token in tokens:
            if token in ABBREVIATIONS:
                out.append(ABBREVIATIONS[token])
                continue
            token = self._destretch(token)
            if len(token) >= MIN_SEGMENT_CHARS and token.isalpha() and not self.known(token):
                out.extend(self._segment(token) or [token])
            else:
                out.append(token)
        rewritten = " ".join(out)
        original = " ".join(_TOKEN.findall(text.casefold()))
        return rewritten if rewritten and rewritten != original else None

"""A benchmark's locked check split: query families hashed into `tune` and `check` (issue 31).

A benchmark folder may hold `split.yaml`:

    salt: dev-v3-check-2026-12   # fixed once; changing it is a new benchmark version
    check_share: 0.3333          # share of query families sent to `check`

A family goes to `check` when int(sha256("<salt>:<family>")[:16], 16) / 16**16 < check_share,
so the split is a pure function of the family name: adding queries to a family never moves
it, and nobody chooses which family lands where. Tuning, acceptance and every threshold read
only the tune side (the adjudicate stage assembles `<reports>/benchmark/` from it); the check
side (`<reports>/benchmark-check/`) is scored once per run and never read by the tuner.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import Query

SPLIT_FILE = "split.yaml"
SIDES = ("tune", "check")


@dataclass(frozen=True)
class Split:
    salt: str
    check_share: float

    def side(self, family: str) -> str:
        """ "check" or "tune" for a query family."""
        digest = hashlib.sha256(f"{self.salt}:{family}".encode()).hexdigest()
        return "check" if int(digest[:16], 16) / 16**16 < self.check_share else "tune"


def read_split(benchmark_dir: Path) -> Split | None:
    """The benchmark's split.yaml, or None when it has no check split."""
    path = Path(benchmark_dir) / SPLIT_FILE
    if not path.is_file():
        return None
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BenchmarkError(f"{path}: cannot read split: {exc}") from None
    if not isinstance(raw, dict) or set(raw) != {"salt", "check_share"}:
        raise BenchmarkError(f"{path}: expected exactly the keys 'salt' and 'check_share'")
    salt, share = raw["salt"], raw["check_share"]
    if not isinstance(salt, str) or not salt.strip():
        raise BenchmarkError(f"{path}: 'salt' must be a non-empty string")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise BenchmarkError(f"{path}: 'check_share' must be a number between 0 and 1")
    return Split(salt, float(share))


NO_CHECK = "split.json"


def split_about(split: Split, queries: Sequence[Query], side: str) -> dict[str, Any]:
    """What judgement-set.json records about one side of the split."""
    mine = [q for q in queries if split.side(q.family) == side]
    return {
        "side": side,
        "salt": split.salt,
        "check_share": split.check_share,
        "queries": len(mine),
        "families": len({q.family for q in mine}),
    }


def write_no_check(out: Path) -> None:
    """The check folder of a benchmark without a check split: only a note saying so (the
    adjudicate stage's output must exist for every corpus)."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / NO_CHECK).write_text(json.dumps({"check_split": None}) + "\n", encoding="utf-8")


def has_check(check_dir: Path) -> bool:
    """Whether a check folder holds a scored benchmark (not only the no-split note)."""
    return (Path(check_dir) / "queries.jsonl").is_file()

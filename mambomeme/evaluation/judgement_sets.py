"""Judgement-set versions: verify an existing set or freeze the next one; the scored benchmark.

Sets of benchmark B live in judgement-sets/B/B-j1, B-j2, ... and are never overwritten. The
adjudicate stage regenerates the set's content from the annotator files (a pure function,
`adjudicate.set_files`) and compares it byte for byte with every existing version:

* identical to an existing version -> that version, nothing written (a verified no-op);
* identical to none -> a new folder B-j<highest + 1> (the annotator files, the third
  annotator's file or the code that derives the set changed).

The set that comes out is then assembled, with the benchmark's queries.jsonl and benchmark.json
(judgement_set = its name), into the scored benchmark folder (reports/<corpus>/benchmark/): a
FORMAT.md benchmark that run_systems, tune and score read, plus the set's agreement.json and
judgement-set.json (the set's name, folder and file checksums and how the current pool is
covered by judgements). A new version changes that folder, so every compared system is rerun
and rescored.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.adjudicate import PUBLISHED, replace_file, write_set

RECORD = "judgement-set.json"
AGREEMENT = "agreement.json"
_VERSION = re.compile(r"^(?P<name>.+)-j(?P<n>[1-9][0-9]*)$")


def versions(sets_dir: Path, benchmark: str) -> list[tuple[int, Path]]:
    """The existing versions (number, folder) of `benchmark`'s sets, oldest first."""
    found = []
    for path in Path(sets_dir).iterdir() if Path(sets_dir).is_dir() else ():
        match = _VERSION.match(path.name)
        if path.is_dir() and match and match["name"] == benchmark:
            found.append((int(match["n"]), path))
    return sorted(found)


def _same(folder: Path, files: Mapping[str, str]) -> bool:
    """Whether `folder` holds exactly `files`. The manifest's `inputs` (annotator file ->
    sha256) are compared by file name and content only, so the same annotator files read from
    another folder (or by another relative path) verify the existing version, never freeze a
    new one."""
    on_disk = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    if on_disk != set(files):
        return False
    for name, text in files.items():
        data = (folder / name).read_bytes()
        if data == text.encode("utf-8"):
            continue
        if name != "manifest.json":
            return False
        stored = _content_key(data.decode("utf-8", "replace"))
        if stored is None or stored != _content_key(text):
            return False
    return True


def _content_key(manifest_text: str) -> Any:
    """A set manifest with its inputs keyed by file name instead of path (None if unreadable)."""
    try:
        manifest = json.loads(manifest_text)
        inputs = manifest["inputs"]
        manifest["inputs"] = sorted((Path(str(k)).name, str(v)) for k, v in inputs.items())
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return manifest


def freeze_version(
    sets_dir: Path, benchmark: str, make_files: Callable[[str], Mapping[str, str]]
) -> tuple[Path, bool]:
    """(set folder, created): the existing version whose content equals `make_files(its name)`,
    else a new folder with the next version number (never an existing one)."""
    existing = versions(sets_dir, benchmark)
    for _, folder in existing:
        if _same(folder, make_files(folder.name)):
            return folder, False
    number = existing[-1][0] + 1 if existing else 1
    folder = Path(sets_dir) / f"{benchmark}-j{number}"
    write_set(folder, make_files(folder.name))
    return folder, True


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _only(text: str, qids: frozenset[str], qid_of: Callable[[str], str]) -> str:
    """The lines of `text` whose query is in `qids` (blank lines dropped)."""
    kept = [line for line in text.splitlines() if line.strip() and qid_of(line) in qids]
    return "".join(line + "\n" for line in kept)


def _json_qid(line: str) -> str:
    return str(json.loads(line)["qid"])


def write_scored_benchmark(
    benchmark_dir: Path,
    set_dir: Path,
    out: Path,
    record: Mapping[str, Any],
    qids: frozenset[str] | None = None,
) -> dict[str, Any]:
    """Assemble the scored benchmark `out` from the benchmark's queries and the set's files.

    With `qids` (one side of the benchmark's check split, evaluation/split.py) only those
    queries and their qrels and exact targets are kept; safety.tsv and agreement.json stay
    whole (an item's safety class does not depend on the query).

    `out` is derived data (a DVC output): its files are replaced, each atomically; files it
    should not hold are removed. Returns the full record written to out/judgement-set.json.
    """
    benchmark_dir, set_dir, out = Path(benchmark_dir), Path(set_dir), Path(out)
    info = json.loads((benchmark_dir / "benchmark.json").read_text(encoding="utf-8"))
    info["judgement_set"] = set_dir.name
    texts = {
        "benchmark.json": json.dumps(info, indent=2) + "\n",
        "queries.jsonl": (benchmark_dir / "queries.jsonl").read_text(encoding="utf-8"),
    }
    for name in (*PUBLISHED, AGREEMENT):
        texts[name] = (set_dir / name).read_text(encoding="utf-8")
    if qids is not None:
        texts["queries.jsonl"] = _only(texts["queries.jsonl"], qids, _json_qid)
        texts["qrels.txt"] = _only(texts["qrels.txt"], qids, lambda line: line.split()[0])
        texts["exact.jsonl"] = _only(texts["exact.jsonl"], qids, _json_qid)
    full = {
        **record,
        "benchmark": info["name"],
        "judgement_set": set_dir.name,
        "set_dir": str(set_dir),
        "set_files": {
            name: _sha((set_dir / name).read_bytes()) for name in (*PUBLISHED, AGREEMENT)
        },
    }
    texts[RECORD] = json.dumps(full, indent=2, sort_keys=True) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    for stray in out.iterdir():
        if stray.name not in texts:
            shutil.rmtree(stray) if stray.is_dir() else stray.unlink()
    for name, text in texts.items():
        replace_file(out / name, text)
    return full


def read_record(benchmark_dir: Path) -> dict[str, Any] | None:
    """The scored benchmark's judgement-set.json, or None for a benchmark folder without one."""
    path = Path(benchmark_dir) / RECORD
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}: invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise BenchmarkError(f"{path}: expected a JSON object")
    return value

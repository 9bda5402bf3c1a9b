"""From two (or three) annotator files to a frozen judgement set (seeds/000, "Relevance labels").

Disagreement queue: a pair whose two grades differ by more than 1, or whose item the two
annotators classed differently for safety. A third annotator grades exactly the queued pairs
(blind, like the others), and their grade and safety class are final for those pairs.

Final grade of every other pair = the mean of the two grades, rounded half DOWN:
    final = floor((a + b) / 2)        e.g. (1, 2) -> 1,  (2, 3) -> 2,  (2, 2) -> 2
Why down: qrels grades are integers (FORMAT.md), and a .5 mean means one annotator gave the
lower grade; rounding down awards a grade only when both annotators support at least that grade,
so Hit@10 and nDCG are not inflated by one generous vote. The unrounded mean and every
annotator's grade stay in the sidecar grades.tsv.

A judgement set is a folder judgement-sets/<benchmark>/<set>/ that is written once (never
overwritten, see `write_set`): qrels.txt, safety.tsv, exact.jsonl, grades.tsv, agreement.json,
manifest.json. `set_files` makes its content as a pure function of the annotator files (so an
existing set is verified by regenerating it, judgement_sets.py) after a staging copy of the
benchmark with those files has loaded cleanly.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.agreement import agreement
from mambomeme.evaluation.annotations import SAFETY_POLICY_VERSION, Label
from mambomeme.evaluation.benchmark import Query, load_benchmark

Key = tuple[str, str]
PUBLISHED = ("qrels.txt", "safety.tsv", "exact.jsonl")
SET_FILES = (*PUBLISHED, "grades.tsv", "agreement.json", "manifest.json")


def disagreements(first: Mapping[Key, Label], second: Mapping[Key, Label]) -> list[Key]:
    """Pairs for the third annotator: grades more than 1 apart, or the item's safety differs."""
    if set(first) != set(second):
        raise BenchmarkError("the two annotator files cover different (qid, item) pairs")
    return sorted(
        k
        for k in first
        if abs(first[k].grade - second[k].grade) > 1 or first[k].safety != second[k].safety
    )


@dataclass(frozen=True)
class Final:
    qid: str
    item_id: str
    grade: int
    mean: float  # unrounded mean of the two first grades
    safety: str
    adjudicated: bool
    grades: tuple[int, ...]  # a, b[, c]


def finalise(
    first: Mapping[Key, Label], second: Mapping[Key, Label], third: Mapping[Key, Label] | None
) -> list[Final]:
    queue = disagreements(first, second)
    third = third or {}
    missing = [k for k in queue if k not in third]
    if missing:
        raise BenchmarkError(
            f"{len(missing)} queued pairs have no third-annotator label, e.g. "
            f"{missing[0][0]} {missing[0][1]}"
        )
    extra = sorted(set(third) - set(queue))
    if extra:
        raise BenchmarkError(
            f"{third[extra[0]].where}: {extra[0][0]} {extra[0][1]} was not in "
            "the disagreement queue"
        )
    finals = []
    for key in sorted(first):
        a, b = first[key], second[key]
        mean = (a.grade + b.grade) / 2
        if key in third:
            c = third[key]
            finals.append(Final(*key, c.grade, mean, c.safety, True, (a.grade, b.grade, c.grade)))
        else:
            finals.append(
                Final(*key, (a.grade + b.grade) // 2, mean, a.safety, False, (a.grade, b.grade))
            )
    _check_item_safety(finals)
    return finals


def _check_item_safety(finals: Sequence[Final]) -> None:
    seen: dict[str, Final] = {}
    for f in finals:
        first = seen.setdefault(f.item_id, f)
        if first.safety != f.safety:
            raise BenchmarkError(
                f"item {f.item_id} ends {f.safety} for {f.qid} but "
                f"{first.safety} for {first.qid}; the third annotator must "
                "class it once"
            )


def _qrels(finals: Sequence[Final], order: Sequence[str]) -> str:
    rank = {qid: n for n, qid in enumerate(order)}
    rows = sorted(finals, key=lambda f: (rank[f.qid], f.item_id))
    return "".join(f"{f.qid} 0 {f.item_id} {f.grade}\n" for f in rows)


def _safety(finals: Sequence[Final]) -> str:
    labels = {f.item_id: f.safety for f in finals}
    return "".join(f"{item}\t{labels[item]}\n" for item in sorted(labels))


def _grades_tsv(finals: Sequence[Final]) -> str:
    lines = ["qid\titem_id\tgrade_a\tgrade_b\tgrade_c\tmean_ab\tfinal\tadjudicated\tsafety\n"]
    for f in sorted(finals, key=lambda x: (x.qid, x.item_id)):
        c = str(f.grades[2]) if len(f.grades) > 2 else ""
        lines.append(
            f"{f.qid}\t{f.item_id}\t{f.grades[0]}\t{f.grades[1]}\t{c}\t{f.mean:g}\t"
            f"{f.grade}\t{str(f.adjudicated).lower()}\t{f.safety}\n"
        )
    return "".join(lines)


def _exact(exact: Mapping[str, Sequence[Sequence[str]]], order: Sequence[str]) -> str:
    return "".join(
        json.dumps({"qid": q, "groups": [list(g) for g in exact[q]]}) + "\n"
        for q in order
        if q in exact
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def set_files(
    benchmark_dir: Path,
    set_name: str,
    queries: Sequence[Query],
    labels: Mapping[str, Mapping[Key, Label]],
    exact: Mapping[str, Sequence[Sequence[str]]],
    inputs: Mapping[str, str],
) -> dict[str, str]:
    """The files of judgement set `set_name` (name -> text), checked to make a valid benchmark.

    A pure function of its arguments: the same annotator files always give the same bytes, so
    an existing set can be verified by regenerating it. `labels` holds 'a', 'b' and, when the
    queue is not empty, 'c'. `inputs` maps input file names to their sha256 for the manifest.
    """
    benchmark_dir = Path(benchmark_dir)
    qids = [q.qid for q in queries]
    slice_of = {q.qid: q.slice for q in queries}
    for key in labels["a"]:
        if key[0] not in slice_of:
            raise BenchmarkError(f"{labels['a'][key].where}: qid {key[0]!r} is not a query")
    for qid in exact:
        if qid not in slice_of:
            raise BenchmarkError(f"exact targets: qid {qid!r} is not in queries.jsonl")
    finals = finalise(labels["a"], labels["b"], labels.get("c"))
    judged = {(f.qid, f.item_id): f for f in finals}
    disputes = [
        {"qid": q, "item_id": i, "grade": judged[(q, i)].grade}
        for q, groups in exact.items()
        for g in groups
        for i in g
        if (q, i) in judged and judged[(q, i)].grade < 2
    ]
    unjudged = [
        [q, i] for q, groups in exact.items() for g in groups for i in g if (q, i) not in judged
    ]
    if unjudged:
        raise BenchmarkError(f"exact targets never judged (pool them as gold): {unjudged[:3]}")
    report = agreement(labels["a"], labels["b"], slice_of)
    report["queue"] = len(disagreements(labels["a"], labels["b"]))
    report["exact_targets_graded_below_2"] = disputes
    files = {
        "qrels.txt": _qrels(finals, qids),
        "safety.tsv": _safety(finals),
        "exact.jsonl": _exact(exact, qids),
        "grades.tsv": _grades_tsv(finals),
        "agreement.json": json.dumps(report, indent=2, sort_keys=True) + "\n",
    }
    info = json.loads((benchmark_dir / "benchmark.json").read_text(encoding="utf-8"))
    info["judgement_set"] = set_name
    _validate_staged(benchmark_dir, files, json.dumps(info, indent=2) + "\n")
    manifest = {
        "judgement_set": set_name,
        "benchmark": info.get("name"),
        "safety_policy": SAFETY_POLICY_VERSION,
        "rounding": "final = floor(mean of two grades) unless adjudicated (round half down)",
        "pairs": len(finals),
        "adjudicated": sum(f.adjudicated for f in finals),
        "inputs": dict(inputs),
        "files": {name: _sha(text) for name, text in files.items()},
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def write_set(set_dir: Path, files: Mapping[str, str]) -> None:
    """Create the judgement-set folder `set_dir` with `files`, all at once; never overwrites.

    The files go to a staging folder that is then renamed to `set_dir`: the rename fails if
    `set_dir` exists (or appears meanwhile), so an existing set is never touched or merged.
    """
    set_dir = Path(set_dir)
    if set_dir.exists():
        raise BenchmarkError(
            f"{set_dir} exists; a judgement set is never overwritten "
            "(a new version is a new folder)"
        )
    set_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=set_dir.parent, prefix=f".{set_dir.name}."))
    staging.chmod(0o755)
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        os.rename(staging, set_dir)  # fails if set_dir appeared meanwhile; never merges
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise BenchmarkError(f"{set_dir}: cannot create the judgement set: {exc}") from None


def _validate_staged(benchmark_dir: Path, files: Mapping[str, str], info_text: str) -> None:
    """Load a temporary copy of the benchmark with the new files; refuse if it does not load."""
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / benchmark_dir.name
        staged.mkdir()
        shutil.copy(benchmark_dir / "queries.jsonl", staged / "queries.jsonl")
        (staged / "benchmark.json").write_text(info_text, encoding="utf-8")
        for name in PUBLISHED:
            (staged / name).write_text(files[name], encoding="utf-8")
        try:
            load_benchmark(staged)
        except BenchmarkError as exc:
            message = str(exc).replace(str(staged), str(benchmark_dir))
            raise BenchmarkError(
                f"the new judgement set does not make a valid benchmark: {message}"
            ) from None


def replace_file(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically (temp file + fsync + os.replace)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)

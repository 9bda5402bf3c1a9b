"""The locked check split (evaluation/split.py): by family hash, assembled beside the tune side
by adjudication, and never opened by the tuning stage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation import annotation_workflow as ac
from mambomeme.evaluation import judgement_sets as js
from mambomeme.evaluation import pooling
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.split import Split, read_split

ROOT = Path(__file__).resolve().parents[1]


def test_side_is_a_pure_function_of_salt_and_family() -> None:
    split = Split("salt-1", 1 / 3)
    families = [f"template:t{n}" for n in range(300)]
    sides = [split.side(f) for f in families]
    assert sides == [Split("salt-1", 1 / 3).side(f) for f in families]
    assert 70 <= sides.count("check") <= 130  # about a third
    assert sides != [Split("salt-2", 1 / 3).side(f) for f in families]


def test_read_split_refuses_bad_files(tmp_path: Path) -> None:
    assert read_split(tmp_path) is None
    (tmp_path / "split.yaml").write_text("salt: x\ncheck_share: 1.5\n")
    with pytest.raises(BenchmarkError, match="check_share"):
        read_split(tmp_path)
    (tmp_path / "split.yaml").write_text("salt: x\ncheck_share: 0.3\nextra: 1\n")
    with pytest.raises(BenchmarkError, match="exactly the keys"):
        read_split(tmp_path)


def test_adjudication_writes_disjoint_tune_and_check_sides(tmp_path: Path) -> None:
    """dev-v1 with a split: every query lands on exactly one side, by family; qrels and exact
    targets follow their queries; safety.tsv stays whole; the record names the side."""
    dev = tmp_path / "dev-v1"
    shutil.copytree(ROOT / "benchmarks" / "dev-v1", dev)
    (dev / "split.yaml").write_text("salt: test-salt\ncheck_share: 0.3333\n")
    judged = [
        pooling.Candidate(q, i, ("bm25@1",))
        for q, i in sorted(ac.sheets.read_labels(ROOT / "judgements/dev-v1/annotator-a.csv"))
    ]
    pooling.write_pool(tmp_path / "pool", judged, {"pairs": len(judged)})
    sets = tmp_path / "sets"
    shutil.copytree(ROOT / "judgement-sets" / "dev-v1", sets)
    tune, check = tmp_path / "benchmark", tmp_path / "benchmark-check"
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        ac.adjudicate_run(
            dev, dev / "pool.yaml", tmp_path / "pool", Path("judgements/dev-v1"), sets,
            tmp_path / "queue", tune, {}, tmp_path, check,
        )  # fmt: skip
    finally:
        os.chdir(cwd)
    a, b = load_benchmark(tune), load_benchmark(check)
    qa, qb = {q.qid for q in a.queries}, {q.qid for q in b.queries}
    every = [json.loads(line) for line in (dev / "queries.jsonl").read_text().splitlines()]
    assert qa | qb == {q["qid"] for q in every} and not qa & qb and qb
    assert not {q.family for q in a.queries} & {q.family for q in b.queries}
    split = Split("test-salt", 0.3333)
    assert all(split.side(q.family) == "check" for q in b.queries)
    for side, qids in ((tune, qa), (check, qb)):
        assert {line.split()[0] for line in (side / "qrels.txt").read_text().splitlines()} <= qids
        record = json.loads((side / "judgement-set.json").read_text())
        assert record["split"]["queries"] == len(qids)
    latest = ROOT / "judgement-sets" / "dev-v1" / "dev-v1-j2"
    assert (check / "safety.tsv").read_bytes() == (latest / "safety.tsv").read_bytes()


def test_tuning_stage_never_opens_the_check_side(tmp_path: Path, fixture_build: Path) -> None:
    """stages/tune.py run on a fixture pipeline whose benchmark has a check split: an audit
    hook records every file the process opens; the tune side is read, the check side never."""
    queries = load_benchmark(ROOT / "benchmarks" / "fixture").queries
    split = Split("fixture-check", 0.34)
    sides = {
        s: frozenset(q.qid for q in queries if split.side(q.family) == s) for s in ("tune", "check")
    }  # noqa: E501
    assert sides["tune"] and sides["check"]
    latest = js.versions(ROOT / "judgement-sets" / "fixture", "fixture")[-1][1]
    reports = tmp_path / "reports"
    for side, folder in (("tune", reports / "benchmark"), ("check", reports / "benchmark-check")):
        js.write_scored_benchmark(ROOT / "benchmarks" / "fixture", latest, folder, {}, sides[side])
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["tuning"]["axes"] = {  # one grid point: seconds
        "route_weights.lexical": [0.0, 1.0], "route_weights.dense": [0.0, 1.0], "depth": [50]
    }  # fmt: skip
    params["tuning"]["abstention"]["enabled"] = False
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "fixture").symlink_to(fixture_build)
    log = tmp_path / "opened.txt"
    hook = (
        "import sys, runpy\n"
        f"opened = open({str(log)!r}, 'w', buffering=1)\n"
        "def hook(event, args):\n"
        "    if event == 'open' and isinstance(args[0], (str, bytes)):\n"
        "        opened.write(str(args[0]) + '\\n')\n"
        "sys.addaudithook(hook)\n"
        f"sys.argv = ['tune.py', '--corpus', 'fixture']\n"
        f"runpy.run_path({str(ROOT / 'stages' / 'tune.py')!r}, run_name='__main__')\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", hook], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    opened = [Path(p) for p in log.read_text().splitlines()]
    resolved = {(tmp_path / p).resolve() if not p.is_absolute() else p.resolve() for p in opened}
    assert (reports / "benchmark" / "qrels.txt").resolve() in resolved  # the test can fail
    check_side = (reports / "benchmark-check").resolve()
    assert not [p for p in resolved if p.is_relative_to(check_side)]
    assert (reports / "selection.json").is_file()


def test_reranker_holds_out_only_the_check_side_when_asked() -> None:
    """rerank.held_out "benchmarks/B@check": the check side's families never train the
    reranker; the tune side may (as it may tune thresholds)."""
    from mambomeme.errors import MamboMemeError
    from mambomeme.models.reranker.data import held_out_families

    dev = ROOT / "benchmarks" / "dev-v3"
    split = read_split(dev)
    assert split is not None
    every = held_out_families(str(dev))
    check = held_out_families(f"{dev}@check")
    assert check and check < every
    assert check == {f for f in every if split.side(f) == "check"}
    with pytest.raises(MamboMemeError, match="no 'check' side"):
        held_out_families(f"{ROOT / 'benchmarks' / 'dev-v2'}@check")


def test_a_query_dropped_after_judging_keeps_its_rows_but_leaves_the_set(tmp_path: Path) -> None:
    """dropped.jsonl: the annotator files keep the dropped query's rows (never deleted);
    adjudication leaves them out and names the query. Without the file the rows are an error,
    and a dropped qid still in queries.jsonl is refused."""
    dev = tmp_path / "dev-v1"
    shutil.copytree(ROOT / "benchmarks" / "dev-v1", dev)
    lines = (dev / "queries.jsonl").read_text().splitlines()
    gone = json.loads(lines[-1])["qid"]
    assert json.loads(lines[-1])["slice"] not in ("entity", "quote")  # no exact targets
    (dev / "queries.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    labels = ac.sheets.read_labels(ROOT / "judgements/dev-v1/annotator-a.csv")
    assert any(q == gone for q, _ in labels)
    pool = [pooling.Candidate(q, i, ("bm25@1",)) for q, i in sorted(labels)]
    pooling.write_pool(tmp_path / "pool", pool, {"pairs": len(pool)})

    def adjudicate(sets: Path) -> ac.Adjudication:
        shutil.copytree(ROOT / "judgement-sets" / "dev-v1", sets)
        return ac.adjudicate_run(
            dev, dev / "pool.yaml", tmp_path / "pool", ROOT / "judgements/dev-v1", sets,
            tmp_path / "queue", tmp_path / "scored", {}, tmp_path,
        )  # fmt: skip

    with pytest.raises(BenchmarkError, match="is not a query"):
        adjudicate(tmp_path / "sets-1")
    (dev / "dropped.jsonl").write_text(json.dumps({"qid": gone, "reason": "test"}) + "\n")
    done = adjudicate(tmp_path / "sets-2")
    record = json.loads((tmp_path / "scored" / "judgement-set.json").read_text())
    assert record["coverage"]["dropped_queries"] == [gone]
    assert gone not in (tmp_path / "scored" / "qrels.txt").read_text()
    assert done.pairs == sum(1 for q, _ in labels if q != gone)
    (dev / "queries.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchmarkError, match="still in queries.jsonl"):
        adjudicate(tmp_path / "sets-3")

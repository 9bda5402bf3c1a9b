"""The evaluation commands over the real fixture build and engine (slow: real SQLite and model).

The inline benchmark is judged by a rule applied at runtime to the fixture corpus (items with
John Cena among their people), so no corpus text is copied here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mambomeme.config import EvaluationParams
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.evaluate import execute_run, score_runs

pytestmark = pytest.mark.slow


def _benchmark(root: Path, items: Any) -> Path:
    cena = sorted(i for i in items if "John Cena" in items[i].people)
    assert cena
    root.mkdir()
    info = {
        "name": "fixture-inline",
        "version": "0",
        "partition": "dev",
        "corpus": "fixture@v1",
        "judgement_set": "rule-1",
        "provisional": True,
        "exposed": False,
    }
    (root / "benchmark.json").write_text(json.dumps(info))
    queries = [
        {"qid": "e1", "family": "cena", "slice": "entity", "text": "john cena", "answerable": True},
        {
            "qid": "n1",
            "family": "none",
            "slice": "quote",
            "text": "zzqxv qqvbn",
            "answerable": False,
        },
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels.txt").write_text("".join(f"e1 0 {i} 3\n" for i in cena))
    (root / "exact.jsonl").write_text(json.dumps({"qid": "e1", "groups": [cena]}) + "\n")
    (root / "safety.tsv").write_text("".join(f"{i}\t{items[i].safety}\n" for i in cena))
    return root


def test_run_and_score_with_the_real_engine(
    tmp_path: Path, fixture_build: Path, engine: Any, params: dict[str, Any]
) -> None:
    benchmark = load_benchmark(_benchmark(tmp_path / "bench", engine.items))
    manifest = fixture_build / "corpus-fixture.json"
    runs = []
    for system in ("bm25", "hybrid"):
        out = tmp_path / "runs" / f"{system}.trec"
        warmups = EvaluationParams.from_params(params["evaluation"]).warmups
        run = execute_run(engine, benchmark, system, out, fixture_build, manifest, warmups, False)
        assert not run.errors and "n1" not in run.rankings
        details = run.details["e1"]
        assert details[0].template_group and details[0].preview and details[0].safety == "safe"
        runs.append(out)
    hybrid_meta = json.loads((tmp_path / "runs" / "hybrid.trec.meta.json").read_text())
    assert hybrid_meta["embedding_manifest_sha256"] is not None
    # a run records the matrix the engine serves for that name (dense-no-X reads dense-no-X)
    dense = fixture_build / "dense"
    assert engine.embedding_manifest("bm25") is None
    assert engine.embedding_manifest("hybrid") == dense / "dense.json"
    for name in ("dense-no-ocr_text", "hybrid-no-ocr_text"):
        assert engine.embedding_manifest(name) == dense / "dense-no-ocr_text.json"
    card = score_runs(benchmark.path, runs, tmp_path / "reports", None, seed=1, resamples=20)
    rows = {r.system: r for r in card.systems}
    for system in ("bm25", "hybrid"):
        assert rows[system].components.E == 1.0  # a John Cena item first
        assert rows[system].coverage.correct_empty == 1.0
    routes = rows["hybrid"].diagnostics["routes_by_slice"]["entity"]
    assert routes["both"] + routes["dense_only"] > 0
    assert (tmp_path / "reports" / "scorecard.md").is_file()

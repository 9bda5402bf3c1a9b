"""The reproducible report records what a rerun needs and never imports torch."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mambomeme.errors import MamboMemeError
from mambomeme.evaluation.repro import write_repro

ROOT = Path(__file__).resolve().parents[1]
PARAMS: dict[str, Any] = {
    "base": {"seed": 20261201, "corpus": "fixture"},
    "lexical": {"weights": {"title": 8.0, "tags": 3.0}},
    "search": {
        "rrf_k": 60,
        "depth": 100,
        "min_cosine": 0.35,
        "route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 1.0},
    },
    "evaluation": {"bootstrap": {"seed": 7, "resamples": 1000}},
}


def make_inputs(tmp: Path) -> dict[str, Any]:
    build = tmp / "build" / "fixture"
    build.mkdir(parents=True)
    (build / "items.parquet").write_bytes(b"items")
    (build / "dense.json").write_text(
        json.dumps(
            {
                "model_id": "sentence-transformers/all-MiniLM-L6-v2",
                "package_version": "0.1.0",
                "weights_sha256": "ab" * 32,
                "count": 2,
            }
        ),
        "utf-8",
    )
    manifest = tmp / "manifests" / "corpus-fixture.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"corpus": "fixture", "items": 2}), "utf-8")
    bench = tmp / "benchmarks" / "fixture-dev"
    bench.mkdir(parents=True)
    (bench / "benchmark.json").write_text(
        json.dumps(
            {
                "name": "fixture-dev",
                "version": "v1",
                "partition": "dev",
                "corpus": "fixture@v1",
                "judgement_set": "j1",
                "provisional": True,
                "exposed": False,
            }
        ),
        "utf-8",
    )
    selection = tmp / "selection.json"
    selection.write_text(
        json.dumps(
            {
                "config": {"route_weights.dense": 0.0, "rrf_k": 30, "min_cosine": 0.4},
                "objective": 0.61,
                "benchmark": {"checksum": "x"},
                "curve": [],
            }
        ),
        "utf-8",
    )
    policy = tmp / "SAFETY-POLICY.md"
    policy.write_text("# Safety policy v1 (frozen)\n\ntext\n", "utf-8")
    groups = tmp / "template-equivalences.csv"
    groups.write_text("imgflip575k_template,memegen_template\n", "utf-8")
    return {
        "build_dir": build,
        "corpus_manifest": manifest,
        "benchmarks": [bench],
        "selection": selection,
        "safety_policy": policy,
        "template_groups": groups,
    }


def test_report_records_versions_checksums_and_frozen_config(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path)
    out = tmp_path / "reports"
    report = write_repro(PARAMS, out, repo_root=tmp_path, release_id="fixture-x", **inputs)
    assert json.loads((out / "repro.json").read_text("utf-8")) == report
    assert report["corpus"]["build_files"]["items.parquet"] == hashlib.sha256(b"items").hexdigest()
    assert report["corpus"]["manifest"] == {"corpus": "fixture", "items": 2}
    assert report["benchmarks"][0]["judgement_set"] == "j1"
    assert len(report["benchmarks"][0]["checksum"]) == 64
    assert report["safety_policy"]["version"] == "v1"
    assert report["template_groups"]["lines"] == 1
    assert report["model"]["weights_sha256"] == "ab" * 32
    assert report["model"]["package_version"] == "0.1.0"
    search = report["search"]
    assert search["source"] == "selection.json"
    assert search["route_weights"] == {"lexical": 1.0, "fuzzy": 0.5, "dense": 0.0}
    assert (search["rrf_k"], search["depth"], search["min_evidence"]) == (30, 100, 0.4)
    assert search["lexical_weights"] == {"title": 8.0, "tags": 3.0}
    assert report["configuration"] == PARAMS
    assert report["seeds"] == {"base.seed": 20261201, "evaluation.bootstrap.seed": 7}
    assert report["runtime"]["sqlite"] and report["runtime"]["python"]
    assert report["hardware"]["cpu_cores"] >= 1
    assert report["code"] == {"commit": None, "uncommitted": True, "note": report["code"]["note"]}
    text = (out / "repro.md").read_text("utf-8")
    assert "fixture-x" in text and "selection.json" in text and "v1" in text
    # same inputs, same machine: byte-identical files
    first = (out / "repro.json").read_bytes()
    write_repro(PARAMS, out, repo_root=tmp_path, release_id="fixture-x", **inputs)
    assert (out / "repro.json").read_bytes() == first


def test_commit_and_dirty_flag_from_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (repo / "a.txt").write_text("a")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "one")
    inputs = make_inputs(tmp_path / "in")
    clean = write_repro(PARAMS, tmp_path / "r1", repo_root=repo, **inputs)["code"]
    assert clean == {"commit": git("rev-parse", "HEAD"), "uncommitted": False}
    (repo / "a.txt").write_text("changed")
    dirty = write_repro(PARAMS, tmp_path / "r2", repo_root=repo, **inputs)["code"]
    assert dirty["uncommitted"] is True and dirty["commit"] == clean["commit"]


def test_without_selection_or_dense_it_reports_params(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path)
    (inputs["build_dir"] / "dense.json").unlink()
    inputs["selection"] = None
    report = write_repro(PARAMS, tmp_path / "r", repo_root=tmp_path, **inputs)
    assert report["search"]["source"] == "params.yaml"
    assert report["search"]["rrf_k"] == 60
    assert report["model"]["model_id"] is None


def test_missing_inputs_are_named(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path)
    inputs["corpus_manifest"] = tmp_path / "nope.json"
    with pytest.raises(MamboMemeError, match="nope.json"):
        write_repro(PARAMS, tmp_path / "r", repo_root=tmp_path, **inputs)


def test_torch_is_never_imported(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path)
    (tmp_path / "params.json").write_text(json.dumps(PARAMS), "utf-8")
    code = f"""
import json, sys
from pathlib import Path
from mambomeme.evaluation.repro import write_repro
tmp = Path({str(tmp_path)!r})
r = write_repro(json.loads((tmp / "params.json").read_text()), tmp / "r", repo_root=tmp,
                build_dir=Path({str(inputs["build_dir"])!r}),
                corpus_manifest=Path({str(inputs["corpus_manifest"])!r}),
                benchmarks=[Path({str(inputs["benchmarks"][0])!r})],
                selection=Path({str(inputs["selection"])!r}))
print("torch" in sys.modules, r["runtime"]["torch"])
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "False"
    assert out[1].startswith("2.13.0")


def test_abstention_curve_is_shown_with_the_chosen_threshold(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path)
    frozen = json.loads(inputs["selection"].read_text("utf-8"))
    curve = [
        {"threshold": t / 100, "hit10": 0.95 - t / 400, "correct_empty": 0.5 + t / 100, "C": 0.6}
        for t in range(40)
    ]
    frozen["abstention_report"] = {"curve": curve, "chosen": curve[23], "min_hit10": 0.9}
    inputs["selection"].write_text(json.dumps(frozen), "utf-8")
    out = tmp_path / "reports"
    report = write_repro(PARAMS, out, repo_root=tmp_path, **inputs)
    assert report["search"]["abstention"]["chosen"] == curve[23]
    text = (out / "repro.md").read_text("utf-8")
    assert "### Abstention curve (40 thresholds on dev; chosen 0.2300, Hit@10 floor 0.9)" in text
    assert "| 0.2300 (chosen) | 0.8925 | 0.7300 | 0.6000 |" in text
    rows = [line for line in text.splitlines() if line.startswith("| 0.")]
    assert 10 <= len(rows) <= 21  # thinned, the chosen one included

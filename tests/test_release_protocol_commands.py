"""The release protocol on the commands users run: `mambomeme run` and `mambomeme score`.

The hidden benchmark here is made in tmp_path from our own fixture benchmark
(benchmarks/fixture) with its benchmark.json relabelled "partition": "hidden": no real hidden
content is read, named or guessed. The build is the fixture corpus with its lexical index only,
so `mambomeme run --system bm25` runs the real engine without loading the model. The dense and
hybrid baseline runs that `score` requires are that bm25 run relabelled (test data: the protocol
checks which runs exist and under which selection, not how good they are).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mambomeme import cli
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.runs import read_run, sidecar, write_run
from mambomeme.release.protocol import benchmark_checksum, read_ledger, selection_fingerprint

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params.yaml"


@pytest.fixture(scope="module")
def lexical_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lexical_support import build_fixture_lexical

    from mambomeme.config import load_params

    build = tmp_path_factory.mktemp("fixture-lexical-build")
    build_fixture_lexical(build, load_params(PARAMS)["lexical"]["weights"])
    return build


def copy_benchmark(dest: Path, **meta: Any) -> Path:
    """benchmarks/fixture copied to `dest` with benchmark.json fields changed."""
    shutil.copytree(ROOT / "benchmarks" / "fixture", dest)
    path = dest / "benchmark.json"
    path.write_text(json.dumps({**json.loads(path.read_text("utf-8")), **meta}), "utf-8")
    return dest


def write_selection(path: Path, dev: Path, rrf_k: int = 60, checksum: str | None = None) -> Path:
    info = json.loads((dev / "benchmark.json").read_text("utf-8"))
    selection = {
        "config": {"rrf_k": rrf_k},
        "objective": 0.5,
        "benchmark": {
            "dir": str(dev),
            "name": info["name"],
            "version": info["version"],
            "partition": info["partition"],
            "corpus": info["corpus"],
            "checksum": checksum or benchmark_checksum(dev),
        },
    }
    path.write_text(json.dumps(selection), "utf-8")
    return path


class World:
    """A dev benchmark, a hidden one over the same corpus, a ledger and the command lines."""

    def __init__(self, root: Path, build: Path) -> None:
        self.root = root
        self.build = build
        self.dev = copy_benchmark(root / "dev", name="fixture-dev-test")
        self.hidden = copy_benchmark(
            root / "hidden", name="fixture-hidden-test", partition="hidden"
        )
        self.ledger = root / "releases" / "exposed.jsonl"
        self.score_params = root / "score-params.yaml"
        self.score_params.write_text(
            f"base:\n  seed: 5\n  reports: {root / 'reports'}\n"
            "evaluation:\n  bootstrap:\n    seed: 99\n    resamples: 20\n",
            "utf-8",
        )

    def run(self, out: Path, selection: Path, benchmark: Path | None = None) -> int:
        argv = [
            "run",
            "--benchmark",
            str(benchmark or self.hidden),
            "--system",
            "bm25",
            "--out",
            str(out),
            "--build",
            str(self.build),
            "--corpus-manifest",
            str(self.build / "corpus-fixture.json"),
            "--params",
            str(PARAMS),
            "--selection",
            str(selection),
            "--ledger",
            str(self.ledger),
        ]
        return cli.main(argv)

    def score(
        self, runs: list[Path], selection: Path, out: Path, benchmark: Path | None = None
    ) -> int:
        argv = [
            "score",
            "--benchmark",
            str(benchmark or self.hidden),
            "--runs",
            *map(str, runs),
            "--out-dir",
            str(out),
            "--params",
            str(self.score_params),
            "--selection",
            str(selection),
            "--ledger",
            str(self.ledger),
        ]
        return cli.main(argv)

    def baselines(self, bm25: Path, benchmark: Path | None = None) -> list[Path]:
        """bm25 plus its copies labelled dense and hybrid (same meta, same selection)."""
        run = read_run(bm25, load_benchmark(benchmark or self.hidden))
        paths = [bm25]
        for system in ("dense", "hybrid"):
            path = bm25.with_name(f"{system}.trec")
            meta = dataclasses.replace(run.meta, system=system)
            write_run(path, dataclasses.replace(run, system=system, meta=meta))
            paths.append(path)
        return paths


@pytest.fixture
def world(tmp_path: Path, lexical_build: Path) -> World:
    return World(tmp_path, lexical_build)


def test_hidden_without_a_frozen_selection_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    out = world.root / "runs" / "bm25.trec"
    missing = world.root / "no-selection.json"
    assert world.run(out, missing) == cli.EXIT_PROTOCOL_REFUSED
    err = capsys.readouterr().err
    assert "refused by the release protocol" in err and "no frozen selection" in err
    assert not out.exists() and not world.ledger.exists()
    assert world.score([out], missing, world.root / "reports") == cli.EXIT_PROTOCOL_REFUSED
    assert not (world.root / "reports").exists()


def test_selection_from_another_corpus_or_checksum_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    out = world.root / "runs" / "bm25.trec"
    other = copy_benchmark(world.root / "dev-other", corpus="memes-10k@v1")
    other_corpus = write_selection(world.root / "other.json", other)
    assert world.run(out, other_corpus) == cli.EXIT_PROTOCOL_REFUSED
    assert "differs from the dev benchmark's 'memes-10k@v1'" in capsys.readouterr().err
    mismatch = write_selection(world.root / "stale.json", world.dev, checksum="0" * 64)
    assert world.run(out, mismatch) == cli.EXIT_PROTOCOL_REFUSED
    assert "does not match" in capsys.readouterr().err
    tuned_on_hidden = write_selection(world.root / "on-hidden.json", world.hidden)
    assert world.run(out, tuned_on_hidden) == cli.EXIT_PROTOCOL_REFUSED
    assert "is not a dev benchmark" in capsys.readouterr().err
    assert not out.exists() and not world.ledger.exists()


def test_valid_selection_is_scored_once_and_the_exposure_recorded(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    selection = write_selection(world.root / "selection.json", world.dev)
    sha = selection_fingerprint(json.loads(selection.read_text("utf-8")))
    bm25 = world.root / "runs" / "bm25.trec"
    assert world.run(bm25, selection) == 0
    assert json.loads(sidecar(bm25, ".meta.json").read_text("utf-8"))["selection_sha256"] == sha
    runs = world.baselines(bm25)
    assert world.score(runs[:2], selection, world.root / "r0") == cli.EXIT_PROTOCOL_REFUSED
    assert "missing baseline runs ['hybrid']" in capsys.readouterr().err
    assert not world.ledger.exists()

    reports = world.root / "reports"
    assert world.score(runs, selection, reports) == 0
    assert "recorded exposure of fixture-hidden-test@v1" in capsys.readouterr().err
    [exposure] = read_ledger(world.ledger)
    assert (exposure.name, exposure.version) == ("fixture-hidden-test", "v1")
    assert exposure.selection_sha256s == (sha,)
    assert exposure.checksum == benchmark_checksum(world.hidden)
    card = json.loads((reports / "scorecard.json").read_text("utf-8"))
    assert card["exposure"]["selection_sha256"] == sha
    # rescoring the same frozen selection is allowed and logged again
    assert world.score(runs, selection, reports) == 0
    assert len(read_ledger(world.ledger)) == 2

    # a second selection on the exposed version: refused by run and by score, ledger unchanged
    later = write_selection(world.root / "later.json", world.dev, rrf_k=20)
    assert world.run(world.root / "runs2" / "bm25.trec", later) == cli.EXIT_PROTOCOL_REFUSED
    assert "already exposed" in capsys.readouterr().err
    assert world.score(runs, later, world.root / "r2") == cli.EXIT_PROTOCOL_REFUSED
    assert "fresh hidden version" in capsys.readouterr().err
    assert len(read_ledger(world.ledger)) == 2 and not (world.root / "r2").exists()


def test_score_refuses_a_run_made_without_the_selection(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    selection = write_selection(world.root / "selection.json", world.dev)
    bm25 = world.root / "runs" / "bm25.trec"
    assert world.run(bm25, selection) == 0
    runs = world.baselines(bm25)
    meta_path = sidecar(runs[1], ".meta.json")
    meta = json.loads(meta_path.read_text("utf-8"))
    del meta["selection_sha256"]
    meta_path.write_text(json.dumps(meta), "utf-8")
    assert world.score(runs, selection, world.root / "reports") == cli.EXIT_PROTOCOL_REFUSED
    assert "not the frozen selection" in capsys.readouterr().err
    assert not world.ledger.exists()


def test_dev_benchmarks_need_no_selection_and_expose_nothing(world: World) -> None:
    missing = world.root / "no-selection.json"
    bm25 = world.root / "runs" / "bm25.trec"
    assert world.run(bm25, missing, benchmark=world.dev) == 0
    assert "selection_sha256" not in json.loads(sidecar(bm25, ".meta.json").read_text("utf-8"))
    runs = world.baselines(bm25, benchmark=world.dev)
    reports = world.root / "reports"
    assert world.score(runs, missing, reports, benchmark=world.dev) == 0
    assert (reports / "scorecard.md").exists() and not world.ledger.exists()
    assert "exposure" not in json.loads((reports / "scorecard.json").read_text("utf-8"))

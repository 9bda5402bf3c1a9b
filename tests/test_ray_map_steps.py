"""Safety scoring and the OCR of a user folder on Ray Data (a local Ray with 2 CPUs, started
once for the module; no network) give what the in-process runs give: the same probabilities
and items, the same state store rows (index/ray_map.py, signals.matrix_on_ray,
library/ocr_map.py). The seam's bookkeeping is checked without Ray."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mambomeme.corpus.schema import Item, validate_record
from mambomeme.errors import ExecutorError
from mambomeme.index.ray_map import ExecutorConfig, in_order, start_ray

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "knowledge"
SIGNALS = ("template_risk", "hatesonar", "profanity")


@pytest.fixture(scope="module")
def on_ray() -> Iterator[ExecutorConfig]:
    """One local Ray (2 CPUs, 2 actors per step) for the module; the steps join it."""
    ray = pytest.importorskip("ray")
    executor = ExecutorConfig("ray", ray_cpus=2, ray_actors=2)
    started = start_ray(executor)
    yield executor
    if started:
        ray.shutdown()


def _fixture_items() -> list[Item]:
    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    return [validate_record(r, f"items.jsonl:{n}") for n, r in enumerate(rows, 1)]


def _model_folder(folder: Path) -> Path:
    """A real model file (seeded weights over every feature, the three extra signals) whose
    threshold flags some fixture items and not others."""
    from mambomeme.models.safety import model as sm
    from mambomeme.models.safety import signals
    from mambomeme.models.safety.features import RULE_CATEGORIES, Priors

    width = 384 + len(RULE_CATEGORIES) + 1 + 1 + len(signals.column_names(SIGNALS))
    weights = np.random.default_rng(36).normal(0.0, 1.0, width)
    model = sm.SafetyModel(
        weights, 0.0, 1.0, 0.0, 0.5, Priors(0.1, {}), {}, SIGNALS,
        signals.versions(SIGNALS, KNOWLEDGE),
    )  # fmt: skip
    sm.write_model(folder, model, {"labels": {"sha256": "test"}})
    return folder


@pytest.mark.slow
def test_safety_scoring_on_ray_equals_in_process(
    on_ray: ExecutorConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mambomeme.models.safety import signals
    from mambomeme.moderation.apply import model_reclassifier

    monkeypatch.setattr(signals, "BATCH", 48)  # 4 signal batches over 175 items, both sides
    items = _fixture_items()
    items = [dataclasses.replace(it, safety="safe") if i % 2 else it for i, it in enumerate(items)]
    params: dict[str, Any] = {
        "ingest": {"safety": {"model": str(_model_folder(tmp_path / "model"))}},
        "dense": {"cache_dir": "", "batch_size": 16, "device": "cpu", "shard_size": 1000},
    }
    params["ingest"]["knowledge"] = str(KNOWLEDGE)
    config: dict[str, Any] = {"safety": {}}
    here = model_reclassifier({**params, "build": {"executor": "in-process"}}, config)
    there = model_reclassifier({**params, "build": on_ray.as_params()}, config)
    assert here is not None and there is not None
    local, remote = here(items), there(items)
    assert len(local.probabilities) == len(items)
    assert 0 < local.record["flagged_by_model"] < len(items)  # the decisions are not trivial
    assert remote.probabilities == local.probabilities
    assert remote.items == local.items
    assert remote.record == local.record


@pytest.mark.slow
def test_safety_embedding_with_a_cache_on_ray_equals_in_process(
    on_ray: ExecutorConfig, tmp_path: Path
) -> None:
    """Through the embedding cache (shards of 50 missing documents, each side its own cache):
    a shard's last batch is small, where torch's thread count changes the last bit (the actors
    take this process's count, index/executor.py)."""
    from mambomeme.models.safety.features import embedder, safety_document

    texts = [safety_document(it) for it in _fixture_items()[:100]]
    local = embedder(tmp_path / "a", 16, "cpu", 50)(texts)
    remote = embedder(tmp_path / "b", 16, "cpu", 50, on_ray)(texts)
    assert remote.dtype == local.dtype == np.float32
    assert remote.tobytes() == local.tobytes()


@pytest.mark.slow
def test_library_ocr_on_ray_gives_the_in_process_state(
    on_ray: ExecutorConfig, tmp_path: Path
) -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="no OCR engine (rapidocr) installed")
    from mambomeme.library.ocr import open_engine
    from mambomeme.library.scan import scan_folders
    from mambomeme.library.state import StateStore
    from mambomeme.library.synthetic import CAPTIONS, write_memes

    folder = tmp_path / "memes"
    written = write_memes(folder, CAPTIONS[:5])
    shutil.copy(written[0][0], folder / "copy-of-meme-00.png")  # same bytes: read once
    (folder / "broken.png").write_bytes(b"not an image")  # skipped before any OCR
    engine = open_engine("rapidocr")
    assert engine is not None
    states = {}
    for name, executor in (("here", ExecutorConfig()), ("there", on_ray)):
        with StateStore(tmp_path / f"{name}.sqlite") as store:
            report = scan_folders(store, [str(folder)], engine, False, executor=executor)
            rows = list(store.indexed())
            states[name] = (report, rows, store.digest())
    (report, rows, digest), there = states["here"], states["there"]
    assert report.ocr_read == 5 and len(rows) == 6 and len(report.skipped) == 1
    assert all(image.ocr_text for _, image in rows)
    assert there == (report, rows, digest)


def test_in_order_puts_results_back_and_names_what_is_missing() -> None:
    assert in_order({2: "c", 0: "a", 1: "b"}, 3, "batches") == ["a", "b", "c"]
    with pytest.raises(ExecutorError, match=r"ray batches: 2 of 4 came back \(missing 1, 3\)"):
        in_order({0: "a", 2: "c"}, 4, "batches")
    with pytest.raises(ExecutorError, match="unexpected numbers"):
        in_order({0: "a", 1: "b", 5: "x"}, 2, "batches")


def test_executor_settings_are_checked() -> None:
    with pytest.raises(ExecutorError, match="build.executor is 'spark'"):
        ExecutorConfig.from_params({"executor": "spark"})
    with pytest.raises(ExecutorError, match="must be >= 0"):
        ExecutorConfig("ray", ray_cpus=-1)
    config = ExecutorConfig("ray", "auto", 4, 2)
    assert ExecutorConfig.from_params(config.as_params()) == config


def test_add_refuses_a_ray_address_without_the_ray_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mambomeme import cli

    home, folder = tmp_path / "home", tmp_path / "memes"
    folder.mkdir()
    code = cli.main(["add", "--home", str(home), "--ray-address", "auto", str(folder)])
    assert code == 2
    assert "--ray-address ADDR needs --executor ray" in capsys.readouterr().err
    assert not home.exists()  # refused before the library was touched

"""params.yaml loading: all tunables live there; code reads them through this one function."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mambomeme.errors import MamboMemeError

DEFAULT_PARAMS = Path("params.yaml")


def load_params(path: Path = DEFAULT_PARAMS) -> dict[str, Any]:
    """Read params.yaml; a missing or non-mapping file is a clear error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MamboMemeError(f"cannot read params file {path}: {exc.strerror}") from None
    params = yaml.safe_load(text)
    if not isinstance(params, dict):
        raise MamboMemeError(f"params file {path} is not a mapping")
    return params


def corpus_config(params: dict[str, Any], name: str | None = None) -> tuple[str, dict[str, Any]]:
    """The named corpus (default: base.corpus) and its source config."""
    corpus = name or str(params["base"]["corpus"])
    corpora = params.get("corpora", {})
    if corpus not in corpora:
        raise MamboMemeError(
            f"corpus {corpus!r} is not defined in params corpora: {sorted(corpora)}"
        )
    config = dict(corpora[corpus])
    # ingest.safety (e.g. profanity_threshold) is the default; a corpus's own "safety" wins
    defaults = (params.get("ingest") or {}).get("safety")
    if defaults is not None and "safety" not in config:
        config["safety"] = dict(defaults)
    return corpus, config


def build_dir(params: dict[str, Any], name: str | None = None) -> Path:
    corpus, _ = corpus_config(params, name)
    return Path("build") / corpus


def check_corpus_path(params: dict[str, Any]) -> None:
    """base.corpus_path (the DVC dependency) must be the selected corpus's own source path."""
    corpus, config = corpus_config(params)
    pairs = [
        (
            "base.corpus_path",
            params["base"].get("corpus_path"),
            config.get("path", config.get("root")),
        ),
        ("base.reports", params["base"].get("reports"), config.get("reports")),
        (
            "evaluation.benchmark",
            params.get("evaluation", {}).get("benchmark"),
            config.get("eval_benchmark"),
        ),
        (
            "evaluation.benchmark_name",
            params.get("evaluation", {}).get("benchmark_name"),
            Path(str(config["eval_benchmark"])).name if "eval_benchmark" in config else None,
        ),
    ]
    for key, declared, own in pairs:
        if own is not None and Path(str(declared)) != Path(str(own)):
            raise MamboMemeError(
                f"params {key} is {declared!r} but corpus {corpus!r} needs {own!r}; "
                f"switch corpora with `make repro CORPUS={corpus}`"
            )


def evaluation_systems(params: dict[str, Any]) -> list[str]:
    """The systems scored on the selected corpus: its `systems`, else evaluation.systems."""
    _, config = corpus_config(params)
    return [str(s) for s in config.get("systems", params["evaluation"]["systems"])]


def scored_benchmark_dir(params: dict[str, Any]) -> Path:
    """The benchmark the pipeline scores: <base.reports>/benchmark/, assembled by the adjudicate
    stage from evaluation.benchmark's queries and its newest verified judgement set."""
    return Path(str(params["base"]["reports"])) / "benchmark"

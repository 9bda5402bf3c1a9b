"""params.yaml loading: all tunables live there; code reads them through this one function."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mambomeme.errors import MamboMemeError

DEFAULT_PARAMS = Path("params.yaml")


def load_params(
    path: Path = DEFAULT_PARAMS, corpus: str | None = None, build: Path | None = None
) -> dict[str, Any]:
    """Read params.yaml as the pipeline of `corpus` sees it: by default the corpus whose
    pipeline made `build` (build/<name>), else base.corpus.

    Each entry of `corpora` is one DVC pipeline (dvc.yaml `foreach`). The per-corpus values
    every stage reads are set here from `corpora.<corpus>` and never written in the file:
    base.corpus, base.reports (its `reports`), evaluation.benchmark_name (its `dev_benchmark`) and
    evaluation.benchmark (benchmarks/<that name>). A missing or non-mapping file, or an unknown
    corpus, is a clear error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MamboMemeError(f"cannot read params file {path}: {exc.strerror}") from None
    params = yaml.safe_load(text)
    if not isinstance(params, dict):
        raise MamboMemeError(f"params file {path} is not a mapping")
    if "corpora" not in params:
        return params
    if corpus is None and build is not None:
        corpus = built_by(params, build)
    return corpus_view(params, corpus)


def built_by(params: dict[str, Any], build: Path) -> str | None:
    """The corpus whose pipeline writes `build` (build/<name>), or None for any other folder
    (a release, a user's library, a copy elsewhere)."""
    for name in params.get("corpora", {}):
        if (Path("build") / name).resolve() == Path(build).resolve():
            return str(name)
    return None


def corpus_view(params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A copy of `params` set up for corpus `name` (see load_params)."""
    corpus, config = corpus_config(params, name)
    for key in ("reports", "dev_benchmark"):
        if key not in config:
            raise MamboMemeError(f"params corpora.{corpus} has no {key!r}")
    source = config.get("path", config.get("root"))
    if "input" in config and Path(str(config["input"])) != Path(str(source)):
        raise MamboMemeError(
            f"params corpora.{corpus}.input is {config['input']!r} but its source reads "
            f"{source!r}: DVC would watch the wrong path"
        )
    view = dict(params)
    view["base"] = dict(params.get("base") or {}, corpus=corpus, reports=str(config["reports"]))
    bench = str(config["dev_benchmark"])
    view["evaluation"] = dict(
        params.get("evaluation") or {}, benchmark=f"benchmarks/{bench}", benchmark_name=bench
    )
    useful = config.get("usefulness")  # a corpus's own usefulness training data
    if useful is not None:
        view["usefulness"] = dict(params.get("usefulness") or {}, **useful)
    rerank = config.get("rerank")  # a corpus's own reranker settings over the defaults
    if rerank is not None:
        view["rerank"] = dict(params.get("rerank") or {}, **rerank)
    return view


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


def evaluation_systems(params: dict[str, Any]) -> list[str]:
    """The systems scored on the selected corpus: its `systems`, else evaluation.systems."""
    _, config = corpus_config(params)
    return [str(s) for s in config.get("systems", params["evaluation"]["systems"])]


def scored_benchmark_dir(params: dict[str, Any]) -> Path:
    """The benchmark the pipeline scores: <base.reports>/benchmark/, assembled by the adjudicate
    stage from evaluation.benchmark's queries and its newest verified judgement set."""
    return Path(str(params["base"]["reports"])) / "benchmark"


def check_benchmark_dir(params: dict[str, Any]) -> Path:
    """The locked check side of the dev benchmark (evaluation/split.py): <base.reports>/
    benchmark-check/, written by the adjudicate stage beside the tune side and read only by
    the checks stage, never by tuning."""
    return Path(str(params["base"]["reports"])) / "benchmark-check"

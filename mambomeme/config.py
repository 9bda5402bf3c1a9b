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
        raise MamboMemeError(f"corpus {corpus!r} is not defined in params corpora: {sorted(corpora)}")
    return corpus, dict(corpora[corpus])


def build_dir(params: dict[str, Any], name: str | None = None) -> Path:
    corpus, _ = corpus_config(params, name)
    return Path("build") / corpus


def check_corpus_path(params: dict[str, Any]) -> None:
    """base.corpus_path (the DVC dependency) must be the selected corpus's own source path."""
    corpus, config = corpus_config(params)
    declared = str(params["base"].get("corpus_path", ""))
    own = str(config.get("path", config.get("root", "")))
    if Path(declared) != Path(own):
        raise MamboMemeError(
            f"params base.corpus_path is {declared!r} but corpus {corpus!r} reads {own!r}; "
            f"set both, e.g. dvc exp run -S base.corpus={corpus} -S base.corpus_path={own}"
        )

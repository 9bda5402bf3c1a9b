"""`python -m mambomeme.corpus_switch NAME`: point params.yaml at another named corpus.

Sets base.corpus, base.corpus_path, base.reports, evaluation.benchmark and
evaluation.benchmark_name together from corpora.NAME, editing only those five lines so comments
and layout survive. `make repro CORPUS=NAME` runs this and then `dvc repro`; outputs stay apart
(build/NAME, reports/NAME) and DVC's run cache restores the other corpus's outputs when you
switch back.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mambomeme.config import corpus_config, load_params

PARAMS = Path("params.yaml")


def switch(name: str, path: Path = PARAMS) -> None:
    params = load_params(path)
    corpus, config = corpus_config(params, name)
    values = {
        "corpus": corpus,
        "corpus_path": str(config.get("path", config.get("root"))),
        "reports": str(config["reports"]),
        "benchmark": str(config["eval_benchmark"]),
        "benchmark_name": Path(str(config["eval_benchmark"])).name,
    }
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    section = ""
    for i, line in enumerate(lines):
        top = re.match(r"^(\w[\w-]*):", line)
        if top:
            section = top.group(1)
        m = re.match(r"^(  )(\w+):(\s*)(\S+)(.*)$", line.rstrip("\n"))
        if not m:
            continue
        key = m.group(2)
        wanted = (section == "base" and key in ("corpus", "corpus_path", "reports")) or (
            section == "evaluation" and key in ("benchmark", "benchmark_name")
        )
        if wanted:
            lines[i] = f"{m.group(1)}{key}:{m.group(3)}{values[key]}{m.group(5)}\n"
    path.write_text("".join(lines), encoding="utf-8")
    load_params(path)  # still valid YAML


if __name__ == "__main__":
    switch(sys.argv[1])
    print(f"params.yaml now builds corpus {sys.argv[1]}")

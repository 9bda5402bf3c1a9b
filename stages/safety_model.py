"""DVC stage safety_model: frozen safety labels (dev families) -> build/safety-model/.

Trains the learned safety classifier (mambomeme/moderation) from `safety_model.labels`, over the
items of the corpus they were drawn from (`safety_model.corpus`, read through its source adapter
by path), and writes model.json + manifest.json and the report `safety_model.report`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import corpus_config, load_params  # noqa: E402
from mambomeme.corpus.manifest import write_json_atomic  # noqa: E402
from mambomeme.corpus.safety import classifier_from_config  # noqa: E402
from mambomeme.models.safety.features import embedder_from_params  # noqa: E402
from mambomeme.models.safety.model import write_model  # noqa: E402
from mambomeme.models.safety.train import read_corpus_items, train_from_labels  # noqa: E402


def main() -> None:
    params = load_params()
    settings = params["safety_model"]
    _, config = corpus_config(params, str(settings["corpus"]))
    items = read_corpus_items(config)
    rules = classifier_from_config(config)
    embed = embedder_from_params(params["dense"])
    knowledge = Path(str(params["ingest"]["knowledge"]))
    model, report = train_from_labels(
        Path(settings["labels"]), items, rules, embed, settings, knowledge
    )
    report["corpus"] = str(settings["corpus"])
    report["overrides_kept"] = len(rules.overrides)
    write_model(Path(settings["out"]), model, report)
    write_json_atomic(Path(settings["report"]), report)
    val, test = report["figures"]["validation"], report["figures"]["test"]
    print(
        f"safety model: threshold {model.threshold:.4f}; validation recall {val['recall']} "
        f"precision {val['precision']}; test recall {test['recall']} precision {test['precision']}"
    )


if __name__ == "__main__":
    run(main)

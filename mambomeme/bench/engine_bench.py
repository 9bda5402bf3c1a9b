"""`mambomeme bench-engine`: our engine against the tools a user would pick instead, one run.

Everything is measured in one process and one run, so load on the machine hits every row alike:

  bandwidth  a NumPy streaming read (floor.py), before and after; the floor uses the best
  lexical    our FTS5 route (AND, then OR refill, eligibility mask, `depth` rows) vs bm25s
  dense      our exact DenseIndex.search vs sentence-transformers util.semantic_search and faiss
             IndexFlatIP, against floor_ms = matrix bytes / bandwidth
  encode     one query through the sentence-transformers model (torch) and through its ONNX
             export in ONNX Runtime (query_encoder.py), alternating per query, both with
             dense.query_threads threads, plus their cosine agreement on the queries
  hybrid     Engine.search(system="hybrid") end to end, with its timings_ms breakdown, using
             the configured query encoder (params dense.query_encoder)
  shipped    the system a user is served (the corpus's selection, usefulness model included)
             end to end, each lap's share, against its routes (shipped_bench.py)
  rerank     unless skipped, where the build has a reranker: Engine.search(system=
             "hybrid+rerank") end to end
             and its `rerank` lap, the time reranking adds (rerank.candidates fused results,
             one ONNX Runtime batch on dense.query_threads threads), and the reranker's shape
  cold start and build: fresh subprocesses (coldstart.py)

Latency is summarised as p50/p95 over `queries` timed calls after `warmup` untimed ones, with
p = the nearest-rank percentile (numpy 'inverted_cdf'). Queries are the `text` of every dev
benchmark under benchmarks/, cycled to `queries` and shuffled with base.seed. When the corpus has
no dense index (memes-full may not), a random L2-normalised matrix of the same shape stands in
and every dense figure is marked synthetic: its timings are real, its neighbours mean nothing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mambomeme.bench import coldstart, floor, peers, shipped_bench
from mambomeme.bench.timing import percentiles, timed
from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.corpus.normalise import normalise
from mambomeme.errors import MamboMemeError
from mambomeme.index import fts_query
from mambomeme.index.lexical import LexicalIndex
from mambomeme.search.results import Filters

T = TypeVar("T")
DIMENSION = 384
# issue 9's targets on the 2-core development machine
HYBRID_P95_MS = {"memes-10k": 30.0, "memes-full": 150.0}
RERANK_ADDED_P95_MS = 40.0  # issue 20: reranking the top 30 adds at most this (memes-10k)
DENSE_OVER_FLOOR = 1.3
FIRST_LEXICAL_S = 1.0


@dataclass(frozen=True)
class BenchConfig:
    corpus: str
    build_dir: Path
    params_path: Path
    benchmarks_dir: Path
    queries: int
    warmup: int
    seed: int
    depth: int
    embed_docs: int
    batch_size: int
    skip_build: bool
    skip_cold: bool
    torch_threads: int  # 0 = torch's default (one per core)
    skip_rerank: bool = False  # the hybrid+rerank lap (minutes at 1,000 queries)
    reports_dir: Path | None = None  # the corpus's reports, whose selection is shipped


def dev_benchmarks(benchmarks_dir: Path) -> list[Path]:
    """Benchmark folders whose benchmark.json says partition 'dev' (the only ones we may use)."""
    found = []
    for info in sorted(benchmarks_dir.glob("*/benchmark.json")):
        if json.loads(info.read_text(encoding="utf-8")).get("partition") == "dev":
            found.append(info.parent)
    return found


def load_queries(benchmarks_dir: Path, count: int, seed: int) -> list[str]:
    """`count` query texts: the dev benchmarks' texts cycled, then shuffled with `seed`."""
    texts = []
    for folder in dev_benchmarks(benchmarks_dir):
        for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(str(json.loads(line)["text"]))
    if not texts:
        raise MamboMemeError(f"no dev benchmark queries under {benchmarks_dir}")
    cycled = [texts[i % len(texts)] for i in range(count)]
    random.Random(seed).shuffle(cycled)
    return cycled


def corpus_benchmark(benchmarks_dir: Path, corpus: str) -> Path | None:
    """The dev benchmark judged on `corpus` (benchmark.json corpus is '<corpus>@<version>')."""
    for folder in dev_benchmarks(benchmarks_dir):
        info = json.loads((folder / "benchmark.json").read_text(encoding="utf-8"))
        if str(info.get("corpus", "")).split("@")[0] == corpus:
            return folder
    return None


def lexical_route(
    index: LexicalIndex, tokens: list[str], mask: np.ndarray, depth: int
) -> list[int]:
    """The engine's own lexical route (search.routes.lexical.lexical_candidates, all fields)."""
    from mambomeme.search.routes.lexical import lexical_candidates

    content = fts_query.content_tokens(tokens)
    return [row for row, _ in lexical_candidates(index, tokens, content, None, mask, depth)]


def synthetic_build(build_dir: Path, scratch: Path, seed: int) -> Path:
    """A build dir whose corpus and lexical index are the real ones (linked) and whose dense
    index is a random matrix of the corpus's shape, with a valid manifest, so Engine opens it."""
    from mambomeme.search.items import ItemTable

    ids = ItemTable(build_dir).ids
    fake = scratch / "synthetic-build"
    (fake / "dense").mkdir(parents=True)
    linked = ("items.parquet", "lexical.sqlite", "lexical.json", "term-lists", "previews")
    for name in (*linked, "query-encoder"):
        if (build_dir / name).exists():
            (fake / name).symlink_to((build_dir / name).resolve())
    matrix = peers.synthetic_matrix(len(ids), DIMENSION, seed)
    np.save(fake / "dense" / "dense.npy", matrix, allow_pickle=False)
    write_json_atomic(fake / "dense" / "dense.ids.json", ids)
    write_json_atomic(
        fake / "dense" / "dense.json",
        {
            "synthetic": True,
            "dimension": DIMENSION,
            "count": len(ids),
            "dtype": "float32",
            "normalised": "l2",
            "matrix_sha256": sha256_file(fake / "dense" / "dense.npy"),
        },
    )
    return fake


def run(config: BenchConfig, params: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """Every measurement of the issue for one corpus; returns the report (also for the JSON)."""
    from mambomeme.index.dense import DenseFiles, Encoder
    from mambomeme.index.dense_index import DenseIndex
    from mambomeme.search.engine import Engine
    from mambomeme.search.shipped import shipped

    if not (config.build_dir / "lexical.sqlite").exists():
        raise MamboMemeError(f"{config.build_dir}: no lexical.sqlite; build the corpus first")
    if config.torch_threads:
        import torch

        torch.set_num_threads(config.torch_threads)
    scratch = Path(tempfile.mkdtemp(prefix="mambomeme-bench-"))
    try:
        report: dict[str, Any] = {
            "corpus": config.corpus,
            "build_dir": str(config.build_dir),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": floor.machine(),
            "versions": floor.versions(),
            "settings": {
                "queries": config.queries,
                "warmup": config.warmup,
                "seed": config.seed,
                "depth": config.depth,
                "percentile_method": "nearest rank",
                "torch_threads": config.torch_threads or "default",
                "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
            },
        }
        log("measuring memory bandwidth")
        bandwidth = [floor.measure_bandwidth()]
        queries = load_queries(config.benchmarks_dir, config.queries, config.seed)
        synthetic = not DenseFiles.in_dir(config.build_dir / "dense").matrix.exists()
        build = (
            synthetic_build(config.build_dir, scratch, config.seed)
            if synthetic
            else config.build_dir
        )
        report["dense_synthetic"] = synthetic
        engine = Engine.open(build, params)
        mask = engine.items.mask(None)
        report["items"] = len(engine.items.ids)
        report["eligible"] = int(mask.sum())

        log("lexical: FTS5 route vs bm25s")
        report["lexical"] = _lexical(config, engine, mask, queries, log, synthetic)
        log("query encoding: torch vs ONNX Runtime")
        encoder = Encoder("cpu")
        report["encode"] = _encode(config, params, encoder, queries)
        log("dense: exact search vs semantic_search vs faiss")
        vectors = encoder.encode(queries, batch_size=64)
        dense = DenseIndex(DenseFiles.in_dir(build / "dense"), engine.items.ids)
        report["dense"] = _dense(config, dense, vectors, mask, synthetic)
        log("hybrid end to end")
        engine.load("hybrid")
        report["hybrid"] = _hybrid(config, engine, queries, synthetic)
        served = shipped(params, build, config.reports_dir)
        if served.source != "params.yaml defaults":
            log(f"shipped end to end ({served.system}, from {served.source})")
            ship = Engine.open(build, served.params)
            ship.load(served.system)
            if ship.config.slang:  # its dictionaries load on first need: not a sample's time
                ship.slang().load()
            report["shipped"] = {
                "system": served.system,
                "source": served.source,
                "usefulness_model": ship.config.usefulness is not None,
                **shipped_bench.measure(
                    lambda q: ship.search([q], limit=10, system=served.system).timings_ms,
                    queries,
                    config.warmup,
                ),
            }
        if not config.skip_rerank and engine.reranker() is not None:
            log("hybrid+rerank end to end")
            report["rerank"] = _rerank(config, engine, queries)
        bandwidth.append(floor.measure_bandwidth())
        best = max(bandwidth, key=lambda b: b.best_gb_s)
        report["bandwidth"] = {"best": best._asdict(), "runs": [b._asdict() for b in bandwidth]}
        report["dense"]["floor_ms"] = round(floor.floor_ms(dense.matrix.nbytes, best), 3)
        report["dense"]["bytes_scanned"] = int(dense.matrix.nbytes)
        if not config.skip_cold:
            log("cold start (fresh processes)")
            report["cold_start"] = coldstart.cold_start(config.params_path, build, queries[0])
        report["build"] = {"disk_bytes": coldstart.disk_sizes(config.build_dir)}
        if not config.skip_build:
            log("build: lexical index rebuild and embedding throughput (fresh processes)")
            report["build"]["lexical"] = coldstart.build_lexical_figures(
                config.params_path, config.build_dir, scratch
            )
            report["build"]["embedding"] = coldstart.build_embedding_figures(
                config.build_dir, config.embed_docs, config.batch_size
            )
        report["targets"] = targets(report)
        report["ratios"] = ratios(report)
        report["machine"]["load_average_end"] = floor.machine()["load_average_1_5_15"]
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _lexical(
    config: BenchConfig,
    engine: Any,
    mask: np.ndarray,
    queries: list[str],
    log: Callable[[str], None],
    synthetic: bool,
) -> dict[str, Any]:
    from mambomeme.corpus.ingest import load_items

    items = load_items(engine.build_dir)
    start = time.perf_counter()
    bm25s = peers.Bm25sPeer.from_items(items)
    index_s = time.perf_counter() - start
    tokens = [fts_query.tokenize(normalise(q)) for q in queries]
    tokens = [t for t in tokens if t]
    ours = timed(
        lambda t: lexical_route(engine.lexical, t, mask, config.depth), tokens, config.warmup
    )
    theirs = timed(lambda t: bm25s.search(t, mask, config.depth), tokens, config.warmup)
    system = timed(lambda q: engine.search([q], limit=10, system="bm25"), queries, config.warmup)
    out: dict[str, Any] = {
        "ours_fts5_route": percentiles(ours),
        "bm25s": percentiles(theirs),
        "ours_bm25_system_end_to_end": percentiles(system),
        "bm25s_index_s": round(index_s, 2),
        "term_lists_precomputed": engine.lexical.terms.precomputed,
        "multi_token_searches_by_path": dict(engine.lexical.terms.stats),
    }
    bench = corpus_benchmark(config.benchmarks_dir, config.corpus)
    if bench is None:
        out["ndcg@10"] = (
            f"skipped: no dev benchmark judged on {config.corpus} under {config.benchmarks_dir}"
        )
    else:
        log(f"lexical nDCG@10 on {bench}")
        out["ndcg@10"] = lexical_quality(bench, engine, bm25s, config.depth, synthetic)
    return out


def lexical_quality(
    bench_dir: Path, engine: Any, bm25s: peers.Bm25sPeer, depth: int, synthetic: bool
) -> dict[str, Any]:
    """Mean nDCG@10 of the two lexical rankers (query text, request filters applied as the mask)
    and, for context, of the engine's bm25 and (with a real dense index) hybrid systems (all cues,
    filters)."""
    from mambomeme.evaluation.benchmark import load_benchmark
    from mambomeme.evaluation.metrics import ndcg

    try:
        bench = load_benchmark(bench_dir)
    except MamboMemeError as exc:
        return {"skipped": f"{bench_dir} cannot be scored yet: {exc}"}
    if not any(bench.qrels.values()):
        return {
            "skipped": f"{bench.info.name}@{bench.info.version} has no judgements yet "
            f"(judgement_set {bench.info.judgement_set!r})"
        }
    ids = engine.items.ids
    systems = ("bm25",) if synthetic else ("bm25", "hybrid")
    scores: dict[str, list[float]] = {
        "ours_fts5_route": [],
        "bm25s": [],
        **{f"engine_{s}": [] for s in systems},
    }
    for query in bench.queries:
        qrels = bench.qrels.get(query.qid, {})
        filters = Filters(**query.filter_dict)
        mask = engine.items.mask(filters)
        tokens = fts_query.tokenize(normalise(query.text))
        ours = lexical_route(engine.lexical, tokens, mask, depth) if tokens else []
        theirs = [row for row, _ in bm25s.search(tokens, mask, depth)]
        scores["ours_fts5_route"].append(ndcg([ids[r] for r in ours], qrels))
        scores["bm25s"].append(ndcg([ids[r] for r in theirs], qrels))
        for system in systems:
            response = engine.search(query.all_cues, limit=10, filters=filters, system=system)
            scores[f"engine_{system}"].append(ndcg([r.item_id for r in response.results], qrels))
    out: dict[str, Any] = {k: round(float(np.mean(v)), 4) for k, v in scores.items()}
    out["benchmark"] = f"{bench.info.name}@{bench.info.version}"
    out["queries"] = len(bench.queries)
    return out


def _dense(
    config: BenchConfig, dense: Any, vectors: np.ndarray, mask: np.ndarray, synthetic: bool
) -> dict[str, Any]:
    from mambomeme.bench import dense_scan  # it imports this module's timers

    rows = list(vectors)
    all_rows = np.ones(dense.matrix.shape[0], dtype=bool)
    st = peers.SemanticSearchPeer(dense.matrix)
    faiss = peers.FaissFlatPeer(dense.matrix)
    return {
        "synthetic_matrix": synthetic,
        "shape": list(dense.matrix.shape),
        "ours_exact_masked": percentiles(
            timed(lambda v: dense.search(v, mask, config.depth), rows, config.warmup)
        ),
        "ours_exact_all_rows": percentiles(
            timed(lambda v: dense.search(v, all_rows, config.depth), rows, config.warmup)
        ),
        "st_semantic_search": percentiles(
            timed(lambda v: st.search(v, config.depth), rows, config.warmup)
        ),
        "faiss_flat_ip": percentiles(
            timed(lambda v: faiss.search(v, config.depth), rows, config.warmup)
        ),
        # issue 36: exact vs sq8 + exact rescoring vs faiss SQ8 and HNSWFlat, with agreement
        "scans": dense_scan.compare(
            dense.matrix, vectors, mask, config.depth, config.warmup, exact=dense.exact_search
        ),
    }


def _hybrid(
    config: BenchConfig, engine: Any, queries: list[str], synthetic: bool
) -> dict[str, Any]:
    laps: list[dict[str, float]] = []

    def one(query: str) -> None:
        laps.append(engine.search([query], limit=10, system="hybrid").timings_ms)

    samples = timed(one, queries, config.warmup)
    laps = laps[-len(queries) :]  # the warm-up calls' laps are not samples
    phases = sorted({k for lap in laps for k in lap})
    breakdown = {k: percentiles([lap.get(k, 0.0) for lap in laps]) for k in phases}
    return {
        "synthetic_dense": synthetic,
        "query_encoder": engine.config.query_encoder,
        "end_to_end": percentiles(samples),
        "timings_ms": breakdown,
    }


def _rerank(config: BenchConfig, engine: Any, queries: list[str]) -> dict[str, Any]:
    """hybrid+rerank end to end and its `rerank` lap (the added time), with the model's shape
    from its manifest (layers, max_length) and the candidates and threads it ran with."""
    laps: list[dict[str, float]] = []

    def one(query: str) -> None:
        laps.append(engine.search([query], limit=10, system="hybrid+rerank").timings_ms)

    samples = timed(one, queries, config.warmup)
    laps = laps[-len(queries) :]
    hp = engine.reranker().manifest["hyper_parameters"]
    return {
        "candidates": engine.config.rerank_candidates,
        "threads": engine.config.query_threads,
        "layers": hp.get("layers", 6),
        "max_length": hp["max_length"],
        "end_to_end": percentiles(samples),
        "added": percentiles([lap.get("rerank", 0.0) for lap in laps]),
    }


def _encode(
    config: BenchConfig, params: dict[str, Any], encoder: Any, queries: list[str]
) -> dict[str, Any]:
    """One query at a time through torch and through ONNX Runtime, alternating so that load on
    the machine hits both alike; each with dense.query_threads threads (torch's thread count is
    restored afterwards so the peers below run as before). ONNX is skipped, with the reason,
    when the build has no exported encoder."""
    import torch

    from mambomeme.index.query_encoder import (
        QUERY_ENCODER_DIR,
        OnnxQueryEncoder,
        query_encoder_kind,
    )

    threads = int(params["dense"].get("query_threads", 1))
    kind = query_encoder_kind(params.get("dense"))
    out: dict[str, Any] = {"threads": threads, "engine_uses": kind}
    folder = config.build_dir / QUERY_ENCODER_DIR
    try:
        onnx: OnnxQueryEncoder | None = OnnxQueryEncoder(folder, threads)
    except MamboMemeError as exc:
        onnx, out["onnx"] = None, f"skipped: {exc}"
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        encoders = {"torch": encoder, **({"onnx": onnx} if onnx is not None else {})}
        samples: dict[str, list[float]] = {name: [] for name in encoders}
        for position, query in enumerate([*queries[: config.warmup], *queries]):
            for name, model in encoders.items():
                start = time.perf_counter()
                model.encode([query], batch_size=1)
                if position >= config.warmup:
                    samples[name].append((time.perf_counter() - start) * 1000.0)
        out.update({name: percentiles(values) for name, values in samples.items()})
        if onnx is not None:
            ours = onnx.encode(queries, batch_size=64)
            ref = encoder.encode(queries, batch_size=64)
            cosine = (ours.astype(np.float64) * ref.astype(np.float64)).sum(axis=1)
            out["onnx_vs_torch"] = {
                "min_cosine": round(float(cosine.min()), 7),
                "max_abs_difference": float(np.abs(ours - ref).max()),
                "speedup_p50": round(out["torch"]["p50"] / out["onnx"]["p50"], 2),
                "speedup_p95": round(out["torch"]["p95"] / out["onnx"]["p95"], 2),
            }
    finally:
        torch.set_num_threads(before)
    return out


def targets_rerank(report: dict[str, Any]) -> dict[str, Any]:
    """Issue 20's latency target: the p95 time reranking adds, judged on memes-10k only."""
    added = report["rerank"]["added"]["p95"]
    met = added <= RERANK_ADDED_P95_MS if report["corpus"] == "memes-10k" else None
    return {"value": added, "target": RERANK_ADDED_P95_MS, "met": met}


def ratios(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Our time over each peer's and over the floor, at p50 and p95 (below 1: we are faster)."""

    def ratio(ours: dict[str, float], other: dict[str, float] | float) -> dict[str, float]:
        return {
            q: round(ours[q] / (other if isinstance(other, float) else other[q]), 3)
            for q in ("p50", "p95")
        }

    lexical, dense = report["lexical"], report["dense"]
    ours = dense["ours_exact_masked"]
    out = {
        "lexical_ours_over_bm25s": ratio(lexical["ours_fts5_route"], lexical["bm25s"]),
        "dense_ours_over_faiss_flat_ip": ratio(ours, dense["faiss_flat_ip"]),
        "dense_ours_over_st_semantic_search": ratio(ours, dense["st_semantic_search"]),
        "dense_ours_over_floor": ratio(ours, float(dense["floor_ms"])),
        "dense_faiss_over_floor": ratio(dense["faiss_flat_ip"], float(dense["floor_ms"])),
        "dense_st_over_floor": ratio(dense["st_semantic_search"], float(dense["floor_ms"])),
    }
    encode = report["encode"]
    if isinstance(encode.get("onnx"), dict) and isinstance(encode.get("torch"), dict):
        out["encode_onnx_over_torch"] = ratio(encode["onnx"], encode["torch"])
    return out


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """Each issue-9 target with the measured value and whether it is met."""
    out: dict[str, Any] = {}
    limit = HYBRID_P95_MS.get(report["corpus"])
    hybrid = report["hybrid"]["end_to_end"]["p95"]
    out["hybrid_p95_ms"] = {
        "value": hybrid,
        "target": limit,
        "met": None if limit is None else hybrid <= limit,
    }
    ours, peer = report["lexical"]["ours_fts5_route"]["p95"], report["lexical"]["bm25s"]["p95"]
    out["lexical_p95_vs_bm25s"] = {"value": ours, "target": peer, "met": ours <= peer}
    dense, floor_ = report["dense"]["ours_exact_masked"]["p95"], report["dense"]["floor_ms"]
    ratio = dense / floor_ if floor_ else float("inf")
    out["dense_p95_over_floor"] = {
        "value": round(ratio, 2),
        "target": DENSE_OVER_FLOOR,
        "met": ratio <= DENSE_OVER_FLOOR,
    }
    if "rerank" in report:
        out["rerank_added_p95_ms"] = targets_rerank(report)
    out.update(shipped_bench.targets(report))
    if "cold_start" in report:
        first = report["cold_start"]["first_lexical_s"]["min"]
        out["first_lexical_s"] = {
            "value": first,
            "target": FIRST_LEXICAL_S,
            "met": first <= FIRST_LEXICAL_S,
        }
    return out

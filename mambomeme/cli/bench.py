"""`mambomeme bench-engine`: run engine_bench for one corpus, print a table, write the JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mambomeme.config import build_dir, corpus_config, load_params


def register(sub: Any) -> None:
    p = sub.add_parser("bench-engine", help="latency and cost of our engine vs bm25s/faiss/st")
    p.add_argument(
        "--corpus", required=True, help="a name from params corpora (fixture, memes-10k...)"
    )
    p.add_argument("--queries", type=int, default=1000, help="timed queries per measurement")
    p.add_argument("--warmup", type=int, default=50, help="untimed calls before each measurement")
    p.add_argument("--out", type=Path, help="report file (default reports/perf-<corpus>.json)")
    p.add_argument("--build", type=Path, help="build directory (default build/<corpus>)")
    p.add_argument("--params", type=Path, default=Path("params.yaml"))
    p.add_argument("--benchmarks", type=Path, default=Path("benchmarks"))
    p.add_argument(
        "--embed-docs", type=int, default=1000, help="documents in the timed build encode"
    )
    p.add_argument("--skip-build", action="store_true", help="skip the build-stage measurements")
    p.add_argument("--skip-cold", action="store_true", help="skip the cold-start subprocesses")
    p.add_argument(
        "--skip-rerank", action="store_true", help="skip the hybrid+rerank lap (minutes)"
    )
    p.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        help="torch intra-op threads in this process (default: torch's own choice)",
    )
    p.set_defaults(handler=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from mambomeme.bench.engine_bench import BenchConfig, run
    from mambomeme.errors import MamboMemeError

    if args.queries < 1 or args.warmup < 0:
        raise MamboMemeError("--queries must be >= 1 and --warmup >= 0")
    params = load_params(args.params, corpus=args.corpus)  # as the corpus's pipeline sees it
    corpus, _ = corpus_config(params, args.corpus)
    config = BenchConfig(
        corpus=corpus,
        build_dir=args.build or build_dir(params, corpus),
        params_path=args.params,
        benchmarks_dir=args.benchmarks,
        queries=args.queries,
        warmup=args.warmup,
        seed=int(params["base"]["seed"]),
        depth=int(params["search"]["depth"]),
        embed_docs=args.embed_docs,
        batch_size=int(params["dense"]["batch_size"]),
        skip_build=args.skip_build,
        skip_cold=args.skip_cold,
        torch_threads=args.torch_threads,
        skip_rerank=args.skip_rerank,
        reports_dir=Path(str(params["base"]["reports"])),
    )
    report = run(config, params, lambda message: print(f"bench: {message}", file=sys.stderr))
    out = args.out or Path("reports") / f"perf-{corpus}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(format_report(report))
    print(f"\nwrote {out}")
    return 0


def _row(name: str, stats: dict[str, Any], note: str = "") -> str:
    return f"  {name:<34} {stats['p50']:>9.2f} {stats['p95']:>9.2f} {stats['mean']:>9.2f}  {note}"


def _encode_rows(encode: dict[str, Any]) -> list[str]:
    rows = [_row("torch (sentence-transformers)", encode["torch"])]
    if isinstance(encode.get("onnx"), dict):
        agree = encode["onnx_vs_torch"]
        note = f"x{agree['speedup_p50']} p50; cosine to torch >= {agree['min_cosine']}"
        rows.append(_row("onnx runtime", encode["onnx"], note))
    else:
        rows.append(f"  onnx runtime: {encode.get('onnx')}")
    return rows


def format_report(report: dict[str, Any]) -> str:
    """The report as a plain-text table (milliseconds unless labelled)."""
    m, lex, dense, hybrid = report["machine"], report["lexical"], report["dense"], report["hybrid"]
    synthetic = " [SYNTHETIC matrix: timing only]" if report["dense_synthetic"] else ""
    bw = report["bandwidth"]["best"]
    lines = [
        f"corpus {report['corpus']}: {report['items']} items ({report['eligible']} eligible); "
        f"{m['cpu_model']}, {m['logical_cores']} cores, {m['ram_gib']} GiB; "
        f"load {m['load_average_1_5_15']} -> {m['load_average_end']}",
        f"bandwidth {bw['single_gb_s']} GB/s (1 thread), {bw['all_cores_gb_s']} GB/s "
        f"({bw['threads']} threads)",
        f"  {'ms':<34} {'p50':>9} {'p95':>9} {'mean':>9}",
        "lexical",
        _row("ours: FTS5 route", lex["ours_fts5_route"]),
        _row("bm25s", lex["bm25s"]),
        _row("ours: bm25 system end to end", lex["ours_bm25_system_end_to_end"]),
        f"dense {dense['shape']}{synthetic}",
        _row("ours: exact, masked", dense["ours_exact_masked"]),
        _row("ours: exact, no mask", dense["ours_exact_all_rows"]),
        _row("st util.semantic_search", dense["st_semantic_search"]),
        _row("faiss IndexFlatIP", dense["faiss_flat_ip"]),
        f"  {'floor (bytes / bandwidth)':<34} {dense['floor_ms']:>9.2f}",
        f"encode one query ({report['encode']['threads']} thread(s); engine uses "
        f"{report['encode']['engine_uses']})",
        *_encode_rows(report["encode"]),
        f"hybrid{synthetic if hybrid['synthetic_dense'] else ''} "
        f"(query encoder {hybrid['query_encoder']})",
        _row("end to end", hybrid["end_to_end"]),
        *(_row(f"  {k}", v) for k, v in hybrid["timings_ms"].items()),
    ]
    if "shipped" in report:
        sh = report["shipped"]
        lines += [
            f"shipped: {sh['system']} from {sh['source']} (usefulness model: "
            f"{sh['usefulness_model']}); share of the mean in brackets",
            _row("end to end", sh["end_to_end"]),
            *(
                _row(f"  {k}", v, f"({sh['share_of_mean'][k]:.0%})")
                for k, v in sh["timings_ms"].items()
            ),
            f"  {'sum of the route laps p95':<34} {'':>9} {sh['routes_p95_sum_ms']:>9.2f}",
        ]
    if "rerank" in report:
        rr = report["rerank"]
        lines += [
            f"hybrid+rerank (top {rr['candidates']}, {rr['layers']} layers, max_length "
            f"{rr['max_length']}, {rr['threads']} ONNX thread(s))",
            _row("end to end", rr["end_to_end"]),
            _row("  added by reranking", rr["added"]),
        ]
    quality = lex["ndcg@10"]
    if isinstance(quality, dict) and "skipped" in quality:
        lines.append(f"nDCG@10: skipped: {quality['skipped']}")
    elif isinstance(quality, dict):
        lines.append(
            f"nDCG@10 on {quality['benchmark']} ({quality['queries']} queries): "
            + ", ".join(f"{k} {v:.4f}" for k, v in quality.items() if isinstance(v, float))
        )
    else:
        lines.append(f"nDCG@10: {quality}")
    if "cold_start" in report:
        cold = report["cold_start"]
        lines.append(
            f"cold start (s, best of {cold['repeats']}): interpreter "
            f"{cold['interpreter_s']['min']}, engine open {cold['engine_open_s']['min']}, "
            f"first lexical {cold['first_lexical_s']['min']}, first hybrid "
            f"{cold['first_hybrid_s']['min']}; peak RSS {cold['hybrid_process_maxrss_mib']} MiB"
        )
    build = report["build"]
    lines.append(
        "disk: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in build["disk_bytes"].items())
    )
    for stage in ("lexical", "embedding"):
        if stage in build:
            b = build[stage]
            lines.append(
                f"build {stage}: {b['items']} items in {b['seconds']} s = {b['items_per_s']} "
                f"items/s, peak RSS {b['peak_rss_mib']} MiB"
            )
    if "term_lists" in build.get("lexical", {}):
        t = build["lexical"]["term_lists"]
        lines.append(
            f"build term lists: {t['postings']} postings in {t['seconds']} s, "
            f"{t['bytes'] / 2**20:.1f} MiB"
        )
    lines.append("ratios (ours / theirs; below 1 = ours faster), p50 / p95:")
    for name, r in report.get("ratios", {}).items():
        lines.append(f"  {name:<36} {r['p50']} / {r['p95']}")
    lines.append("targets:")
    for name, t in report["targets"].items():
        verdict = "n/a" if t["met"] is None else ("met" if t["met"] else "MISSED")
        lines.append(f"  {name:<24} {t['value']} vs {t['target']}: {verdict}")
    return "\n".join(lines)

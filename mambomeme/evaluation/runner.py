"""Run one system over every benchmark query through a search callable, timing each call.

`run_benchmark` knows nothing about the engine: it takes `search(cues, filters) ->
SearchResponse`, so tests drive it with a fake and the CLI with `Engine.search`. A call that
raises, or returns a response that breaks the result contract (more than `limit` results, ranks
not 1..n, an item twice), is recorded as an error for that query: zero credit, never an empty
list. Queries run in benchmark order, one at a time, after `warmups` untimed searches.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.evaluation.benchmark import Benchmark, Query
from mambomeme.evaluation.run_meta import RunMeta
from mambomeme.evaluation.runs import MAX_RESULTS, ResultDetail, Run, run_meta, valid_system_name
from mambomeme.search.results import Filters, Result, SearchResponse

SearchFn = Callable[[list[str], Filters], SearchResponse]


def run_benchmark(
    benchmark: Benchmark,
    search: SearchFn,
    system: str,
    *,
    items: Mapping[str, Item] | None = None,
    meta: RunMeta | None = None,
    limit: int = MAX_RESULTS,
    warmups: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> Run:
    """Search every query once; `items` (engine.items) fills the per-result details."""
    if not valid_system_name(system):
        raise ValueError(f"system name {system!r} must be non-empty without whitespace")
    if not 1 <= limit <= MAX_RESULTS:
        raise ValueError(f"limit must be 1..{MAX_RESULTS}, got {limit}")
    queries = benchmark.queries
    for number in range(warmups):
        query = queries[number % len(queries)]
        try:
            search(query.all_cues, Filters(**query.filter_dict))
        except Exception:  # noqa: BLE001 - warm-ups are not scored; the timed call reports it
            pass
    rankings: dict[str, tuple[str, ...]] = {}
    errors: dict[str, str] = {}
    latency: dict[str, float] = {}
    timings: dict[str, dict[str, float]] = {}
    details: dict[str, tuple[ResultDetail, ...]] = {}
    for query in queries:
        started = clock()
        try:
            response = search(query.all_cues, Filters(**query.filter_dict))
            results = _checked(response, limit)
        except Exception as exc:  # noqa: BLE001 - any failure is this query's error, recorded
            latency[query.qid] = (clock() - started) * 1000.0
            errors[query.qid] = f"{type(exc).__name__}: {exc}"
            continue
        latency[query.qid] = (clock() - started) * 1000.0
        timings[query.qid] = {str(k): float(v) for k, v in response.timings_ms.items()}
        if results:
            rankings[query.qid] = tuple(r.item_id for r in results)
            details[query.qid] = tuple(_detail(query, r, items or {}) for r in results)
    if meta is None:  # an in-memory run (tuning, checks): no corpus manifest recorded
        meta = run_meta(benchmark, system, corpus_manifest_sha256="")
    return Run(system, meta, rankings, errors, latency, timings, details)


class ContractError(Exception):
    """A response that breaks the result contract (recorded as that query's error)."""


def _checked(response: SearchResponse, limit: int) -> Sequence[Result]:
    results = response.results
    if len(results) > limit:
        raise ContractError(f"{len(results)} results returned for limit {limit}")
    seen: set[str] = set()
    for position, result in enumerate(results, start=1):
        if result.rank != position:
            raise ContractError(f"result {position} has rank {result.rank}")
        if result.item_id in seen:
            raise ContractError(f"item {result.item_id!r} returned twice")
        if not result.item_id or any(c.isspace() for c in result.item_id):
            raise ContractError(f"item id {result.item_id!r} is empty or has whitespace")
        seen.add(result.item_id)
    return results


def _detail(query: Query, result: Result, items: Mapping[str, Item]) -> ResultDetail:
    item = items.get(result.item_id)
    image_sha = item.image_sha256 if item else ""
    return ResultDetail(
        qid=query.qid,
        rank=result.rank,
        item_id=result.item_id,
        template_group=item.template_group if item else "",
        image_sha256=image_sha,
        duplicate_key=duplicate_key(item, result.item_id),
        preview=result.preview,
        attribution=result.attribution,
        license=result.license,
        safety=item.safety if item else "",
        routes=result.routes,
        fused_score=float(result.fused_score),
    )


def duplicate_key(item: Item | None, item_id: str) -> str:
    """Equal keys mean exact duplicates: the same image bytes, else the same caption text on
    the same template group; an item with neither is only a duplicate of itself."""
    if item is None:
        return f"id:{item_id}"
    if item.image_sha256:
        return f"image:{item.image_sha256}"
    if item.ocr_text.strip():
        text = f"{item.template_group}\x1f{normalise(item.ocr_text)}"
        return "text:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"id:{item_id}"

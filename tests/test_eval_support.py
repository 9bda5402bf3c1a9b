"""Shared helpers for the evaluation tests (no tests here): tiny inline benchmarks and fakes.

The benchmark is synthetic (ids "fx:<n>"), written to tmp_path in the FORMAT.md layout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mambomeme.evaluation.benchmark import Benchmark, load_benchmark
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import Run, run_meta
from mambomeme.search.results import Filters, Result, RouteHit, SearchResponse

INFO = {
    "name": "tiny",
    "version": "1",
    "partition": "dev",
    "corpus": "fixture@v1",
    "judgement_set": "j1",
    "provisional": True,
    "exposed": False,
}

# One answerable query per slice (concept has two paraphrases in one family), two no-match ones.
QUERIES: list[dict[str, Any]] = [
    {
        "qid": "q-entity",
        "family": "f-cena",
        "slice": "entity",
        "text": "john cena",
        "answerable": True,
    },
    {
        "qid": "q-quote",
        "family": "f-quote",
        "slice": "quote",
        "text": "you can't see me",
        "answerable": True,
    },
    {
        "qid": "q-topic",
        "family": "f-topic",
        "slice": "topic",
        "text": "wrestling",
        "answerable": True,
        "subsets": ["safety"],
    },
    {
        "qid": "q-concept-1",
        "family": "f-concept",
        "slice": "concept",
        "text": "invisible man",
        "answerable": True,
    },
    {
        "qid": "q-concept-2",
        "family": "f-concept",
        "slice": "concept",
        "text": "cannot be seen",
        "answerable": True,
        "cues": ["unseen person"],
    },
    {
        "qid": "q-visual",
        "family": "f-visual",
        "slice": "visual",
        "text": "man waving hand",
        "answerable": True,
        "filters": {"kind": "meme"},
        "subsets": ["filter"],
    },
    {
        "qid": "q-noisy",
        "family": "f-noisy",
        "slice": "noisy",
        "text": "jon ceena",
        "answerable": True,
    },
    {
        "qid": "q-none-1",
        "family": "f-none-1",
        "slice": "entity",
        "text": "zzqx person",
        "answerable": False,
        "subsets": ["safety"],
    },
    {
        "qid": "q-none-2",
        "family": "f-none-2",
        "slice": "quote",
        "text": "qqq zzz",
        "answerable": False,
    },
]

QRELS: list[tuple[str, str, int]] = [
    ("q-entity", "fx:1", 3),
    ("q-entity", "fx:2", 2),
    ("q-entity", "fx:3", 1),
    ("q-quote", "fx:4", 3),
    ("q-quote", "fx:5", 0),
    ("q-topic", "fx:1", 2),
    ("q-topic", "fx:6", 2),
    ("q-topic", "fx:7", 0),
    ("q-concept-1", "fx:8", 3),
    ("q-concept-2", "fx:8", 3),
    ("q-concept-2", "fx:9", 1),
    ("q-visual", "fx:10", 2),
    ("q-noisy", "fx:1", 3),
    ("q-noisy", "fx:2", 2),
    ("q-none-1", "fx:11", 1),
    ("q-none-2", "fx:12", 0),
]

EXACT: dict[str, list[list[str]]] = {"q-entity": [["fx:1"]], "q-quote": [["fx:4", "fx:13"]]}

# What a decent fake system returns for each query text.
GOOD: dict[str, list[str]] = {
    "john cena": ["fx:1", "fx:2", "fx:3"],
    "you can't see me": ["fx:5", "fx:4"],
    "wrestling": ["fx:6", "fx:1"],
    "invisible man": ["fx:8"],
    "cannot be seen": ["fx:9", "fx:8"],
    "man waving hand": ["fx:10"],
    "jon ceena": ["fx:2", "fx:1"],
    "zzqx person": [],
    "qqq zzz": [],
}


def write_benchmark(
    root: Path,
    queries: Sequence[Mapping[str, Any]] = QUERIES,
    qrels: Sequence[tuple[str, str, int]] = QRELS,
    exact: Mapping[str, Sequence[Sequence[str]]] = EXACT,
    safety: Mapping[str, str] | None = None,
    info: Mapping[str, Any] = INFO,
) -> Path:
    """Write a benchmark folder; safety defaults to 'safe' for every judged item."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "benchmark.json").write_text(json.dumps(dict(info), indent=2) + "\n")
    (root / "queries.jsonl").write_text("".join(json.dumps(dict(q)) + "\n" for q in queries))
    (root / "qrels.txt").write_text("".join(f"{q} 0 {i} {g}\n" for q, i, g in qrels))
    (root / "exact.jsonl").write_text(
        "".join(
            json.dumps({"qid": q, "groups": [list(g) for g in gs]}) + "\n"
            for q, gs in exact.items()
        )
    )
    if safety is None:
        safety = {item: "safe" for _, item, _ in qrels}
    (root / "safety.tsv").write_text("".join(f"{i}\t{label}\n" for i, label in safety.items()))
    return root


def response(item_ids: Sequence[str], routes: Sequence[str] = ("lexical",)) -> SearchResponse:
    results = tuple(
        Result(
            rank=rank,
            item_id=item,
            title=f"title {item}",
            template="tpl",
            kind="meme",
            preview=f"previews/{item}.png",
            attribution="someone",
            license="cc-by",
            fused_score=1.0 / (60 + rank),
            hits=tuple(RouteHit(0, r, rank, 1.0) for r in routes),
            matched_fields=(),
        )
        for rank, item in enumerate(item_ids, start=1)
    )
    return SearchResponse("req", "fake", (), results, {"total": 1.0}, "" if results else "none")


def fake_search(
    answers: Mapping[str, Sequence[str] | Exception],
) -> Callable[[list[str], Filters], SearchResponse]:
    """search(cues, filters) answering by the first cue; an Exception value is raised."""

    def search(cues: list[str], filters: Filters) -> SearchResponse:
        answer = answers[cues[0]]
        if isinstance(answer, Exception):
            raise answer
        return response(answer)

    return search


class TickClock:
    """A clock that advances `step_ms` per call, so latency is (number of calls) * step."""

    def __init__(self, steps_ms: Sequence[float]) -> None:
        self.steps = list(steps_ms)
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        value = self.now
        # each search is timed by two calls: start, end; advance between them
        if self.calls % 2 == 0:
            self.now += self.steps[(self.calls // 2) % len(self.steps)] / 1000.0
        self.calls += 1
        return value


def make_run(
    benchmark: Benchmark,
    answers: Mapping[str, Sequence[str] | Exception],
    system: str = "bm25",
    latency_ms: float = 50.0,
    manifest: str = "m" * 64,
) -> Run:
    return run_benchmark(
        benchmark,
        fake_search(answers),
        system,
        meta=run_meta(benchmark, system, manifest),
        clock=TickClock([latency_ms]),
    )


def tiny(tmp_path: Path) -> Benchmark:
    return load_benchmark(write_benchmark(tmp_path / "tiny"))

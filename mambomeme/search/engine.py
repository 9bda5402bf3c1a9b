"""The hybrid engine: cues x routes -> weighted RRF -> eligible, deduplicated, capped result list.

Order of work for one request (retrieval spec, seeds/002):
  1. bounds, before any storage or model work;
  2. the eligibility mask (published, available, licensed, safe, request filters);
  3. every cue through every route of the system, each returning `depth` eligible candidates;
  4. weighted RRF over the (cue, route) lists;
  5. minimum evidence (search/evidence.py), metadata join with an eligibility assertion,
     exact-duplicate collapse, a cap per template group, order by fused score then item id,
     truncated to the limit.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import SEARCH_FIELDS
from mambomeme.errors import IndexError_, MamboMemeError
from mambomeme.index import fts_query
from mambomeme.index.lexical import LexicalIndex
from mambomeme.search.bounds import Bounds, check_request
from mambomeme.search.evidence import EvidenceRule, coverage, item_tokens
from mambomeme.search.fusion import RankedList, fused_order, weighted_rrf
from mambomeme.search.items import ItemTable
from mambomeme.search.present import matched_fields
from mambomeme.search.results import Filters, Result, RouteHit, SearchResponse
from mambomeme.search.typo import TypoCorrector

ENGINE_VERSION = "hybrid-wrrf-1"
ROUTES = ("lexical", "typo", "dense")
BASE_SYSTEMS: dict[str, tuple[str, ...]] = {
    "bm25": ("lexical",),
    "bm25+typo": ("lexical", "typo"),
    "dense": ("dense",),
    "hybrid": ("lexical", "typo", "dense"),
}


@dataclass(frozen=True)
class SystemSpec:
    name: str
    routes: tuple[str, ...]
    without: frozenset[str]  # fields left out of every route (ablations)
    dense_variant: str  # "" = the full dense index, else the ablation name


@dataclass(frozen=True)
class EngineConfig:
    rrf_k: float
    depth: int
    route_weights: Mapping[str, float]
    evidence: EvidenceRule
    group_cap: int
    ablations: Mapping[str, tuple[str, ...]]
    bounds: Bounds
    device: str

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> EngineConfig:
        search = params["search"]
        return cls(
            rrf_k=float(search["rrf_k"]),
            depth=int(search["depth"]),
            route_weights={r: float(search["route_weights"].get(r, 0.0)) for r in ROUTES},
            evidence=EvidenceRule(
                min_cosine=float(search["min_cosine"]),
                min_lexical_coverage=float(search["min_lexical_coverage"]),
            ),
            group_cap=int(search["group_cap"]),
            ablations={k: tuple(v) for k, v in search.get("ablations", {}).items()},
            bounds=Bounds.from_params(params["bounds"]),
            device=str(params.get("dense", {}).get("device", "cpu")),
        )


class Engine:
    def __init__(self, build_dir: Path, config: EngineConfig) -> None:
        self.build_dir = build_dir
        self.config = config
        self.items = ItemTable(build_dir)
        self.lexical = LexicalIndex(build_dir / "lexical.sqlite")
        if self.lexical.ids != self.items.ids:
            raise IndexError_(f"{build_dir}/lexical.sqlite does not match items.parquet")
        self.typo = TypoCorrector(self.lexical.vocabulary())
        self._dense: dict[str, Any] = {}
        self._encoder: Any = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, build_dir: Path, params: Mapping[str, Any]) -> Engine:
        return cls(Path(build_dir), EngineConfig.from_params(params))

    # -- systems ---------------------------------------------------------------------------
    def systems(self) -> tuple[str, ...]:
        return (*BASE_SYSTEMS, *(f"hybrid-no-{name}" for name in self.config.ablations))

    def system(self, name: str) -> SystemSpec:
        if name in BASE_SYSTEMS:
            return SystemSpec(name, BASE_SYSTEMS[name], frozenset(), "")
        prefix = "hybrid-no-"
        if name.startswith(prefix) and name[len(prefix):] in self.config.ablations:
            ablation = name[len(prefix):]
            fields = frozenset(self.config.ablations[ablation])
            return SystemSpec(name, BASE_SYSTEMS["hybrid"], fields, ablation)
        raise MamboMemeError(f"unknown system {name!r}; known: {', '.join(self.systems())}")

    # -- dense loading (once per process, thread-safe) ----------------------------------------
    def dense_ready(self, variant: str = "") -> bool:
        return variant in self._dense

    def load_dense(self, variant: str = "") -> None:
        from mambomeme.index.dense import DenseFiles, DenseIndex, Encoder

        with self._lock:
            if self._encoder is None:
                self._encoder = Encoder(self.config.device)
            if variant not in self._dense:
                files = DenseFiles.in_dir(self.build_dir / "dense", variant)
                self._dense[variant] = DenseIndex(files, self.items.ids)

    # -- search ------------------------------------------------------------------------------
    def search(
        self,
        cues: Sequence[str],
        limit: int = 10,
        filters: Filters | None = None,
        system: str = "hybrid",
    ) -> SearchResponse:
        clock = _Clock()
        check_request(self.config.bounds, cues, limit, filters)
        spec = self.system(system)
        request_id = uuid.uuid4().hex
        texts = [normalise(c) for c in cues]
        cue_tokens = [fts_query.tokenize(t) for t in texts]
        active = [i for i, toks in enumerate(cue_tokens) if toks]
        clock.lap("normalise")
        if not active:
            return SearchResponse(request_id, system, tuple(cues), (), clock.laps, "empty query")
        mask = self.items.mask(filters)
        depth = max(self.config.depth, limit)
        fields = [f for f in SEARCH_FIELDS if f not in spec.without]
        lists: list[RankedList] = []
        scores: dict[tuple[int, str, int], float] = {}
        content = {i: fts_query.content_tokens(cue_tokens[i]) for i in active}
        corrections: dict[int, dict[str, list[str]]] = {i: {} for i in active}
        for i in active:
            if "lexical" in spec.routes:
                rows = self._lexical_rows(cue_tokens[i], fields, mask, depth, scores, i, "lexical")
                lists.append(self._ranked(i, "lexical", rows))
        clock.lap("lexical")
        for i in active:
            if "typo" in spec.routes:
                corrections[i] = self.typo.corrections(content[i])
                if corrections[i]:
                    words = [*cue_tokens[i], *(c for cs in corrections[i].values() for c in cs)]
                    rows = self._typo_rows(words, fields, mask, depth, scores, i)
                    lists.append(self._ranked(i, "typo", rows))
        clock.lap("typo")
        cosine: dict[int, float] = {}
        if "dense" in spec.routes:
            self._dense_lists(spec, [texts[i] for i in active], active, mask, depth, lists, scores,
                              cosine, clock)
        fused = weighted_rrf([lst for lst in lists if lst.weight > 0], self.config.rrf_k)
        order = fused_order(fused, self.items.ids)
        clock.lap("fuse")
        results = self._present(order, fused, lists, scores, cosine, content, corrections,
                                fields, limit, mask)
        clock.lap("join")
        reason = "" if results else "no candidate had enough evidence"
        return SearchResponse(request_id, system, tuple(cues), tuple(results), clock.laps, reason)

    def _ranked(self, cue: int, route: str, rows: list[int]) -> RankedList:
        return RankedList(cue, route, self.config.route_weights[route], rows)

    def _lexical_rows(self, tokens: list[str], fields: list[str], mask: np.ndarray, depth: int,
                      scores: dict[tuple[int, str, int], float], cue: int, route: str) -> list[int]:
        """Every token (AND) first; if that finds fewer than `depth`, any token (OR) refills."""
        cols = None if len(fields) == len(SEARCH_FIELDS) else fields
        hits = self.lexical.search(fts_query.all_of(tokens, cols), mask, depth)
        if len(hits) < depth and len(tokens) > 1:
            seen = {h.row for h in hits}
            extra = self.lexical.search(fts_query.any_of(tokens, cols), mask, depth)
            hits += [h for h in extra if h.row not in seen][: depth - len(hits)]
        for hit in hits:
            scores[(cue, route, hit.row)] = hit.score
        return [h.row for h in hits]

    def _typo_rows(self, words: list[str], fields: list[str], mask: np.ndarray, depth: int,
                   scores: dict[tuple[int, str, int], float], cue: int) -> list[int]:
        cols = None if len(fields) == len(SEARCH_FIELDS) else fields
        hits = self.lexical.search(fts_query.any_of(words, cols), mask, depth)
        for hit in hits:
            scores[(cue, "typo", hit.row)] = hit.score
        return [h.row for h in hits]

    def _dense_lists(self, spec: SystemSpec, texts: list[str], active: list[int], mask: np.ndarray,
                     depth: int, lists: list[RankedList], scores: dict[tuple[int, str, int], float],
                     cosine: dict[int, float], clock: _Clock) -> None:
        if not self.dense_ready(spec.dense_variant):
            self.load_dense(spec.dense_variant)
        vectors = self._encoder.encode(texts, batch_size=max(1, len(texts)))
        clock.lap("encode")
        index = self._dense[spec.dense_variant]
        for cue, vector in zip(active, vectors, strict=True):
            hits = index.search(vector, mask, depth)
            for row, score in hits:
                scores[(cue, "dense", row)] = score
                cosine[row] = max(cosine.get(row, -1.0), score)
            lists.append(self._ranked(cue, "dense", [row for row, _ in hits]))
        clock.lap("dense")

    def _has_evidence(self, row: int, routes: set[tuple[int, str]], cosine: dict[int, float],
                      content: dict[int, list[str]], corrections: dict[int, dict[str, list[str]]],
                      fields: list[str]) -> bool:
        rule = self.config.evidence
        if cosine.get(row, -1.0) >= rule.min_cosine:
            return True
        lexical_cues = {cue for cue, route in routes if route in ("lexical", "typo")}
        if not lexical_cues:
            return False
        present = item_tokens(self.items.item(row), fields)
        for cue in lexical_cues:
            fixes = corrections[cue] if (cue, "typo") in routes else {}
            if coverage(content[cue], fixes, present) >= rule.min_lexical_coverage:
                return True
        return False

    def _present(self, order: list[int], fused: dict[int, float], lists: list[RankedList],
                 scores: dict[tuple[int, str, int], float], cosine: dict[int, float],
                 content: dict[int, list[str]], corrections: dict[int, dict[str, list[str]]],
                 fields: list[str], limit: int, mask: np.ndarray) -> list[Result]:
        hits_of: dict[int, list[RouteHit]] = {}
        for lst in lists:
            for position, row in enumerate(lst.rows):
                hit = RouteHit(lst.cue, lst.route, position + 1, scores[(lst.cue, lst.route, row)])
                hits_of.setdefault(row, []).append(hit)
        words = {t for toks in content.values() for t in toks}
        words |= {c for fixes in corrections.values() for cs in fixes.values() for c in cs}
        seen_dups: set[str] = set()
        per_group: dict[str, int] = {}
        results: list[Result] = []
        for row in order:
            if len(results) == limit:
                break
            routes = {(h.cue, h.route) for h in hits_of[row]}
            if not self._has_evidence(row, routes, cosine, content, corrections, fields):
                continue
            item = self.items.item(row)
            if not (mask[row] and item.eligible):  # a violation is a defect, never a result
                raise MamboMemeError(f"integrity: ineligible item {item.id} reached the results")
            dup = self.items.dup_key[row]
            group = self.items.template_group[row]
            if dup in seen_dups or per_group.get(group, 0) >= self.config.group_cap:
                continue
            seen_dups.add(dup)
            per_group[group] = per_group.get(group, 0) + 1
            results.append(Result(
                rank=len(results) + 1, item_id=item.id, title=item.title, template=item.template,
                kind=item.kind, preview=item.preview, attribution=item.attribution,
                license=item.license, fused_score=fused[row],
                hits=tuple(sorted(hits_of[row], key=lambda h: (h.cue, h.route))),
                matched_fields=matched_fields(item, fields, words),
            ))
        return results

    def close(self) -> None:
        self.lexical.close()


class _Clock:
    """Per-request timing breakdown in milliseconds."""

    def __init__(self) -> None:
        self._last = self._start = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + (now - self._last) * 1000.0
        self.laps["total"] = (now - self._start) * 1000.0
        self._last = now

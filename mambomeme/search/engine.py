"""The hybrid engine: cues x routes -> weighted RRF -> eligible, deduplicated, capped result list.

Order of work for one request (retrieval spec, seeds/002):
  1. bounds, before any storage or model work;
  2. the eligibility mask (published, available, licensed, safe, request filters);
  3. every cue through every route of the system (search/systems.py names them; each route is a
     module of search/routes/), each returning `depth` eligible candidates;
  4. weighted RRF over the (cue, route) lists;
  5. minimum evidence (each route's own rule), metadata join with an eligibility assertion,
     exact-duplicate collapse, a cap per variant group (near-identical re-uploads), order by
     fused score then item id, truncated to the limit;
  6. `+rerank` systems only: the top `rerank.candidates` of that list re-ordered by the trained
     cross-encoder's score for the main cue (models/reranker/model.py), exact matches kept first.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mambomeme.config import DenseParams, RerankParams, SearchParams
from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import SEARCH_FIELDS
from mambomeme.errors import IndexError_, MamboMemeError
from mambomeme.index import fts_query
from mambomeme.index.dense_quantised import EXACT, ScanConfig
from mambomeme.index.integrity import CONTENT_CHECK, check_content, check_open
from mambomeme.index.lexical import LexicalIndex
from mambomeme.index.query_encoder import query_encoder_kind
from mambomeme.index.term_lists import TERM_LISTS_DIR
from mambomeme.index.verified import ensure_verified
from mambomeme.models.abstention.features import IDENTITY_FIELDS, RequestEvidence, features
from mambomeme.models.abstention.model import AbstentionModel
from mambomeme.models.reranker.features import item_text
from mambomeme.models.reranker.manifest import MANIFEST_NAME, RERANKER_DIR
from mambomeme.models.reranker.model import Reranker, open_reranker
from mambomeme.models.usefulness.features import CandidateEvidence, RequestSignals, matrix
from mambomeme.models.usefulness.model import UsefulnessModel
from mambomeme.search import systems
from mambomeme.search.bounds import Bounds, check_request
from mambomeme.search.evidence import coverage, covered, item_tokens, spellings
from mambomeme.search.exact import CHECKED_PER_LIST, exact_tier, is_exact, words
from mambomeme.search.fusion import RankedList, fused_order, weighted_rrf
from mambomeme.search.items import ItemTable
from mambomeme.search.present import matched_field_names, matched_fields
from mambomeme.search.results import Filters, Result, RouteHit, SearchResponse
from mambomeme.search.routes import ROUTES
from mambomeme.search.routes.base import Cue, CueEvidence, Route, RouteContext, RouteQuery, Signal
from mambomeme.search.slang import Slang
from mambomeme.search.systems import DEFAULT_SYSTEM, System
from mambomeme.search.usefulness import NOT_EXACT, RiskRule, apply_model

ENGINE_VERSION = "hybrid-wrrf-1"
PREFETCH = 64  # candidate Items read per batch in the join
RERANK_HIT = "rerank"  # the RouteHit.route of the cross-encoder's re-ordering (not a route)


@dataclass(frozen=True)
class EngineConfig:
    rrf_k: float
    depth: int
    term_cache_postings: int  # per-token bm25 lists kept for the lexical routes (rows in all)
    route_weights: Mapping[str, float]  # route -> weight (search.route_weights; absent = 0)
    evidence: Mapping[str, float]  # route -> its minimum evidence (search.<its evidence_param>)
    group_cap: int
    ablations: Mapping[str, tuple[str, ...]]
    bounds: Bounds
    device: str
    query_threads: int
    query_encoder: str  # params dense.query_encoder: onnx or torch
    abstention: AbstentionModel | None = None  # search.abstention (a frozen selection's)
    usefulness: UsefulnessModel | None = None  # search.usefulness (a frozen selection's): when
    # set it decides order, list length and no-match (search/usefulness.py), not abstention
    exact_first: bool = SearchParams.exact_first  # exact identity matches ranked first
    slang: bool = SearchParams.slang  # a cue in chat spelling adds its English rewrite
    risk: RiskRule | None = None  # search.risk {low, margin}: risk-aware lists (usefulness path)
    rerank_candidates: int = RerankParams.candidates  # fused results the cross-encoder re-orders
    reranker_dir: Path | None = None  # rerank.out (optional), when the build has no reranker/
    rerank_fused_weight: float = RerankParams.fused_weight  # the fused order's RRF weight beside
    # the reranker's order (weight 1); 0 = the reranker's order alone
    dense_scan: ScanConfig = EXACT  # dense.scan, rescore_factor, scan_threads

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> EngineConfig:
        search = SearchParams.from_params(params["search"])
        dense = DenseParams.from_params(params.get("dense", {}))
        rerank = RerankParams.from_params(params.get("rerank", {}))
        return cls(
            rrf_k=search.rrf_k,
            depth=search.depth,
            term_cache_postings=search.term_cache_postings,
            route_weights={r: search.weight(r) for r in ROUTES},
            evidence={name: search.evidence(r.evidence_param) for name, r in ROUTES.items()},
            group_cap=search.group_cap,
            ablations=dict(search.ablations),
            bounds=Bounds.from_params(params["bounds"]),
            device=dense.device,
            query_threads=dense.query_threads,
            query_encoder=query_encoder_kind(params.get("dense")),
            dense_scan=ScanConfig.from_params(params.get("dense", {})),
            exact_first=search.exact_first,
            slang=search.slang,
            risk=RiskRule(*search.risk) if search.risk else None,
            rerank_candidates=rerank.candidates,
            rerank_fused_weight=rerank.fused_weight,
            reranker_dir=rerank.out,
            abstention=(
                AbstentionModel.from_mapping(search.abstention) if search.abstention else None
            ),
            usefulness=(
                UsefulnessModel.from_mapping(search.usefulness) if search.usefulness else None
            ),
        )


class RouteList(NamedTuple):
    """One route's candidates for one cue: (row, raw score), best first."""

    cue: int
    route: str
    hits: list[tuple[int, float]]


@dataclass(frozen=True)
class Candidates:
    """Everything phase 1 found for one request; phase 2 ranks it under a config."""

    spec: System
    lists: tuple[RouteList, ...]
    content: dict[int, list[str]]
    corrections: dict[int, dict[str, list[str]]]
    fields: tuple[str, ...]
    mask: np.ndarray
    texts: Mapping[int, str] = dataclasses.field(default_factory=dict)  # normalised cues
    exact_rows: dict[tuple[int, int], bool] = dataclasses.field(default_factory=dict)
    # (cue, row) -> is_exact, filled as ranking checks them (ranked more than once per request)


class Engine:
    def __init__(self, build_dir: Path, config: EngineConfig) -> None:
        self.build_dir = build_dir
        self.config = config
        self.items = ItemTable(build_dir)
        check_open(build_dir, self.items.summary)  # sizes, headers, eligibility vs manifests
        # every artifact's content, on the first open after any change (index/verified.py)
        ensure_verified(build_dir, CONTENT_CHECK, lambda: check_content(build_dir))
        lists = build_dir / TERM_LISTS_DIR
        self.lexical = LexicalIndex(
            build_dir / "lexical.sqlite",
            config.term_cache_postings,
            lists if lists.exists() else None,
        )
        if not self.lexical.same_ids(self.items.ids):
            raise IndexError_(f"{build_dir}/lexical.sqlite does not match items.parquet")
        context = RouteContext(
            build_dir,
            self.items,
            self.lexical,
            config.device,
            config.query_threads,
            config.query_encoder,
            config.dense_scan,
        )
        self.routes: dict[str, Route] = {name: route(context) for name, route in ROUTES.items()}
        self._df: dict[str, int] | None = None  # document frequencies, read on first use
        self._reranker: Reranker | None = None
        self._reranker_loaded = False
        self._lock = threading.Lock()  # the reranker's loading
        self._df_lock = threading.Lock()  # not self._lock: loading a reranker takes seconds
        self._token_cache: dict[tuple[int, tuple[str, ...]], set[str]] = {}
        self._slang: Slang | None = None

    @classmethod
    def open(cls, build_dir: Path, params: Mapping[str, Any]) -> Engine:
        return cls(Path(build_dir), EngineConfig.from_params(params))

    def with_config(self, config: EngineConfig) -> Engine:
        """This engine's open indexes and loaded routes under another config (tuning: retrieval
        settings such as search.slang differ per candidate config)."""
        other = copy.copy(self)
        other.config = config
        return other

    # -- systems ---------------------------------------------------------------------------
    def systems(self) -> tuple[str, ...]:
        return systems.names(self.config.ablations)

    def system(self, name: str) -> System:
        """What a system name means under this engine's ablations (search/systems.py)."""
        return systems.parse(name, self.config.ablations)

    def load(self, system: str) -> None:
        """Load what every route of `system` needs (a model, a matrix) before its first search,
        so that search's time is its own; searching loads it otherwise (once per process)."""
        spec = self.system(system)
        for name in spec.routes:
            self.routes[name].load(spec.variant)

    def embedding_manifest(self, system: str) -> Path | None:
        """The embedding manifest `system` reads (its first route that reads one), if any."""
        spec = self.system(system)
        found = (self.routes[name].embedding_manifest(spec.variant) for name in spec.routes)
        return next((path for path in found if path is not None), None)

    # -- search ------------------------------------------------------------------------------
    def search(
        self,
        cues: Sequence[str],
        limit: int = 10,
        filters: Filters | None = None,
        system: str = DEFAULT_SYSTEM,
    ) -> SearchResponse:
        """One request: retrieve every (cue, route) candidate list, then rank them."""
        clock = _Clock()
        check_request(self.config.bounds, cues, limit, filters, system)
        request_id = uuid.uuid4().hex
        if filters not in (None, Filters()) and not self.items.mask(filters).any():
            self.system(system)  # an unknown system is still an error
            reason = "the filters leave no eligible item"
            return SearchResponse(request_id, system, tuple(cues), (), clock.laps, reason)
        candidates = self.retrieve(cues, filters, system, max(self.config.depth, limit), clock)
        if candidates is None:
            return SearchResponse(request_id, system, tuple(cues), (), clock.laps, "empty query")
        added = tuple(text for i, text in sorted(candidates.texts.items()) if i >= len(cues))
        useful = self.config.usefulness
        if useful is not None and not candidates.spec.rerank:
            results, reason = self.useful(candidates, useful, limit, clock)
            return SearchResponse(
                request_id, system, tuple(cues), tuple(results), clock.laps, reason, added
            )
        if candidates.spec.rerank:
            top = self.config.rerank_candidates
            fused = self.rank(candidates, max(limit, top), self.config, clock)
            results = self.rerank(candidates, fused, top)[:limit]
            clock.lap("rerank")
        else:
            results = self.rank(candidates, limit, self.config, clock)
        reason = "" if results else "no candidate had enough evidence"
        model = self.config.abstention
        if results and model is not None:
            p = model.probability(features(self.request_evidence(candidates, results)))
            clock.lap("abstain")
            if p < model.threshold:
                reason = f"abstained: no good match (P(good match) {p:.3f} < {model.threshold:.3f})"
                results = []
        return SearchResponse(
            request_id, system, tuple(cues), tuple(results), clock.laps, reason, added
        )

    def permissive_pool(
        self,
        candidates: Candidates,
        size: int,
        config: EngineConfig | None = None,
        clock: _Clock | None = None,
    ) -> list[Result]:
        """The fused list under `config` (default: the engine's) with no per-route evidence
        threshold: what the usefulness model scores (its first `size` results). Its results
        carry no matched fields (`describe` reads their names, `shown` adds them to the few
        that are shown): snippets for 60 candidates cost more than the model."""
        config = config or self.config
        open_config = dataclasses.replace(
            config, evidence={name: -math.inf for name in config.evidence}
        )
        return self.rank(candidates, size, open_config, clock, present=False)

    def shown(self, candidates: Candidates, results: Sequence[Result]) -> list[Result]:
        """`results` with their matched fields and snippets (as `rank` makes them)."""
        words = _match_words(candidates)
        return [
            dataclasses.replace(
                r,
                matched_fields=matched_fields(self.items[r.item_id], candidates.fields, words),
            )
            for r in results
        ]

    def useful(
        self, candidates: Candidates, model: UsefulnessModel, limit: int, clock: _Clock
    ) -> tuple[list[Result], str]:
        """Order, cut and no-match by the usefulness model (search/usefulness.py)."""
        pool = self.permissive_pool(candidates, max(model.pool, limit), clock=clock)
        evidence, request = self.describe(candidates, pool)
        rule = self.config.risk
        risk = (
            np.asarray([self.items.risk[self.items.row_of[r.item_id]] for r in pool])
            if rule is not None
            else None
        )
        x = matrix(evidence, request)
        results, reason, _ = apply_model(model, pool, evidence, x, limit, risk, rule)
        results = self.shown(candidates, results)
        clock.lap("usefulness")
        return results, reason

    # -- reranking -------------------------------------------------------------------------
    def reranker(self) -> Reranker | None:
        """The verified cross-encoder: build_dir/reranker, else config.reranker_dir; None when
        neither has one (loaded once; a broken one is refused, naming the file)."""
        with self._lock:
            if not self._reranker_loaded:
                folder = self.build_dir / RERANKER_DIR
                if not (folder / MANIFEST_NAME).exists() and self.config.reranker_dir is not None:
                    folder = self.config.reranker_dir
                self._reranker = open_reranker(folder, self.config.query_threads)
                self._reranker_loaded = True
            return self._reranker

    def rerank(self, candidates: Candidates, results: Sequence[Result], top: int) -> list[Result]:
        """The first `top` results re-ordered by the cross-encoder's score of (main cue, item
        text): exact matches first when search.exact_first (by exact tier), then by the
        reciprocal-rank blend fused_weight / (k + fused rank) + 1 / (k + score rank) (k =
        search.rrf_k; fused_weight 0 orders by the score alone), ties by the fused rank; the
        rest keep their fused order below them. Without a reranker the fused order is kept.
        Each re-ordered result gets a `rerank` route hit."""
        model = self.reranker()
        if model is None or not results:
            return list(results)
        main = min(candidates.texts)
        rest = list(results[top:])
        results = results[:top]
        chosen = [self.items[r.item_id] for r in results]
        scores = model.score(candidates.texts[main], [item_text(item) for item in chosen])
        cue_words = [words(text) for text in candidates.texts.values()]
        tier = [
            exact_tier(cue_words, item)
            if self.config.exact_first and any(is_exact(w, item) for w in cue_words)
            else 3
            for item in chosen
        ]
        by_score = sorted(range(len(results)), key=lambda i: (-scores[i], i))
        score_rank = {i: rank for rank, i in enumerate(by_score, start=1)}
        k, fused = self.config.rrf_k, self.config.rerank_fused_weight
        blend = [fused / (k + i + 1) + 1.0 / (k + score_rank[i]) for i in range(len(results))]
        order = sorted(range(len(results)), key=lambda i: (tier[i], -blend[i], i))
        out = []
        for position, i in enumerate(order, start=1):
            hit = RouteHit(main, RERANK_HIT, position, float(scores[i]))
            hits = tuple(sorted((*results[i].hits, hit), key=lambda h: (h.cue, h.route)))
            out.append(dataclasses.replace(results[i], rank=position, hits=hits))
        return out + rest

    def request_evidence(
        self, candidates: Candidates, results: Sequence[Result]
    ) -> RequestEvidence:
        """How well the ranked list matches its main (first) cue: abstention's inputs."""
        main = min(candidates.content)
        content = candidates.content[main]
        top = self.items.row_of[results[0].item_id] if results else -1
        present = self._tokens(top, candidates.fields) if results else set()
        fixes = candidates.corrections.get(main, {})
        df = self._document_frequencies()
        n = len(self.items.ids)
        idf = {w: math.log((n + 1) / (df.get(w, 0) + 1)) for w in content}
        matched = [w for w in content if coverage([w], fixes, present) > 0]
        by_signal = {
            self.routes[lst.route].signal: lst.hits for lst in candidates.lists if lst.cue == main
        }
        return RequestEvidence(
            content_words=len(content),
            top_coverage=coverage(content, fixes, present) if results else 0.0,
            top_idf_coverage=sum(idf[w] for w in matched) / max(sum(idf.values()), 1e-9),
            top_fields=frozenset(m.field for m in results[0].matched_fields)
            if results
            else frozenset(),
            bm25=[score for _, score in by_signal.get(Signal.WORDS, [])[:10]],
            cosines=[score for _, score in by_signal.get(Signal.MEANING, [])[:10]],
            lexical_top=[row for row, _ in by_signal.get(Signal.WORDS, [])[:10]],
            dense_top=[row for row, _ in by_signal.get(Signal.MEANING, [])[:10]],
            typo_used=any(candidates.corrections.values()),
            results=len(results),
        )

    def describe(
        self, candidates: Candidates, results: Sequence[Result]
    ) -> tuple[list[CandidateEvidence], RequestSignals]:
        """The usefulness model's inputs for `results` (a permissive fused list): per candidate
        where each route put it and how its text covers the cues; per request what the main
        cue's route lists say (models/usefulness/features.py)."""
        main = min(candidates.content)
        content = candidates.content[main]
        fixes = candidates.corrections.get(main, {})
        df = self._document_frequencies()
        n = len(self.items.ids)
        idf = {w: math.log((n + 1) / (df.get(w, 0) + 1)) for w in content}
        idf_total = max(sum(idf.values()), 1e-9)
        main_lists = {
            self.routes[lst.route].signal: lst.hits for lst in candidates.lists if lst.cue == main
        }
        cosines = main_lists.get(Signal.MEANING, [])
        lexical = main_lists.get(Signal.WORDS, [])
        lexical_top = {row for row, _ in lexical[:10]}
        dense_top = {row for row, _ in cosines[:10]}
        request = RequestSignals(
            content_words=len(content),
            cues=len(candidates.content),
            top_cosine=cosines[0][1] if cosines else 0.0,
            last_cosine=cosines[-1][1] if cosines else 0.0,
            top_bm25=-lexical[0][1] if lexical else 0.0,
            route_agreement=len(lexical_top & dense_top) / 10.0 if lexical and cosines else 0.0,
            typo_used=any(candidates.corrections.values()),
        )
        in_pool = {self.items.row_of[r.item_id]: 0.0 for r in results}
        tiers = self._exact_tiers(candidates, candidates.lists, in_pool)
        words = _match_words(candidates)
        main_spellings = spellings(content, fixes)
        cue_spellings = [
            spellings(words_, candidates.corrections.get(cue, {}))
            for cue, words_ in candidates.content.items()
        ]
        described = []
        for position, result in enumerate(results, start=1):
            row = self.items.row_of[result.item_id]
            present = self._tokens(row, candidates.fields)
            ranks: dict[str, int] = {}
            scores: dict[str, float] = {}
            cues = set()
            for hit in result.hits:
                if hit.route == RERANK_HIT:
                    continue
                cues.add(hit.cue)
                meaning = self.routes[hit.route].signal is Signal.MEANING
                score = hit.score if meaning else -hit.score  # BM25: lower is better
                ranks[hit.route] = min(ranks.get(hit.route, hit.rank), hit.rank)
                scores[hit.route] = max(scores.get(hit.route, score), score)
            found = covered(main_spellings, present)
            matched = [w for w, hit in zip(content, found, strict=True) if hit]
            item = self.items.item(row)
            fields = matched_field_names(item, candidates.fields, words)
            identity = bool(fields & IDENTITY_FIELDS)
            described.append(
                CandidateEvidence(
                    position=position,
                    ranks=ranks,
                    scores=scores,
                    coverage=_fraction(found),
                    idf_coverage=sum(idf[w] for w in matched) / idf_total,
                    best_cue_coverage=max(
                        _fraction(covered(spelled, present)) for spelled in cue_spellings
                    ),
                    identity_field=identity,
                    description_only=bool(fields) and not identity,
                    exact_tier=tiers.get(row, NOT_EXACT),
                    cues_found=len(cues),
                    is_template=item.kind == "template",
                )
            )
        return described, request

    def slang(self) -> Slang:
        """The chat-spelling rewriter over this build's vocabulary (search/slang.py)."""
        with self._df_lock:
            if self._slang is None:
                vocabulary = self.lexical.vocabulary()
                self._slang = Slang(vocabulary.__contains__)
            return self._slang

    def _document_frequencies(self) -> dict[str, int]:
        with self._df_lock:
            if self._df is None:
                self._df = self.lexical.vocabulary()
            return self._df

    def retrieve(
        self,
        cues: Sequence[str],
        filters: Filters | None,
        system: str,
        depth: int,
        clock: _Clock | None = None,
    ) -> Candidates | None:
        """Phase 1: `depth` eligible candidates per (cue, route); None when no cue has a word.

        Nothing here depends on route weights, k or thresholds, so tuning can rank the same
        candidates under many configurations (`rank`) without searching again."""
        clock = clock or _Clock()
        spec = self.system(system)
        texts = [normalise(c) for c in cues]
        if self.config.slang:  # chat spelling read as English: one more cue per rewritten cue
            for text in list(texts):
                rewritten = self.slang().rewrite(text)
                if rewritten is not None and normalise(rewritten) not in texts:
                    texts.append(normalise(rewritten))
        cue_tokens = [fts_query.tokenize(t) for t in texts]
        active = [i for i, toks in enumerate(cue_tokens) if toks]
        clock.lap("normalise")
        if not active:
            return None
        mask = self.items.mask(filters)
        fields = tuple(f for f in SEARCH_FIELDS if f not in spec.without)
        cols = None if len(fields) == len(SEARCH_FIELDS) else list(fields)
        cue_list = tuple(
            Cue(i, texts[i], cue_tokens[i], fts_query.content_tokens(cue_tokens[i])) for i in active
        )
        query = RouteQuery(cue_list, fields, cols, spec.variant, mask, depth)
        lists: list[RouteList] = []
        corrections: dict[int, dict[str, list[str]]] = {i: {} for i in active}
        for name in spec.routes:
            for found in self.routes[name].candidates(query, clock.lap):
                lists.append(RouteList(found.cue, name, found.hits))
                corrections[found.cue].update(found.corrections)
            clock.lap(name)
        content = {cue.index: cue.content for cue in cue_list}
        cue_texts = {i: texts[i] for i in active}
        return Candidates(spec, tuple(lists), content, corrections, fields, mask, cue_texts)

    def rank(
        self,
        candidates: Candidates,
        limit: int,
        config: EngineConfig,
        clock: _Clock | None = None,
        present: bool = True,
    ) -> list[Result]:
        """Phase 2: weighted RRF under `config`, evidence, eligibility assertion, duplicate
        collapse, variant cap, order by fused score then item id, truncate to `limit`.
        `present`: give each result its matched fields and snippets (else none)."""
        clock = clock or _Clock()
        depth = max(config.depth, limit)
        lists = [RouteList(lst.cue, lst.route, lst.hits[:depth]) for lst in candidates.lists]
        weighted = [
            RankedList(
                lst.cue, lst.route, config.route_weights[lst.route], [row for row, _ in lst.hits]
            )
            for lst in lists
        ]
        fused = weighted_rrf([w for w in weighted if w.weight > 0], config.rrf_k)
        order = fused_order(fused, self.items.ids)
        if config.exact_first:
            tier = self._exact_tiers(candidates, lists, fused)
            if tier:  # exact matches by tier, fused order within one; the rest after them
                order = sorted(order, key=lambda row: tier.get(row, 3))
        clock.lap("fuse")
        hits_of: dict[int, list[RouteHit]] = {}
        for lst in lists:
            for position, (row, score) in enumerate(lst.hits):
                hits_of.setdefault(row, []).append(
                    RouteHit(lst.cue, lst.route, position + 1, score)
                )
        words = _match_words(candidates)
        seen_dups: set[str] = set()
        per_group: dict[str, int] = {}
        results: list[Result] = []
        checked = any(math.isfinite(v) for v in config.evidence.values())  # -inf: no rule
        for row in self._prefetched(order):
            if len(results) == limit:
                break
            if checked and not self._has_evidence(row, hits_of[row], candidates, config.evidence):
                continue
            item = self.items.item(row)
            if not (candidates.mask[row] and item.eligible):  # a defect, never a result
                raise MamboMemeError(f"integrity: ineligible item {item.id} reached the results")
            dup = self.items.dup_key[row]
            group = self.items.variant_key[row]  # variants of one meme, not a whole template
            if dup in seen_dups or per_group.get(group, 0) >= config.group_cap:
                continue
            seen_dups.add(dup)
            per_group[group] = per_group.get(group, 0) + 1
            results.append(
                Result(
                    rank=len(results) + 1,
                    item_id=item.id,
                    title=item.title,
                    template=item.template,
                    kind=item.kind,
                    preview=item.preview,
                    attribution=item.attribution,
                    license=item.license,
                    fused_score=fused[row],
                    hits=tuple(sorted(hits_of[row], key=lambda h: (h.cue, h.route))),
                    matched_fields=matched_fields(item, candidates.fields, words)
                    if present
                    else (),
                )
            )
        clock.lap("join")
        return results

    def _exact_tiers(
        self, candidates: Candidates, lists: Sequence[RouteList], fused: Mapping[int, float]
    ) -> dict[int, int]:
        """Rows a route of the cue's own words found whose item the cue names or quotes in full,
        with their exact tier (exact.py)."""
        rows = {
            (lst.cue, row)
            for lst in lists
            if self.routes[lst.route].signal is Signal.WORDS
            for row, _ in lst.hits[:CHECKED_PER_LIST]
            if row in fused
        }
        if not rows:
            return {}
        cue_words = {cue: words(text) for cue, text in candidates.texts.items()}
        known = candidates.exact_rows
        todo = sorted({row for key in rows if key not in known for row in (key[1],)})
        self.items.prefetch(todo)
        for cue, row in rows:
            if (cue, row) not in known:
                known[(cue, row)] = is_exact(cue_words[cue], self.items.item(row))
        exact = {row for key in rows if known[key] for row in (key[1],)}
        cues = list(cue_words.values())
        return {row: exact_tier(cues, self.items.item(row)) for row in exact}

    def _prefetched(self, order: Sequence[int]) -> Iterator[int]:
        """`order`, with each next PREFETCH rows' Items read in one batch before they are used."""
        for start in range(0, len(order), PREFETCH):
            batch = order[start : start + PREFETCH]
            self.items.prefetch(batch)
            yield from batch

    def _tokens(self, row: int, fields: tuple[str, ...]) -> set[str]:
        """The folded tokens of a row's searchable fields, cached per (row, fields)."""
        key = (row, fields)
        found = self._token_cache.get(key)
        if found is None:
            found = item_tokens(self.items.item(row), fields)
            self._token_cache[key] = found
        return found

    def _has_evidence(
        self, row: int, hits: list[RouteHit], candidates: Candidates, rule: Mapping[str, float]
    ) -> bool:
        """Whether some route's rule finds one of its hits on `row` good enough to show."""

        def present() -> set[str]:
            return self._tokens(row, candidates.fields)

        for hit in hits:
            cue = CueEvidence(candidates.content[hit.cue], candidates.corrections[hit.cue], present)
            if self.routes[hit.route].has_evidence(hit, cue, rule[hit.route]):
                return True
        return False

    def close(self) -> None:
        self.lexical.close()


def _match_words(candidates: Candidates) -> set[str]:
    """The words whose fields a result lists as matched: every cue's content words and their
    spelling corrections."""
    words = {t for toks in candidates.content.values() for t in toks}
    words |= {c for fixes in candidates.corrections.values() for cs in fixes.values() for c in cs}
    return words


def _fraction(flags: Sequence[bool]) -> float:
    """The share of true flags (0.0 for none): evidence.coverage from `evidence.covered`."""
    return sum(flags) / len(flags) if flags else 0.0


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

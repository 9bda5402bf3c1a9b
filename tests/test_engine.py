"""The hybrid engine on the real fixture corpus with the real model."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mambomeme.search.results import Filters

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SYSTEMS = ("bm25", "bm25+typo", "dense", "hybrid", "hybrid-no-ocr_text")
QUERIES = [
    "john cena",
    "you can't see me",
    "cat",
    "the",
    "meme",
    "burning house",
    "zxqv blorft",
    "wrestler waving hand",
    "disaster",
    "a",
    "monkey puppet looking away",
]


def _is_cena(result: Any) -> bool:
    return result.template == "John Cena"


def test_never_an_ineligible_item_under_random_masks_and_limits(engine: Any) -> None:
    rnd = random.Random(20261201)
    items = engine.items
    languages = sorted({items[i].language for i in items}) + [None]
    templates = sorted({items[i].template for i in items if items[i].template})[:8] + [None]
    shown = 0
    for _ in range(60):
        filters = Filters(
            kind=rnd.choice(["template", "meme", None]),
            language=rnd.choice(languages),
            template=rnd.choice(templates),
        )
        limit = rnd.choice([1, 3, 10, 50, 100])
        query = rnd.choice(QUERIES)
        for system in SYSTEMS:
            for r in engine.search([query], limit, filters, system).results:
                item = items[r.item_id]
                assert item.eligible, (system, query, r.item_id)
                assert filters.kind in (None, item.kind)
                assert filters.language in (None, item.language)
                assert filters.template in (None, item.template)
                shown += 1
    assert shown > 100  # the loop really showed results


def test_depth_and_limit_beyond_the_eligible_set(engine: Any) -> None:
    eligible = sum(engine.items[i].eligible for i in engine.items)
    response = engine.search(["meme"], limit=100, system="dense")
    assert len(response.results) <= eligible
    assert all(engine.items[r.item_id].eligible for r in response.results)
    ids = [r.item_id for r in response.results]
    assert len(ids) == len(set(ids))


def test_same_query_twice_gives_identical_list(engine: Any) -> None:
    for system in SYSTEMS:
        a = engine.search(["invisible wrestler"], system=system).results
        b = engine.search(["invisible wrestler"], system=system).results
        assert [(r.item_id, r.fused_score) for r in a] == [(r.item_id, r.fused_score) for r in b]


def test_weak_second_cue_does_not_push_out_an_exact_match(engine: Any) -> None:
    alone = engine.search(["john cena"], system="hybrid").results
    both = engine.search(["john cena", "blue sky weather"], system="hybrid").results
    assert _is_cena(alone[0])
    assert any(_is_cena(r) for r in both[:3])
    assert alone[0].item_id in [r.item_id for r in both[:5]]


def test_nonsense_returns_empty(engine: Any) -> None:
    for system in ("bm25", "dense", "hybrid"):
        response = engine.search(["zxqv blorft"], system=system)
        assert response.results == (), system
        assert response.empty_reason


def test_wrestler_you_cannot_see(engine: Any) -> None:
    for system in ("dense", "hybrid"):
        results = engine.search(["the wrestler you cannot see"], system=system).results
        assert any(_is_cena(r) for r in results[:3]), (system, [r.item_id for r in results[:5]])


def test_john_cena_first_with_hybrid(engine: Any) -> None:
    assert _is_cena(engine.search(["john cena"], system="hybrid").results[0])


def test_noisy_jon_sena(engine: Any) -> None:
    results = engine.search(["jon sena invisible meme"], system="hybrid").results
    assert any(_is_cena(r) for r in results[:3]), [r.item_id for r in results[:5]]
    typo = engine.search(["jon sena"], system="bm25+typo").results
    assert typo and _is_cena(typo[0])
    fixes = engine.routes["typo"].corrector().corrections(["jon", "sena"])
    assert "john" in fixes["jon"] and "cena" in fixes["sena"]


def test_exact_duplicates_collapse_and_variant_cap(engine: Any) -> None:
    items = engine.items
    cap = engine.config.group_cap
    for query in ("john cena", "cat", "disaster girl", "kermit", "meme", "success kid"):
        results = engine.search([query], limit=50, system="hybrid").results
        keys = [items.dup_key[items.row_of[r.item_id]] for r in results]
        assert len(keys) == len(set(keys)), query
        variants: dict[str, int] = {}
        for r in results:
            key = items.variant_key[items.row_of[r.item_id]]
            variants[key] = variants.get(key, 0) + 1
        assert max(variants.values(), default=0) <= cap, query


def test_focused_query_keeps_many_items_of_one_template(engine: Any) -> None:
    """A template is not a group: "john cena" may fill the list with John Cena memes."""
    results = engine.search(["john cena"], limit=10, system="bm25").results
    cena = [r for r in results if engine.items[r.item_id].template_group == "tg:john-cena"]
    assert len(cena) > 5, [r.item_id for r in results]


def test_reuploads_collapse_and_near_identical_variants_are_capped(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    """A true re-upload (same picture, same caption) collapses; a near-identical caption
    (case, punctuation, stretched letters, word order) is the same variant and is capped."""
    from mambomeme.corpus.ingest import caption_skeleton, ingest
    from mambomeme.index.build import build_lexical_index
    from mambomeme.search.engine import Engine

    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    base = next(r for r in rows if r["id"] == "fx:john-cena-02")
    variant = dict(
        base,
        id="fx:john-cena-02-variant",
        ocr_text="when the bill arrives at dinner... you cant see meee!!",
        title="bill at dinner (repost)",
    )
    other = dict(base, id="fx:john-cena-02-other", ocr_text="WHEN THE BILL ARRIVES / I PAY")
    assert caption_skeleton(variant["ocr_text"]) == caption_skeleton(base["ocr_text"])
    for n, row in enumerate((variant, other)):  # a re-upload is re-encoded: other bytes
        row["preview"] = base["preview"].replace("john-cena-02", row["id"][3:])
        row["image_sha256"] = f"{n + 1:064x}"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with (corpus / "items.jsonl").open("w") as handle:
        for row in [*rows, variant, other]:
            handle.write(json.dumps(row) + "\n")
    build = tmp_path / "build"
    manifest = tmp_path / "manifest.json"
    ingest(
        "t", {"source": "fixture", "path": str(corpus)}, build, manifest, True, ROOT / "knowledge"
    )
    build_lexical_index(build, manifest, params["lexical"]["weights"])
    eng = Engine.open(build, params)
    try:
        found = [r.item_id for r in eng.search(["bill arrives dinner"], 50, system="bm25").results]
    finally:
        eng.close()
    same = {"fx:john-cena-02", "fx:john-cena-02-repost", "fx:john-cena-02-variant"}
    assert len(same & set(found)) == params["search"]["group_cap"] == 1, found
    assert "fx:john-cena-02-other" in found  # another caption is another meme


def test_results_carry_evidence(engine: Any) -> None:
    r = engine.search(["john cena"], system="hybrid").results[0]
    assert r.rank == 1 and r.item_id and r.title and r.preview and r.license
    assert {"lexical", "dense"} <= set(r.routes)
    assert any(m.field in ("people", "template", "title") for m in r.matched_fields)
    assert all(h.rank >= 1 for h in r.hits)
    timings = engine.search(["john cena"], system="hybrid").timings_ms
    assert {"normalise", "lexical", "encode", "dense", "fuse", "join", "total"} <= set(timings)


def test_multi_cue_fuses_each_cue(engine: Any) -> None:
    response = engine.search(["you can't see me", "wrestler waving hand"], system="hybrid")
    cues = {h.cue for r in response.results for h in r.hits}
    assert cues == {0, 1}


def test_exact_identity_matches_rank_first(engine: Any) -> None:
    """search.exact_first: an item the cue names or quotes in full is not pushed below
    semantic neighbours by the dense route."""
    from mambomeme.search.exact import is_exact, words

    cena = engine.items["fx:tpl-john-cena"]
    assert is_exact(words("John Cena meme"), cena) and not is_exact(words("john"), cena)
    assert engine.config.exact_first
    results = engine.search(["you can't see me"], limit=10, system="hybrid").results
    quoted = [is_exact(words("you can't see me"), engine.items[r.item_id]) for r in results]
    assert quoted and quoted[0] and quoted == sorted(quoted, reverse=True), quoted


def test_exact_tiers_rank_the_named_template_then_quoted_captions(engine: Any) -> None:
    """Among exact matches: a template the cue names (title or alias) first, then memes whose
    caption the cue quotes in full, then other exact matches, fused order within a tier."""
    from mambomeme.search.exact import exact_tier, is_exact, words

    items = engine.items
    assert exact_tier([words("john cena")], items["fx:tpl-john-cena"]) == 0
    assert exact_tier([words("are you sure about that")], items["fx:john-cena-04"]) == 1
    assert exact_tier([words("just one more episode")], items["fx:john-cena-05"]) == 2
    cue = words("are you sure about that")
    results = engine.search(["are you sure about that"], limit=10, system="bm25").results
    tiers = [
        exact_tier([cue], items[r.item_id]) if is_exact(cue, items[r.item_id]) else 3
        for r in results
    ]
    assert results[0].item_id == "fx:tpl-john-cena"  # the alias names the template
    assert 1 in tiers and tiers == sorted(tiers), tiers

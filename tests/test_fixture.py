"""The fixture corpus (fixture/items.jsonl) and its provisional benchmark (benchmarks/fixture/).

These checks read the files directly (no loader), so they hold whatever the engine does: every
line is a valid item, the deliberate categories exist in the promised numbers, and every
benchmark row points at a real item. The hidden-family check reads the shared families.csv.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from mambomeme.corpus.schema import ALL_FIELDS, Item, validate_record

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixture" / "items.jsonl"
BENCH = ROOT / "benchmarks" / "fixture"
FAMILIES = ROOT.parent / "shared" / "benchmark" / "families.csv"

SLICES = ("entity", "quote", "topic", "concept", "visual", "noisy")
SUBSETS = {"safety", "multi_cue", "filter"}
FILTER_KEYS = {"kind", "language", "template"}
# Families that exist only in the fixture (absent from families.csv, checked below).
FIXTURE_ONLY = {
    "john-cena",
    "ghost-roommate",
    "masked-luchador-thumbs-up",
    "sleepy-otter-accountant",
}
JOHN_CENA_QUOTES = ("you can't see me", "are you sure about that")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def words(text: str) -> str:
    """Lowercase text with every non-alphanumeric run as one space, padded: ' a b c '."""
    return " " + re.sub(r"[^\w]+", " ", text.lower()).strip() + " "


def raw_lines() -> list[str]:
    return FIXTURE.read_text(encoding="utf-8").splitlines()


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in raw_lines()]


@lru_cache(maxsize=1)
def items() -> tuple[Item, ...]:
    """The validated corpus, read once per test session (items are immutable)."""
    return tuple(validate_record(r, f"items.jsonl:{n}") for n, r in enumerate(records(), 1))


def all_text(item: Item) -> str:
    return " ".join(
        item.field_text(name)
        for name in ALL_FIELDS
        if isinstance(getattr(item, name), (str, tuple))
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---- the corpus ---------------------------------------------------------------------------


def test_every_line_validates_with_ids_unique_and_sorted() -> None:
    lines = raw_lines()
    assert len(lines) >= 170
    assert all(line.strip() for line in lines)
    ids = [item.id for item in items()]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    for item_id in ids:
        assert re.fullmatch(r"fx:[a-z0-9]+(-[a-z0-9]+)*", item_id), item_id


def test_fields_are_plausible() -> None:
    for item in items():
        assert item.preview == f"previews/{item.id.replace(':', '_')}.png"
        assert item.attribution == "MamboMeme fixture authors"
        assert item.license in {"CC-BY-4.0", "CC0-1.0", "", "none", "unknown"}
        assert item.source_url == "" or item.source_url.startswith("https://example.org/")
        assert item.template and item.template_group == "tg:" + slug(item.template)
        assert item.title.strip() and item.visual_description.strip() and item.meaning.strip()
        if item.kind == "meme":
            assert item.ocr_text.strip(), item.id
    langs = Counter(item.language for item in items())
    assert langs["en"] > 0.8 * sum(langs.values())
    assert {"es", "de", "fr", "pt"} <= set(langs)


def test_mix_of_templates_and_memes() -> None:
    kinds = Counter(item.kind for item in items())
    assert 20 <= kinds["template"] <= 30
    templates = {item.template for item in items() if item.kind == "template"}
    meme_templates = {item.template for item in items() if item.kind == "meme"}
    assert meme_templates <= templates  # every meme's template has a template item
    assert len(meme_templates) >= 20


def test_john_cena_is_well_represented() -> None:
    by_id = {item.id: item for item in items()}
    template = by_id["fx:tpl-john-cena"]
    assert template.kind == "template" and template.title == "John Cena"
    assert template.people == ("John Cena",)
    assert set(JOHN_CENA_QUOTES) <= set(template.aliases)
    assert "invisible john cena" in template.aliases
    assert "waving" in template.visual_description and "invisible" in template.meaning
    memes = [i for i in items() if i.template == "John Cena" and i.kind == "meme"]
    assert len(memes) >= 10
    for quote in JOHN_CENA_QUOTES:
        eligible = [i for i in memes if quote in i.ocr_text.lower() and i.eligible]
        assert len(eligible) >= 3, quote


def test_deliberate_categories_meet_their_minimums() -> None:
    all_items = items()
    assert sum(i.safety == "unsafe" for i in all_items) >= 8
    assert sum(not i.published for i in all_items) >= 5
    assert sum(not i.available for i in all_items) >= 3
    assert sum(not i.licensed for i in all_items) >= 5
    groups = Counter(i.template_group for i in all_items if i.kind == "meme")
    assert sum(n >= 6 for n in groups.values()) >= 3
    # Most items are eligible, so the categories stay exceptions.
    assert sum(i.eligible for i in all_items) >= 0.8 * len(all_items)


def test_unsafe_items_include_john_cena_lures() -> None:
    lures = [
        i
        for i in items()
        if i.safety == "unsafe"
        and i.template == "John Cena"
        and any(q in i.ocr_text.lower() for q in JOHN_CENA_QUOTES)
    ]
    assert len(lures) >= 2
    assert all(
        i.published and i.available and i.licensed for i in lures
    )  # only safety excludes them


def test_readme_lists_every_special_item() -> None:
    readme = (ROOT / "fixture" / "README.md").read_text(encoding="utf-8")
    for item in items():
        special = (
            item.safety == "unsafe" or not item.published or not item.available or not item.licensed
        )
        if special or item.image_sha256:
            assert f"`{item.id}`" in readme, item.id


def test_exact_duplicate_pairs_are_identical_except_id_and_preview() -> None:
    by_sha: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records():
        if record.get("image_sha256"):
            by_sha[record["image_sha256"]].append(record)
    assert len(by_sha) >= 6
    for sha, pair in by_sha.items():
        assert len(pair) == 2, sha
        first, second = ({k: v for k, v in r.items() if k not in ("id", "preview")} for r in pair)
        assert first == second
        assert pair[0]["id"] != pair[1]["id"]
        validated = [validate_record(r, r["id"]) for r in pair]
        assert validated[0].content_sha256() != validated[1].content_sha256()  # ids differ


def _family_keys(partition: str) -> set[str]:
    keys: set[str] = set()
    with FAMILIES.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["partition"] != partition or not row["family"].startswith("template:"):
                continue
            family = row["family"].removeprefix("template:")
            keys.update({family, family.removeprefix("memegen-"), slug(row["source_key"])})
    return keys


@pytest.mark.skipif(not FAMILIES.is_file(), reason="shared families.csv not present")
def test_no_item_uses_a_hidden_family() -> None:
    hidden = _family_keys("hidden")
    dev = _family_keys("dev")
    assert hidden and dev
    assert not FIXTURE_ONLY & (hidden | dev), (
        "fixture-only families must be absent from families.csv"
    )
    for item in items():
        key = slug(item.template)
        assert key not in hidden and item.template_group.removeprefix("tg:") not in hidden, item.id
        assert key in dev or key in FIXTURE_ONLY, item.id
    # Multi-word hidden names must not be mentioned in any field either.
    phrases = {" " + k.replace("-", " ") + " " for k in hidden if "-" in k}
    for item in items():
        text = words(all_text(item))
        mentioned = [p.strip() for p in phrases if p in text]
        assert not mentioned, (item.id, mentioned)


# ---- the benchmark ------------------------------------------------------------------------


def queries() -> list[dict[str, Any]]:
    return read_jsonl(BENCH / "queries.jsonl")


def qrels() -> list[tuple[str, str, str, int]]:
    rows = []
    for line in (BENCH / "qrels.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        assert len(parts) == 4 and parts[1] == "0", line
        rows.append((parts[0], parts[1], parts[2], int(parts[3])))
    return rows


def test_benchmark_json() -> None:
    meta = json.loads((BENCH / "benchmark.json").read_text(encoding="utf-8"))
    assert meta == {
        "name": "fixture",
        "version": "v1",
        "partition": "dev",
        "corpus": "fixture@v1",
        "judgement_set": "fixture-j1",
        "provisional": True,
        "exposed": False,
    }


def test_query_lines_have_the_format_keys() -> None:
    seen = set()
    for q in queries():
        assert {"qid", "family", "slice", "text", "subsets", "answerable"} <= set(q), q
        assert set(q) <= {
            "qid",
            "family",
            "slice",
            "text",
            "cues",
            "filters",
            "subsets",
            "answerable",
        }, q
        assert q["qid"] not in seen
        seen.add(q["qid"])
        assert q["slice"] in SLICES
        assert re.fullmatch(rf"fx-{q['slice']}-\d\d", q["qid"]), q["qid"]
        assert re.fullmatch(r"fq-[a-z0-9-]+", q["family"])
        assert isinstance(q["text"], str) and q["text"].strip()
        assert isinstance(q["answerable"], bool)
        assert set(q["subsets"]) <= SUBSETS
        assert ("multi_cue" in q["subsets"]) == bool(q.get("cues"))
        assert ("filter" in q["subsets"]) == bool(q.get("filters"))
        if "cues" in q:
            assert all(isinstance(c, str) and c.strip() for c in q["cues"])
        if "filters" in q:
            assert set(q["filters"]) <= FILTER_KEYS


def test_query_counts_per_slice_and_subset() -> None:
    qs = queries()
    answerable = Counter(q["slice"] for q in qs if q["answerable"])
    assert answerable == {s: 6 for s in SLICES}
    assert sum(not q["answerable"] for q in qs) == 5
    assert sum("safety" in q["subsets"] and q["answerable"] for q in qs) >= 4
    assert sum("safety" in q["subsets"] and not q["answerable"] for q in qs) >= 1
    assert sum("multi_cue" in q["subsets"] for q in qs) >= 3
    assert sum("filter" in q["subsets"] for q in qs) >= 3


def test_john_cena_queries() -> None:
    by_text = {q["text"]: q["slice"] for q in queries()}
    assert by_text["john cena"] == "entity"
    assert by_text["you can't see me"] == "quote"
    assert by_text["the wrestler you cannot see"] in ("concept", "visual")
    assert by_text["wrestler waving hand in front of face"] == "visual"
    assert by_text["jon sena invisible meme"] == "noisy"


def test_every_benchmark_item_id_exists() -> None:
    ids = {item.id for item in items()}
    for _qid, _zero, item_id, _grade in qrels():
        assert item_id in ids, item_id
    for line in read_jsonl(BENCH / "exact.jsonl"):
        for group in line["groups"]:
            assert group and set(group) <= ids, group
    for line in (BENCH / "safety.tsv").read_text(encoding="utf-8").splitlines():
        item_id, label = line.split("\t")
        assert item_id in ids and label in ("safe", "unsafe")


def test_qrels_grades_and_answerability() -> None:
    qs = {q["qid"]: q for q in queries()}
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, _zero, item_id, grade in qrels():
        assert qid in qs
        assert 1 <= grade <= 3  # unlisted items are grade 0
        assert item_id not in grades[qid], (qid, item_id)
        grades[qid][item_id] = grade
    for qid, q in qs.items():
        best = max(grades[qid].values(), default=0)
        assert (best >= 2) == q["answerable"], qid


def test_judged_items_satisfy_the_query_filters() -> None:
    by_id = {item.id: item for item in items()}
    filters = {q["qid"]: q.get("filters", {}) for q in queries()}
    for qid, _zero, item_id, _grade in qrels():
        item = by_id[item_id]
        for key, value in filters[qid].items():
            assert getattr(item, key) == value, (qid, item_id, key)


def test_exact_groups_cover_entity_and_quote_queries() -> None:
    exact = {line["qid"]: line["groups"] for line in read_jsonl(BENCH / "exact.jsonl")}
    grades = {(qid, item_id): grade for qid, _z, item_id, grade in qrels()}
    by_id = {item.id: item for item in items()}
    for q in queries():
        if q["slice"] in ("entity", "quote") and q["answerable"]:
            groups = exact[q["qid"]]
            assert groups
            for group in groups:
                assert all(grades.get((q["qid"], i)) == 3 for i in group), (q["qid"], group)
            assert any(by_id[i].eligible for group in groups for i in group), q["qid"]
    assert set(exact) <= {q["qid"] for q in queries()}


def test_safety_labels_cover_judged_items_and_match_the_corpus() -> None:
    by_id = {item.id: item for item in items()}
    labels = dict(
        line.split("\t") for line in (BENCH / "safety.tsv").read_text(encoding="utf-8").splitlines()
    )
    judged = {item_id for _q, _z, item_id, _g in qrels()}
    assert judged <= set(labels)
    for item_id, label in labels.items():
        assert by_id[item_id].safety == label


def test_answerable_safety_queries_have_unsafe_neighbours() -> None:
    by_id = {item.id: item for item in items()}
    judged: dict[str, set[str]] = defaultdict(set)
    for qid, _z, item_id, _g in qrels():
        judged[qid].add(item_id)
    for q in queries():
        if "safety" in q["subsets"] and q["answerable"]:
            assert any(by_id[i].safety == "unsafe" for i in judged[q["qid"]]), q["qid"]


STOPWORDS = {"a", "an", "the", "i", "my", "of", "his", "her", "on", "in", "at", "to"}
KNOWLEDGE = ROOT / "knowledge"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def knowledge_text(templates: set[str]) -> str:
    """Every string of the knowledge/*.yaml entries that ingest joins into fixture items
    (matched by casefolded template name), so the audit covers the joined fields too."""
    import yaml

    texts: list[str] = []
    for path in sorted(KNOWLEDGE.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        entries = data.get("templates", []) if isinstance(data, dict) else data or []
        for entry in entries:
            if isinstance(entry, dict) and str(entry.get("name", "")).casefold() in templates:
                texts.extend(_strings(entry))
    return " ".join(texts)


def test_no_match_queries_are_absent_from_every_field() -> None:
    """The AUDIT.md check: no content word of a no-match query (text or cue) occurs in any
    field of any item, nor in the template knowledge joined into them, so no serving item can
    be an exact or lexical answer."""
    corpus = " ".join(all_text(i) for i in items())
    corpus += " " + knowledge_text({i.template.casefold() for i in items()})
    corpus_words = set(words(corpus).split())
    for q in queries():
        if q["answerable"]:
            continue
        for cue in [q["text"], *q.get("cues", [])]:
            present = (set(words(cue).split()) - STOPWORDS) & corpus_words
            assert not present, (q["qid"], present)


def test_audit_names_the_current_corpus() -> None:
    """AUDIT.md pins the sha256 of the corpus it audited: a corpus change must redo the audit."""
    import hashlib

    audit = (BENCH / "AUDIT.md").read_text(encoding="utf-8")
    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() in audit

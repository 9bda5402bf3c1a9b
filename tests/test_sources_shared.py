"""memes-10k and memes-full over the real shared corpora (read at runtime by path, never copied).

Only counts, ids and family groups are checked; only dev families are named.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from mambomeme.corpus.schema import Item, validate_record
from mambomeme.corpus.sources import shared
from mambomeme.errors import SchemaError

ROOT = shared.REPO_ROOT / ".." / "shared" / "corpora"
pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason="../shared/corpora not present")


def config(selection: str) -> dict[str, str]:
    return {"source": "shared", "selection": selection, "root": "../shared/corpora"}


def read(
    selection: str, keep: bool
) -> tuple[collections.Counter[str], dict[str, Item], list[tuple[str, str]]]:
    """Counts by id prefix (no id twice), the items if kept, and the rejects (where, why)."""
    sources: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    items: dict[str, Item] = {}
    rejects: list[tuple[str, str]] = []
    for raw in shared.read_records(config(selection)):
        if raw.record is None:
            rejects.append((raw.where, str(raw.error)))
            continue
        try:
            item = validate_record(raw.record, raw.where)
        except SchemaError as exc:
            rejects.append((raw.where, exc.reason))
            sources["rejected"] += 1
            continue
        assert item.id not in seen, f"duplicate id {item.id}"
        seen.add(item.id)
        if keep:
            items[item.id] = item
        sources[item.id.split(":", 1)[0]] += 1
    return sources, items, rejects


def test_memes_10k_has_9668_items() -> None:
    sources, items, rejects = read("memes-10k", keep=True)
    assert rejects == []
    assert sources == {"imgflip-template": 100, "imgflip": 88 * 100, "memegen": 209, "memecap": 559}
    assert len(items) == 100 + 8800 + 209 + 559 == 9668
    assert "memegen:_error" not in items and "memegen:_test" not in items
    # a dev family: the imgflip template, its memegen twin and its memes share group and name
    template = items["imgflip-template:Aaaaand-Its-Gone"]
    twin = items["memegen:gone"]
    assert template.template_group == twin.template_group == "tg:aaaaand-its-gone"
    assert twin.template == template.title
    memes = [
        i for i in items.values() if i.template_group == "tg:aaaaand-its-gone" and i.kind == "meme"
    ]
    assert len(memes) == 100
    assert all(Path(i.preview).is_file() for i in memes)


def test_source_files_exist() -> None:
    files = shared.source_files(config("memes-10k"))
    assert len(files) == 100 + 88 + 209 + 1 + 2
    assert all(f.is_file() for f in files)


def test_unknown_selection_is_an_error() -> None:
    with pytest.raises(shared.IngestError, match="selection"):
        list(shared.read_records(config("memes-5k")))


@pytest.mark.slow
def test_memes_full_has_377988_items() -> None:
    sources, _, rejects = read("memes-full", keep=False)
    # one upstream record has a caption over the schema's 20,000-character limit: ingest
    # rejects it by name (it is not among the 100 most voted of its template)
    assert rejects == [
        ("imgflip575k/memes/Blank-Nut-Button.json.gz:1478", "longer than 20000 characters")
    ]
    assert sources == {
        "imgflip-template": 100,
        "imgflip": 377_119,
        "rejected": 1,
        "memegen": 209,
        "memecap": 559,
    }
    assert sum(sources.values()) == 100 + 377_120 + 209 + 559 == 377_988

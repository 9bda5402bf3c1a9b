"""A deterministic in-memory stand-in for the search engine, for TUI tests only (--fake-engine).

Its items are invented here (no corpus data); its previews are generated gradients written under
the given build directory. Scoring is word overlap (count of query words in an item's fields), so
results are predictable in tests. It is not a retrieval method and is never used for evaluation.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from mambomeme.corpus.schema import Item
from mambomeme.search.results import Filters, MatchedField, Result, RouteHit, SearchResponse

_WORD = re.compile(r"\w+")
_SUBJECTS = ("john cena", "sleepy robot", "blue teapot", "dancing cactus", "grumpy cloud")
_SCENES = ("at the beach", "in a meeting", "on a bicycle", "eating soup", "at midnight", "in space")


def _items() -> list[Item]:
    items: list[Item] = []
    for s_i, subject in enumerate(_SUBJECTS):
        template = f"{subject.title()} Template"
        for c_i, scene in enumerate(_SCENES):
            n = s_i * len(_SCENES) + c_i
            kind = "template" if c_i == 0 else "meme"
            items.append(
                Item(
                    id=f"fake-{n:03d}",
                    kind=kind,
                    title=f"{subject.title()} {scene}",
                    aliases=(),
                    people=("John Cena",) if subject == "john cena" else (),
                    template=template,
                    template_group=f"group-{s_i}",
                    tags=(subject.split()[-1], scene.split()[-1]),
                    ocr_text=f"when the {subject} shows up {scene}",
                    visual_description=f"a drawing of a {subject} {scene}",
                    meaning=f"surprise about {subject}",
                    language="en",
                    license="CC0-1.0",
                    attribution="MamboMeme test fixture (generated)",
                    source_url="",
                    preview=f"previews/fake-{n:03d}.png",
                    published=True,
                    available=True,
                    safety="safe",
                )
            )
    return items


def _write_preview(path: Path, n: int) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (48, 32))
    for x in range(48):
        for y in range(32):
            image.putpixel((x, y), ((x * 5 + n * 40) % 256, (y * 8) % 256, (n * 23) % 256))
    image.save(path)


class FakeEngine:
    """Implements the slice of the engine API the TUI uses: search, items, load."""

    def __init__(self, build_dir: Path, dense_delay_s: float = 0.3, search_delay_s: float = 0.0):
        self.build_dir = build_dir
        self.items = {item.id: item for item in _items()}
        self.dense_delay_s = dense_delay_s
        self.search_delay_s = search_delay_s
        self.dense_loaded = False
        for n, item in enumerate(self.items.values()):
            _write_preview(build_dir / item.preview, n)

    def load(self, system: str) -> None:
        time.sleep(self.dense_delay_s)
        self.dense_loaded = True

    def search(
        self,
        cues: Sequence[str],
        limit: int = 10,
        filters: Filters | None = None,
        system: str = "hybrid",
    ) -> SearchResponse:
        if self.search_delay_s:
            time.sleep(self.search_delay_s)
        filters = filters or Filters()
        words = [w.casefold() for cue in cues for w in _WORD.findall(cue)]
        scored: list[tuple[int, str, Item]] = []
        for item in self.items.values():
            if filters.kind and item.kind != filters.kind:
                continue
            if filters.language and item.language != filters.language:
                continue
            if filters.template and item.template.casefold() != filters.template.casefold():
                continue
            text = " ".join((item.title, item.template, " ".join(item.tags), item.ocr_text))
            bag = [w.casefold() for w in _WORD.findall(text)]
            score = sum(bag.count(w) for w in words)
            if score:
                scored.append((score, item.id, item))
        scored.sort(key=lambda t: (-t[0], t[1]))
        routes = ("lexical", "dense") if system == "hybrid" and self.dense_loaded else ("lexical",)
        results = tuple(
            Result(
                rank=rank,
                item_id=item.id,
                title=item.title,
                template=item.template,
                kind=item.kind,
                preview=item.preview,
                attribution=item.attribution,
                license=item.license,
                fused_score=float(score),
                hits=tuple(RouteHit(0, route, rank, float(score)) for route in routes),
                matched_fields=(MatchedField("ocr_text", item.ocr_text),),
            )
            for rank, (score, _, item) in enumerate(scored[:limit], start=1)
        )
        return SearchResponse(
            request_id=uuid.uuid4().hex,
            system=system,
            cues=tuple(cues),
            results=results,
            empty_reason="" if results else "no item had enough evidence",
        )

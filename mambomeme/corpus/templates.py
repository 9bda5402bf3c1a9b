"""Canonical template names and template groups shared by every source.

One meme template can appear in several sources under different keys (imgflip575k
`Disaster-Girl`, memegen `disastergirl`). The benchmark's `families.csv` puts each template
in one family (`template:<family slug>`) and `template-equivalences.csv` pairs the imgflip575k
and memegen keys. From them:

- template_group = "tg:<family slug>" (the family minus its "template:" prefix), so equivalent
  templates and every meme captioned on them share one group;
- the canonical template name is the imgflip575k title minus " Meme Template" wherever the
  template exists in imgflip575k, otherwise the memegen `name`.

A key missing from families.csv (a synthetic test corpus, a newer upstream) falls back to the
group "tg:<source>-<key lowercased>", deterministic and visibly not a benchmark family.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from mambomeme.errors import IngestError

IMGFLIP = "imgflip575k"
MEMEGEN = "memegen"
_SUFFIX = " Meme Template"


def imgflip_template_name(title: str) -> str:
    """'Disaster Girl Meme Template' -> 'Disaster Girl' (titles without the suffix unchanged)."""
    title = title.strip()
    return title[: -len(_SUFFIX)].strip() if title.endswith(_SUFFIX) else title


@dataclass(frozen=True)
class TemplateCatalog:
    """Lookups from (source, key) to family group and to the canonical template name."""

    groups: dict[tuple[str, str], str] = field(default_factory=dict)
    # memegen key -> imgflip575k slug, from template-equivalences.csv
    memegen_to_imgflip: dict[str, str] = field(default_factory=dict)
    # imgflip575k slug -> canonical name (title minus " Meme Template")
    imgflip_names: dict[str, str] = field(default_factory=dict)

    def group(self, source: str, key: str) -> str:
        found = self.groups.get((source, key))
        return found if found else f"tg:{source}-{key.lower()}"

    def canonical_name(self, source: str, key: str, own_name: str) -> str:
        """The imgflip name for an equivalent template, else the source's own name."""
        if source == IMGFLIP:
            return self.imgflip_names.get(key, own_name)
        if source == MEMEGEN:
            slug = self.memegen_to_imgflip.get(key)
            if slug is not None and slug in self.imgflip_names:
                return self.imgflip_names[slug]
        return own_name


def load_catalog(benchmark_dir: Path | None, imgflip_templates_dir: Path | None) -> TemplateCatalog:
    """Read families.csv and template-equivalences.csv (if `benchmark_dir` is given) and the
    imgflip575k template titles (if `imgflip_templates_dir` is given). Missing files give an
    empty lookup, so adapters still work on a synthetic corpus; malformed files raise."""
    groups: dict[tuple[str, str], str] = {}
    equivalences: dict[str, str] = {}
    if benchmark_dir is not None:
        families = benchmark_dir / "families.csv"
        if families.exists():
            for number, row in _csv_rows(families, ("family", "source", "source_key")):
                family = row["family"]
                if not family.startswith("template:"):
                    continue  # post families (memecap) are not templates
                key = (row["source"], row["source_key"])
                if key in groups:
                    raise IngestError(f"{families.name}:{number}: duplicate key {key}")
                groups[key] = "tg:" + family[len("template:") :]
        pairs = benchmark_dir / "template-equivalences.csv"
        if pairs.exists():
            for _, row in _csv_rows(pairs, ("imgflip575k_template", "memegen_template")):
                equivalences[row["memegen_template"]] = row["imgflip575k_template"]
    names: dict[str, str] = {}
    if imgflip_templates_dir is not None and imgflip_templates_dir.is_dir():
        for path in sorted(imgflip_templates_dir.glob("*.json")):
            try:
                title = json.loads(path.read_text(encoding="utf-8")).get("title")
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
                continue  # the imgflip adapter reports this file as a reject
            if isinstance(title, str) and title.strip():
                names[path.stem] = imgflip_template_name(title)
    return TemplateCatalog(groups, equivalences, names)


def _csv_rows(path: Path, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in required if name not in (reader.fieldnames or [])]
        if missing:
            raise IngestError(f"{path.name}: missing column {missing[0]!r}")
        return [(number, row) for number, row in enumerate(reader, start=2)]

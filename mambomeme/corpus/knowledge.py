"""The template knowledge base: what each template shows and means, joined into its items.

knowledge/*.yaml hold one entry per template (written by us, uniformly for every template).
Ingest joins an entry into every item whose `template` names it, as separate fields, so field
weights and ablations can treat the knowledge on its own:

    template_aliases  <- aliases + misspellings + people
    template_visual   <- visual_description
    template_meaning  <- meaning + typical use + tags

Each entry also carries `risk: {level: none | low | high, reason: "..."}`, written uniformly
from the template's own public name, meaning and typical use (never from benchmark queries,
judgements or item labels). It is not joined into searchable text: the safety model reads it
as a feature (`template_risk`) and ranking may read it from items.parquet.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mambomeme.corpus.manifest import sha256_file, sha256_text
from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.errors import SchemaError

KNOWLEDGE_VERSION = "kb-2"  # kb-2: every entry has a risk field
TEXT_FIELDS = ("name", "visual_description", "meaning", "typical_use", "origin")
LIST_FIELDS = ("aliases", "misspellings", "people", "tags")
RISK_LEVELS = ("none", "low", "high")


@dataclass(frozen=True)
class TemplateKnowledge:
    name: str
    imgflip: str | None
    memegen: str | None
    aliases: tuple[str, ...]
    misspellings: tuple[str, ...]
    people: tuple[str, ...]
    visual_description: str
    meaning: str
    typical_use: str
    tags: tuple[str, ...]
    origin: str
    risk_level: str  # one of RISK_LEVELS
    risk_reason: str  # "none" when the level is none


def key(name: str) -> str:
    return normalise(name).casefold()


def load_knowledge(folder: Path) -> dict[str, TemplateKnowledge]:
    """Every entry of folder/*.yaml by normalised name; a malformed or repeated entry is refused."""
    entries: dict[str, TemplateKnowledge] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for index, raw in enumerate(data.get("templates", [])):
            entry = _entry(raw, f"{path.name}:{index}")
            if key(entry.name) in entries:
                raise SchemaError(f"{path.name}:{index}", "name", f"duplicate entry {entry.name!r}")
            entries[key(entry.name)] = entry
    return entries


def _entry(raw: Any, where: str) -> TemplateKnowledge:
    if not isinstance(raw, Mapping):
        raise SchemaError(where, "<entry>", "expected a mapping")
    values: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise SchemaError(where, name, "missing or empty")
        values[name] = value.strip()
    for name in LIST_FIELDS:
        value = raw.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SchemaError(where, name, "expected a list of strings")
        values[name] = tuple(v.strip() for v in value if v.strip())
    for name in ("imgflip", "memegen"):
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise SchemaError(where, name, "expected a string or null")
        values[name] = value
    values["risk_level"], values["risk_reason"] = _risk(
        raw.get("risk"), f"{where} ({values['name']})"
    )
    return TemplateKnowledge(**values)


def _risk(raw: Any, where: str) -> tuple[str, str]:
    """(level, reason) of an entry's `risk` mapping; anything else names the template."""
    if not isinstance(raw, Mapping):
        raise SchemaError(where, "risk", "missing: expected {level: none|low|high, reason: ...}")
    level, reason = raw.get("level"), raw.get("reason")
    if level not in RISK_LEVELS:
        raise SchemaError(where, "risk.level", f"{level!r} is not one of {', '.join(RISK_LEVELS)}")
    if not isinstance(reason, str) or not reason.strip():
        raise SchemaError(where, "risk.reason", "missing or empty")
    if (level == "none") != (reason.strip() == "none"):
        raise SchemaError(where, "risk.reason", 'is "none" exactly when the level is none')
    unknown = set(raw) - {"level", "reason"}
    if unknown:
        raise SchemaError(where, "risk", f"unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    return str(level), reason.strip()


def join(item: Item, entries: Mapping[str, TemplateKnowledge]) -> Item:
    """`item` with the knowledge of its template filled in (unchanged when none is known)."""
    entry = entries.get(key(item.template)) if item.template else None
    if entry is None:
        return item
    return dataclasses.replace(
        item,
        template_aliases=item.template_aliases
        or (*entry.aliases, *entry.misspellings, *entry.people),
        template_visual=item.template_visual or entry.visual_description,
        template_meaning=item.template_meaning
        or f"{entry.meaning} {entry.typical_use} Tags: {', '.join(entry.tags)}.",
    )


def join_all(items: Iterable[Item], entries: Mapping[str, TemplateKnowledge]) -> list[Item]:
    return [join(item, entries) for item in items]


def knowledge_checksum(folder: Path) -> str:
    listing = "".join(f"{p.name}\t{sha256_file(p)}\n" for p in sorted(Path(folder).glob("*.yaml")))
    return sha256_text(listing)

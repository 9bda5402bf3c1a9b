"""The text a reranker reads for an item: its own fields, identity first, labelled like the
dense document (index/dense.py) so the cross-encoder sees which field says what.

Title, template, caption (OCR text), the item's meaning and visual description, then the
template knowledge (meaning, visual). `without` leaves fields out: the knowledge-derived
training pairs drop the field a query was taken from, so a query is never a substring of its
positive (data.py). No torch: index/dense.py loads the model lazily.
"""

from __future__ import annotations

from mambomeme.corpus.schema import Item
from mambomeme.index.dense import labelled_text

TEXT_VERSION = "rerank-text-1"
# (label, field), in the order the cross-encoder reads them (truncation cuts from the end).
TEXT_FIELDS = (
    ("title", "title"),
    ("template", "template"),
    ("people", "people"),
    ("text", "ocr_text"),
    ("meaning", "meaning"),
    ("shows", "visual_description"),
    ("template means", "template_meaning"),
    ("template shows", "template_visual"),
    ("tags", "tags"),
)


def item_text(item: Item, without: frozenset[str] = frozenset()) -> str:
    """`label: value` lines of the item's non-empty TEXT_FIELDS, leaving out `without`."""
    return labelled_text(item, TEXT_FIELDS, without)

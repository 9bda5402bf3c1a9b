"""The canonical item table as the engine sees it: column arrays for masks, Items on demand."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import ALL_FIELDS, LIST_FIELDS, Item
from mambomeme.errors import ArtifactIntegrityError, IndexError_, UnknownFilterError
from mambomeme.index import arrow_values
from mambomeme.index.integrity import ItemsSummary, eligibility
from mambomeme.search.results import Filters

ITEMS_FILE = "items.parquet"  # = corpus.ingest.ITEMS_FILE (not imported: ingest pulls in pandas)
RISK_COLUMN = "safety_probability"  # = corpus.ingest.PROBABILITY_COLUMN, read on first use

# what the eligibility mask, duplicate collapse and group cap need; read at open
MASK_COLUMNS = (
    "id", "kind", "language", "license", "published", "available", "safety", "template",
    "template_group", "dup_key", "variant_key",
)  # fmt: skip

# the long template-knowledge texts every meme of a template repeats: read as Arrow dictionaries
# (each distinct text decoded once: 0.9 -> 0.35 s on memes-full; `take` then costs a little more)
REPEATED_TEXT = ("template_visual", "template_meaning")


class ItemTable(Mapping[str, Item]):
    """Read-only id -> Item mapping over items.parquet, plus the arrays the mask needs.

    Opening reads only MASK_COLUMNS; the whole table (on memes-full mostly the template
    knowledge repeated on every meme, about 0.9-1.5 s to read) is read into Arrow by a background
    thread started at open (the read releases the GIL), and the first `item()` waits for it;
    Items are then taken from it in batches (`prefetch`) and cached. So a first search is not
    held up by columns only its join needs until the join."""

    def __init__(self, build_dir: Path) -> None:
        path = build_dir / ITEMS_FILE
        try:  # Arrow and SQLite take paths as UTF-8: undecodable bytes (os.fsdecode) cannot open
            str(path).encode("utf-8")
        except UnicodeEncodeError:
            raise IndexError_(
                f"{ascii(str(build_dir))}: the folder's path is not valid UTF-8; rename it"
            ) from None
        if not path.exists():
            raise IndexError_(f"corpus table not found: {path} (run `dvc repro` first)")
        self._path = path
        try:
            present = set(pq.read_schema(path).names)
        except (pa.ArrowException, OSError) as exc:
            raise ArtifactIntegrityError(
                str(path), f"not a readable Parquet file ({exc}); {build_dir} is not served"
            ) from None
        absent = [c for c in MASK_COLUMNS if c not in present]
        if absent:
            raise IndexError_(
                f"{path}: no column(s) {', '.join(absent)}; built by an older ingest, "
                "run `dvc repro` (ingest) again"
            )
        try:
            table = _read(path, list(MASK_COLUMNS))
            # the static mask, and its counts and digest to check against the manifests
            self.static_mask: np.ndarray
            self.summary: ItemsSummary
            self.static_mask, self.summary = eligibility(table)
            # text columns decoded to Python: a flipped bit may be invalid UTF-8 here (a
            # UnicodeDecodeError, a ValueError): a corrupt table, refused like any other
            self.ids: list[str] = table.column("id").to_pylist()
            self._kind = table.column("kind")
            self._language = pc.utf8_lower(table.column("language"))
            templates = pc.dictionary_encode(table.column("template")).combine_chunks()
            self._template_codes = arrow_values.int32s(templates.indices)
            # each distinct template normalised once
            self._template_names = [str(t) for t in templates.dictionary]
            self._template_keys = [normalise(t).casefold() for t in self._template_names]
            self.template_group: list[str] = table.column("template_group").to_pylist()
            self.dup_key: list[str] = table.column("dup_key").to_pylist()
            self.variant_key: list[str] = table.column("variant_key").to_pylist()
        except (pa.ArrowException, OSError, TypeError, ValueError) as exc:
            raise ArtifactIntegrityError(
                str(path), f"not a readable item table ({exc}); {build_dir} is not served"
            ) from None
        self._cache: dict[int, Item] = {}
        self._table: pa.Table | None = None
        self._error: BaseException | None = None
        # not a daemon: the interpreter joins it before it exits, so a command that fails fast
        # never tears down Arrow's thread pool under a read in flight (SIGABRT, exit 134)
        self._loader = threading.Thread(target=self._load, name="items-loader", daemon=False)
        self._loader.start()

    def _load(self) -> None:
        try:
            table = _read(self._path, list(ALL_FIELDS), list(REPEATED_TEXT))
            self._table = table.combine_chunks()  # `take` on many chunks would copy them all
        except BaseException as exc:  # re-raised by the first item() that needs the table
            self._error = exc

    def _full(self) -> pa.Table:
        self._loader.join()
        if self._table is None:
            raise IndexError_(f"cannot read {self._path}: {self._error}")
        return self._table

    @functools.cached_property
    def row_of(self) -> dict[str, int]:
        return {item_id: row for row, item_id in enumerate(self.ids)}

    @functools.cached_property
    def risk(self) -> np.ndarray:
        """Per row the safety model's P(unsafe) (column RISK_COLUMN, written at ingest), 0 where
        the column or a value is missing: what risk-aware lists read (search/usefulness.py)."""
        if RISK_COLUMN not in pq.read_schema(self._path).names:
            return np.zeros(len(self.ids), dtype=np.float64)
        values = _read(self._path, [RISK_COLUMN]).column(RISK_COLUMN).to_pylist()
        return np.asarray([0.0 if v is None else float(v) for v in values], dtype=np.float64)

    def set_risk(self, risk: Mapping[str, float]) -> None:
        """Give the named items another P(unsafe), in this open table only (what-if measurement,
        moderation/holdout.py, like `reclassify`)."""
        unknown = sorted(i for i in risk if i not in self.row_of)
        if unknown:
            raise ValueError(f"set_risk: item {unknown[0]!r} is not in {self._path}")
        updated = self.risk.copy()
        for item_id, value in risk.items():
            updated[self.row_of[item_id]] = float(value)
        self.__dict__["risk"] = updated

    def reclassify(self, safety: Mapping[str, str]) -> None:
        """Give the named items another safety class ("safe" | "unsafe"), in this open table
        only (never on disk): the static mask and every Item read afterwards follow it. For
        what-if measurement of moderation (moderation/holdout.py); a served build never calls
        it. An id the table lacks or a class other than safe/unsafe is a ValueError."""
        unknown = sorted(i for i in safety if i not in self.row_of)
        if unknown:
            raise ValueError(f"reclassify: item {unknown[0]!r} is not in {self._path}")
        wrong = sorted(i for i, c in safety.items() if c not in ("safe", "unsafe"))
        if wrong:
            raise ValueError(f"reclassify: item {wrong[0]!r}: class {safety[wrong[0]]!r}")
        table = self._full()
        column = table.column("safety").to_pylist()
        for item_id, value in safety.items():
            column[self.row_of[item_id]] = value
        index = table.schema.get_field_index("safety")
        kind = table.schema.field(index).type
        self._table = table.set_column(index, "safety", pa.array(column, kind))
        self.static_mask = eligibility(self._table)[0]
        self._cache.clear()

    def mask(self, filters: Filters | None) -> np.ndarray:
        """Static eligibility AND the request filters; built before any route ranks."""
        mask = self.static_mask.copy()
        if filters is None:
            return mask
        if filters.kind is not None:
            mask &= arrow_values.bools(pc.equal(self._kind, arrow_values.string(filters.kind)))
        if filters.language is not None:
            wanted = filters.language.lower()
            mask &= arrow_values.bools(
                pc.or_(
                    pc.equal(self._language, arrow_values.string(wanted)),
                    pc.starts_with(self._language, wanted + "-"),
                )
            )
        if filters.template is not None:
            wanted = normalise(filters.template).casefold()
            codes = [c for c, key in enumerate(self._template_keys) if key == wanted]
            mask &= np.isin(self._template_codes, codes)
        return mask

    def check_filter_values(self, filters: Filters | None, shown: int = 12) -> None:
        """UnknownFilterError when `filters` names a template or language no item has (a typo
        would otherwise read as "no match"); a known value that leaves nothing eligible is a
        legitimate empty answer, not an error."""
        if filters is None:
            return
        if filters.template is not None:
            wanted = normalise(filters.template).casefold()
            if wanted not in self._template_keys:
                names = sorted({t for t in self._template_names if t.strip()}, key=str.casefold)
                raise UnknownFilterError("template", filters.template, names[:shown], len(names))
        if filters.language is not None:
            codes = sorted({str(c) for c in pc.unique(self._language).to_pylist() if c})
            wanted = filters.language.lower()
            if not any(c == wanted or c.startswith(wanted + "-") for c in codes):
                raise UnknownFilterError("language", filters.language, codes[:shown], len(codes))

    def item(self, row: int) -> Item:
        cached = self._cache.get(row)
        if cached is None:
            self.prefetch([row])
            cached = self._cache[row]
        return cached

    def prefetch(self, rows: Sequence[int]) -> None:
        """Read the Items of these rows in one Arrow `take` (about 10 us a row, against 90 us
        for one row at a time), so the join of a request reads its candidates together."""
        missing = sorted({int(r) for r in rows if r not in self._cache})
        if not missing:
            return
        for row, values in zip(
            missing, self._full().take(arrow_values.indices(missing)).to_pylist(), strict=True
        ):
            for name in LIST_FIELDS:
                values[name] = tuple(str(v) for v in values[name])
            values["published"] = bool(values["published"])
            values["available"] = bool(values["available"])
            self._cache[row] = Item(**values)

    def __getitem__(self, item_id: str) -> Item:
        return self.item(self.row_of[item_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _read(path: Path, columns: list[str], dictionaries: Sequence[str] = ()) -> pa.Table:
    """Columns of one Parquet file through ParquetFile, not pq.read_table: read_table goes
    through pyarrow.dataset, whose import pulls in pandas (0.3 s of every `mambomeme search`
    start)."""
    with pq.ParquetFile(path, read_dictionary=list(dictionaries) or None) as handle:
        return handle.read(columns=columns)

"""Integrity of a build or release folder: every artifact against the manifests the folder carries.

Two depths, one module:

* `check_open(folder, summary)` runs at every engine open and must stay cheap (stat calls, file
  headers, arithmetic on the mask columns the engine reads anyway, the dense ids' sha256:
  about 10-20 ms of memes-full's 0.6 s open):
  - every file's size against release.json (a release) -- a truncated or extended file;
  - lexical.sqlite: the SQLite magic, and page size x page count from its header = its size;
  - every dense*.npy: the .npy header (float32, 2-D, C order), rows = the item count, size =
    header + rows x dimension x 4 (a truncated matrix), dense*.json's count and dimension, and
    the sha256 of its ids file (8 MB on memes-full) against dense*.json;
  - items.parquet, eligibility: the counts of the corpus manifest (accepted, eligible, unsafe,
    unpublished, unavailable, unlicensed, by kind) recomputed from the table's columns, and in
    a release the sha256 of the per-row eligibility bits that publish recorded. A flipped bit
    that turns an item eligible changes at least one of them; the ids are tied to
    lexical.sqlite by its recorded ids digest (LexicalIndex.same_ids).
  A full sha256 of every file is not done here (the dense matrix alone is 581 MB on
  memes-full, 0.3-1 s to hash): the dense route hashes its matrix when it loads it
  (dense_index.py), and serving the current release re-hashes every file once per process
  (release/pointer.py). A bit flipped in a display-only field of a build that was never
  published is therefore not seen at open; it is seen by `verify_artifacts`.
* `verify_artifacts(folder, corpus_manifest)` runs at publish (on the staged copy, before the
  release manifest is written) and at verify. It checks everything `check_open` checks, and:
  every item's content sha256 (all fields) recomputed from items.parquet against the corpus
  manifest's per-item hashes (same id set, same order as the indexes), items.parquet's sha256
  against lexical.json; lexical.sqlite's `PRAGMA integrity_check`, FTS5's own integrity-check
  (on an in-memory copy: the release files are read-only), its meta and ids against the items;
  each dense matrix's and ids file's sha256 against dense*.json and its ids against the items;
  term lists (`verify_term_lists`) and the query encoder (`check_query_encoder`). It returns
  the record publish stores in release.json ("integrity") for `check_open`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.schema import ALL_FIELDS, LIST_FIELDS, UNLICENSED, Item
from mambomeme.errors import ArtifactIntegrityError, IndexError_
from mambomeme.index import arrow_values
from mambomeme.models.reranker.manifest import MANIFEST_NAME, RERANKER_DIR, read_manifest

INTEGRITY_VERSION = "integrity-v1"
ITEMS_FILE = "items.parquet"
LEXICAL_FILE = "lexical.sqlite"
LEXICAL_RECORD = "lexical.json"
RELEASE_MANIFEST = "release.json"  # release/verify.py
CORPUS_MANIFEST = "corpus-manifest.json"  # the corpus manifest a release carries
ELIGIBILITY_COLUMNS = ("id", "kind", "license", "published", "available", "safety")
COUNT_KEYS = ("accepted", "eligible", "unsafe", "unpublished", "unavailable", "unlicensed")
SQLITE_MAGIC = b"SQLite format 3\x00"
PARQUET_MAGIC = b"PAR1"
_WHITESPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class ItemsSummary:
    """What the engine's mask columns say about eligibility, to compare with the manifests."""

    rows: int
    counts: Mapping[str, Any]  # COUNT_KEYS and "by_kind", as in the corpus manifest
    eligible_sha256: str  # sha256 of the eligibility bits in row order (numpy.packbits)


def eligibility(table: pa.Table) -> tuple[np.ndarray, ItemsSummary]:
    """The static eligibility of every row of a table holding (at least) ELIGIBILITY_COLUMNS:
    published, available, licensed and safe (the vectorised `Item.eligible`; a null counts as
    not eligible), and the summary to check it against the manifests."""
    unlicensed = pc.is_in(
        pc.utf8_lower(pc.utf8_trim_whitespace(table.column("license"))),
        value_set=arrow_values.strings(sorted(UNLICENSED)),
    )
    safe = pc.equal(table.column("safety"), arrow_values.string("safe"))
    mask = _bools(
        pc.and_(
            pc.and_(table.column("published"), table.column("available")),
            pc.and_(pc.invert(unlicensed), safe),
        )
    )
    kinds = pc.value_counts(table.column("kind")).to_pylist()
    counts: dict[str, Any] = {
        "accepted": table.num_rows,
        "eligible": int(np.count_nonzero(mask)),
        "unsafe": _count(pc.equal(table.column("safety"), arrow_values.string("unsafe"))),
        "unpublished": _count(pc.invert(table.column("published"))),
        "unavailable": _count(pc.invert(table.column("available"))),
        "unlicensed": _count(unlicensed),
        "by_kind": {str(k["values"]): int(k["counts"]) for k in kinds},
    }
    return mask, ItemsSummary(table.num_rows, counts, eligibility_digest(mask))


def eligible_mask(table: pa.Table) -> np.ndarray:
    """`eligibility(table)`'s mask alone."""
    return eligibility(table)[0]


def eligibility_digest(eligible: np.ndarray) -> str:
    """sha256 of (row count, the eligibility bits packed 8 to a byte)."""
    bits = np.packbits(np.asarray(eligible, dtype=bool))
    return hashlib.sha256(len(eligible).to_bytes(8, "big") + bits.tobytes()).hexdigest()


# -- at open ---------------------------------------------------------------------------------


def check_open(folder: Path, summary: ItemsSummary) -> None:
    """The cheap checks of every engine open (module docstring); ArtifactIntegrityError naming
    the file, and that the folder is not served, on the first that fails."""
    try:
        release = read_release_manifest(folder)
        if release is not None:
            check_sizes(folder, release)
        check_sqlite_header(folder / LEXICAL_FILE)
        for dense in dense_sets(folder):
            dense.check_header(summary.rows)
        manifest = corpus_manifest_of(folder)
        if manifest is not None:
            counts = top_level_value(manifest, "counts")
            if isinstance(counts, Mapping):
                compare_counts(folder / ITEMS_FILE, summary.counts, counts, manifest)
        if release is not None:
            compare_release_record(folder / ITEMS_FILE, summary, release)
    except ArtifactIntegrityError as exc:
        raise ArtifactIntegrityError(exc.path, f"{exc.reason}; {folder} is not served") from None


def read_release_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / RELEASE_MANIFEST
    if not path.is_file():
        return None
    data = _json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ArtifactIntegrityError(str(path), "field 'files' must be an object")
    return data


def check_sizes(folder: Path, release: Mapping[str, Any]) -> None:
    """Every file the release manifest lists exists with the size it recorded."""
    for rel, entry in sorted(release["files"].items()):
        path = folder / rel
        try:
            size = path.stat().st_size
        except OSError:
            raise ArtifactIntegrityError(str(path), "missing (listed in release.json)") from None
        expected = entry.get("bytes") if isinstance(entry, Mapping) else None
        if isinstance(expected, int) and size != expected:
            raise ArtifactIntegrityError(
                str(path), f"{size} bytes, release.json records {expected} (truncated or changed)"
            )


def check_sqlite_header(path: Path) -> None:
    """The SQLite magic, and the header's page size x page count = the file's size."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
        size = path.stat().st_size
    except FileNotFoundError:
        return  # LexicalIndex reports a missing index
    except OSError as exc:
        raise ArtifactIntegrityError(str(path), f"unreadable: {exc.strerror}") from None
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise ArtifactIntegrityError(str(path), "not an SQLite database (bad header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the in-header size is valid for this change
    if page_size < 512 or page_size & (page_size - 1):
        raise ArtifactIntegrityError(str(path), f"bad page size {page_size} in the header")
    if valid and pages * page_size != size:
        raise ArtifactIntegrityError(
            str(path),
            f"{size} bytes, its header says {pages} pages of {page_size} "
            f"({pages * page_size} bytes): truncated or extended",
        )


@dataclass(frozen=True)
class DenseSet:
    """One dense matrix with its ids and embedding manifest (index/dense.py's DenseFiles)."""

    matrix: Path
    ids: Path
    manifest: Path

    def header(self) -> tuple[tuple[int, ...], int]:
        """(shape, byte offset of the data) from the .npy header; refuses what the engine
        cannot serve (not float32, not 2-D, Fortran order)."""
        try:
            with open(self.matrix, "rb") as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
                offset = handle.tell()
        except (OSError, ValueError, SyntaxError) as exc:
            raise ArtifactIntegrityError(str(self.matrix), f"not a .npy matrix: {exc}") from None
        if dtype != np.dtype("<f4") or fortran or len(shape) != 2:
            raise ArtifactIntegrityError(
                str(self.matrix), f"expected a 2-D C-order float32 matrix, got {dtype} {shape}"
            )
        return tuple(int(n) for n in shape), offset

    def check_header(self, rows: int) -> tuple[int, ...]:
        shape, offset = self.header()
        expected = offset + shape[0] * shape[1] * 4
        size = self.matrix.stat().st_size
        if size != expected:
            raise ArtifactIntegrityError(
                str(self.matrix),
                f"{size} bytes, its header {shape} needs {expected}: truncated or extended",
            )
        if shape[0] != rows:
            raise ArtifactIntegrityError(
                str(self.matrix), f"{shape[0]} rows for {rows} items in {ITEMS_FILE}"
            )
        if self.manifest.is_file():
            info = _json_file(self.manifest)
            recorded = (info.get("count"), info.get("dimension")) if isinstance(info, dict) else ()
            if recorded != shape:
                raise ArtifactIntegrityError(
                    str(self.matrix), f"shape {shape} but {self.manifest.name} records {recorded}"
                )
            # the ids file is small (8 MB on memes-full, ~10 ms): hashed here, the matrix not
            if self.ids.is_file() and sha256_file(self.ids) != info.get("ids_sha256"):
                raise ArtifactIntegrityError(
                    str(self.ids), f"sha256 differs from {self.manifest.name} (corrupt)"
                )
        return shape


def dense_sets(folder: Path) -> list[DenseSet]:
    """Every dense*.npy in the folder or its dense/ subfolder (temp files left out)."""
    found = []
    for where in (folder, folder / "dense"):
        for matrix in sorted(where.glob("dense*.npy")) if where.is_dir() else ():
            if matrix.name.endswith(".tmp.npy"):
                continue
            stem = matrix.name[: -len(".npy")]
            found.append(DenseSet(matrix, where / f"{stem}.ids.json", where / f"{stem}.json"))
    return found


def corpus_manifest_of(folder: Path) -> Path | None:
    """The corpus manifest a folder carries: a release's corpus-manifest.json, else a build's
    corpus-<name>.json beside its files or in the repository's manifests/ folder, else the one
    corpus-*.json beside its files (a library build)."""
    name = folder.resolve().name
    for path in (
        folder / CORPUS_MANIFEST,
        folder / f"corpus-{name}.json",
        folder.resolve().parent.parent / "manifests" / f"corpus-{name}.json",
    ):
        if path.is_file():
            return path
    beside = sorted(folder.glob("corpus-*.json"))
    return beside[0] if len(beside) == 1 else None


# -- the full check, remembered per change (index/verified.py) --------------------------------

CONTENT_CHECK = "content-v1"  # the name under which index/verified.py remembers a pass


def check_content(folder: Path) -> None:
    """The full content check an engine runs on the first open of a folder after any change:
    a release's every file against the sha256 release.json records; a build's artifacts
    against its corpus manifest (`verify_artifacts`). ArtifactIntegrityError naming the file,
    and that the folder is not served."""
    try:
        release = read_release_manifest(folder)
        if release is not None:
            problems = changed_files(folder, release["files"])
            if problems:
                first = problems[0].split(" ", 1)[1]
                raise ArtifactIntegrityError(
                    str(folder / first), "; ".join(problems[:3]) + " (against release.json)"
                )
            return
        manifest = corpus_manifest_of(folder)
        if manifest is not None:
            verify_artifacts(folder, manifest)
            return
        # no manifest (a copied or hand-made build): every checksum the build wrote about
        # itself (items.parquet in lexical.json, dense, term lists, encoder, reranker)
        check_items_record(folder)
        try:
            ids = [str(i) for i in pq.read_table(folder / ITEMS_FILE, columns=["id"])["id"]]
        except (pa.ArrowException, OSError, KeyError, ValueError) as exc:  # UnicodeDecodeError
            raise ArtifactIntegrityError(
                str(folder / ITEMS_FILE), f"not a readable item table: {exc}"
            ) from None
        verify_indexes(folder, ids)
    except ArtifactIntegrityError as exc:
        raise ArtifactIntegrityError(exc.path, f"{exc.reason}; {folder} is not served") from None


def changed_files(
    folder: Path, expected: Mapping[str, Any], exclude: Sequence[str] = ()
) -> list[str]:
    """'missing REL' / 'unexpected REL' / 'changed REL' for every file of `folder` that does not
    match `expected` (relative path -> {"sha256": ...}), sorted; `exclude` are not compared."""
    skip = {RELEASE_MANIFEST, *exclude}
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - skip
    problems = [f"missing {rel}" for rel in sorted(set(expected) - on_disk)]
    problems += [f"unexpected {rel}" for rel in sorted(on_disk - set(expected))]
    for rel in sorted(on_disk & set(expected)):
        entry = expected[rel]
        if not isinstance(entry, Mapping) or "sha256" not in entry:
            problems.append(f"changed {rel} (its manifest entry has no sha256)")
        elif sha256_file(folder / rel) != entry["sha256"]:
            problems.append(f"changed {rel}")
    return problems


def top_level_value(path: Path, key: str, prefix: int = 1 << 16) -> Any:
    """One top-level value of a JSON object file without parsing all of it when it comes early
    (a corpus manifest is written with sorted keys: "counts" precedes the per-item hashes,
    35 MB on memes-full); falls back to reading the whole file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(prefix).decode("utf-8", "ignore")
    except OSError as exc:
        raise ArtifactIntegrityError(str(path), f"unreadable: {exc.strerror}") from None
    decoder = json.JSONDecoder()
    try:
        at = _skip(head, 0)
        if head[at : at + 1] == "{":
            at += 1
            while True:
                at = _skip(head, at)
                name, at = decoder.raw_decode(head, at)
                at = _skip(head, at)
                if head[at : at + 1] != ":":
                    break
                value, at = decoder.raw_decode(head, _skip(head, at + 1))
                if name == key:
                    return value
                at = _skip(head, at)
                if head[at : at + 1] != ",":
                    break
                at += 1
    except (ValueError, IndexError):
        pass  # the value runs past the prefix (or the file is odd): read it whole
    data = _json_file(path)
    return data.get(key) if isinstance(data, dict) else None


def _skip(text: str, at: int) -> int:
    match = _WHITESPACE.match(text, at)
    return match.end() if match else at


def compare_counts(
    items: Path, found: Mapping[str, Any], recorded: Mapping[str, Any], manifest: Path
) -> None:
    """The counts recomputed from items.parquet equal the corpus manifest's (keys it has)."""
    for key in (*COUNT_KEYS, "by_kind"):
        if key in recorded and recorded[key] != found[key]:
            raise ArtifactIntegrityError(
                str(items), f"{key} = {found[key]}, but {manifest} records {recorded[key]}"
            )


def compare_release_record(items: Path, summary: ItemsSummary, release: Mapping[str, Any]) -> None:
    record = release.get("integrity")
    if not isinstance(record, Mapping):
        return  # a release published before integrity records: sizes and counts only
    if record.get("rows") != summary.rows:
        raise ArtifactIntegrityError(
            str(items), f"{summary.rows} rows, release.json records {record.get('rows')}"
        )
    if record.get("eligible_sha256") != summary.eligible_sha256:
        raise ArtifactIntegrityError(
            str(items), "eligibility bits differ from those release.json records (corrupt)"
        )


# -- at publish and verify ---------------------------------------------------------------------


def verify_artifacts(folder: Path, corpus_manifest: Path) -> dict[str, Any]:
    """Every artifact of `folder` against its manifests (module docstring); the integrity
    record for release.json. Raises ArtifactIntegrityError naming the file."""
    manifest = _json_file(corpus_manifest)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("items"), dict):
        raise ArtifactIntegrityError(str(corpus_manifest), "no per-item hashes (field 'items')")
    items_path = folder / ITEMS_FILE
    ids, summary = verify_items(items_path, manifest, corpus_manifest)
    check_items_record(folder)
    verify_indexes(folder, ids)
    verify_previews(folder, manifest.get("previews"), corpus_manifest)
    return {
        "format": INTEGRITY_VERSION,
        "rows": summary.rows,
        "eligible_sha256": summary.eligible_sha256,
    }


def check_items_record(folder: Path) -> None:
    """items.parquet's sha256 against the one lexical.json records (written by the lexical
    build from the table it indexed), when it records one."""
    items_path, record = folder / ITEMS_FILE, folder / LEXICAL_RECORD
    if not record.is_file():
        return
    recorded = _json_file(record)
    wanted = recorded.get("items_sha256") if isinstance(recorded, dict) else None
    try:
        digest = sha256_file(items_path)
    except OSError as exc:
        raise ArtifactIntegrityError(str(items_path), f"unreadable: {exc.strerror}") from None
    if wanted is not None and digest != wanted:
        raise ArtifactIntegrityError(
            str(items_path), f"sha256 differs from the one {record.name} records (corrupt)"
        )


def verify_reranker(folder: Path) -> None:
    """Every file reranker/manifest.json lists has its recorded sha256 (no manifest: no
    reranker to serve, nothing to check)."""
    where = folder / RERANKER_DIR
    if not (where / MANIFEST_NAME).is_file():
        return
    files = read_manifest(where).get("files")
    if not isinstance(files, Mapping) or not files:
        raise ArtifactIntegrityError(str(where / MANIFEST_NAME), "field 'files' is empty")
    for name, digest in sorted(files.items()):
        path = where / str(name)
        if not path.is_file():
            raise ArtifactIntegrityError(str(path), f"missing (listed in {MANIFEST_NAME})")
        if sha256_file(path) != digest:
            raise ArtifactIntegrityError(str(path), f"sha256 differs from {MANIFEST_NAME}")


def verify_previews(folder: Path, recorded: Any, manifest_path: Path) -> None:
    """Every preview card ingest drew (the corpus manifest's `previews`: item id -> sha256)
    is in the folder with that sha256."""
    if not isinstance(recorded, Mapping) or not recorded:
        return
    try:
        table = pq.read_table(folder / ITEMS_FILE, columns=["id", "preview"]).to_pylist()
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise ArtifactIntegrityError(str(folder / ITEMS_FILE), f"unreadable: {exc}") from None
    previews = {str(row["id"]): str(row["preview"]) for row in table}
    for item_id, digest in sorted(recorded.items()):
        rel = previews.get(str(item_id))
        if not rel:
            raise ArtifactIntegrityError(
                str(manifest_path), f"preview of {item_id!r}: no such item with a preview"
            )
        path = folder / rel
        try:
            found = sha256_file(path)
        except OSError:
            raise ArtifactIntegrityError(str(path), f"preview of {item_id!r} missing") from None
        if found != digest:
            raise ArtifactIntegrityError(
                str(path), f"preview of {item_id!r}: sha256 differs from {manifest_path.name}"
            )


def verify_indexes(folder: Path, ids: Sequence[str]) -> None:
    """The index artifacts against themselves and the item ids: lexical.sqlite, every dense
    matrix, the term lists, the query encoder, the reranker."""
    from mambomeme.index.query_encoder import check_query_encoder
    from mambomeme.index.term_lists import TERM_LISTS_DIR, verify_term_lists

    verify_lexical(folder / LEXICAL_FILE, ids)
    for dense in dense_sets(folder):
        verify_dense(dense, ids)
    try:
        lists = folder / TERM_LISTS_DIR
        if lists.is_dir():
            verify_term_lists(lists, folder / LEXICAL_FILE)
        check_query_encoder(folder)
        verify_reranker(folder)
    except (IndexError_, OSError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, ArtifactIntegrityError):
            raise
        raise ArtifactIntegrityError(str(folder), str(exc)) from None


def verify_items(
    path: Path, manifest: Mapping[str, Any], manifest_path: Path
) -> tuple[list[str], ItemsSummary]:
    """Recompute every item's content sha256 from the table and compare with the manifest."""
    expected: Mapping[str, Any] = manifest["items"]
    ids: list[str] = []
    eligible: list[bool] = []
    try:
        table_file = pq.ParquetFile(path)
        names = set(table_file.schema_arrow.names)
        columns = [*ALL_FIELDS, *(["content_sha256"] if "content_sha256" in names else [])]
        for batch in table_file.iter_batches(batch_size=4096, columns=columns):
            for values in batch.to_pylist():
                stored = values.pop("content_sha256", None)
                item = item_from_row(values)
                digest = item.content_sha256()
                if expected.get(item.id) != digest:
                    why = "is not in" if item.id not in expected else "differs from"
                    raise ArtifactIntegrityError(
                        str(path), f"item {item.id!r}: content {why} {manifest_path}"
                    )
                if stored is not None and stored != digest:
                    raise ArtifactIntegrityError(
                        str(path), f"item {item.id!r}: column content_sha256 is not its content"
                    )
                ids.append(item.id)
                eligible.append(item.eligible)
        mask_table = pq.read_table(path, columns=list(ELIGIBILITY_COLUMNS))
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
        raise ArtifactIntegrityError(str(path), f"not a readable item table: {exc}") from None
    if len(ids) != len(expected):
        missing = sorted(set(expected) - set(ids))[:3]
        raise ArtifactIntegrityError(
            str(path), f"{len(ids)} items, {manifest_path} lists {len(expected)} (e.g. {missing})"
        )
    if any(a >= b for a, b in zip(ids, ids[1:], strict=False)):
        raise ArtifactIntegrityError(str(path), "items are not in strictly ascending id order")
    mask, summary = eligibility(mask_table)
    if mask.tolist() != eligible:
        raise ArtifactIntegrityError(str(path), "eligibility columns disagree with the items")
    counts = manifest.get("counts")
    if not isinstance(counts, Mapping):
        raise ArtifactIntegrityError(str(manifest_path), "field 'counts' missing")
    compare_counts(path, summary.counts, counts, manifest_path)
    return ids, summary


def item_from_row(values: dict[str, Any]) -> Item:
    """An Item from one row of items.parquet (lists -> tuples, as ingest.load_items does)."""
    for name in LIST_FIELDS:
        values[name] = tuple(str(v) for v in values[name])
    values["published"] = bool(values["published"])
    values["available"] = bool(values["available"])
    return Item(**values)


def verify_lexical(path: Path, ids: Sequence[str]) -> None:
    """Header size, PRAGMA integrity_check, FTS5 integrity-check, meta and ids = the items."""
    from mambomeme.index.lexical import LEXICAL_INDEX_VERSION, ids_digest

    check_sqlite_header(path)
    if not path.is_file():
        raise ArtifactIntegrityError(str(path), "missing")
    try:
        con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        try:
            problems = [str(r[0]) for r in con.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                raise ArtifactIntegrityError(
                    str(path), "PRAGMA integrity_check: " + "; ".join(problems[:3])
                )
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            stored = [r[0] for r in con.execute("SELECT item_id FROM ids ORDER BY row")]
        finally:
            con.close()
        _fts_integrity(path)
    except sqlite3.Error as exc:
        raise ArtifactIntegrityError(str(path), f"unreadable SQLite database: {exc}") from None
    if meta.get("version") != LEXICAL_INDEX_VERSION:
        raise ArtifactIntegrityError(str(path), f"index version {meta.get('version')!r}")
    if meta.get("count") != str(len(ids)) or stored != list(ids):
        raise ArtifactIntegrityError(str(path), f"its rows are not the {len(ids)} items")
    if "ids_sha256" in meta and meta["ids_sha256"] != ids_digest(ids):
        raise ArtifactIntegrityError(str(path), "meta ids_sha256 is not the items' ids")


def _fts_integrity(path: Path) -> None:
    """FTS5's 'integrity-check' (index against content) on an in-memory copy: the command is
    an INSERT, refused on the read-only release files."""
    memory = sqlite3.connect(":memory:")
    try:
        memory.deserialize(path.read_bytes())
        memory.execute("INSERT INTO items_fts(items_fts) VALUES ('integrity-check')")
    except sqlite3.Error as exc:
        raise ArtifactIntegrityError(str(path), f"FTS5 integrity-check: {exc}") from None
    finally:
        memory.close()


def verify_dense(dense: DenseSet, ids: Sequence[str]) -> None:
    """Shape and size, the matrix's and ids' sha256 against its manifest, ids = the items."""
    dense.check_header(len(ids))
    for path in (dense.ids, dense.manifest):
        if not path.is_file():
            raise ArtifactIntegrityError(str(path), f"missing (beside {dense.matrix.name})")
    info = _json_file(dense.manifest)
    if not isinstance(info, dict):
        raise ArtifactIntegrityError(str(dense.manifest), "not a JSON object")
    for path, key in ((dense.matrix, "matrix_sha256"), (dense.ids, "ids_sha256")):
        if sha256_file(path) != info.get(key):
            raise ArtifactIntegrityError(str(path), f"sha256 differs from {dense.manifest.name}")
    if _json_file(dense.ids) != list(ids):
        raise ArtifactIntegrityError(str(dense.ids), f"ids differ from {ITEMS_FILE}")


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactIntegrityError(str(path), "missing") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ArtifactIntegrityError(str(path), f"unreadable JSON: {exc}") from None


def _count(values: pa.ChunkedArray | pa.Array) -> int:
    return int(np.count_nonzero(_bools(values)))


def _bools(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An Arrow boolean column as a NumPy bool array (a null counts as False)."""
    return arrow_values.bools(values)

"""Building the library's search build from its state store, with the pipeline's own builders.

The state (library/state.py) is the source of truth; the build is derived from it whole, in a
staging folder that replaces the served one only when complete:

    records.jsonl      the records (library/records.py), ingested by the JSON-lines source
    items.parquet, corpus-library.json   corpus/ingest.py (knowledge join, rule-based safety,
                       then the learned safety model when the repository has built it)
    lexical.sqlite, lexical.json          index/build.py
    term-lists/        index/term_lists.py
    dense/             index/dense.py through the library's embedding cache (only new
                       documents are embedded)
    query-encoder/     index/query_encoder.py, exported once into the home and linked here
    library.json       what the build was made from (the state digest), its counts and notes

A build whose recorded digest equals the state's is kept as it is. A kill leaves the served
build untouched (or, between the two renames of the swap, library.old, which the next build
puts back first).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.corpus.manifest import write_json_atomic
from mambomeme.index.integrity import CONTENT_CHECK, check_content
from mambomeme.index.verified import ensure_verified
from mambomeme.library.defaults import KNOWLEDGE_DIR, SAFETY_MODEL_DIR, library_params
from mambomeme.library.home import Library
from mambomeme.library.records import library_records
from mambomeme.library.state import StateStore

BUILD_VERSION = "library-build-1"
RECORD_FILE = "library.json"
RECORDS_FILE = "records.jsonl"
REPOSITORY = Path(__file__).resolve().parents[2]  # knowledge/ and build/safety-model live here

Note = Callable[[str], None]


@dataclass(frozen=True)
class BuildResult:
    rebuilt: bool
    items: int
    eligible: int
    unsafe: int
    rejects: tuple[tuple[str, str], ...]  # (path, reason): skipped files, duplicates, schema
    notes: tuple[str, ...]  # one line each: the safety model used or not, knowledge
    seconds: float


def read_record(library: Library) -> dict[str, Any] | None:
    """The served build's library.json, None when there is no (readable) build."""
    try:
        data = json.loads((library.build_dir / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recover(library: Library) -> None:
    """Undo what a killed build left: a staging folder, or a swap half done."""
    staging, old = _staging(library), _old(library)
    shutil.rmtree(staging, ignore_errors=True)
    if old.exists():
        if library.build_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.rename(library.build_dir)


def _staging(library: Library) -> Path:
    return library.home / f"{library.build_dir.name}.new"


def _old(library: Library) -> Path:
    return library.home / f"{library.build_dir.name}.old"


def safety_model_dir() -> Path | None:
    """The learned safety model the repository built (params ingest.safety.model), if any."""
    folder = REPOSITORY / SAFETY_MODEL_DIR
    return folder if (folder / "manifest.json").is_file() else None


def rebuild(library: Library, force: bool = False, note: Note | None = None) -> BuildResult:
    """Bring library/ up to date with the state store (see the module docstring)."""
    started = time.perf_counter()
    tell = note or (lambda _line: None)
    _recover(library)
    with StateStore(library.state_file) as store:
        digest = store.digest()
        record = read_record(library)
        if (
            not force
            and record is not None
            and record.get("state_digest") == digest
            and (record.get("version") == BUILD_VERSION)
        ):
            counts = record.get("counts", {})
            rejects = tuple((str(a), str(b)) for a, b in record.get("rejects", []))
            return BuildResult(
                False, int(counts.get("accepted", 0)), int(counts.get("eligible", 0)),
                int(counts.get("unsafe", 0)), rejects,
                tuple(str(n) for n in record.get("notes", [])), time.perf_counter() - started,
            )  # fmt: skip
        made = library_records(store, {"safety": {}})
    staging = _staging(library)
    staging.mkdir(parents=True)
    if not made.records:  # nothing indexed: no build to serve
        shutil.rmtree(staging)
        shutil.rmtree(library.build_dir, ignore_errors=True)
        return BuildResult(True, 0, 0, 0, made.rejects, (), time.perf_counter() - started)
    records_path = staging / RECORDS_FILE
    with records_path.open("w", encoding="utf-8") as handle:
        for item in made.records:
            handle.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
    with warnings.catch_warnings():  # the model libraries' deprecation and tracer chatter
        warnings.simplefilter("ignore")
        notes, counts, schema_rejects = _ingest(library, staging, records_path, made.records, tell)
        _index(library, staging, tell)
    rejects = tuple(sorted(made.rejects + schema_rejects))
    write_json_atomic(
        staging / RECORD_FILE,
        {
            "version": BUILD_VERSION,
            "state_digest": digest,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "counts": counts,
            "rejects": [list(r) for r in rejects],
            "notes": list(notes),
        },
    )
    _swap(library, staging)
    # the content check an engine runs on a changed folder, paid here rather than by the next
    # search (index/verified.py remembers the pass)
    ensure_verified(library.build_dir, CONTENT_CHECK, lambda: check_content(library.build_dir))
    return BuildResult(
        True, int(counts["accepted"]), int(counts["eligible"]), int(counts["unsafe"]),
        rejects, notes, time.perf_counter() - started,
    )  # fmt: skip


def _ingest(
    library: Library,
    staging: Path,
    records_path: Path,
    records: tuple[dict[str, Any], ...],
    tell: Note,
) -> tuple[tuple[str, ...], dict[str, Any], tuple[tuple[str, str], ...]]:
    from mambomeme.corpus.ingest import ingest

    params = library_params()
    notes = []
    knowledge: Path | None = REPOSITORY / KNOWLEDGE_DIR
    if knowledge is not None and not knowledge.is_dir():
        knowledge = None
        notes.append("knowledge: no template knowledge base found; templates are names only")
    config: dict[str, Any] = {"source": "fixture", "path": str(records_path), "safety": {}}
    reclassify = None
    model = safety_model_dir()
    if model is None:
        notes.append(
            f"safety: rules only (no learned safety model at {REPOSITORY / SAFETY_MODEL_DIR}; "
            "build it in the repository with `dvc repro safety_model`)"
        )
    else:
        from mambomeme.moderation.apply import model_reclassifier

        dense = params["dense"]
        params["ingest"] = {"safety": {"model": str(model), "labels": None}}
        dense["cache_dir"] = str(library.embed_cache)
        reclassify = model_reclassifier(params, config)
        notes.append(f"safety: rules and the learned safety model ({model})")
    tell("ingesting")
    manifest = staging / library.manifest_file.name
    result = ingest("library", config, staging, manifest, False, knowledge, reclassify)
    rejects = []
    for reject in result.rejects:  # "records.jsonl:<line>:<field>:<reason>"
        _, line, rest = reject.split(":", 2) if reject.count(":") >= 2 else ("", "0", reject)
        number = int(line) if line.isdigit() else 0
        path = str(records[number - 1].get("preview", "")) if 0 < number <= len(records) else ""
        rejects.append((path or reject, rest))
    counts = dict(result.manifest["counts"])
    model_record = result.manifest.get("safety_model", {})
    if model_record.get("applied"):
        notes[-1] += f": {model_record.get('flagged_by_model', 0)} more item(s) unsafe"
    return tuple(notes), counts, tuple(rejects)


def _index(library: Library, staging: Path, tell: Note) -> None:
    from mambomeme.index.build import build_dense_indexes, build_lexical_index
    from mambomeme.index.term_lists import TERM_LISTS_DIR, build_term_lists

    params = library_params()
    manifest = staging / library.manifest_file.name
    tell("indexing words")
    build_lexical_index(staging, manifest, params["lexical"]["weights"])
    build_term_lists(staging / "lexical.sqlite", staging / TERM_LISTS_DIR, progress=False)
    dense = params["dense"]
    tell("embedding")
    build_dense_indexes(
        staging, manifest, int(dense["batch_size"]), str(dense["device"]), {}, (), None,
        library.embed_cache, int(dense["shard_size"]),
    )  # fmt: skip
    _link_query_encoder(library, staging, tell)


def _link_query_encoder(library: Library, staging: Path, tell: Note) -> None:
    """Export the ONNX query encoder once into the home (the model does not depend on the
    corpus) and hard-link its files into the build (copied where links are refused)."""
    from mambomeme.errors import IndexError_
    from mambomeme.index.dense import weights_sha256
    from mambomeme.index.query_encoder import (
        MANIFEST_NAME,
        ONNX_NAME,
        QUERY_ENCODER_DIR,
        TOKENIZER_NAME,
        export_query_encoder,
        read_manifest,
    )

    folder = library.encoder_dir
    try:
        fresh = read_manifest(folder)["weights_sha256"] == weights_sha256()
    except IndexError_:
        fresh = False
    if not fresh:
        tell("exporting the query encoder to ONNX (once)")
        export_query_encoder(folder)
    target = staging / QUERY_ENCODER_DIR
    target.mkdir()
    for name in (ONNX_NAME, TOKENIZER_NAME, MANIFEST_NAME):
        try:
            os.link(folder / name, target / name)
        except OSError:
            shutil.copy2(folder / name, target / name)


def _swap(library: Library, staging: Path) -> None:
    """Replace the served build by `staging`: rename the old aside, the new in, drop the old."""
    old = _old(library)
    if library.build_dir.exists():
        library.build_dir.rename(old)
    staging.rename(library.build_dir)
    shutil.rmtree(old, ignore_errors=True)

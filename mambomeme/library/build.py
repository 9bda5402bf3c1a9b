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

A build whose recorded digest equals the state's (and whose content still verifies) is kept
as it is. The served `library` is a symbolic link to one complete folder under `builds/`; a new
build is renamed into `builds/` and the link replaced in one `os.replace`, so a search opens
either the old build or the new one, whole (serving.py resolves the link once, at open). The
previous build is kept until the next swap, for a search that opened it just before. A kill
leaves the served build untouched; the next build removes the staging folder. A home from
before the link (a real `library/` folder) is moved under `builds/` at its next build.
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
from mambomeme.corpus.preview_paths import external_path, preview_of
from mambomeme.errors import IndexError_
from mambomeme.index.integrity import CONTENT_CHECK, check_content
from mambomeme.index.ray_map import IN_PROCESS, ExecutorConfig
from mambomeme.index.verified import ensure_verified
from mambomeme.library.defaults import KNOWLEDGE_DIR, SAFETY_MODEL_DIR, library_params
from mambomeme.library.home import Library
from mambomeme.library.masking import masked_files, with_overrides
from mambomeme.library.records import library_records
from mambomeme.library.state import StateStore

BUILD_VERSION = "library-build-1"
RECORD_FILE = "library.json"
RECORDS_FILE = "records.jsonl"
BUILDS_DIR = "builds"  # complete builds; `library` links to the served one
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
    """Undo what a killed build left: a staging folder, a link not yet swapped in, or (homes
    from before builds/) a swap half done."""
    staging, old = _staging(library), _old(library)
    shutil.rmtree(staging, ignore_errors=True)
    _link_tmp(library).unlink(missing_ok=True)
    if old.exists():
        if library.build_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.rename(library.build_dir)


def _staging(library: Library) -> Path:
    return library.home / f"{library.build_dir.name}.new"


def _old(library: Library) -> Path:
    return library.home / f"{library.build_dir.name}.old"


def _link_tmp(library: Library) -> Path:
    return library.home / f".{library.build_dir.name}.link.tmp"


def builds_dir(library: Library) -> Path:
    return library.home / BUILDS_DIR


def safety_model_dir() -> Path | None:
    """The learned safety model the repository built (params ingest.safety.model), if any."""
    folder = REPOSITORY / SAFETY_MODEL_DIR
    return folder if (folder / "manifest.json").is_file() else None


def rebuild(
    library: Library,
    force: bool = False,
    note: Note | None = None,
    executor: ExecutorConfig = IN_PROCESS,
) -> BuildResult:
    """Bring library/ up to date with the state store (see the module docstring); `executor`
    runs safety scoring and embedding in-process or on Ray (index/ray_map.py)."""
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
            and _still_verifies(library, tell)
        ):
            counts = record.get("counts", {})
            rejects = tuple(
                (external_path(str(a)) or str(a), str(b)) for a, b in record.get("rejects", [])
            )
            return BuildResult(
                False, int(counts.get("accepted", 0)), int(counts.get("eligible", 0)),
                int(counts.get("unsafe", 0)), rejects,
                tuple(str(n) for n in record.get("notes", [])), time.perf_counter() - started,
            )  # fmt: skip
        made = library_records(store, {"safety": {}})
        overrides = store.overrides()
    staging = _staging(library)
    staging.mkdir(parents=True)
    if not made.records:  # nothing indexed: no build to serve
        shutil.rmtree(staging)
        _unserve(library)
        return BuildResult(True, 0, 0, 0, made.rejects, (), time.perf_counter() - started)
    records_path = staging / RECORDS_FILE
    with records_path.open("w", encoding="utf-8") as handle:
        for item in made.records:
            handle.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
    with warnings.catch_warnings():  # the model libraries' deprecation and tracer chatter
        warnings.simplefilter("ignore")
        notes, counts, schema_rejects, masked = _ingest(
            library, staging, records_path, made.records, overrides, tell, executor
        )
        _index(library, staging, tell, executor)
    rejects = tuple(sorted(made.rejects + schema_rejects))
    write_json_atomic(
        staging / RECORD_FILE,
        {
            "version": BUILD_VERSION,
            "state_digest": digest,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "counts": counts,
            "rejects": [[preview_of(path), reason] for path, reason in rejects],
            "notes": list(notes),
            "masked": masked,
        },
    )
    _swap(library, staging, digest)
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
    overrides: dict[str, str],
    tell: Note,
    executor: ExecutorConfig,
) -> tuple[tuple[str, ...], dict[str, Any], tuple[tuple[str, str], ...], list[dict[str, str]]]:
    from mambomeme.corpus.ingest import ingest
    from mambomeme.corpus.safety import classifier_from_config

    params = library_params()
    params["build"] = executor.as_params()
    notes = []
    knowledge: Path | None = REPOSITORY / KNOWLEDGE_DIR
    if knowledge is not None and not knowledge.is_dir():
        knowledge = None
        notes.append("knowledge: no template knowledge base found; templates are names only")
    config: dict[str, Any] = {"source": "fixture", "path": str(records_path), "safety": {}}
    reclassify = None
    scores: dict[str, float] = {}
    model = safety_model_dir()
    if model is None:
        notes.append(
            f"safety: rules only (no learned safety model at {REPOSITORY / SAFETY_MODEL_DIR}; "
            "build it in the repository with `dvc repro safety_model`)"
        )
    else:
        from mambomeme.moderation.apply import model_reclassifier

        dense = params["dense"]
        params["ingest"] = {
            "safety": {"model": str(model), "labels": None},
            # the model's template_risk signal reads the knowledge base beside it
            "knowledge": str(knowledge) if knowledge is not None else None,
        }
        dense["cache_dir"] = str(library.embed_cache)
        reclassify = model_reclassifier(params, config, scores)
        notes.append(f"safety: rules and the learned safety model ({model})")
    tell("ingesting")
    manifest = staging / library.manifest_file.name
    paths = {str(r["id"]): external_path(str(r.get("preview", ""))) or "" for r in records}
    by_path = {path: item_id for item_id, path in paths.items()}
    decisions = {by_path[p]: d for p, d in overrides.items() if p in by_path}
    owner = with_overrides(reclassify, decisions)
    result = ingest("library", config, staging, manifest, False, knowledge, owner)
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
    changed = model_record.get("owner_overrides", {})
    if decisions:
        notes.append(
            f"your overrides: {len(decisions)} file(s) ({changed.get('allow', 0)} unmasked, "
            f"{changed.get('deny', 0)} masked by them)"
        )
    threshold = model_record.get("threshold")
    masked = masked_files(
        result.items, paths, decisions, scores,
        float(threshold) if isinstance(threshold, (int, float)) else None,
        classifier_from_config({"safety": {}}),
    )  # fmt: skip
    return tuple(notes), counts, tuple(rejects), masked


def _index(library: Library, staging: Path, tell: Note, executor: ExecutorConfig) -> None:
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
        library.embed_cache, int(dense["shard_size"]), executor=executor,
    )  # fmt: skip
    _link_query_encoder(library, staging, tell)


def _link_query_encoder(library: Library, staging: Path, tell: Note) -> None:
    """Export the ONNX query encoder once into the home (the model does not depend on the
    corpus) and hard-link its files into the build (copied where links are refused)."""
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


def _still_verifies(library: Library, tell: Note) -> bool:
    """The served build passes its content check (remembered, so cheap when unchanged); a
    damaged one is rebuilt rather than kept."""
    try:
        ensure_verified(library.build_dir, CONTENT_CHECK, lambda: check_content(library.build_dir))
    except IndexError_ as exc:
        tell(f"the index does not verify ({exc}): rebuilding it")
        return False
    return True


def _swap(library: Library, staging: Path, digest: str) -> None:
    """Serve `staging`: move it under builds/, point a new link at it and rename the link over
    `library` (atomic), then drop builds older than the one it replaced (module docstring)."""
    builds = builds_dir(library)
    builds.mkdir(exist_ok=True)
    previous = _served(library)
    if library.build_dir.is_dir() and not library.build_dir.is_symlink():  # an older home
        previous = builds / f"{time.strftime('%Y%m%dT%H%M%S')}-before-builds"
        library.build_dir.rename(previous)
    name = f"{time.strftime('%Y%m%dT%H%M%S')}-{digest[:12]}"
    target, n = builds / name, 1
    while target.exists():
        n += 1
        target = builds / f"{name}-{n}"
    staging.rename(target)
    link = _link_tmp(library)
    link.unlink(missing_ok=True)
    os.symlink(Path(BUILDS_DIR) / target.name, link)
    os.replace(link, library.build_dir)
    _prune(library, keep={target, *([previous] if previous else [])})


def _served(library: Library) -> Path | None:
    """The builds/ folder the `library` link points at, if any."""
    if not library.build_dir.is_symlink():
        return None
    return library.build_dir.resolve()


def _unserve(library: Library) -> None:
    """No build to serve (an empty library): drop the link; keep the build it pointed at
    until the next swap (a search may have opened it)."""
    previous = _served(library)
    if library.build_dir.is_symlink():
        library.build_dir.unlink()
    else:
        shutil.rmtree(library.build_dir, ignore_errors=True)
    _prune(library, keep={previous} if previous else set())


def _prune(library: Library, keep: set[Path]) -> None:
    builds = builds_dir(library)
    kept = {p.resolve() for p in keep}
    for folder in sorted(builds.iterdir()) if builds.is_dir() else ():
        if folder.resolve() not in kept:
            shutil.rmtree(folder, ignore_errors=True)

"""Artifact integrity end to end: a flipped bit or a truncated file in any artifact of the fixture
build is refused at publish (nothing corrupt is published) and at open (nothing corrupt is
served), each time with one typed error naming the file."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from test_release_support import make_build, write_token

from mambomeme.errors import (
    ArtifactIntegrityError,
    IndexError_,
    ReleaseError,
    ReleaseIntegrityError,
)
from mambomeme.index import integrity
from mambomeme.release import publish as publish_module
from mambomeme.release.pointer import read_pointer, resolve_current
from mambomeme.release.publish import publish, read_history
from mambomeme.release.verify import verify_release
from mambomeme.search.engine import Engine
from mambomeme.serving import serving_dir

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
Corruption = Callable[[Path], None]


# -- corruptions ---------------------------------------------------------------------------------


def flip_eligibility(path: Path) -> None:
    """Flip the one bit of the safety column's bytes that turns an unsafe item safe (the probe's
    finding: the file still reads, one more item is eligible)."""
    data = path.read_bytes()
    columns = list(integrity.ELIGIBILITY_COLUMNS)
    before = integrity.eligible_mask(pq.read_table(io.BytesIO(data), columns=columns)).sum()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    chunk = next(
        meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == "safety"
    )
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    for position in range(start, start + chunk.total_compressed_size):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[position] ^= 1 << bit
            try:
                table = pq.read_table(io.BytesIO(bytes(flipped)), columns=columns)
            except Exception:  # noqa: BLE001 - most flips break the page: try the next one
                continue
            if integrity.eligible_mask(table).sum() > before:
                path.write_bytes(bytes(flipped))
                return
    pytest.fail(f"no single bit of {path}'s safety column makes an item eligible")


def flip_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def flip_content(path: Path) -> None:
    """Flip a bit inside a stored title in lexical.sqlite (content, not free space)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"John Cena")
    assert at > 0, "no title text in the database"
    data[at + 1] ^= 0x01
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size - max(1, min(4096, size // 3)))


# (artifact, corruption, name that the refusal must mention)
CORRUPTIONS: list[tuple[str, Corruption]] = [
    ("items.parquet", flip_eligibility),
    ("items.parquet", truncate),
    ("lexical.sqlite", flip_content),
    ("lexical.sqlite", truncate),
    ("dense/dense.npy", flip_middle),
    ("dense/dense.npy", truncate),
    ("dense/dense.ids.json", truncate),
    ("dense/dense.ids.json", flip_middle),
    ("term-lists/rows.npy", flip_middle),
    ("term-lists/rows.npy", truncate),
]
IDS = [f"{rel}-{corrupt.__name__}" for rel, corrupt in CORRUPTIONS]


@pytest.fixture
def build(tmp_path: Path, fixture_build: Path) -> Path:
    """A writable copy of the session's fixture build (the 87 MB query encoder left out)."""
    copy = tmp_path / "build" / "fixture"
    shutil.copytree(fixture_build, copy, ignore=shutil.ignore_patterns("query-encoder"))
    return copy


@pytest.fixture
def selection(tmp_path: Path) -> Path:
    path = tmp_path / "selection.json"
    path.write_text(json.dumps({"config": {"rrf_k": 60}}), "utf-8")
    return path


def _publish(build: Path, selection: Path, releases: Path) -> Any:
    return publish(build, build / "corpus-fixture.json", selection, releases, now=NOW)


def _writable(path: Path) -> None:
    for folder in [path.parent, *path.parent.parents]:
        if (folder / "release.json").is_file():
            for dirpath, _, _ in os.walk(folder):
                os.chmod(dirpath, stat.S_IRWXU)
            break
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


# -- publish -------------------------------------------------------------------------------------


def test_the_healthy_fixture_build_publishes_verifies_and_opens(
    build: Path, selection: Path, tmp_path: Path, params: dict[str, Any]
) -> None:
    releases = tmp_path / "releases"
    release = _publish(build, selection, releases)
    manifest = verify_release(release.path, deep=True)
    assert manifest["integrity"]["rows"] == len(Engine.open(build, params).items)
    assert resolve_current(releases, use_cache=False, deep=True).id == release.id
    engine = Engine.open(release.path, params)
    assert engine.items.summary.eligible_sha256 == manifest["integrity"]["eligible_sha256"]
    assert engine.search(["john cena"], system="bm25").results


@pytest.mark.parametrize(("rel", "corrupt"), CORRUPTIONS, ids=IDS)
def test_publish_refuses_every_corrupt_artifact(
    build: Path, selection: Path, tmp_path: Path, rel: str, corrupt: Corruption
) -> None:
    corrupt(build / rel)
    releases = tmp_path / "releases"
    with pytest.raises(ReleaseError, match=Path(rel).parts[0]) as refused:
        _publish(build, selection, releases)
    assert "Traceback" not in str(refused.value)
    assert read_pointer(releases) is None
    if releases.exists():  # refused before or after staging: no release, no staging left
        assert [p.name for p in releases.iterdir() if p.is_dir()] == []


def test_publish_refuses_a_lexical_index_corrupt_without_term_lists(
    build: Path, selection: Path, tmp_path: Path
) -> None:
    """Without term lists nothing records lexical.sqlite's sha256: FTS5's own integrity-check
    (index against content) finds the flipped title byte."""
    shutil.rmtree(build / "term-lists")
    flip_content(build / "lexical.sqlite")
    with pytest.raises(ReleaseIntegrityError, match="lexical.sqlite: FTS5 integrity-check"):
        _publish(build, selection, tmp_path / "releases")


def test_publish_refuses_items_that_differ_from_the_corpus_manifest(
    build: Path, selection: Path, tmp_path: Path
) -> None:
    manifest = json.loads((build / "corpus-fixture.json").read_text("utf-8"))
    first = sorted(manifest["items"])[0]
    manifest["items"][first] = "0" * 64
    (build / "corpus-fixture.json").write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(ReleaseIntegrityError, match=f"item '{first}': content differs"):
        _publish(build, selection, tmp_path / "releases")


# -- open ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "corrupt"), CORRUPTIONS, ids=IDS)
def test_open_refuses_a_corrupt_build(
    build: Path, fixture_build: Path, params: dict[str, Any], rel: str, corrupt: Corruption
) -> None:
    """A build that was opened (and its content check remembered), then corrupted, is refused
    at the next open naming the file: every artifact kind, flipped bit or truncation."""
    (build / "query-encoder").symlink_to(fixture_build / "query-encoder")  # for the dense route
    Engine.open(build, params)  # healthy: the full check passes and is remembered
    corrupt(build / rel)
    with pytest.raises(IndexError_, match=f"{Path(rel).name}.*is not served"):
        Engine.open(build, params)


def test_the_content_check_runs_once_per_change(build: Path, params: dict[str, Any]) -> None:
    from mambomeme.index.verified import ensure_verified

    def check() -> None:
        integrity.check_content(build)

    assert ensure_verified(build, "test-check", check)  # first time: checked
    assert not ensure_verified(build, "test-check", check)  # unchanged: remembered
    path = build / "lexical.sqlite"
    stat = path.stat()
    flip_content(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the mtime set back: ctime moved
    with pytest.raises(ArtifactIntegrityError, match="lexical.sqlite"):
        ensure_verified(build, "test-check", check)
    with pytest.raises(ArtifactIntegrityError, match="lexical.sqlite"):  # a failure is not kept
        ensure_verified(build, "test-check", check)


@pytest.mark.parametrize(("rel", "corrupt"), CORRUPTIONS, ids=IDS)
def test_a_release_corrupted_after_publish_is_never_served(
    build: Path,
    selection: Path,
    tmp_path: Path,
    params: dict[str, Any],
    rel: str,
    corrupt: Corruption,
) -> None:
    releases = tmp_path / "releases"
    release = _publish(build, selection, releases)
    serving_dir(params, None, releases)  # healthy: verified and cached
    target = release.path / rel
    _writable(target)
    corrupt(target)
    with pytest.raises(ReleaseIntegrityError, match=f"changed {rel}"):
        serving_dir(params, None, releases)  # what the CLI and the TUI open
    with pytest.raises(ReleaseIntegrityError):
        verify_release(release.path, deep=True)
    with pytest.raises(ArtifactIntegrityError, match=f"{Path(rel).name}.*is not served"):
        Engine.open(release.path, params)  # --build releases/<id>: sizes, then every sha256


def test_open_refuses_eligibility_that_differs_from_the_release_record(
    build: Path, selection: Path, tmp_path: Path, params: dict[str, Any]
) -> None:
    """The corpus manifest's counts cannot see two compensating flips; the release's record of
    the eligibility bits can."""
    release = _publish(build, selection, tmp_path / "releases")
    path = release.path / "release.json"
    _writable(path)
    manifest = json.loads(path.read_text("utf-8"))
    manifest["integrity"]["eligible_sha256"] = "0" * 64
    path.write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(ArtifactIntegrityError, match="eligibility bits differ"):
        Engine.open(release.path, params)


def test_top_level_value_reads_counts_without_the_item_list(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    items = {f"x:{n}": "a" * 64 for n in range(5000)}
    path.write_text(
        json.dumps({"corpus": "c", "counts": {"accepted": 1}, "items": items}, indent=2)
    )
    assert integrity.top_level_value(path, "counts", prefix=200) == {"accepted": 1}
    assert integrity.top_level_value(path, "items", prefix=200) == items  # read whole


# -- orphan releases ---------------------------------------------------------------------------


def _kill_after_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*_args: object) -> None:
        raise KeyboardInterrupt  # the process dies between its rename and its history line

    monkeypatch.setattr(publish_module, "append_history", killed)


def test_the_next_publish_removes_an_orphan_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    first = publish(build, manifest, selection, releases)
    write_token(build, "beta")
    with monkeypatch.context() as patch:
        _kill_after_rename(patch)
        with pytest.raises(KeyboardInterrupt):
            publish(build, manifest, selection, releases)
    orphans = [p for p in releases.iterdir() if p.is_dir() and p.name != first.id]
    assert len(orphans) == 1 and (orphans[0] / "release.json").is_file()
    assert read_pointer(releases) == first.id
    write_token(build, "gamma")
    third = publish(build, manifest, selection, releases)
    assert not orphans[0].exists()
    assert sorted(p.name for p in releases.iterdir() if p.is_dir()) == sorted([first.id, third.id])
    assert [e["id"] for e in read_history(releases)] == [first.id, third.id]


def test_an_orphan_with_the_same_id_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    with monkeypatch.context() as patch:
        _kill_after_rename(patch)
        with pytest.raises(KeyboardInterrupt):
            publish(build, manifest, selection, releases, now=NOW)
    release = publish(build, manifest, selection, releases, now=NOW)  # same content, same second
    assert read_pointer(releases) == release.id
    assert resolve_current(releases, use_cache=False, deep=True).id == release.id


# -- a copied build, with no manifest beside it (issue 35, point 6) ------------------------------


def _bare(build: Path, fixture_build: Path) -> Path:
    """The build as a user copies it: no corpus manifest beside it or in a manifests/ folder
    (only the checksums the build wrote about itself remain)."""
    (build / "corpus-fixture.json").unlink()
    (build / "query-encoder").symlink_to(fixture_build / "query-encoder")
    return build


@pytest.mark.parametrize("seed", range(6))
def test_a_copied_build_refuses_any_flipped_bit_of_its_items(
    build: Path, fixture_build: Path, params: dict[str, Any], seed: int
) -> None:
    """Six random single-bit flips of items.parquet in a build with no manifest: each one is
    refused as a corrupt artifact (lexical.json records the table's sha256), never served and
    never an untyped UnicodeDecodeError."""
    import random

    bare = _bare(build, fixture_build)
    rng = random.Random(seed)
    data = bytearray((bare / "items.parquet").read_bytes())
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    (bare / "items.parquet").write_bytes(bytes(data))
    with pytest.raises(ArtifactIntegrityError, match="items.parquet"):
        Engine.open(bare, params)


def test_a_copied_build_refuses_the_eligibility_flip(
    build: Path, fixture_build: Path, params: dict[str, Any]
) -> None:
    bare = _bare(build, fixture_build)
    flip_eligibility(bare / "items.parquet")
    with pytest.raises(ArtifactIntegrityError, match="items.parquet: sha256 differs"):
        Engine.open(bare, params)


def _reranker(build: Path) -> Path:
    """A reranker folder whose manifest records its files' sha256 (contents are stand-ins:
    only the checksums are checked before a model loads)."""
    from mambomeme.corpus.manifest import sha256_file
    from mambomeme.models.reranker.manifest import FORMAT, MANIFEST_FIELDS

    folder = build / "reranker"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"onnx graph stand-in" * 64)
    (folder / "tokenizer.json").write_text('{"model": "stand-in"}', "utf-8")
    manifest: dict[str, Any] = {name: {} for name in MANIFEST_FIELDS}
    manifest["format"] = FORMAT
    manifest["files"] = {
        name: sha256_file(folder / name) for name in ("model.onnx", "tokenizer.json")
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return folder


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json"])
def test_publish_and_open_refuse_a_flipped_reranker(
    build: Path, fixture_build: Path, selection: Path, tmp_path: Path, name: str
) -> None:
    flip_middle(_reranker(build) / name)
    with pytest.raises(ReleaseError, match=f"reranker/{name}: sha256 differs"):
        _publish(build, selection, tmp_path / "releases")
    with pytest.raises(ArtifactIntegrityError, match=f"reranker/{name}"):
        integrity.check_content(_bare(build, fixture_build))


def test_publish_refuses_a_flipped_preview(build: Path, selection: Path, tmp_path: Path) -> None:
    manifest = json.loads((build / "corpus-fixture.json").read_text("utf-8"))
    assert manifest.get("previews"), "the fixture build records its preview checksums"
    item_id = sorted(manifest["previews"])[0]
    rows = pq.read_table(build / "items.parquet", columns=["id", "preview"]).to_pylist()
    preview = next(r["preview"] for r in rows if r["id"] == item_id)
    flip_middle(build / preview)
    with pytest.raises(ReleaseError, match=f"preview of '{item_id}'"):
        _publish(build, selection, tmp_path / "releases")


def test_release_verify_checks_a_build_in_full(
    build: Path, fixture_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mambomeme release verify --build DIR` (docs/CONTRACTS.md): exit 0 and a line for a
    healthy build, exit 4 naming the file for a corrupt one; `release verify` is a command."""
    from mambomeme import cli

    bare = _bare(build, fixture_build)
    assert cli.main(["release", "verify", "--build", str(bare)]) == 0
    assert "verified" in capsys.readouterr().out
    flip_middle(bare / "dense" / "dense.npy")
    assert cli.main(["release", "verify", "--build", str(bare)]) == 4
    assert "corrupt artifact" in capsys.readouterr().err


def flip_to_invalid_utf8(path: Path, column: str = "variant_key") -> None:
    """Flip the first bit of `column`'s pages that leaves the file readable but one of its
    strings invalid UTF-8 (the probe's UnicodeDecodeError, exit 1 before issue 35)."""
    data = path.read_bytes()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    chunk = next(
        meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == column
    )
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    for position in range(start, start + chunk.total_compressed_size):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[position] ^= 1 << bit
            try:
                pq.read_table(io.BytesIO(bytes(flipped)), columns=[column])[column].to_pylist()
            except UnicodeDecodeError:
                path.write_bytes(bytes(flipped))
                return
            except Exception:  # noqa: BLE001 - other flips break the page or change a value
                continue
    pytest.fail(f"no single bit of {path}'s {column} column makes invalid UTF-8")


def test_an_undecodable_item_table_is_a_corrupt_artifact_exit_4(
    build: Path, fixture_build: Path, params: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from mambomeme import cli

    bare = _bare(build, fixture_build)
    flip_to_invalid_utf8(bare / "items.parquet")
    with pytest.raises(ArtifactIntegrityError, match="items.parquet"):
        Engine.open(bare, params)
    code = cli.main(["search", "john cena", "--build", str(bare), "--system", "bm25"])
    assert code == 4 and "corrupt artifact" in capsys.readouterr().err


def test_a_build_with_a_linked_model_folder_opens_and_serves(
    fixture_build: Path, params: dict[str, Any], tmp_path: Path
) -> None:
    """A copy whose query-encoder folder is a symbolic link to the original (as
    scripts/probe_integrity.py makes them, or a DVC cache of type symlink) is checked and
    served; the encoder's files outside the copy are hashed, not taken as unchanged."""
    copy = tmp_path / "linked"
    shutil.copytree(fixture_build, copy, ignore=shutil.ignore_patterns("query-encoder"))
    (copy / "query-encoder").symlink_to((fixture_build / "query-encoder").resolve())
    for _ in range(2):  # the first open checks the folder, the second reads the record
        engine = Engine.open(copy, params)
        engine.load("hybrid")
        assert engine.search(["john cena"], system="hybrid").results

"""Publishing, verification, the CURRENT pointer, rollback and the publish/rollback commands."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_release_support import fake_search, make_build, write_token

from mambomeme.cli import release as commands
from mambomeme.corpus.manifest import sha256_file
from mambomeme.errors import ReleaseError, ReleaseIntegrityError
from mambomeme.release.pointer import (
    current_release,
    open_release,
    read_pointer,
    resolve_current,
    write_pointer,
)
from mambomeme.release.publish import publish, read_history, rollback
from mambomeme.release.verify import tree_files, verify_release

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def test_publish_copies_everything_and_manifest_lists_every_sha(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    release = publish(build, manifest, selection, releases, now=NOW)
    assert re.fullmatch(r"fixture-20261201T120000-[0-9a-f]{12}", release.id)
    assert read_pointer(releases) == release.id
    data = json.loads((release.path / "release.json").read_text("utf-8"))
    expected = sorted(tree_files(build)) + ["corpus-manifest.json", "selection.json"]
    assert sorted(data["files"]) == sorted(expected)
    for rel, entry in data["files"].items():
        assert entry["sha256"] == sha256_file(release.path / rel)
    assert (release.path / "selection.json").read_bytes() == selection.read_bytes()
    assert (release.path / "previews" / "fixture-1.png").read_bytes() == b"\x89PNG fake preview"
    mode = stat.S_IMODE((release.path / "items.parquet").stat().st_mode)
    assert mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) == 0
    assert stat.S_IMODE(release.path.stat().st_mode) & stat.S_IWUSR == 0
    assert [e["action"] for e in read_history(releases)] == ["publish"]
    assert current_release(releases) == release


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda b: (b / "lexical.sqlite").unlink(), "lexical.sqlite is missing"),
        (lambda b: (b / "dense.ids.json").unlink(), "partial dense index"),
        (lambda b: (b / "release.json").write_text("{}"), "clashes"),
        (lambda b: _term_lists(b, "0" * 64), "term-lists: .*another lexical.sqlite"),
        (lambda b: _term_lists(b, sha256_file(b / "lexical.sqlite"), b"x"), "sha256 differs"),
    ],
)
def test_publish_refuses_incomplete_build(tmp_path: Path, breakage, message: str) -> None:  # type: ignore[no-untyped-def]
    build, manifest, selection = make_build(tmp_path, "alpha")
    breakage(build)
    with pytest.raises(ReleaseError, match=message):
        publish(build, manifest, selection, tmp_path / "releases")
    assert read_pointer(tmp_path / "releases") is None


def _term_lists(build: Path, lexical_sha: str, tamper: bytes = b"") -> None:
    """A term-lists folder whose manifest names `lexical_sha`; `tamper` changes a file after."""
    lists = build / "term-lists"
    lists.mkdir()
    (lists / "tokens.json").write_text("[]")
    entry = {"sha256": sha256_file(lists / "tokens.json"), "size": 2}
    manifest = {"lexical_sha256": lexical_sha, "files": {"tokens.json": entry}}
    (lists / "manifest.json").write_text(json.dumps(manifest))
    if tamper:
        (lists / "tokens.json").write_bytes(tamper + b"]")


def test_publish_carries_term_lists_of_its_lexical_index(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    _term_lists(build, sha256_file(build / "lexical.sqlite"))
    release = publish(build, manifest, selection, tmp_path / "releases", now=NOW)
    assert (release.path / "term-lists" / "manifest.json").is_file()


def test_publish_refuses_missing_selection_and_duplicate_id(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    with pytest.raises(ReleaseError, match="selection"):
        publish(build, manifest, tmp_path / "nope.json", tmp_path / "releases")
    publish(build, manifest, selection, tmp_path / "releases", now=NOW)
    with pytest.raises(ReleaseError, match="already exists"):
        publish(build, manifest, selection, tmp_path / "releases", now=NOW)


def _tamper(path: Path, data: bytes) -> None:
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    path.write_bytes(data)


def test_changed_missing_or_extra_file_is_refused(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    release = publish(build, manifest, selection, releases)
    resolve_current(releases)  # verified and cached
    original = (release.path / "lexical.sqlite").read_bytes()
    _tamper(release.path / "lexical.sqlite", b"lexical evil")
    with pytest.raises(ReleaseIntegrityError, match="changed lexical.sqlite"):
        resolve_current(releases)  # the cache key (size/mtime) changed: re-hashed
    _tamper(release.path / "lexical.sqlite", original)
    (release.path / "extra.txt").write_text("x")
    with pytest.raises(ReleaseIntegrityError, match="unexpected extra.txt"):
        verify_release(release.path)
    (release.path / "extra.txt").unlink()
    (release.path / "dense.npy").unlink()
    with pytest.raises(ReleaseIntegrityError, match="missing dense.npy"):
        resolve_current(releases, use_cache=False)


def test_rollback_refuses_a_corrupt_target(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    first = publish(build, manifest, selection, releases)
    write_token(build, "beta")
    second = publish(build, manifest, selection, releases)
    _tamper(first.path / "items.parquet", b"{}")
    with pytest.raises(ReleaseIntegrityError, match="changed items.parquet"):
        rollback(releases)
    assert read_pointer(releases) == second.id  # not switched


def test_rollback_is_byte_identical_to_the_earlier_release(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    first = publish(build, manifest, selection, releases)
    files_before = {rel: (first.path / rel).read_bytes() for rel in tree_files(first.path)}
    output_before = fake_search(resolve_current(releases), "john cena")
    write_token(build, "beta")
    second = publish(build, manifest, selection, releases)
    output_second = fake_search(resolve_current(releases), "john cena")
    assert output_second[1:] != output_before[1:]
    back = rollback(releases)
    assert back.id == first.id == read_pointer(releases)
    current = resolve_current(releases)
    assert {rel: (current.path / rel).read_bytes() for rel in tree_files(current.path)} == (
        files_before
    )
    assert fake_search(current, "john cena") == output_before
    history = read_history(releases)
    assert [(e["action"], e["id"], e["previous"]) for e in history] == [
        ("publish", first.id, None),
        ("publish", second.id, first.id),
        ("rollback", first.id, second.id),
    ]
    with pytest.raises(ReleaseError, match="first release"):
        rollback(releases)
    assert rollback(releases, to=second.id).id == second.id


def test_rollback_walks_back_in_publication_order(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "g1")
    releases = tmp_path / "releases"
    ids = [publish(build, manifest, selection, releases).id]
    for token in ("g2", "g3"):
        write_token(build, token)
        ids.append(publish(build, manifest, selection, releases).id)
    assert rollback(releases).id == ids[1]
    assert rollback(releases).id == ids[0]


def test_pointer_rejects_garbage(tmp_path: Path) -> None:
    releases = tmp_path / "releases"
    releases.mkdir()
    with pytest.raises(ReleaseError, match="no current release"):
        resolve_current(releases)
    (releases / "CURRENT").write_text("../etc\n")
    with pytest.raises(ReleaseError, match="not a valid release id"):
        read_pointer(releases)
    (releases / "CURRENT").write_text("fixture-a\nfixture-b\n")
    with pytest.raises(ReleaseError, match="one release id"):
        read_pointer(releases)
    write_pointer(releases, "fixture-x")
    assert read_pointer(releases) == "fixture-x"
    assert not [p for p in releases.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ReleaseIntegrityError, match="not a release"):
        open_release(releases, "fixture-x")


def test_history_with_a_torn_line_is_refused(tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    releases = tmp_path / "releases"
    publish(build, manifest, selection, releases)
    with open(releases / "history.jsonl", "a") as handle:
        handle.write('{"action": "publish"')
    with pytest.raises(ReleaseError, match="incomplete"):
        rollback(releases)


def test_commands_publish_and_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build, _, selection = make_build(tmp_path, "alpha")
    monkeypatch.chdir(tmp_path)  # default corpus manifest: manifests/corpus-fixture.json
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))

    def run(*argv: str) -> int:
        args = parser.parse_args(list(argv))
        return int(args.handler(args))

    assert run("publish", "--build", str(build), "--selection", str(selection)) == 0
    first = read_pointer(tmp_path / "releases")
    write_token(build, "beta")
    assert run("publish", "--build", "build/fixture") == 0
    assert run("rollback") == 0
    assert read_pointer(tmp_path / "releases") == first
    assert run("release") == 0
    out = capsys.readouterr().out
    assert f"current release is now {first}" in out
    assert out.strip().splitlines()[-1].startswith(f"{first}\t")

"""`mambomeme publish`, `rollback` and `release`: thin wrappers over release.publish and pointer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mambomeme.errors import ReleaseError
from mambomeme.release.pointer import resolve_current
from mambomeme.release.publish import publish, rollback

DEFAULT_RELEASES = Path("releases")


def register(subparsers: Any) -> None:
    """Add the `publish`, `rollback` and `release` subcommands (handler=fn(args) -> int)."""
    pub = subparsers.add_parser(
        "publish", help="copy a build + manifest + selection into a new release and switch to it"
    )
    pub.add_argument("--build", type=Path, required=True, help="build/<corpus>/ folder")
    pub.add_argument(
        "--corpus-manifest",
        type=Path,
        default=None,
        help="corpus manifest (default: manifests/corpus-<corpus>.json)",
    )
    pub.add_argument("--selection", type=Path, default=Path("selection.json"))
    pub.add_argument("--releases", type=Path, default=DEFAULT_RELEASES)
    pub.set_defaults(handler=_publish)

    back = subparsers.add_parser(
        "rollback", help="switch to the previously published release (or --to ID)"
    )
    back.add_argument("--to", default=None, help="release id (default: the one before current)")
    back.add_argument("--releases", type=Path, default=DEFAULT_RELEASES)
    back.set_defaults(handler=_rollback)

    show = subparsers.add_parser(
        "release",
        help="print the current release id after verifying every file and artifact (deep)",
    )
    show.add_argument(
        "action",
        nargs="?",
        choices=("verify",),
        help="verify: check in full (every file, every artifact) the current release, or "
        "--build DIR, and say so; exit 4 when corrupt",
    )
    show.add_argument("--releases", type=Path, default=DEFAULT_RELEASES)
    show.add_argument("--build", type=Path, help="with verify: a build folder instead")
    show.set_defaults(handler=_show)


def _publish(args: argparse.Namespace) -> int:
    build: Path = args.build
    manifest = args.corpus_manifest or Path("manifests") / f"corpus-{build.resolve().name}.json"
    release = publish(build, manifest, args.selection, args.releases)
    print(f"published {release.id} -> {release.path}")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    release = rollback(args.releases, to=args.to)
    print(f"current release is now {release.id}")
    return 0


def _show(args: argparse.Namespace) -> int:
    if args.build is not None:
        if args.action != "verify":
            raise ReleaseError("--build goes with `mambomeme release verify`")
        from mambomeme.index.integrity import check_content

        check_content(args.build)  # in full, never a remembered pass
        print(f"verified {args.build}: every artifact matches its checksums")
        return 0
    release = resolve_current(args.releases, use_cache=False, deep=True)
    if args.action == "verify":
        print(f"verified {release.id}\t{release.path}: every file and artifact")
        return 0
    print(f"{release.id}\t{release.path}")
    return 0

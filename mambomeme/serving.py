"""What the CLI and the TUI serve: an explicit build, else the current release, else the build
of params base.corpus. Results are tagged with the label returned here (the release id)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mambomeme.config import build_dir

RELEASES = Path("releases")


def serving_dir(
    params: dict[str, Any], build: Path | None, releases: Path = RELEASES
) -> tuple[Path, str]:
    """(directory to open, label): the release id when a published release is served."""
    if build is not None:
        return Path(build), Path(build).name
    if (releases / "CURRENT").exists():
        from mambomeme.release.pointer import current_release

        release = current_release(releases)  # verified; a tampered release is refused
        return release.path, release.id
    path = build_dir(params)
    return path, path.name

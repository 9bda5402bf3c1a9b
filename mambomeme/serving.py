"""What the CLI and the TUI serve: an explicit build, else the current release, else the build
of params base.corpus. Results are tagged with the label returned here (the release id).

`serving_target` adds the user's library (mambomeme/library): inside the repository (a
params.yaml in the working directory) the pipeline's build stays the default; elsewhere, or
with --home/--library, the library in the XDG data home is served with its shipped defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params
from mambomeme.corpus.preview_paths import external_path
from mambomeme.errors import ArtifactIntegrityError, IndexError_

if TYPE_CHECKING:
    from mambomeme.search.results import SearchResponse

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


@dataclass(frozen=True)
class Target:
    """What to open: the build folder, the params to open it with, its label, where a frozen
    selection may be (None: the library's shipped defaults) and whether it is the library."""

    build: Path
    params: dict[str, Any]
    label: str
    reports: Path | None
    library: bool


def serving_target(
    build: Path | None,
    params_path: Path = DEFAULT_PARAMS,
    home: Path | None = None,
    library: bool = False,
) -> Target:
    """The build a command serves (module docstring); LibraryError when there is neither a
    params file here nor a library to fall back on."""
    from mambomeme.library.defaults import library_params
    from mambomeme.library.home import Library

    explicit_params = Path(params_path) != DEFAULT_PARAMS
    use_library = library or home is not None
    if build is not None or (not use_library and (explicit_params or params_path.exists())):
        params = (
            load_params(params_path, build=build)
            if explicit_params or params_path.exists()
            else None
        )
        if params is None:  # a build outside the repository: the shipped defaults
            return Target(
                Path(build or "."), library_params(), Path(build or ".").name, None, False
            )
        served, label = serving_dir(params, build)
        reports = Path(str(params.get("base", {}).get("reports", "reports")))
        return Target(served, params, label, reports, False)
    lib = Library.at(home)
    if not lib.exists():
        from mambomeme.errors import LibraryError

        where = "" if use_library else f" and no {params_path} in this folder"
        raise LibraryError(
            f"no library at {lib.home}{where}: add your memes with `mambomeme add DIR`"
        )
    # the link resolved once: this process reads one whole build, whatever `add` swaps in
    return Target(lib.build_dir.resolve(), library_params(), "library", None, True)


def default_system(target: Target) -> tuple[dict[str, Any], str, str]:
    """(params, system, where it came from) when the user names no system: the shipped
    selection (search/shipped.py) for a pipeline build, the library's defaults for a library."""
    if target.reports is None:
        from mambomeme.search.systems import DEFAULT_SYSTEM

        return target.params, DEFAULT_SYSTEM, "library defaults"
    from mambomeme.search.shipped import shipped

    ship = shipped(target.params, target.build, target.reports)
    return ship.params, ship.system, f"shipped: {ship.source}"


def library_damaged(target: Target, exc: IndexError_) -> IndexError_:
    """An index error met while serving the user's library, in the library's words: the
    pipeline's advice (a DVC stage to rerun) means nothing to a library user."""
    if not target.library:
        return exc
    detail = exc.path if isinstance(exc, ArtifactIntegrityError) else str(exc).split(" (")[0]
    return ArtifactIntegrityError(
        detail, "your library's index does not open; run `mambomeme add` to rebuild it"
    )


def gone_from_disk(target: Target, response: SearchResponse) -> SearchResponse:
    """The response without the library results whose image file is no longer on disk (deleted
    or moved since the last `mambomeme add`, which drops them from the index); a pipeline
    build's response unchanged. `gone` counts what was left out, for a note."""
    if not target.library:
        return response
    kept = tuple(
        r for r in response.results if Path(absolute_preview(target.build, r.preview)).exists()
    )
    if len(kept) == len(response.results):
        return response
    reason = response.empty_reason or "every result's file is gone from disk"
    return dataclasses.replace(response, results=kept, empty_reason="" if kept else reason)


def absolute_preview(build: Path, preview: str) -> str:
    """A result's image as an absolute path: previews relative to the build are resolved, a
    file:// preview decoded (corpus/preview_paths.py: os.fsencode of it is the name's bytes)."""
    if not preview:
        return ""
    external = external_path(preview)  # a file:// preview: a name that is not UTF-8
    return external if external is not None else str((Path(build) / preview).absolute())

"""Where the user's library lives and what it holds: the home folder, its layout, its config.

The home is `--home`, else $MAMBOMEME_HOME, else $XDG_DATA_HOME/mambomeme (default
~/.local/share/mambomeme). Inside it:

    config.json      the folders added (absolute paths), written atomically
    state.sqlite     per-file scan results, keyed by content sha256 (library/state.py)
    library/         the search build (items.parquet, lexical.sqlite, term-lists/, dense/,
                     query-encoder/, corpus-library.json): what `search` and `tui` open
    embed-cache/     the resumable embedding cache (index/embed_cache.py)
    query-encoder/   the ONNX query encoder, exported once and linked into each build
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import LibraryError

ENV_HOME = "MAMBOMEME_HOME"
CONFIG_VERSION = 1
BUILD_NAME = "library"  # the build folder; its corpus manifest is corpus-library.json


def default_home() -> Path:
    """$MAMBOMEME_HOME, else $XDG_DATA_HOME/mambomeme, else ~/.local/share/mambomeme."""
    explicit = os.environ.get(ENV_HOME)
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "mambomeme"


@dataclass(frozen=True)
class Library:
    """The paths of one library home."""

    home: Path

    @classmethod
    def at(cls, home: Path | None = None) -> Library:
        return cls(Path(home).expanduser().absolute() if home else default_home().absolute())

    @property
    def config_file(self) -> Path:
        return self.home / "config.json"

    @property
    def state_file(self) -> Path:
        return self.home / "state.sqlite"

    @property
    def build_dir(self) -> Path:
        return self.home / BUILD_NAME

    @property
    def manifest_file(self) -> Path:
        return self.build_dir / f"corpus-{BUILD_NAME}.json"

    @property
    def embed_cache(self) -> Path:
        return self.home / "embed-cache"

    @property
    def encoder_dir(self) -> Path:
        return self.home / "query-encoder"

    def exists(self) -> bool:
        """True when the library has a search build to open."""
        return (self.build_dir / "items.parquet").is_file()


@dataclass(frozen=True)
class LibraryConfig:
    """What the user asked for: the folders added (absolute, in the order added)."""

    folders: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"version": CONFIG_VERSION, "folders": list(self.folders)}


def load_config(library: Library) -> LibraryConfig:
    """The config; a library without one has no folders yet. A malformed one is an error (it
    is the user's list of folders: silently starting over would drop them)."""
    path = library.config_file
    if not path.exists():
        return LibraryConfig()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LibraryError(f"{path}: cannot read the library config: {exc}") from None
    folders = data.get("folders") if isinstance(data, dict) else None
    if data.get("version") != CONFIG_VERSION or not isinstance(folders, list):
        raise LibraryError(f"{path}: not a version-{CONFIG_VERSION} library config")
    if not all(isinstance(f, str) for f in folders):
        raise LibraryError(f"{path}: 'folders' must be a list of paths")
    return LibraryConfig(tuple(folders))


def save_config(library: Library, config: LibraryConfig) -> None:
    library.home.mkdir(parents=True, exist_ok=True)
    tmp = library.config_file.with_name(library.config_file.name + ".tmp")
    tmp.write_text(json.dumps(config.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, library.config_file)


def folder_key(folder: Path) -> str:
    """A folder as the config stores it: absolute, symlinks resolved."""
    return str(Path(folder).expanduser().resolve())

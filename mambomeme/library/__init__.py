"""The user's own library: folders of meme images indexed into a build in the XDG data home."""

from mambomeme.library.home import Library, LibraryConfig, default_home, load_config

__all__ = ["Library", "LibraryConfig", "default_home", "load_config"]

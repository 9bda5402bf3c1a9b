"""One writer at a time: `add`, `remove`, `allow` and `deny` hold an exclusive lock on the home.

The lock is `fcntl.flock` on `<home>/lock` (released by the kernel when the process ends, so a
killed `add` never leaves a stale lock). A second writer polls for `wait_s` seconds, then
raises LibraryBusyError naming the holder (its pid and start time, written into the file).
Searches take no lock: they read the served build through its symlink (library/build.py), and
the writer never changes a folder a search may have opened.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mambomeme.errors import LibraryBusyError
from mambomeme.library.home import Library

LOCK_NAME = "lock"
POLL_S = 0.1


@contextmanager
def writer_lock(library: Library, wait_s: float) -> Iterator[None]:
    """Hold the library's writer lock for the block; LibraryBusyError after `wait_s` seconds
    of another writer holding it."""
    library.home.mkdir(parents=True, exist_ok=True)
    path = library.home / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                    raise LibraryBusyError(library.home, holder, wait_s) from None
                time.sleep(POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

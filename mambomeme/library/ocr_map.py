"""OCR of a user folder as a map step on Ray (`mambomeme add --executor ray`).

The scan (library/scan.py) reads images one at a time and commits each to the state store
before the next. With the ray executor it first lists the images that may need reading (files
new or changed since the state recorded them whose bytes the state holds no OCR text for) and
has Ray actors read them, each actor opening the OCR engine once (index/ray_map.py, one image
per record). The scan then runs as always, in the driver and in the same order, with
`ReadAhead` as its engine: it answers each read from those results, a failure as the same
OcrError, so the state store (and the library built from it) is what an in-process add makes.
A path it has no result for (a file that appeared after the listing) is read here by the
driver's own engine. Images listed but not asked for (a copy whose twin was read first, a file
whose sidecar carries its text) were read for nothing; nothing else differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mambomeme.errors import OcrError
from mambomeme.index.ray_map import ExecutorConfig, map_on_ray
from mambomeme.library.ocr import OcrEngine, open_engine


@dataclass(frozen=True)
class OcrRead:
    """One image's OCR: its text, or the OcrError's message (text None)."""

    text: str | None
    error: str | None = None


def read_on_ray(
    paths: Sequence[str], engine_name: str, executor: ExecutorConfig
) -> dict[str, OcrRead]:
    """path -> OcrRead for every path, read by Ray actors that each opened `engine_name`."""
    reads = map_on_ray(list(paths), _Opener(engine_name), _read, executor, "OCR reads")
    return dict(zip(paths, reads, strict=True))


@dataclass(frozen=True)
class _Opener:
    """Opens the named engine in a Ray actor (the name is what travels, not the engine)."""

    name: str

    def __call__(self) -> OcrEngine:
        engine = open_engine(self.name)
        if engine is None:
            raise OcrError(f"OCR engine {self.name!r}: none to open on this Ray node")
        return engine


def _read(engine: OcrEngine, path: str) -> OcrRead:
    try:
        return OcrRead(engine.read(Path(path)))
    except OcrError as exc:
        return OcrRead(None, str(exc))


class ReadAhead:
    """An OcrEngine answering from reads made beforehand (keyed by absolute path); any other
    path is read by `engine` here."""

    def __init__(self, engine: OcrEngine, reads: Mapping[str, OcrRead]) -> None:
        self.name = engine.name
        self._engine = engine
        self._reads = reads

    def read(self, path: Path) -> str:
        done = self._reads.get(str(path.absolute()))
        if done is None:
            return self._engine.read(path)
        if done.text is None:
            raise OcrError(done.error or f"OCR failed on {path.name}")
        return done.text

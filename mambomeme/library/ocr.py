"""OCR for the user's library: RapidOCR (pip, the default) or tesseract (a system binary).

Measured on 20 generated memes (docs/library.md, scripts/ocr_eval.py) both read white
outlined capitals at about 0.99 character accuracy once prepared for them:

* rapidocr: rapidocr-onnxruntime's PP-OCRv4 models (shipped inside the wheel, no download).
  Its recogniser rarely emits spaces between capitals ("ONEDOESNOTSIMPLY"), so spaces are put
  back where the line's ink has a gap wider than RAPID_SPACE_GAP x the line height between two
  recognised characters (character centres from its word boxes).
* tesseract: `tesseract stdin stdout --psm 6` on a mask of the near-white pixels drawn black on
  white (it reads dark text on a light page; meme captions are the opposite); the raw image
  when the mask reads nothing (dark captions).

`open_engine("auto")` picks rapidocr when importable, else tesseract when on PATH, else None:
the library then indexes file names and sidecars only (the caller warns once).
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from mambomeme.corpus.sources.folder import run_tesseract
from mambomeme.errors import OcrError

ENGINES = ("rapidocr", "tesseract", "none")
CHOICES = ("auto", *ENGINES)
RAPID_SPACE_GAP = 0.3  # an ink gap this many line heights wide is a space (0.25-0.35 agree)
WHITE = 200  # grey level of caption fill (Impact-style white)
DARK = 60  # grey level of dark caption text


class OcrEngine(Protocol):
    name: str

    def read(self, path: Path) -> str:
        """The image's text, lines joined with single spaces."""
        ...


def rapidocr_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("rapidocr_onnxruntime") is not None


def tesseract_available() -> bool:
    return shutil.which("tesseract") is not None


def available() -> dict[str, bool]:
    return {"rapidocr": rapidocr_available(), "tesseract": tesseract_available(), "none": True}


def open_engine(name: str = "auto") -> OcrEngine | None:
    """The engine `name` (auto: the best installed); None for "none" or when auto finds none.
    An engine asked for by name that is not installed is an OcrError saying how to install it."""
    if name not in CHOICES:
        raise OcrError(f"unknown OCR engine {name!r}; known: {', '.join(CHOICES)}")
    if name == "auto":
        name = next((n for n in ("rapidocr", "tesseract") if available()[n]), "none")
    if name == "none":
        return None
    if name == "rapidocr":
        if not rapidocr_available():
            raise OcrError("--ocr rapidocr: not installed (pip install rapidocr-onnxruntime)")
        return RapidOcr()
    if not tesseract_available():
        raise OcrError("--ocr tesseract: no tesseract binary (apt-get install tesseract-ocr)")
    return Tesseract()


def _joined(text: str) -> str:
    return " ".join(text.split())


def _open(path: Path, mode: str) -> Image.Image:
    """The image converted to `mode` ("RGB", "L"); OcrError naming the file when unreadable."""
    try:
        with Image.open(path) as opened:
            return opened.convert(mode)
    except (OSError, ValueError, SyntaxError) as exc:
        raise OcrError(f"OCR cannot read {path.name}: {exc}") from None


class RapidOcr:
    """RapidOCR (ONNX Runtime) with spaces restored from ink gaps (module docstring)."""

    name = "rapidocr"

    def __init__(self, threads: int | None = None) -> None:
        """`threads`: ONNX Runtime intra-op threads (None: one per core)."""
        from rapidocr_onnxruntime import RapidOCR

        settings = {} if threads is None else {"intra_op_num_threads": int(threads)}
        self._engine = RapidOCR(**settings)

    def read(self, path: Path) -> str:
        rgb = _open(path, "RGB")
        array = np.asarray(rgb)
        try:
            lines, _ = self._engine(array[:, :, ::-1], return_word_box=True)  # it wants BGR
        except Exception as exc:  # noqa: BLE001 - any failure inside the engine is one image's
            raise OcrError(f"rapidocr failed on {path.name}: {type(exc).__name__}: {exc}") from None
        grey = np.asarray(rgb.convert("L"))
        return _joined(" ".join(respace(grey, line) for line in lines or []))


def respace(grey: np.ndarray, line: list[Any]) -> str:
    """One RapidOCR line's text with a space wherever two neighbouring characters are separated
    by an ink gap wider than RAPID_SPACE_GAP x the line height. `line` = [quad, text, score,
    character boxes, characters, confidences] (return_word_box=True); a line without character
    boxes keeps its text."""
    if len(line) < 5 or not line[3] or len(line[3]) != len(line[4]):
        return str(line[1])
    quad, boxes, chars = line[0], line[3], [str(c) for c in line[4]]
    xs, ys = [p[0] for p in quad], [p[1] for p in quad]
    x0, y0 = max(int(min(xs)), 0), max(int(min(ys)), 0)
    crop = grey[y0 : int(max(ys)) + 1, x0 : int(max(xs)) + 1]
    if crop.size == 0:
        return str(line[1])
    height = max(crop.shape[0], 1)
    light_page = (crop > WHITE).mean() > 0.5  # dark text on a light band, else light text
    ink: np.ndarray = np.asarray(((crop < DARK) if light_page else (crop > WHITE)).any(axis=0))
    centres = [max(int((b[0][0] + b[1][0]) / 2) - x0, 0) for b in boxes]
    pieces = [chars[0]]
    for i in range(1, len(chars)):
        if _longest_gap(ink[centres[i - 1] : centres[i] + 1]) > RAPID_SPACE_GAP * height:
            pieces.append(" ")
        pieces.append(chars[i])
    return "".join(pieces)


def _longest_gap(columns: np.ndarray) -> int:
    best = run = 0
    for has_ink in columns:
        run = 0 if has_ink else run + 1
        best = max(best, run)
    return best


class Tesseract:
    """The tesseract binary on a white-caption mask (module docstring)."""

    name = "tesseract"

    def __init__(self, language: str = "eng") -> None:
        binary = shutil.which("tesseract")
        if binary is None:
            raise OcrError("no tesseract binary (apt-get install tesseract-ocr)")
        self._binary = binary
        self._language = language

    def read(self, path: Path) -> str:
        grey = _open(path, "L")
        array = np.asarray(grey)
        mask = Image.fromarray(np.where(array > WHITE, 0, 255).astype(np.uint8))
        text = self._run(mask, path)
        return text if text else self._run(grey, path)

    def _run(self, image: Image.Image, path: Path) -> str:
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        argv = [self._binary, "stdin", "stdout", "--psm", "6", "-l", self._language]
        return run_tesseract(argv, buffer.getvalue(), path.name, OcrError)


_NOT_WORD = re.compile(r"[^0-9a-z]+")


def comparable(text: str) -> str:
    """Text as search sees it: case-folded, punctuation dropped, single spaces."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def char_accuracy(truth: str, got: str) -> float:
    """1 - Levenshtein(truth, got) / len(truth) on `comparable` text, floored at 0: the
    character accuracy of OCR (spaces count; case and punctuation do not, as in search)."""
    from rapidfuzz.distance import Levenshtein

    expected, read = comparable(truth), comparable(got)
    if not expected:
        return 1.0 if not read else 0.0
    return max(0.0, 1.0 - Levenshtein.distance(expected, read) / len(expected))

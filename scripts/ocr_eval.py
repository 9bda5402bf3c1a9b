"""OCR engines on generated memes with known captions: character accuracy and time per image.

    python scripts/ocr_eval.py [--images 20] [--seed 20261201] [--json out.json]

Draws the captions of mambomeme/library/synthetic.py (white outlined capitals, top and bottom,
DejaVu Sans Bold and Bold Condensed alternating) into a temporary folder, reads each image with
every installed engine (library/ocr.py: rapidocr, tesseract) and, for reference, each engine
without the library's preparation (rapidocr without the restored spaces, tesseract on the raw
image), and prints mean/min character accuracy (ocr.char_accuracy) and seconds per image
(median and mean, engine start-up excluded and printed apart). docs/library.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.library import ocr  # noqa: E402
from mambomeme.library.synthetic import CAPTIONS, write_memes  # noqa: E402


def rapid_raw() -> Callable[[Path], str]:
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR()

    def read(path: Path) -> str:
        lines, _ = engine(str(path))
        return " ".join(str(line[1]) for line in lines or [])

    return read


def tesseract_raw() -> Callable[[Path], str]:
    binary = shutil.which("tesseract") or "tesseract"

    def read(path: Path) -> str:
        done = subprocess.run([binary, str(path), "stdout"], capture_output=True, check=False)
        return " ".join(done.stdout.decode("utf-8", "replace").split())

    return read


def measure(name: str, opener: Callable[[], Callable[[Path], str]], memes: list[tuple[Path, str]]):
    start = time.perf_counter()
    read = opener()
    startup = time.perf_counter() - start
    scores, seconds = [], []
    for path, caption in memes:
        start = time.perf_counter()
        text = read(path)
        seconds.append(time.perf_counter() - start)
        scores.append(ocr.char_accuracy(caption, text))
    return {
        "engine": name,
        "images": len(memes),
        "accuracy_mean": round(statistics.fmean(scores), 4),
        "accuracy_min": round(min(scores), 4),
        "seconds_median": round(statistics.median(seconds), 3),
        "seconds_mean": round(statistics.fmean(seconds), 3),
        "startup_seconds": round(startup, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    captions = [CAPTIONS[i % len(CAPTIONS)] for i in range(args.images)]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        memes = write_memes(Path(scratch), captions, args.seed)
        engines: list[tuple[str, Callable[[], Callable[[Path], str]]]] = []
        if ocr.rapidocr_available():
            engines += [("rapidocr", lambda: ocr.RapidOcr().read), ("rapidocr-raw", rapid_raw)]
        if ocr.tesseract_available():
            engines += [
                ("tesseract", lambda: ocr.Tesseract().read),
                ("tesseract-raw", tesseract_raw),
            ]
        for name, opener in engines:
            rows.append(measure(name, opener, memes))
    print(f"{'engine':<15}{'images':>7}{'acc mean':>10}{'acc min':>9}{'s/img p50':>11}"
          f"{'s/img mean':>11}{'start s':>9}")  # fmt: skip
    for r in rows:
        print(f"{r['engine']:<15}{r['images']:>7}{r['accuracy_mean']:>10.3f}"
              f"{r['accuracy_min']:>9.3f}{r['seconds_median']:>11.3f}{r['seconds_mean']:>11.3f}"
              f"{r['startup_seconds']:>9.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

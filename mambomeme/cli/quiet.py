"""`--quiet` for commands that load models: no progress bars on stderr, notes still printed.

Two sources draw bars while `mambomeme add` runs: huggingface_hub and transformers (they read
HF_HUB_DISABLE_PROGRESS_BARS and TRANSFORMERS_VERBOSITY when imported, which `add` does lazily,
after this runs) and tqdm bars in the library that pass `disable=` explicitly, which tqdm's own
TQDM_DISABLE cannot override (an explicit argument wins over the environment). The last are
turned off by forcing `disable=True` on tqdm's constructor for the rest of this process: the CLI
owns the process, and the library never prints.
"""

from __future__ import annotations

import os
from typing import Any

QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TQDM_DISABLE": "1",
}


def silence_progress_bars() -> None:
    """Turn every progress bar of this process off (call before the models load)."""
    os.environ.update(QUIET_ENV)
    import tqdm

    original = tqdm.tqdm.__init__
    if getattr(original, "_mambomeme_quiet", False):
        return

    def quiet_init(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["disable"] = True
        original(self, *args, **kwargs)

    quiet_init._mambomeme_quiet = True  # type: ignore[attr-defined]
    tqdm.tqdm.__init__ = quiet_init

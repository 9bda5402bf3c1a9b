"""One base error and specific subclasses; the CLI and the stage scripts turn them into
messages and exit codes.

Each class carries its exit status (`exit_code`) and the word the message starts with
(`kind`); subclasses inherit both unless they say otherwise. docs/CONTRACTS.md ("Exit
statuses") is the table; tests/test_exit_codes.py checks it against these classes and runs
each documented failure through the CLI and through a stage.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_ERROR = 2  # a usage or input error (argparse's own usage errors exit 2 too)
EXIT_WAITING = 3  # waiting for someone: annotators, or another command holding a lock
EXIT_REFUSED = 4  # refused: the release protocol said no, or an artifact is corrupt


class MamboMemeError(Exception):
    """Base class of every error the library raises on purpose."""

    exit_code: ClassVar[int] = EXIT_ERROR
    kind: ClassVar[str] = "error"


class SchemaError(MamboMemeError):
    """A corpus record does not satisfy the canonical schema (names record and field)."""

    def __init__(self, where: str, field: str, reason: str) -> None:
        self.where = where
        self.field = field
        self.reason = reason
        super().__init__(f"{where}:{field}:{reason}")


class IngestError(MamboMemeError):
    """Ingest refused its input (strict mode with rejects, unreadable source, ...)."""


class BoundError(MamboMemeError):
    """A request exceeded a declared bound; `bound` names it, checked before any real work."""

    def __init__(self, bound: str, message: str) -> None:
        self.bound = bound
        super().__init__(f"{bound}: {message}")


class IndexError_(MamboMemeError):
    """An index artifact is missing, corrupt, or does not match its manifest."""


class BenchmarkError(MamboMemeError):
    """A benchmark folder, run file or judgement file is malformed or incompatible."""


class AnnotationsPendingError(MamboMemeError):
    """Adjudication waits for annotators: an annotator file is missing, or disagreement-queue
    pairs have no third-annotator grade; nothing is frozen or scored (exit 3 from the CLI and the
    adjudicate stage). The message says which files are wanted and where their exports are."""

    exit_code = EXIT_WAITING
    kind = "waiting for annotators"


class VersionMismatchError(BenchmarkError):
    """Two things compared carry different benchmark/corpus/judgement/policy/score versions."""


class ProtocolError(MamboMemeError):
    """The release protocol refused a step (tuning, held-out scoring or comparison)."""


class TuningOnHiddenError(ProtocolError):
    """Tuning was asked to read a benchmark marked "partition": "hidden"."""

    exit_code = EXIT_REFUSED
    kind = "refused by the release protocol"


class TuningError(ProtocolError):
    """A tuning grid or objective is malformed (names the axis, point or value)."""


class HoldoutNotAllowedError(ProtocolError):
    """Held-out scoring lacks a frozen selection whose dev checksum matches a dev benchmark."""

    exit_code = EXIT_REFUSED
    kind = "refused by the release protocol"


class ExposedBenchmarkError(ProtocolError):
    """A hidden benchmark version was already exposed to another selection or release."""

    exit_code = EXIT_REFUSED
    kind = "refused by the release protocol"


class IncomparableError(ProtocolError):
    """Two results carry different (or missing) benchmark/corpus/judgement/policy versions."""


class ReleaseError(MamboMemeError):
    """Publishing, switching or rolling back a release failed (missing input, no history...)."""


class ReleaseIntegrityError(ReleaseError):
    """A release's files do not match the sha256 sums in its manifest."""

    exit_code = EXIT_REFUSED
    kind = "corrupt artifact"


class ArtifactIntegrityError(IndexError_):
    """A build or release file is truncated, corrupt or does not match the manifest it carries.

    `path` names the file and `reason` what is wrong with it; the engine refuses to serve such a
    folder and publish refuses to publish it."""

    exit_code = EXIT_REFUSED
    kind = "corrupt artifact"

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ExecutorError(MamboMemeError):
    """A build map step's executor is misconfigured (params `build`), or Ray gave back fewer
    results than it was sent (index/ray_map.py)."""


class LibraryError(MamboMemeError):
    """The user's library (mambomeme/library) cannot be read or changed as asked."""


class LibraryBusyError(LibraryError):
    """Another `add`/`remove`/`allow`/`deny` holds the library's writer lock (library/lock.py)
    and did not finish within the wait; nothing was changed (exit 3 from the CLI)."""

    exit_code = EXIT_WAITING
    kind = "busy"

    def __init__(self, home: object, holder: str, wait_s: float) -> None:
        self.home = home
        self.holder = holder
        who = f" ({holder})" if holder else ""
        super().__init__(
            f"another mambomeme command is changing the library at {home}{who}; waited "
            f"{wait_s:g} s: run again when it has finished, or pass --wait SECONDS"
        )


class OcrError(LibraryError):
    """An OCR engine was asked for and cannot run, or failed on one image."""


class UnknownFilterError(MamboMemeError):
    """A request filter names a value no item has (`--template Nope`): an error, not an empty
    list; `value` is the value, `known` some of the values there are."""

    def __init__(self, name: str, value: str, known: list[str], total: int) -> None:
        self.name = name
        self.value = value
        self.known = known
        more = f" (and {total - len(known)} more)" if total > len(known) else ""
        shown = ", ".join(known) if known else "none"
        super().__init__(f"--{name}: no item has {value!r}; known: {shown}{more}")

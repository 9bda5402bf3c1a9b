"""The release protocol: tune on dev only, score hidden once per frozen comparison.

1. Tuning reads only a benchmark whose benchmark.json says "partition": "dev".
2. A hidden benchmark is scored only with a frozen selection.json whose recorded dev checksum
   matches a dev benchmark folder, and only if that hidden version was not already exposed to
   another selection.
3. After scoring, the hidden version is recorded as exposed in an append-only ledger
   (releases/exposed.jsonl) with the sha256 of every selection it was scored with.
4. Two results compare only when their benchmark, corpus, judgement, policy, score, hardware
   and interface versions are equal, and an exposed version compares only the selections it
   was exposed with: a later release needs a fresh hidden version.

`mambomeme run` and `mambomeme score` apply rules 2 and 3 through `admit_holdout` (before a
hidden benchmark's queries are read), `check_holdout_runs` and `expose`; a dev benchmark is
admitted as before, with no selection and no ledger.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mambomeme.errors import (
    ExposedBenchmarkError,
    HoldoutNotAllowedError,
    IncomparableError,
    ProtocolError,
    TuningOnHiddenError,
)
from mambomeme.release.verify import folder_checksum

PROTOCOL_VERSION = "release-protocol-v1"
BENCHMARK_META = "benchmark.json"
LEDGER_NAME = "exposed.jsonl"
LEDGER_PATH = Path("releases") / LEDGER_NAME
REQUIRED_BASELINES = ("bm25", "dense", "hybrid")
# Version keys that must be present on both sides of a comparison.
REQUIRED_VERSION_KEYS = ("benchmark", "benchmark_version", "corpus", "judgement_set")
# Keys that name what is compared rather than what it is compared on.
NOT_COMPARED_KEYS = frozenset({"system", "release", "selection_sha256"})


@dataclass(frozen=True)
class Exposure:
    """One line of the exposure ledger: a hidden version and the selections scored on it."""

    name: str
    version: str
    checksum: str
    selection_sha256s: tuple[str, ...]
    time: str


@dataclass(frozen=True)
class Holdout:
    """A hidden benchmark admitted for one frozen selection (what `admit_holdout` checked)."""

    benchmark_dir: Path
    meta: Mapping[str, Any]  # the hidden benchmark's benchmark.json
    selection_path: Path
    selection_sha256: str
    dev_benchmark_dir: Path
    ledger_path: Path


def read_benchmark_meta(benchmark_dir: Path) -> dict[str, Any]:
    """benchmark.json only (never queries or qrels): the protocol decides before reading more."""
    path = benchmark_dir / BENCHMARK_META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProtocolError(f"{path}: benchmark.json missing") from None
    except ValueError as exc:
        raise ProtocolError(f"{path}: not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise ProtocolError(f"{path}: must be a JSON object")
    for key in ("name", "version", "partition"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise ProtocolError(f"{path}: field {key!r} must be a non-empty string")
    return meta


def benchmark_checksum(benchmark_dir: Path) -> str:
    """sha256 over the benchmark folder's files in sorted relpath order (names included)."""
    return folder_checksum(benchmark_dir)


def selection_fingerprint(selection: Mapping[str, Any]) -> str:
    """sha256 of the selection as canonical JSON (sorted keys, no spaces): file layout aside,
    the same selection always has the same fingerprint. Exposures record these."""
    canonical = json.dumps(selection, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_tuning_allowed(bench_meta: Mapping[str, Any]) -> None:
    """Tuning may read a dev benchmark only; hidden (or an unknown partition) is refused."""
    partition = bench_meta.get("partition")
    name = f"{bench_meta.get('name')}@{bench_meta.get('version')}"
    if partition == "hidden":
        raise TuningOnHiddenError(f"benchmark {name}: partition is 'hidden'; tune on dev only")
    if partition != "dev":
        raise ProtocolError(f"benchmark {name}: field 'partition' is {partition!r}, not 'dev'")


def check_holdout_allowed(
    bench_meta: Mapping[str, Any],
    selection: Mapping[str, Any] | None,
    ledger: Sequence[Exposure],
    dev_benchmark_dir: Path,
) -> None:
    """Refuse held-out scoring unless every protocol condition holds.

    - the benchmark is hidden; a frozen selection exists (selection is not None);
    - the selection was tuned on `dev_benchmark_dir`, a dev benchmark whose checksum today
      equals the checksum recorded in the selection;
    - the selection's dev benchmark and the hidden one are over the same corpus;
    - the hidden version is not exposed, or was exposed to this very selection (a rescore).
    """
    name = f"{bench_meta.get('name')}@{bench_meta.get('version')}"
    if bench_meta.get("partition") != "hidden":
        raise HoldoutNotAllowedError(f"benchmark {name}: held-out scoring needs partition 'hidden'")
    if selection is None:
        raise HoldoutNotAllowedError(
            f"benchmark {name}: no frozen selection.json; tune on dev first"
        )
    recorded = selection.get("benchmark")
    if not isinstance(recorded, Mapping) or not isinstance(recorded.get("checksum"), str):
        raise HoldoutNotAllowedError("selection: field 'benchmark.checksum' missing")
    dev_meta = read_benchmark_meta(dev_benchmark_dir)
    if dev_meta["partition"] != "dev":
        raise HoldoutNotAllowedError(f"{dev_benchmark_dir}: is not a dev benchmark")
    actual = benchmark_checksum(dev_benchmark_dir)
    if actual != recorded["checksum"]:
        raise HoldoutNotAllowedError(
            f"selection: dev checksum {recorded['checksum'][:12]} does not match "
            f"{dev_benchmark_dir} ({actual[:12]}); the selection was not tuned on it"
        )
    if dev_meta.get("corpus") != bench_meta.get("corpus"):
        raise HoldoutNotAllowedError(
            f"benchmark {name}: corpus {bench_meta.get('corpus')!r} differs from the dev "
            f"benchmark's {dev_meta.get('corpus')!r}"
        )
    selection_sha256 = selection_fingerprint(selection)
    exposures = exposures_of(ledger, bench_meta)
    if bench_meta.get("exposed") is True and not exposures:
        raise ExposedBenchmarkError(f"benchmark {name}: marked exposed; use a fresh hidden version")
    for exposure in exposures:
        if selection_sha256 not in exposure.selection_sha256s:
            raise ExposedBenchmarkError(
                f"benchmark {name}: already exposed at {exposure.time} to other selections; "
                "a later release needs a fresh hidden version"
            )


def check_baselines(systems: Iterable[str]) -> None:
    """A hidden scoring reruns every baseline on the same version: bm25, dense and hybrid."""
    missing = sorted(set(REQUIRED_BASELINES) - set(systems))
    if missing:
        raise HoldoutNotAllowedError(f"held-out scoring is missing baseline runs {missing}")


def read_ledger(path: Path) -> list[Exposure]:
    """Every exposure in the ledger; a malformed line is an error naming file:line."""
    if not path.exists():
        return []
    exposures: list[Exposure] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            raw = json.loads(line)
            exposures.append(
                Exposure(
                    name=str(raw["name"]),
                    version=str(raw["version"]),
                    checksum=str(raw["checksum"]),
                    selection_sha256s=tuple(str(s) for s in raw["selection_sha256s"]),
                    time=str(raw["time"]),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ProtocolError(f"{path}:{number}: malformed exposure line: {exc}") from None
    return exposures


def record_exposure(
    ledger_path: Path,
    bench_meta: Mapping[str, Any],
    checksum: str,
    selection_sha256s: Sequence[str],
    *,
    now: datetime | None = None,
) -> Exposure:
    """Append one exposure line (single write + fsync); the ledger is never rewritten."""
    if not selection_sha256s:
        raise ProtocolError("record_exposure: at least one selection sha256 is required")
    exposure = Exposure(
        name=str(bench_meta["name"]),
        version=str(bench_meta["version"]),
        checksum=checksum,
        selection_sha256s=tuple(sorted(set(selection_sha256s))),
        time=(now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    line = {
        "name": exposure.name,
        "version": exposure.version,
        "checksum": exposure.checksum,
        "selection_sha256s": list(exposure.selection_sha256s),
        "time": exposure.time,
    }
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(ledger_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return exposure


def exposures_of(ledger: Sequence[Exposure], bench_meta: Mapping[str, Any]) -> list[Exposure]:
    """Ledger lines for this benchmark name+version (a reused version label counts too)."""
    name, version = str(bench_meta.get("name")), str(bench_meta.get("version"))
    return [e for e in ledger if (e.name, e.version) == (name, version)]


def check_comparable(
    a_versions: Mapping[str, Any],
    b_versions: Mapping[str, Any],
    ledger: Sequence[Exposure] = (),
) -> None:
    """Refuse a comparison whose sides differ in any version key (system/release/selection
    excluded), lack a required key, or use an exposed version for other selections."""
    problems: list[str] = []
    for key in REQUIRED_VERSION_KEYS:
        for side, versions in (("a", a_versions), ("b", b_versions)):
            if versions.get(key) in (None, ""):
                problems.append(f"{side} lacks {key!r}")
    keys = (set(a_versions) | set(b_versions)) - NOT_COMPARED_KEYS
    for key in sorted(keys):
        if a_versions.get(key) != b_versions.get(key):
            problems.append(f"{key}: {a_versions.get(key)!r} != {b_versions.get(key)!r}")
    if problems:
        raise IncomparableError("results are not comparable: " + "; ".join(problems))
    meta = {"name": a_versions["benchmark"], "version": a_versions["benchmark_version"]}
    for exposure in exposures_of(ledger, meta):
        for side, versions in (("a", a_versions), ("b", b_versions)):
            if versions.get("selection_sha256") not in exposure.selection_sha256s:
                raise ExposedBenchmarkError(
                    f"benchmark {meta['name']}@{meta['version']} was exposed at {exposure.time}; "
                    f"side {side} (selection {str(versions.get('selection_sha256'))[:12]}) "
                    "needs a fresh hidden version"
                )


def read_selection(path: Path) -> dict[str, Any]:
    """A frozen selection.json for held-out scoring; a missing or unreadable one is refused."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HoldoutNotAllowedError(
            f"{path}: no frozen selection.json; tune on a dev benchmark of the same corpus first "
            "(or pass --selection)"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HoldoutNotAllowedError(f"{path}: cannot read the frozen selection: {exc}") from None
    if not isinstance(data, dict):
        raise HoldoutNotAllowedError(f"{path}: the frozen selection must be a JSON object")
    return data


def admit_holdout(
    benchmark_dir: Path,
    selection_path: Path,
    ledger_path: Path = LEDGER_PATH,
    dev_benchmark_dir: Path | None = None,
) -> Holdout | None:
    """None for a dev benchmark (no protocol step); for a hidden one, the admission or a refusal.

    Reads only benchmark.json of `benchmark_dir`. The dev benchmark is `dev_benchmark_dir`, else
    the folder the selection records (`benchmark.dir`); `check_holdout_allowed` decides.
    """
    meta = read_benchmark_meta(benchmark_dir)
    if meta["partition"] != "hidden":
        return None
    selection = read_selection(selection_path)
    if dev_benchmark_dir is None:
        recorded = selection.get("benchmark")
        folder = recorded.get("dir") if isinstance(recorded, Mapping) else None
        if not isinstance(folder, str) or not folder:
            raise HoldoutNotAllowedError(
                f"{selection_path}: field 'benchmark.dir' missing; pass --dev-benchmark"
            )
        dev_benchmark_dir = Path(folder)
    check_holdout_allowed(meta, selection, read_ledger(ledger_path), dev_benchmark_dir)
    return Holdout(
        benchmark_dir=Path(benchmark_dir),
        meta=meta,
        selection_path=Path(selection_path),
        selection_sha256=selection_fingerprint(selection),
        dev_benchmark_dir=dev_benchmark_dir,
        ledger_path=Path(ledger_path),
    )


class RunStamp(Protocol):
    """What the protocol reads of a run's metadata (evaluation's RunMeta, one layer up)."""

    @property
    def system(self) -> str: ...

    @property
    def selection_sha256(self) -> str | None: ...


def check_holdout_runs(holdout: Holdout, runs: Mapping[str, RunStamp]) -> None:
    """Every run (label -> its meta) was made under the admitted selection, and the baselines
    bm25, dense and hybrid are all among them."""
    for label, meta in runs.items():
        recorded = meta.selection_sha256
        if recorded != holdout.selection_sha256:
            raise HoldoutNotAllowedError(
                f"{label}: run made under selection {str(recorded)[:12]}, not the frozen "
                f"selection {holdout.selection_sha256[:12]} ({holdout.selection_path}); "
                "rerun it with `mambomeme run --selection`"
            )
    check_baselines(meta.system for meta in runs.values())


def expose(holdout: Holdout, *, now: datetime | None = None) -> Exposure:
    """Record in the ledger that the hidden version was scored with the admitted selection."""
    checksum = benchmark_checksum(holdout.benchmark_dir)
    return record_exposure(
        holdout.ledger_path, holdout.meta, checksum, [holdout.selection_sha256], now=now
    )

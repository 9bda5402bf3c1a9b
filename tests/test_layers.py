"""Who may import what (docs/CONTRACTS.md "Layers"): the real import graph of mambomeme/, read
with `ast` (function-level and TYPE_CHECKING imports included), against one declared layer
table. A module may import its own layer and the layers below it, never one above.

The table puts each learned model's serving modules (features, manifest, model: load/predict)
below search/ and its training modules above evaluation/, so serving never reaches training
code or evaluation, and search/ never imports evaluation/.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mambomeme"

# Each learned model's serving modules (called by search/, library/, moderation.apply); every
# other module of models/<name>/ is training code (called by its stage; may use evaluation).
MODEL_SERVING: dict[str, tuple[str, ...]] = {
    "abstention": ("features", "model"),
    "reranker": ("features", "manifest", "model"),
    "safety": ("features", "signals", "model"),
    "usefulness": ("features", "model"),
}
MODELS_SERVING = "models (load/predict)"
MODELS_TRAINING = "models (train)"

# Lowest first: (name, module prefixes). A module belongs to its longest matching prefix;
# the two models layers are decided by MODEL_SERVING.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("mambomeme", "mambomeme.errors")),  # the package root is empty
    ("config, corpus", ("mambomeme.config", "mambomeme.corpus")),
    # the reranker's artifact format: index/integrity.py checks its files (imports errors only)
    ("model manifests", ("mambomeme.models.reranker.manifest",)),
    ("index", ("mambomeme.index",)),
    (MODELS_SERVING, ()),
    ("search", ("mambomeme.search",)),
    ("release", ("mambomeme.release",)),
    ("evaluation", ("mambomeme.evaluation",)),
    ("safety labels", ("mambomeme.moderation.labels",)),
    (MODELS_TRAINING, ("mambomeme.models",)),
    # the tune stage's work: the grid, then the abstention and usefulness models it trains
    ("tuning run", ("mambomeme.evaluation.tuning_run",)),
    ("moderation", ("mambomeme.moderation",)),
    ("library", ("mambomeme.library",)),
    ("serving", ("mambomeme.serving",)),
    ("warm", ("mambomeme.warm",)),  # the warm search server the CLI reuses (an engine per build)
    ("bench", ("mambomeme.bench",)),
    ("feedback", ("mambomeme.feedback",)),  # analytics of the TUI's local log (uses evaluation)
    ("tui", ("mambomeme.tui",)),
    ("cli", ("mambomeme.cli",)),
)
LAYER_NAMES = tuple(name for name, _ in LAYERS)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name."""
    return {module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file, at any depth: `from a import b`
    counts as a.b when that is a module, else as a; relative imports are resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in known else target), node.lineno


def layer_of(module: str) -> str:
    """The layer a mambomeme module belongs to (KeyError: a module the table does not place)."""
    parts = module.split(".")
    if parts[:2] == [PACKAGE, "models"] and len(parts) >= 4 and parts[2] in MODEL_SERVING:
        if parts[3] in MODEL_SERVING[parts[2]] and module != "mambomeme.models.reranker.manifest":
            return MODELS_SERVING
    best: tuple[int, str] | None = None
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            below = prefix != PACKAGE and module.startswith(prefix + ".")  # root: itself only
            if module == prefix or below:
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), name)
    if best is None:
        raise KeyError(module)
    return best[1]


def upward_edges(root: Path) -> list[str]:
    """'a -> b (line N): layer x imports layer y' for every import of a higher layer."""
    found = modules(root)
    known = set(found)
    bad = []
    for name, path in found.items():
        here = LAYER_NAMES.index(layer_of(name))
        for target, line in imports(path, name, known):
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
            there = LAYER_NAMES.index(layer_of(target))
            if there > here:
                bad.append(
                    f"{name} -> {target} (line {line}): "
                    f"{LAYER_NAMES[here]} imports {LAYER_NAMES[there]}"
                )
    return list(dict.fromkeys(bad))  # one line per edge, not per imported name


def edges(root: Path) -> list[tuple[str, str]]:
    found = modules(root)
    known = set(found)
    return [
        (name, target)
        for name, path in found.items()
        for target, _ in imports(path, name, known)
        if target.startswith(PACKAGE + ".")
    ]


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name in modules(ROOT):
        try:
            layer_of(name)
        except KeyError:
            unplaced.append(name)
    assert unplaced == []


def test_every_model_package_declares_its_serving_modules() -> None:
    """A new model under models/ says which of its modules serving may import."""
    packages = {p.parent.name for p in (ROOT / PACKAGE / "models").glob("*/*.py")}
    assert packages == set(MODEL_SERVING)
    for model, serving in MODEL_SERVING.items():
        for module in serving:
            assert (ROOT / PACKAGE / "models" / model / f"{module}.py").is_file(), (model, module)


def test_nothing_imports_upward() -> None:
    assert upward_edges(ROOT) == []


def test_search_never_imports_evaluation_or_training() -> None:
    wrong = [
        (a, b)
        for a, b in edges(ROOT)
        if a.startswith("mambomeme.search")
        and (b.startswith("mambomeme.evaluation") or layer_of(b) == MODELS_TRAINING)
    ]
    assert wrong == []


def test_model_serving_modules_never_import_training_or_evaluation() -> None:
    wrong = [
        (a, b)
        for a, b in edges(ROOT)
        if layer_of(a) in (MODELS_SERVING, "model manifests")
        and (layer_of(b) == MODELS_TRAINING or b.startswith("mambomeme.evaluation"))
    ]
    assert wrong == []


def test_nothing_imports_stages() -> None:
    found = modules(ROOT)
    wrong = [
        (name, target)
        for name, path in found.items()
        for target, _ in imports(path, name, set(found))
        if target.split(".")[0] in ("stages", "_common")
    ]
    assert wrong == []


def test_the_checker_sees_a_function_level_upward_import(tmp_path: Path) -> None:
    """The graph is read at every depth: an import hidden in a function (as search/engine.py
    once imported the reranker) or under TYPE_CHECKING counts."""
    package = tmp_path / PACKAGE
    for folder in ("search", "evaluation", "models/reranker"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "evaluation" / "metrics.py").write_text("X = 1\n")
    (package / "models" / "reranker" / "train.py").write_text("Y = 1\n")
    (package / "search" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..models.reranker import train\n"
        "def f():\n    from mambomeme.evaluation import metrics\n    return metrics\n"
    )
    assert upward_edges(tmp_path) == [
        "mambomeme.search.engine -> mambomeme.models.reranker.train (line 3): "
        "search imports models (train)",
        "mambomeme.search.engine -> mambomeme.evaluation.metrics (line 5): "
        "search imports evaluation",
    ]


def test_the_layer_table_is_documented() -> None:
    """docs/CONTRACTS.md lists the same layers, in the same order."""
    text = (ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [
        line.split("|")[2].strip().strip("`")
        for line in section.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    assert rows == list(LAYER_NAMES)


SERVING_ENTRIES = (
    "mambomeme.search.engine",
    "mambomeme.library.folders",
    "mambomeme.serving",
    "mambomeme.cli.search",
    "mambomeme.warm.server",
    "mambomeme.tui.app",
)


def closure(root: Path, start: str) -> set[str]:
    """Every mambomeme module `start` reaches through imports at any depth."""
    found = modules(root)
    known = set(found)
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in found:
            continue
        seen.add(name)
        todo += [t for t, _ in imports(found[name], name, known) if t.startswith(PACKAGE + ".")]
    return seen


def test_serving_never_reaches_a_training_module() -> None:
    """What serves a search (the engine, the library, the TUI, `mambomeme search`) reaches
    only the load/predict modules of the models, even through other packages."""
    reached = {
        entry: sorted(m for m in closure(ROOT, entry) if layer_of(m) == MODELS_TRAINING)
        for entry in SERVING_ENTRIES
    }
    assert reached == {entry: [] for entry in SERVING_ENTRIES}

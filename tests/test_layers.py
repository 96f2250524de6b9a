"""The layer rule, read from the code: each module imports only its own layer and those
below it, the core layers import no plotting, widget or notebook package, and no module
reaches itself through the imports it runs (module-level or inside a function).

Layers, bottom to top (docs/architecture.md): foundation (`_atomic`, `_errors`, `_options`, `_prompts`, `_repr`) → session →
formats → context → tokens → compaction → llm → strategies → analysis / replay / metrics /
datasets → bench → plot, display (HTML cards) and export (transcripts) → widgets → conformance (the reference
packages' runner and comparison) → cli, testing and the package face.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "musepi_lab"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "_atomic",
        "_errors",
        "_options",
        "_pool",
        "_process",
        "_prompts",
        "_repr",
        "_version",
        "prompts",
    ),
    ("session",),
    ("formats",),
    ("context",),
    ("tokens",),
    ("compaction",),
    ("llm",),
    ("strategies",),
    ("analysis", "replay", "metrics", "datasets", "navigation", "probes"),
    ("bench",),
    ("plot", "display", "export"),
    ("widgets",),
    ("conformance",),
    ("cli", "testing", "__init__"),
)
CORE = ("session", "formats", "context", "tokens", "compaction")
PRESENTATION_PACKAGES = ("matplotlib", "ipywidgets", "IPython", "papermill", "nbformat")


def _room(module: str) -> str:
    """`musepi_lab.compaction._cut` → `compaction`; `musepi_lab` → `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _level(room: str) -> int:
    for level, rooms in enumerate(LAYERS):
        if room in rooms:
            return level
    raise AssertionError(f"room {room!r} is in no layer: add it to LAYERS and the docs")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports, at any depth (lazy imports count), resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            if node.module is None or target == "musepi_lab":  # `from . import x`
                found.extend((node.lineno, f"{target}.{alias.name}") for alias in node.names)
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_room_has_a_layer() -> None:
    rooms = {_room(_module_name(p)) for p in MODULES}
    for room in rooms:
        _level(room)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_layers(path: Path) -> None:
    module = _module_name(path)
    room = _room(module)
    level = _level(room)
    upward = []
    for line, target in _imports(path):
        if target == "musepi_lab" and room != "__init__":
            upward.append(f"line {line}: imports the package face")
        elif target.startswith("musepi_lab.") and _level(_room(target)) > level:
            upward.append(f"line {line}: {target}")
    assert not upward, f"{module} ({room}) imports upward: {upward}"


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if _room(_module_name(p)) in CORE],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_core_layers_import_no_presentation_package(path: Path) -> None:
    bad = [
        f"line {line}: {target}"
        for line, target in _imports(path)
        if target.split(".")[0] in PRESENTATION_PACKAGES
    ]
    assert not bad, f"{path.name} imports presentation packages: {bad}"


def test_the_rule_can_fail() -> None:
    """The checker itself sees an upward import (so a green run means something)."""
    tree_source = "from ..plot import plot_tree\n"
    node = ast.parse(tree_source).body[0]
    assert isinstance(node, ast.ImportFrom) and node.level == 2
    fake = PACKAGE / "compaction" / "_cut.py"
    base = _module_name(fake).rsplit(".", 1)[0].split(".")[: -node.level + 1]
    target = ".".join([*base, node.module or ""])
    assert target == "musepi_lab.plot"
    assert _level(_room(target)) > _level("compaction")


# -- no import circle ----------------------------------------------------------------------

MODULE_NAMES = {_module_name(p): p for p in MODULES}


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Lines of the top-level `if TYPE_CHECKING:` blocks: imports for annotations, never run."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            end = max(getattr(n, "end_lineno", None) or n.lineno for n in node.body)
            lines.update(range(node.lineno, end + 1))
    return lines


def _known(target: str) -> str | None:
    """The package module an import target names (`pkg.mod.Name` → `pkg.mod`), if any."""
    while target not in MODULE_NAMES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target if target in MODULE_NAMES else None


def module_edges(path: Path) -> set[str]:
    """The package modules `path` imports when run: module-level and function-level imports,
    not those under `if TYPE_CHECKING:`. `from . import x` of a submodule is an edge to `x`
    (the package is already initialising), not to the package."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    targets: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            targets.extend(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, node.module] if node.module else parts)
        names = [f"{base}.{alias.name}" for alias in node.names]
        submodules = [n for n in names if n in MODULE_NAMES]
        # `from pkg import sub` runs `sub`; `from pkg import name` runs `pkg`.
        targets.extend(submodules if len(submodules) == len(names) else [base, *submodules])
    return {found for t in targets if (found := _known(t)) is not None and found != module}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    """No module reaches itself through the imports it runs (shared pieces live in leaves)."""
    graph = {module: module_edges(path) for module, path in MODULE_NAMES.items()}
    assert circles(graph) == []


def test_the_circle_finder_can_fail() -> None:
    """A function-level import back counts (so a green run means something)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    source = "def f():\n    from ._base import CompactionContext\n"
    tree = ast.parse(source)
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))
    assert not _type_checking_lines(tree)  # a function-level import is not skipped
    guarded = ast.parse("if TYPE_CHECKING:\n    from ._base import X\n")
    assert _type_checking_lines(guarded) == {1, 2}

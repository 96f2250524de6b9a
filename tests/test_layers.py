"""The layer rule, read from the code: each module imports only its own layer and those
below it, and the core layers import no plotting, widget or notebook package.

Layers, bottom to top (docs/architecture.md): foundation (`_atomic`, `_prompts`, `_repr`) → session →
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
    ("_atomic", "_pool", "_process", "_prompts", "_repr", "_version", "prompts"),
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

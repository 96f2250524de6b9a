"""House order (issue 9): no module over 600 lines, no function over 80 lines.

Read from the source with `ast`, so a module that grows past the bound fails here rather
than in a review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "musepi_lab"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MODULES = sorted(PACKAGE.rglob("*.py"))


def long_functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, lines) of every function or method longer than the bound."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_the_rule_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(ast.parse(f"def f():\n{body}\n")) == [("f", MAX_FUNCTION_LINES + 1)]


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_and_function_sizes(module: Path) -> None:
    text = module.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, (
        f"{module.name} over {MAX_MODULE_LINES} lines"
    )
    assert long_functions(ast.parse(text)) == [], f"functions over {MAX_FUNCTION_LINES} lines"

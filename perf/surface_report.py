"""Surface report: the largest functions, the most keywords, and the names in `__all__`.

Read from the package source with `ast` (nothing is imported), so the figures are the
same on any machine. Prints three tables: the `--top` longest functions and methods (lines,
decorators excluded), the `--top` functions with the most parameters (keyword-capable
parameters, `self`/`cls` excluded, keyword-only ones counted apart), and the number of
names in every `__all__` list with the total.

    python perf/surface_report.py [--top N] [--json]

Not a benchmark: no timing, no target. Issue 31 reads it before and after the redesign.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "musepi_lab"


@dataclass(frozen=True)
class Function:
    """One function or method found in the source."""

    where: str
    name: str
    lines: int
    parameters: int
    keyword_only: int


def _parameters(args: ast.arguments) -> tuple[int, int]:
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if positional[:1] in (["self"], ["cls"]):
        positional = positional[1:]
    return len(positional) + len(args.kwonlyargs), len(args.kwonlyargs)


def functions(path: Path) -> list[Function]:
    """Every function and method of one module, with its length and parameter counts."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = str(path.relative_to(PACKAGE.parent))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
            total, keyword_only = _parameters(node.args)
            lines = node.end_lineno - node.lineno + 1
            found.append(Function(where, node.name, lines, total, keyword_only))
    return found


def all_names(path: Path) -> int | None:
    """How many names the module's `__all__` lists, or None when it has none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)):
                return len(value.elts)
    return None


def report(top: int) -> dict[str, object]:
    """The three tables as plain data."""
    modules = sorted(PACKAGE.rglob("*.py"))
    every = [f for m in modules for f in functions(m)]
    longest = sorted(every, key=lambda f: (-f.lines, f.where, f.name))[:top]
    widest = sorted(every, key=lambda f: (-f.parameters, f.where, f.name))[:top]
    lists = {
        str(m.relative_to(PACKAGE.parent)): n for m in modules if (n := all_names(m)) is not None
    }
    return {
        "longest": [asdict(f) for f in longest],
        "widest": [asdict(f) for f in widest],
        "functions_at_or_over_80": sum(f.lines >= 80 for f in every),
        "all_lists": lists,
        "all_names": sum(lists.values()),
    }


def _print(data: dict[str, object], out: object = sys.stdout) -> None:
    print("longest functions (lines)", file=out)
    for f in data["longest"]:  # type: ignore[attr-defined]
        print(f"  {f['lines']:4d}  {f['where']}:{f['name']}", file=out)
    print(f"  functions of 80 lines or more: {data['functions_at_or_over_80']}", file=out)
    print("most parameters (total / keyword-only)", file=out)
    for f in data["widest"]:  # type: ignore[attr-defined]
        print(
            f"  {f['parameters']:4d} / {f['keyword_only']:2d}  {f['where']}:{f['name']}", file=out
        )
    lists = data["all_lists"]
    print(f"__all__ lists: {len(lists)}, names: {data['all_names']}", file=out)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Print the report (or its JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data = report(args.top)
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        _print(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Shared pieces of the command line: the usage error, plain tables, problem lists."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


class UsageError(Exception):
    """A command-line argument that cannot be used (printed, exit code 2)."""


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    if not rows:
        return "(nothing found)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines.append("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        lines.append(
            "  ".join(
                str(r[c]).rjust(widths[c])
                if isinstance(r[c], (int, float)) and not isinstance(r[c], bool)
                else str(r[c]).ljust(widths[c])
                for c in cols
            )
        )
    return "\n".join(lines)


# -- inspect / convert --------------------------------------------------------------------


def print_problems(problems: Sequence[Any], limit: int, *, file: Any = None) -> None:
    for problem in problems[:limit]:
        print(f"problem: {problem}", file=file)
    if len(problems) > limit:
        print(f"... and {len(problems) - limit} more problems", file=file)


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").rstrip("kK")) * (1000 if text[-1:] in "kK" else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


# -- navigate -----------------------------------------------------------------------------

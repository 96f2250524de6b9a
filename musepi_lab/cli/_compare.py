"""`compare`: strategies × keep-recent budgets over one session, as a table.

The same `Comparison` the `StrategyComparer` widget shows (`bench.compare_strategies`),
printed as text; `--json` also writes its rows.
"""

from __future__ import annotations

import argparse

from ._common import UsageError, add_model_options, format_table, summarizer_from
from ._conformance import budget_list

SHOWN = (
    "strategy",
    "budget",
    "method",
    "tokens_before",
    "tokens_after",
    "token_reduction",
    "fact_retention",
    "summarizer_cost_usd",
    "error",
)
"""The columns printed (`--json` writes every column of the comparison)."""


def _cell_text(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, 3)
    return value


def cmd_compare(args: argparse.Namespace) -> int:
    """Run the comparison of FILE and print it; 1 when every cell failed."""
    import json
    from pathlib import Path

    from .._atomic import write_bytes_atomic
    from ..bench._compare import DEFAULT_BUDGETS, compare_strategies
    from ..formats._registry import read_session
    from ._bench import _strategies

    source = Path(args.file)
    if not source.is_file():
        raise UsageError(f"{source}: no such session file")
    session = read_session(source, strict=args.strict)
    if args.leaf is not None and args.leaf not in session:
        raise UsageError(f"{source}: no entry {args.leaf!r} to compact at")
    comparison = compare_strategies(
        session,
        _strategies(args.strategy),
        args.budgets or DEFAULT_BUDGETS,
        summarizer=summarizer_from(args),
        leaf_id=args.leaf,
        facts=args.facts,
    )
    rows = [{c: _cell_text(r.get(c)) for c in SHOWN} for r in comparison.rows]
    print(
        f"{session.id}: {len(comparison.strategies)} strategies × budgets "
        f"{', '.join(f'{b:,}' for b in comparison.budgets)}\n"
    )
    print(format_table(rows))
    if args.json:
        document = [dict(r) for r in comparison.rows]
        text = json.dumps(document, indent=1, default=str) + "\n"
        write_bytes_atomic(Path(args.json), text.encode())
        print(f"\nwrote {args.json}")
    return 1 if rows and len(comparison.errors) == len(rows) else 0


def add_compare_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `compare` subcommand's arguments."""
    p = sub.add_parser(
        "compare",
        help="run strategies at several keep-recent budgets on one session, side by side",
        description="Compact one session with each strategy at each keep-recent budget and "
        "score it as a benchmark cell (tokens before and after, facts kept, summarizer "
        "cost): the table the StrategyComparer widget shows.",
    )
    p.add_argument("file", help="a session file of any supported format (read, never changed)")
    p.add_argument(
        "--strategy",
        action="append",
        metavar="SPEC",
        help="a strategy, e.g. truncate or observation-masking:keep_turns=3; repeat for "
        "several (default: the model-free ones)",
    )
    p.add_argument(
        "--budgets",
        type=budget_list,
        default=None,
        help="comma-separated keep-recent budgets (default: 4000,8000,16000)",
    )
    p.add_argument("--leaf", default=None, help="compact the path to this entry id")
    p.add_argument(
        "--facts",
        choices=("auto", "extracted"),
        default="auto",
        help="facts scored: planted ones beside the file when there (auto), or extracted",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="also write the rows as JSON")
    p.add_argument("--strict", action="store_true", help="fail on the first read problem")
    add_model_options(p, what="the strategies that call a model")
    p.set_defaults(func=cmd_compare)

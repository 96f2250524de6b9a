"""`conformance`: our profiles against the agents' published packages."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import positive_int

if TYPE_CHECKING:
    from ..conformance._rows import MeasureRow


def budget_list(text: str) -> tuple[int, ...]:
    """Comma-separated token counts, each read as `--budget` reads one (`20000`, `20k`)."""
    budgets = tuple(positive_int(part.strip()) for part in text.split(",") if part.strip())
    if not budgets:
        raise argparse.ArgumentTypeError(f"no budget given: {text!r}")
    return budgets


def _row_record(row: MeasureRow) -> dict[str, object]:
    return {
        "agent": row.agent,
        "measure": row.measure,
        "agreed": row.agreed,
        "total": row.total,
        "first_difference": row.first_difference,
        "own_wording": row.own_wording,
        "seed_difference": row.seed_difference,
    }


def cmd_conformance(args: argparse.Namespace) -> int:
    """Compare our profiles with the agents' published packages on each file.

    With MusePi compared, the table also holds the `unicode/...` rows: snapcompact's text
    normalization against the release's on every code point, measured once for the run
    (it does not depend on the files). Exit 0 when every measure agrees (own-wording texts
    aside), 1 otherwise, 3 when a reference tool (node, npm, bun) is missing or a driver
    fails.
    """
    import json

    from .._atomic import write_bytes_atomic
    from ..conformance import ReferenceRunError, ReferenceToolMissing, compare_file, format_table
    from ..conformance._reference import DEFAULT_BUDGETS, Agent
    from ..conformance._run import FileReport
    from ..conformance._unicode import unicode_rows
    from ..formats._io import check_session_path

    agents: tuple[Agent, ...] = ("pi", "musepi") if args.agent == "both" else (args.agent,)
    budgets = tuple(args.budgets or DEFAULT_BUDGETS)
    for file in args.files:
        check_session_path(file)
    rows: list[MeasureRow] = []
    reports: list[FileReport] = []
    for file in args.files:
        started = time.monotonic()
        try:
            report = compare_file(file, agents, budgets)
        except (ReferenceToolMissing, ReferenceRunError) as exc:
            print(f"musepi-lab conformance: {exc}", file=sys.stderr)
            return 3
        seconds = time.monotonic() - started
        note = " (converted to pi JSONL)" if report.converted else ""
        print(f"{file}{note}: {seconds:.1f} s", file=sys.stderr)
        rows.extend(report.rows)
        reports.append(report)
    every_code_point: list[MeasureRow] = []
    if "musepi" in agents:
        started = time.monotonic()
        try:
            every_code_point = unicode_rows()
        except (ReferenceToolMissing, ReferenceRunError) as exc:
            print(f"musepi-lab conformance: {exc}", file=sys.stderr)
            return 3
        print(f"every code point: {time.monotonic() - started:.1f} s", file=sys.stderr)
    rows.extend(every_code_point)
    print(format_table(rows))
    if args.json:
        document = {
            "agents": list(agents),
            "budgets": list(budgets),
            "files": [
                {
                    "source": r.source,
                    "converted": r.converted,
                    "rows": [_row_record(row) for row in r.rows],
                }
                for r in reports
            ],
            "unicode": [_row_record(row) for row in every_code_point],
        }
        write_bytes_atomic(Path(args.json), (json.dumps(document, indent=1) + "\n").encode())
    return 0 if all(row.ok for row in rows) else 1

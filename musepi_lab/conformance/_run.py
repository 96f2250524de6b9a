"""The IO edge of conformance: read each file, run the reference on it, compare, format.

Files in a format other than pi/MusePi JSONL are converted first: our conversion is written to
a temporary pi JSONL file, and both the reference and our profile read that file, so the two
sides see the same bytes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ..formats._registry import read_session
from ..session._errors import SessionReadError
from ..session._session import Session
from ._compare import compare_all, merge_rows
from ._reference import DEFAULT_BUDGETS, Agent, cached_reference
from ._rows import MeasureRow
from ._texts import snapcompact_rows

AGENTS: tuple[Agent, ...] = ("pi", "musepi")
SNAPCOMPACT_BUDGETS: tuple[int, ...] = (20_000,)
"""Budgets at which `compare_file` renders snapcompact on both sides (the release's renderer
takes seconds per budget, so not the whole sweep)."""


@dataclass(frozen=True, slots=True)
class FileReport:
    """The rows of one input file (and the pi JSONL file the reference read)."""

    source: str
    compared_file: str
    converted: bool
    rows: tuple[MeasureRow, ...]


@contextmanager
def pi_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[Path, bool]]:
    """The file itself when it is pi/MusePi JSONL, else our conversion in a temporary file.

    Yields `(pi_jsonl_path, converted)`; the temporary file is removed afterwards.

    Raises:
        SessionReadError: The file holds no session (empty, binary, nothing readable).
    """
    source = Path(path)
    session = read_session(source)
    if not session.entries:  # nothing for either side to compare: say why, run no driver
        first = session.errors[0] if session.errors else None
        raise SessionReadError(
            str(source),
            first.line if first else None,
            first.kind if first else "empty",
            f"holds no session{f': {first.message}' if first else ''}",
            problems=session.errors,
        )
    if session.source_format == "pi":
        yield source, False
        return
    with tempfile.TemporaryDirectory(prefix="musepi-conformance-") as scratch:
        target = Path(scratch) / (source.stem + ".jsonl")
        session.write(target)
        yield target, True


def compare_file(
    path: str | os.PathLike[str],
    agents: Sequence[Agent] = AGENTS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    snapcompact_budgets: Sequence[int] = SNAPCOMPACT_BUDGETS,
) -> FileReport:
    """Run each agent's reference on one file and compare it with our matching profile.

    MusePi's reference runs with full texts (the summarizer input per dialect is compared
    byte for byte) and, at `snapcompact_budgets` (none: skipped), once more with snapcompact
    rendered and its frames kept, so the frame pixels are compared. Both runs are cached.

    Raises:
        SessionReadError: The file holds no session.
        ReferenceToolMissing: node, npm or bun is missing.
        ReferenceRunError: installing or running a driver failed.
    """
    rows: list[MeasureRow] = []
    with pi_jsonl(path) as (jsonl, converted):
        session = read_session(jsonl)
        for agent in agents:
            texts: Literal["full", "digest"] = "full" if agent == "musepi" else "digest"
            reference = cached_reference(agent, jsonl, budgets, texts=texts)
            rows.extend(compare_all(reference, session, budgets))
            if agent == "musepi" and snapcompact_budgets:
                rows.extend(_snapcompact(jsonl, session, snapcompact_budgets))
    named = (
        replace(row, first_difference=f"{Path(path).name}: {row.first_difference}")
        if row.first_difference
        else row
        for row in rows
    )
    return FileReport(str(path), str(jsonl), converted, tuple(named))


def _snapcompact(jsonl: Path, session: Session, budgets: Sequence[int]) -> list[MeasureRow]:
    reference = cached_reference(
        "musepi",
        jsonl,
        budgets,
        snapcompact=True,
        snapcompact_budgets=budgets,
        texts="digest",
        frames=True,
    )
    return snapcompact_rows(reference, session, budgets)


def _table_line(row: MeasureRow) -> str:
    share = 100.0 * row.agreed / row.total if row.total else 100.0
    mark = " (own wording)" if row.own_wording else ""
    return (
        f"{row.agent:<7} {row.measure:<34} {f'{row.agreed}/{row.total}':>13} "
        f"{share:>6.1f}%  {(row.first_difference or '')}{mark}"
    )


def format_table(rows: Sequence[MeasureRow]) -> str:
    """A plain-text table: agent, measure, agreed/total, percent, first difference.

    Rows marked `seed_difference` follow in their own section, one per reason, headed by
    the reason: there `agreed` counts cases where the profile's seed rule gives the
    release's value.
    """
    header = f"{'agent':<7} {'measure':<34} {'agreed':>13} {'%':>7}  first difference"
    merged = sorted(merge_rows(rows), key=lambda r: (r.agent, r.measure))
    lines = [header, *(_table_line(r) for r in merged if r.seed_difference is None)]
    reasons = dict.fromkeys(r.seed_difference for r in merged if r.seed_difference is not None)
    for reason in reasons:
        lines += ["", f"seed differences (listed, not failures) — {reason}", header]
        lines += [_table_line(r) for r in merged if r.seed_difference == reason]
    return "\n".join(lines)

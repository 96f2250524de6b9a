"""pandas DataFrames of sessions: entries, messages, tool calls, compactions, sessions.

Every frame function takes a `Session`, a file or folder, or a list of those, and returns
`(frame, errors)` (or, with `strict=True`, the frame alone). Id columns (`session_id`,
`entry_id`, `parent_id`, `line`) join the frames.

Names load on first use (PEP 562): `musepi-lab usage` reads and sums without pandas, and
imports of one submodule (`musepi_lab.analysis._usage_sums`) load no other.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

if typing.TYPE_CHECKING:
    from ._columns import (
        COMPACTION_COLUMNS,
        ENTRY_COLUMNS,
        MESSAGE_COLUMNS,
        SESSION_COLUMNS,
        TIMESTAMP,
        TOOL_CALL_COLUMNS,
        Column,
    )
    from ._composition import (
        COMPOSITION_COLUMNS,
        DEFAULT_COMPOSITION_STRATEGIES,
        REPLAY_COMPOSITION_COLUMNS,
        context_composition,
        context_composition_df,
        replay_composition_df,
    )
    from ._lazy import FRAME_KINDS, dask_frame
    from ._live import LiveSummary, live_summary
    from ._rows import EntryRow, SessionView, ToolCallRow
    from ._tables import (
        compactions_df,
        entries_df,
        load_sessions,
        messages_df,
        sessions_df,
        tool_calls_df,
    )
    from ._usage import (
        BLOCK_HOURS,
        REPORTS,
        TOKEN_COLUMNS,
        USAGE_COLUMNS,
        billing_blocks,
        format_report,
        usage_df,
        usage_report,
    )

# Name → the submodule that defines it.
_LAZY: dict[str, str] = {
    "BLOCK_HOURS": "_usage",
    "COMPACTION_COLUMNS": "_columns",
    "COMPOSITION_COLUMNS": "_composition",
    "Column": "_columns",
    "DEFAULT_COMPOSITION_STRATEGIES": "_composition",
    "ENTRY_COLUMNS": "_columns",
    "EntryRow": "_rows",
    "FRAME_KINDS": "_lazy",
    "LiveSummary": "_live",
    "MESSAGE_COLUMNS": "_columns",
    "REPLAY_COMPOSITION_COLUMNS": "_composition",
    "REPORTS": "_usage",
    "SESSION_COLUMNS": "_columns",
    "SessionView": "_rows",
    "TIMESTAMP": "_columns",
    "TOKEN_COLUMNS": "_usage",
    "TOOL_CALL_COLUMNS": "_columns",
    "ToolCallRow": "_rows",
    "USAGE_COLUMNS": "_usage",
    "billing_blocks": "_usage",
    "compactions_df": "_tables",
    "context_composition": "_composition",
    "context_composition_df": "_composition",
    "dask_frame": "_lazy",
    "entries_df": "_tables",
    "format_report": "_usage",
    "live_summary": "_live",
    "load_sessions": "_tables",
    "messages_df": "_tables",
    "replay_composition_df": "_composition",
    "sessions_df": "_tables",
    "tool_calls_df": "_tables",
    "usage_df": "_usage",
    "usage_report": "_usage",
}

__all__ = [
    "BLOCK_HOURS",
    "COMPACTION_COLUMNS",
    "COMPOSITION_COLUMNS",
    "DEFAULT_COMPOSITION_STRATEGIES",
    "ENTRY_COLUMNS",
    "FRAME_KINDS",
    "MESSAGE_COLUMNS",
    "REPLAY_COMPOSITION_COLUMNS",
    "REPORTS",
    "SESSION_COLUMNS",
    "TIMESTAMP",
    "TOKEN_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "USAGE_COLUMNS",
    "Column",
    "EntryRow",
    "LiveSummary",
    "SessionView",
    "ToolCallRow",
    "billing_blocks",
    "compactions_df",
    "context_composition",
    "context_composition_df",
    "dask_frame",
    "entries_df",
    "format_report",
    "live_summary",
    "load_sessions",
    "messages_df",
    "replay_composition_df",
    "sessions_df",
    "tool_calls_df",
    "usage_df",
    "usage_report",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

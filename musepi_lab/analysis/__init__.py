"""pandas DataFrames of sessions: entries, messages, tool calls, compactions, sessions.

Every frame function takes a `Session`, a file or folder, or a list of those, and returns
the DataFrame; the read problems travel on it (`problems_of(frame)`), and `strict=True`
raises the first instead. Id columns (`session_id`, `entry_id`, `parent_id`, `line`) join
the frames.

Names load on first use (PEP 562): `musepi-lab usage` reads and sums without pandas, and
imports of one submodule (`musepi_lab.analysis._usage_sums`) load no other.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

if typing.TYPE_CHECKING:
    from ._composition import context_composition_df, replay_composition_df
    from ._lazy import dask_frame
    from ._live import live_summary
    from ._load import load_sessions
    from ._problems import problems_of
    from ._tables import (
        compactions_df,
        entries_df,
        messages_df,
        sessions_df,
        tool_calls_df,
    )
    from ._usage import billing_blocks, format_report, usage_df, usage_report

# Name → the submodule that defines it.
_LAZY: dict[str, str] = {
    "billing_blocks": "_usage",
    "compactions_df": "_tables",
    "context_composition_df": "_composition",
    "dask_frame": "_lazy",
    "entries_df": "_tables",
    "format_report": "_usage",
    "live_summary": "_live",
    "load_sessions": "_load",
    "messages_df": "_tables",
    "problems_of": "_problems",
    "replay_composition_df": "_composition",
    "sessions_df": "_tables",
    "tool_calls_df": "_tables",
    "usage_df": "_usage",
    "usage_report": "_usage",
}

__all__ = [
    "billing_blocks",
    "compactions_df",
    "context_composition_df",
    "dask_frame",
    "entries_df",
    "format_report",
    "live_summary",
    "load_sessions",
    "messages_df",
    "problems_of",
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

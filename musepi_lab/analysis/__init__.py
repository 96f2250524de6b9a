"""pandas DataFrames of sessions: entries, messages, tool calls, compactions, sessions.

Every frame function takes a `Session`, a file or folder, or a list of those, and returns
the DataFrame; the read problems travel on it (`problems_of(frame)`), and `strict=True`
raises the first instead. Id columns (`session_id`, `entry_id`, `parent_id`, `line`) join
the frames.
"""

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

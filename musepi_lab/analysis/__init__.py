"""pandas DataFrames of sessions: entries, messages, tool calls, compactions, sessions.

Every frame function takes a `Session`, a file or folder, or a list of those, and returns
the DataFrame; the read problems travel on it (`problems_of(frame)`), and `strict=True`
raises the first instead. Id columns (`session_id`, `entry_id`, `parent_id`, `line`) join
the frames.
"""

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
from ._load import load_sessions
from ._problems import problems_of
from ._rows import EntryRow, SessionView, ToolCallRow
from ._tables import (
    compactions_df,
    entries_df,
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
    "problems_of",
    "replay_composition_df",
    "sessions_df",
    "tool_calls_df",
    "usage_df",
    "usage_report",
]

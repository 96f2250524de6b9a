"""Declarative column specs of the frames, and the small pure functions they extract with.

Every frame is a list of `Column`s over one kind of row (`EntryRow`, `ToolCallRow` or
`SessionView`). A column names its value, the function that pulls it from a row, and the
pandas dtype the whole column gets once the frame is built. Id columns (`session_id`,
`entry_id`, `parent_id`, `line`) come first and are shared, so frames join on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ..session._model import message_text, tool_calls
from ..tokens._estimate import js_stringify
from ._rows import EntryRow, SessionView, ToolCallRow

R = TypeVar("R", contravariant=True)

TIMESTAMP = "timestamp"
"""Pseudo-dtype: ISO-8601 strings become `datetime64[ns, UTC]` (unparsable → NaT)."""


@dataclass(frozen=True, slots=True)
class Column(Generic[R]):
    """One column of a frame.

    Attributes:
        name: The column name.
        extract: Pulls the value out of one row (None for missing).
        dtype: The pandas dtype given to the whole column (`"string"`, `"Int64"`,
            `"boolean"`, ...; `TIMESTAMP` for ISO timestamps; None leaves pandas' choice).
    """

    name: str
    extract: Callable[[R], Any]
    dtype: str | None = None


class _HasEntry(Protocol):
    @property
    def view(self) -> SessionView: ...

    @property
    def entry(self) -> Any: ...


# -- small helpers -------------------------------------------------------------------------


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _len_of_list(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def _usage(message: Mapping[str, Any] | None, key: str) -> int | None:
    if message is None:
        return None
    usage = message.get("usage")
    return _int_or_none(usage.get(key)) if isinstance(usage, Mapping) else None


def _message_field(row: EntryRow, key: str) -> Any:
    return row.message.get(key) if row.message is not None else None


def message_display_text(message: Mapping[str, Any] | None) -> str | None:
    """What a reader sees of a message: its text blocks, a summary, or command output."""
    if message is None:
        return None
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        return _str_or_none(message.get("summary")) or ""
    if role in ("bashExecution", "pythonExecution"):
        return _str_or_none(message.get("output")) or ""
    return message_text(message.get("content"))


# -- id columns, shared by every entry-based frame -----------------------------------------

SESSION_ID: Column[_HasEntry] = Column("session_id", lambda r: r.view.session_id, "string")
ENTRY_ID: Column[_HasEntry] = Column("entry_id", lambda r: r.entry.id, "string")
PARENT_ID: Column[_HasEntry] = Column("parent_id", lambda r: r.entry.parent_id, "string")
LINE: Column[_HasEntry] = Column("line", lambda r: r.entry.line, "Int64")
TIMESTAMP_COLUMN: Column[_HasEntry] = Column("timestamp", lambda r: r.entry.timestamp, TIMESTAMP)
ON_PATH: Column[_HasEntry] = Column("on_path", lambda r: r.entry.id in r.view.path_ids, "boolean")
TOKENS: Column[_HasEntry] = Column("tokens", lambda r: r.view.tokens(r.entry), "Int64")

# -- entries_df ----------------------------------------------------------------------------


def _children(row: EntryRow) -> int | None:
    entry_id = row.entry.id
    return len(row.view.session.children(entry_id)) if entry_id is not None else None


def _label(row: EntryRow) -> str | None:
    entry_id = row.entry.id
    return row.view.session.labels.get(entry_id) if entry_id is not None else None


def _model(row: EntryRow) -> str | None:
    if row.entry.type == "model_change":
        model = _str_or_none(row.entry.get("model"))
        return model if model is not None else _str_or_none(row.entry.get("modelId"))
    return _str_or_none(_message_field(row, "model"))


ENTRY_COLUMNS: tuple[Column[EntryRow], ...] = (
    SESSION_ID,
    ENTRY_ID,
    PARENT_ID,
    LINE,
    Column("type", lambda r: r.entry.type, "string"),
    Column("role", lambda r: _str_or_none(_message_field(r, "role")), "string"),
    TIMESTAMP_COLUMN,
    Column("source_id", lambda r: r.entry.source_id, "string"),
    ON_PATH,
    Column("children", _children, "Int64"),
    Column("label", _label, "string"),
    TOKENS,
    Column("tool_calls", lambda r: len(tool_calls(r.message)), "Int64"),
    Column("custom_type", lambda r: _str_or_none(r.entry.get("customType")), "string"),
    Column("model", _model, "string"),
    Column("stop_reason", lambda r: _str_or_none(_message_field(r, "stopReason")), "string"),
)
"""Columns of `entries_df`: one row per entry, every type (role is the runtime
message's role for entries that put one in the context)."""

# -- messages_df ---------------------------------------------------------------------------

MESSAGE_COLUMNS: tuple[Column[EntryRow], ...] = (
    SESSION_ID,
    ENTRY_ID,
    PARENT_ID,
    LINE,
    Column("entry_type", lambda r: r.entry.type, "string"),
    Column("role", lambda r: _str_or_none(_message_field(r, "role")), "string"),
    TIMESTAMP_COLUMN,
    ON_PATH,
    Column("text", lambda r: message_display_text(r.message), "string"),
    TOKENS,
    Column("tool_calls", lambda r: len(tool_calls(r.message)), "Int64"),
    Column("tool_call_id", lambda r: _str_or_none(_message_field(r, "toolCallId")), "string"),
    Column("tool_name", lambda r: _str_or_none(_message_field(r, "toolName")), "string"),
    Column("is_error", lambda r: _bool_or_none(_message_field(r, "isError")), "boolean"),
    Column("stop_reason", lambda r: _str_or_none(_message_field(r, "stopReason")), "string"),
    Column("provider", lambda r: _str_or_none(_message_field(r, "provider")), "string"),
    Column("model", lambda r: _str_or_none(_message_field(r, "model")), "string"),
    Column("usage_input", lambda r: _usage(r.message, "input"), "Int64"),
    Column("usage_output", lambda r: _usage(r.message, "output"), "Int64"),
    Column("usage_cache_read", lambda r: _usage(r.message, "cacheRead"), "Int64"),
    Column("usage_cache_write", lambda r: _usage(r.message, "cacheWrite"), "Int64"),
    Column("usage_total_tokens", lambda r: _usage(r.message, "totalTokens"), "Int64"),
)
"""Columns of `messages_df`: one row per entry that puts a message in the LLM context
(`message` entries, and `custom_message`, `branch_summary`, `compaction` as their runtime
`custom`, `branchSummary`, `compactionSummary` messages)."""

# -- tool_calls_df -------------------------------------------------------------------------


def _arguments_json(row: ToolCallRow) -> str:
    return js_stringify(row.call.get("arguments", {}))


def _argument_path(row: ToolCallRow) -> str | None:
    arguments = row.call.get("arguments")
    return _str_or_none(arguments.get("path")) if isinstance(arguments, Mapping) else None


def _result_field(row: ToolCallRow, key: str) -> Any:
    message = row.result_message
    return message.get(key) if message is not None else None


def _result_tokens(row: ToolCallRow) -> int | None:
    return row.view.tokens(row.result) if row.result is not None else None


def _useless(row: ToolCallRow) -> bool | None:
    if row.result is None:
        return None
    # oh-my-pi writes `useless` only when true; pi never does.
    return _result_field(row, "useless") is True


TOOL_CALL_COLUMNS: tuple[Column[ToolCallRow], ...] = (
    SESSION_ID,
    ENTRY_ID,
    LINE,
    ON_PATH,
    Column("call_index", lambda r: r.index, "Int64"),
    Column("call_id", lambda r: _str_or_none(r.call.get("id")), "string"),
    Column("tool_name", lambda r: _str_or_none(r.call.get("name")), "string"),
    Column("arguments", _arguments_json, "string"),
    Column("arguments_chars", lambda r: len(_arguments_json(r)), "Int64"),
    Column("path", _argument_path, "string"),
    Column("has_result", lambda r: r.result is not None, "boolean"),
    Column("result_entry_id", lambda r: r.result.id if r.result else None, "string"),
    Column("result_line", lambda r: r.result.line if r.result else None, "Int64"),
    Column("result_tokens", _result_tokens, "Int64"),
    Column("is_error", lambda r: _bool_or_none(_result_field(r, "isError")), "boolean"),
    Column("useless", _useless, "boolean"),
)
"""Columns of `tool_calls_df`: one row per toolCall block of an assistant message, joined
to the tool result that answers it (`entry_id` is the calling entry, `result_entry_id`
the result's; `arguments` is the JSON of the arguments as JavaScript writes it)."""

# -- compactions_df ------------------------------------------------------------------------


def _summary(row: EntryRow) -> str:
    return _str_or_none(row.entry.get("summary")) or ""


def _details_count(row: EntryRow, key: str) -> int | None:
    details = row.entry.get("details")
    return _len_of_list(details.get(key)) if isinstance(details, Mapping) else None


def _first_kept_line(row: EntryRow) -> int | None:
    kept = row.view.session.get(_str_or_none(row.entry.get("firstKeptEntryId")))
    return kept.line if kept is not None else None


def _from_extension(row: EntryRow) -> bool:
    # pi writes `fromHook`; oh-my-pi renamed it `fromExtension`.
    return row.entry.get("fromHook") is True or row.entry.get("fromExtension") is True


COMPACTION_COLUMNS: tuple[Column[EntryRow], ...] = (
    SESSION_ID,
    ENTRY_ID,
    PARENT_ID,
    LINE,
    TIMESTAMP_COLUMN,
    ON_PATH,
    Column("method", lambda r: _str_or_none(r.entry.get("method")), "string"),
    Column("summary_chars", lambda r: len(_summary(r)), "Int64"),
    Column("summary_tokens", lambda r: r.view.tokens(r.entry), "Int64"),
    Column("tokens_before", lambda r: _int_or_none(r.entry.get("tokensBefore")), "Int64"),
    Column("tokens_after", lambda r: _int_or_none(r.entry.get("tokensAfter")), "Int64"),
    Column(
        "first_kept_entry_id",
        lambda r: _str_or_none(r.entry.get("firstKeptEntryId")),
        "string",
    ),
    Column("first_kept_line", _first_kept_line, "Int64"),
    Column("read_files", lambda r: _details_count(r, "readFiles"), "Int64"),
    Column("modified_files", lambda r: _details_count(r, "modifiedFiles"), "Int64"),
    Column("from_extension", _from_extension, "boolean"),
)
"""Columns of `compactions_df`: one row per `compaction` entry. `summary_tokens` counts
the `compactionSummary` message the entry becomes (summary text, plus snapcompact frames
for the musepi and BPE methods)."""

# -- sessions_df ---------------------------------------------------------------------------

MESSAGE_ROLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("user", "messages_user"),
    ("assistant", "messages_assistant"),
    ("toolResult", "messages_tool_result"),
    ("bashExecution", "messages_bash_execution"),
    ("pythonExecution", "messages_python_execution"),
    ("custom", "messages_custom"),
    ("developer", "messages_developer"),
    ("branchSummary", "messages_branch_summary"),
    ("compactionSummary", "messages_compaction_summary"),
)
"""Runtime message roles and the `sessions_df` column counting each."""


def _role_count(role: str) -> Callable[[SessionView], int]:
    return lambda view: view.message_roles.get(role, 0)


def _count_type(view: SessionView, kind: str) -> int:
    return sum(1 for entry in view.session.entries if entry.type == kind)


def _first_timestamp(view: SessionView) -> str | None:
    stamps = view.timestamps_ms
    return stamps[0][1] if stamps else None


def _last_timestamp(view: SessionView) -> str | None:
    stamps = view.timestamps_ms
    return stamps[-1][1] if stamps else None


def _role_columns() -> tuple[Column[SessionView], ...]:
    return tuple(Column(name, _role_count(role), "Int64") for role, name in MESSAGE_ROLE_COLUMNS)


SESSION_COLUMNS: tuple[Column[SessionView], ...] = (
    Column("session_id", lambda v: v.session_id, "string"),
    Column("header_id", lambda v: v.session.id, "string"),
    Column("source_path", lambda v: v.session.source_path, "string"),
    Column("format", lambda v: v.session.source_format, "string"),
    Column("name", lambda v: v.session.name, "string"),
    Column("cwd", lambda v: v.session.cwd, "string"),
    Column("entries", lambda v: len(v.session.entries), "Int64"),
    Column("messages", lambda v: len(v.messages), "Int64"),
    *_role_columns(),
    Column(
        "tool_calls",
        lambda v: sum(len(tool_calls(message)) for _, message in v.messages),
        "Int64",
    ),
    Column("compactions", lambda v: _count_type(v, "compaction"), "Int64"),
    Column("branch_summaries", lambda v: _count_type(v, "branch_summary"), "Int64"),
    Column("branches", lambda v: v.session.branches, "Int64"),
    Column("errors", lambda v: len(v.session.errors), "Int64"),
    Column("linked_sessions", lambda v: len(v.session.linked), "Int64"),
    Column("first_timestamp", _first_timestamp, TIMESTAMP),
    Column("last_timestamp", _last_timestamp, TIMESTAMP),
    Column("tokens", lambda v: v.total_tokens(), "Int64"),
)
"""Columns of `sessions_df`: one row per session. `messages` and `messages_*` count the
rows `messages_df` has for the session (by runtime role); `branches` counts conversations
(`Session.branches`: bookkeeping leaves are no branches);
`errors` counts the problems met while reading it; `tokens` sums every entry."""


def column_names(columns: Sequence[Column[Any]]) -> list[str]:
    """The names of columns, in order (duplicates are an error)."""
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate column names: {names}")
    return names

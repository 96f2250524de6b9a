"""Sessions: the immutable entry model, readers for five formats, and the LLM context."""

from ._errors import ReadProblem, SessionReadError
from ._jsonl import migrate_records, read_pi_jsonl, records_to_session
from ._model import (
    KNOWN_ENTRY_TYPES,
    MESSAGE_ROLES,
    MUSEPI_ENTRY_TYPES,
    PI_ENTRY_TYPES,
    REMOVE,
    Entry,
    message_text,
    tool_calls,
)
from ._read import (
    FORMATS,
    detect_format,
    iter_session_files,
    iter_sessions,
    read_session,
    read_sessions,
)
from ._session import CURRENT_SESSION_VERSION, Session, parse_timestamp_ms

__all__ = [
    "CURRENT_SESSION_VERSION",
    "FORMATS",
    "KNOWN_ENTRY_TYPES",
    "MESSAGE_ROLES",
    "MUSEPI_ENTRY_TYPES",
    "PI_ENTRY_TYPES",
    "REMOVE",
    "Entry",
    "ReadProblem",
    "Session",
    "SessionReadError",
    "detect_format",
    "iter_session_files",
    "iter_sessions",
    "message_text",
    "migrate_records",
    "parse_timestamp_ms",
    "read_pi_jsonl",
    "read_session",
    "read_sessions",
    "records_to_session",
    "tool_calls",
]

"""Sessions: the immutable entry model, readers for five formats, and the LLM context."""

from ._claude_code import read_claude_code
from ._codex import read_codex
from ._context import (
    PROFILES,
    UNSET,
    SessionContext,
    TranscriptItem,
    bash_execution_text,
    build_session_context,
    convert_to_llm,
    entry_path,
    provider_messages,
    render_transcript,
    transcript,
)
from ._errors import ReadProblem, SessionReadError
from ._jsonl import check_session_path, migrate_records, read_pi_jsonl, records_to_session
from ._messages import entry_to_message
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
from ._openhands import iter_openhands, read_openhands
from ._read import (
    FORMATS,
    detect_format,
    iter_session_files,
    iter_sessions,
    read_session,
    read_sessions,
)
from ._session import CURRENT_SESSION_VERSION, Session, parse_timestamp_ms
from ._swe_agent import read_swe_agent

__all__ = [
    "CURRENT_SESSION_VERSION",
    "FORMATS",
    "KNOWN_ENTRY_TYPES",
    "MESSAGE_ROLES",
    "MUSEPI_ENTRY_TYPES",
    "PI_ENTRY_TYPES",
    "PROFILES",
    "REMOVE",
    "UNSET",
    "Entry",
    "ReadProblem",
    "Session",
    "SessionContext",
    "SessionReadError",
    "TranscriptItem",
    "bash_execution_text",
    "build_session_context",
    "check_session_path",
    "convert_to_llm",
    "detect_format",
    "entry_path",
    "entry_to_message",
    "iter_openhands",
    "iter_session_files",
    "iter_sessions",
    "message_text",
    "migrate_records",
    "parse_timestamp_ms",
    "provider_messages",
    "read_claude_code",
    "read_codex",
    "read_openhands",
    "read_pi_jsonl",
    "read_session",
    "read_sessions",
    "read_swe_agent",
    "records_to_session",
    "render_transcript",
    "tool_calls",
    "transcript",
]

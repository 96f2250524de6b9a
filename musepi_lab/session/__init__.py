"""The session model: immutable entries, the `Session` tree, and reading problems.

Readers for the agents' file formats live in `musepi_lab.formats`; what the model sees at a
leaf lives in `musepi_lab.context`.
"""

from ._errors import ReadProblem, SessionReadError
from ._messages import entry_to_message
from ._model import (
    KNOWN_ENTRY_TYPES,
    MESSAGE_ROLES,
    MUSEPI_ENTRY_TYPES,
    PI_ENTRY_TYPES,
    Entry,
    message_text,
    tool_calls,
)
from ._session import CURRENT_SESSION_VERSION, Session, parse_timestamp_ms

__all__ = [
    "CURRENT_SESSION_VERSION",
    "KNOWN_ENTRY_TYPES",
    "MESSAGE_ROLES",
    "MUSEPI_ENTRY_TYPES",
    "PI_ENTRY_TYPES",
    "Entry",
    "ReadProblem",
    "Session",
    "SessionReadError",
    "entry_to_message",
    "message_text",
    "parse_timestamp_ms",
    "tool_calls",
]

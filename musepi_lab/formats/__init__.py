"""Readers for agent session formats, each in its own module, with detection.

`read_session(path)` detects the format and returns one `Session`; `iter_sessions` and
`read_sessions` read many. To add a format, add a module with a reader and register it in
`_registry.py`.
"""

from ._claude_code import read_claude_code
from ._codex import read_codex
from ._gemini_cli import read_gemini_cli
from ._inspect import iter_inspect, read_inspect
from ._opencode import read_opencode
from ._openhands import iter_openhands, read_openhands
from ._pi import migrate_records, read_pi_jsonl, records_to_session
from ._registry import (
    FORMATS,
    detect_format,
    iter_session_files,
    iter_sessions,
    read_session,
    read_sessions,
)
from ._swe_agent import read_swe_agent
from ._tail import (
    TAIL_FORMATS,
    FileRead,
    TailState,
    advance,
    empty_tail,
    follow,
    poll,
    read_new_bytes,
    start_tail,
)

__all__ = [
    "FORMATS",
    "TAIL_FORMATS",
    "FileRead",
    "TailState",
    "advance",
    "detect_format",
    "empty_tail",
    "follow",
    "iter_inspect",
    "iter_openhands",
    "iter_session_files",
    "iter_sessions",
    "migrate_records",
    "poll",
    "read_claude_code",
    "read_codex",
    "read_gemini_cli",
    "read_inspect",
    "read_new_bytes",
    "read_opencode",
    "read_openhands",
    "read_pi_jsonl",
    "read_session",
    "read_sessions",
    "read_swe_agent",
    "records_to_session",
    "start_tail",
]

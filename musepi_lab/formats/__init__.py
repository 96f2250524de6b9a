"""Readers for agent session formats, each in its own module, with detection.

`read_session(path)` detects the format and returns one `Session`; `iter_sessions` and
`read_sessions` read many. To add a format, add a module with a reader and register it in
`_registry.py`.
"""

from ._registry import (
    FORMATS,
    detect_format,
    iter_session_files,
    iter_sessions,
    read_session,
    read_sessions,
)
from ._tail import TailState, advance, follow, poll

__all__ = [
    "FORMATS",
    "TailState",
    "advance",
    "detect_format",
    "follow",
    "iter_session_files",
    "iter_sessions",
    "poll",
    "read_session",
    "read_sessions",
]

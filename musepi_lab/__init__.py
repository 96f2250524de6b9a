"""musepi-lab: a Jupyter-native research workbench for context compaction in agent sessions.

`import musepi_lab` stays light: pandas-, matplotlib- and ipywidgets-backed parts load on
first use.
"""

from __future__ import annotations

from .session import (
    Entry,
    ReadProblem,
    Session,
    SessionReadError,
    iter_sessions,
    read_session,
    read_sessions,
)
from .tokens import TokenCounter

__version__ = "0.1.0"

__all__ = [
    "Entry",
    "ReadProblem",
    "Session",
    "SessionReadError",
    "TokenCounter",
    "__version__",
    "iter_sessions",
    "read_session",
    "read_sessions",
]

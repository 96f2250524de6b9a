"""musepi-lab: a Jupyter-native research workbench for context compaction in agent sessions.

`import musepi_lab` stays light: the session model, tokens, the compaction engine, the
strategy registry and replay load at once (pure Python); DataFrames (pandas), benchmarks,
plots (matplotlib) and widgets (ipywidgets) load on first use. (`replay` is imported eagerly
because the function shares its name with the subpackage that defines it.)
"""

from __future__ import annotations

import importlib
from typing import Any

from . import display as _display  # noqa: F401  (fills the repr registry: HTML cards)
from ._version import __version__
from .compaction import (
    CompactionPreparation,
    CompactionResult,
    CompactionSettings,
    find_cut_point,
    preferred_dialect,
    prepare_compaction,
    prune_tool_outputs,
    serialize_conversation,
    serialize_for_summary,
    should_compact,
)
from .compaction._hooks import SessionHooks
from .context._build import SessionContext, build_session_context
from .context._llm import convert_to_llm
from .context._transcript import render_transcript, transcript
from .formats._registry import iter_sessions, read_session, read_sessions
from .navigation import NavigationResult, generate_branch_summary, navigate_tree
from .replay import ReplayResult, replay
from .session import Entry, ReadProblem, Session, SessionReadError
from .strategies import HandoffResult, compact, handoff
from .tokens import TokenCounter

# Name → module that defines it, imported on first access (PEP 562).
_LAZY: dict[str, str] = {
    "entries_df": "musepi_lab.analysis",
    "messages_df": "musepi_lab.analysis",
    "tool_calls_df": "musepi_lab.analysis",
    "compactions_df": "musepi_lab.analysis",
    "context_composition_df": "musepi_lab.analysis",
    "sessions_df": "musepi_lab.analysis",
    "usage_df": "musepi_lab.analysis",
    "usage_report": "musepi_lab.analysis",
    "run_benchmark": "musepi_lab.bench",
}
_SUBMODULES = (
    "bench",
    "compaction",
    "datasets",
    "display",
    "analysis",
    "export",
    "metrics",
    "navigation",
    "plot",
    "replay",
    "session",
    "strategies",
    "testing",
    "tokens",
    "widgets",
)

__all__ = [
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "Entry",
    "HandoffResult",
    "NavigationResult",
    "ReadProblem",
    "ReplayResult",
    "Session",
    "SessionContext",
    "SessionHooks",
    "SessionReadError",
    "TokenCounter",
    "__version__",
    "build_session_context",
    "compact",
    "compactions_df",
    "context_composition_df",
    "convert_to_llm",
    "entries_df",
    "find_cut_point",
    "generate_branch_summary",
    "handoff",
    "iter_sessions",
    "messages_df",
    "navigate_tree",
    "preferred_dialect",
    "prepare_compaction",
    "prune_tool_outputs",
    "read_session",
    "read_sessions",
    "render_transcript",
    "replay",
    "run_benchmark",
    "serialize_conversation",
    "serialize_for_summary",
    "sessions_df",
    "should_compact",
    "tool_calls_df",
    "transcript",
    "usage_df",
    "usage_report",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"musepi_lab.{name}")
    raise AttributeError(f"module 'musepi_lab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(_SUBMODULES))

"""musepi-lab: a Jupyter-native research workbench for context compaction in agent sessions.

`import musepi_lab` loads nothing but this file: every public name (the session model,
readers, the compaction engine, strategies, replay, DataFrames, benchmarks, plots, widgets)
is imported on first use (PEP 562), so the command line and scripts start fast. The HTML and
text cards of the core values (`musepi_lab.display`) load when the first one is shown.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

from . import _repr
from ._version import __version__

if typing.TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from ._errors import MusepiLabError
    from .analysis import (
        compactions_df,
        context_composition_df,
        entries_df,
        messages_df,
        problems_of,
        sessions_df,
        tool_calls_df,
        usage_df,
        usage_report,
    )
    from .bench import run_benchmark
    from .compaction import (
        CompactionPreparation,
        CompactionResult,
        CompactionSettings,
        find_cut_point,
        preferred_dialect,
        prepare_compaction,
        prune_tool_outputs,
        serialize_for_summary,
        should_compact,
    )
    from .compaction._hooks import SessionHooks
    from .context._build import SessionContext, build_session_context
    from .context._llm import convert_to_llm
    from .context._transcript import transcript
    from .formats._registry import iter_sessions, read_session, read_sessions
    from .navigation import NavigationResult, generate_branch_summary, navigate_tree
    from .replay import ReplayResult, replay_session
    from .session import Entry, ReadProblem, Session, SessionReadError
    from .strategies import HandoffResult, compact, handoff
    from .tokens import TokenCounter

# Name → module that defines it, imported on first access (PEP 562).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "compactions_df",
            "context_composition_df",
            "entries_df",
            "messages_df",
            "problems_of",
            "sessions_df",
            "tool_calls_df",
            "usage_df",
            "usage_report",
        ),
        "musepi_lab.analysis",
    ),
    "MusepiLabError": "musepi_lab._errors",
    "run_benchmark": "musepi_lab.bench",
    **dict.fromkeys(
        (
            "CompactionPreparation",
            "CompactionResult",
            "CompactionSettings",
            "find_cut_point",
            "preferred_dialect",
            "prepare_compaction",
            "prune_tool_outputs",
            "serialize_for_summary",
            "should_compact",
        ),
        "musepi_lab.compaction",
    ),
    "SessionHooks": "musepi_lab.compaction._hooks",
    "SessionContext": "musepi_lab.context._build",
    "build_session_context": "musepi_lab.context._build",
    "convert_to_llm": "musepi_lab.context._llm",
    "transcript": "musepi_lab.context._transcript",
    "iter_sessions": "musepi_lab.formats._registry",
    "read_session": "musepi_lab.formats._registry",
    "read_sessions": "musepi_lab.formats._registry",
    "NavigationResult": "musepi_lab.navigation",
    "generate_branch_summary": "musepi_lab.navigation",
    "navigate_tree": "musepi_lab.navigation",
    "ReplayResult": "musepi_lab.replay._result",
    "replay_session": "musepi_lab.replay._replay",
    **dict.fromkeys(("Entry", "ReadProblem", "Session", "SessionReadError"), "musepi_lab.session"),
    "HandoffResult": "musepi_lab.strategies",
    "compact": "musepi_lab.strategies",
    "handoff": "musepi_lab.strategies",
    "TokenCounter": "musepi_lab.tokens",
}
_SUBMODULES = (
    "analysis",
    "bench",
    "compaction",
    "datasets",
    "display",
    "export",
    "metrics",
    "navigation",
    "plot",
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
    "MusepiLabError",
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
    "problems_of",
    "prune_tool_outputs",
    "read_session",
    "read_sessions",
    "replay_session",
    "run_benchmark",
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


def _load_displays() -> None:
    """Fill the repr registry (HTML and text cards) the first time a card is asked for."""
    importlib.import_module("musepi_lab.display")


_repr.add_loader(_load_displays)

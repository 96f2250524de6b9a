"""Metrics of compactions and replays: each a small pure function with a docstring."""

from ._archive import ArchiveText, archive_text, imaged_text, session_archives
from ._facts import FACT_KINDS, Fact, context_text, extract_facts, retained
from ._match import FactMatcher
from ._metrics import (
    cache_prefix_kept,
    cache_prefix_tokens,
    decay_curve,
    fact_retention,
    instruction_survival,
    retention_bounds,
    retention_by_kind,
    summarizer_cost,
    summary_tokens,
    token_reduction,
    tool_pairing_problems,
    tool_pairing_valid,
)
from ._prices import (
    DEFAULT_PRICES,
    MODEL_PRICES,
    PRICES_DATE,
    PRICES_SOURCE,
    known_prices,
    prices_for,
    usage_cost,
)
from ._scoring import SessionScorer, session_scorer
from ._session_facts import corpus_facts, entry_facts, facts_of_entries
from ._session_window import ContextWindow, session_context_window
from ._windows import DEFAULT_CONTEXT_WINDOW, MODEL_WINDOWS, context_window_for

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_PRICES",
    "FACT_KINDS",
    "MODEL_PRICES",
    "MODEL_WINDOWS",
    "PRICES_DATE",
    "PRICES_SOURCE",
    "ArchiveText",
    "ContextWindow",
    "Fact",
    "FactMatcher",
    "SessionScorer",
    "archive_text",
    "cache_prefix_kept",
    "cache_prefix_tokens",
    "context_text",
    "context_window_for",
    "corpus_facts",
    "decay_curve",
    "entry_facts",
    "extract_facts",
    "fact_retention",
    "facts_of_entries",
    "imaged_text",
    "instruction_survival",
    "known_prices",
    "prices_for",
    "retained",
    "retention_bounds",
    "retention_by_kind",
    "session_archives",
    "session_context_window",
    "session_scorer",
    "summarizer_cost",
    "summary_tokens",
    "token_reduction",
    "tool_pairing_problems",
    "tool_pairing_valid",
    "usage_cost",
]

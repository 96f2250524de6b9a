"""Metrics of compactions and replays: each a small pure function with a docstring."""

from ._facts import Fact, context_text, extract_facts
from ._metrics import fact_retention, instruction_survival, token_reduction, tool_pairing_valid
from ._prices import MODEL_PRICES, PRICES_DATE, PRICES_SOURCE, known_prices, prices_for, usage_cost
from ._session_facts import corpus_facts, facts_of_entries
from ._session_window import session_context_window

__all__ = [
    "MODEL_PRICES",
    "PRICES_DATE",
    "PRICES_SOURCE",
    "Fact",
    "context_text",
    "corpus_facts",
    "extract_facts",
    "fact_retention",
    "facts_of_entries",
    "instruction_survival",
    "known_prices",
    "prices_for",
    "session_context_window",
    "token_reduction",
    "tool_pairing_valid",
    "usage_cost",
]

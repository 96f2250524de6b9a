"""Metrics of compactions and replays: each a small pure function with a docstring."""

from ._facts import FACT_KINDS, Fact, context_text, extract_facts, retained
from ._metrics import (
    cache_prefix_kept,
    cache_prefix_tokens,
    decay_curve,
    fact_retention,
    instruction_survival,
    retention_by_kind,
    summarizer_cost,
    summary_tokens,
    token_reduction,
    tool_pairing_problems,
    tool_pairing_valid,
)

__all__ = [
    "FACT_KINDS",
    "Fact",
    "cache_prefix_kept",
    "cache_prefix_tokens",
    "context_text",
    "decay_curve",
    "extract_facts",
    "fact_retention",
    "instruction_survival",
    "retained",
    "retention_by_kind",
    "summarizer_cost",
    "summary_tokens",
    "token_reduction",
    "tool_pairing_problems",
    "tool_pairing_valid",
]

"""Compaction strategies, their registry, and the summarizer seam they call models through.

`available()` lists the registered names, `get(name, **params)` makes a strategy value,
`compact(session, name, ...)` runs one and returns a `CompactionResult`.
"""

from ._base import (
    CompactionContext,
    Strategy,
    StrategyUnavailable,
    available,
    compact,
    get,
    register,
    strategy_type,
)
from ._summarizer import (
    DiskCache,
    OpenAICompatibleSummarizer,
    Summarizer,
    SummarizerError,
    SummarizerNotConfigured,
    SummaryRequest,
    SummaryResponse,
    request_key,
)

__all__ = [
    "CompactionContext",
    "DiskCache",
    "OpenAICompatibleSummarizer",
    "Strategy",
    "StrategyUnavailable",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "available",
    "compact",
    "get",
    "register",
    "request_key",
    "strategy_type",
]

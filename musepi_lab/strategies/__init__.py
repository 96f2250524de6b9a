"""Compaction strategies, their registry, and the summarizer seam they call models through.

`available()` lists the registered names, `get(name, **params)` makes a strategy value,
`compact(session, name, ...)` runs one and returns a `CompactionResult`.
"""

from ..llm import (
    DiskCache,
    OpenAICompatibleSummarizer,
    Summarizer,
    SummarizerError,
    SummarizerNotConfigured,
    SummaryRequest,
    SummaryResponse,
    request_key,
)
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
from ._extractive import Extractive
from ._handoff import Handoff
from ._hybrid import Hybrid
from ._llm_summary import LlmSummary
from ._masking import ObservationMasking
from ._none import NoCompaction
from ._prune import Prune
from ._remote import Remote, RemoteEndpointSummarizer
from ._truncate import Truncate
from .snapcompact import Snapcompact

__all__ = [
    "CompactionContext",
    "DiskCache",
    "Extractive",
    "Handoff",
    "Hybrid",
    "LlmSummary",
    "NoCompaction",
    "ObservationMasking",
    "OpenAICompatibleSummarizer",
    "Prune",
    "Remote",
    "RemoteEndpointSummarizer",
    "Snapcompact",
    "Strategy",
    "StrategyUnavailable",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "Truncate",
    "available",
    "compact",
    "get",
    "register",
    "request_key",
    "strategy_type",
]

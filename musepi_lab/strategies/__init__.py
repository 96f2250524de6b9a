"""Compaction strategies, their registry, and the summarizer seam they call models through.

`available()` lists the registered names, `get(name, **params)` makes a strategy value,
`compact(session, name, ...)` runs one and returns a `CompactionResult`. Importing this
package imports every built-in strategy module below, and each registers itself.
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
from ._handoff import Handoff, HandoffOptions, HandoffResult, handoff
from ._hybrid import Hybrid
from ._keep_user import KeepUserMessages
from ._llm_summary import LlmSummary
from ._masking import ObservationMasking
from ._none import NoCompaction
from ._oversized_output import OversizedOutput
from ._prune import Prune
from ._recorded import Recorded
from ._remote import Remote, RemoteEndpointSummarizer
from ._summarize_every_n import SummarizeEveryN
from ._truncate import Truncate
from .snapcompact import Snapcompact

__all__ = [
    "CompactionContext",
    "DiskCache",
    "Extractive",
    "Handoff",
    "HandoffOptions",
    "HandoffResult",
    "Hybrid",
    "KeepUserMessages",
    "LlmSummary",
    "NoCompaction",
    "ObservationMasking",
    "OpenAICompatibleSummarizer",
    "OversizedOutput",
    "Prune",
    "Recorded",
    "Remote",
    "RemoteEndpointSummarizer",
    "Snapcompact",
    "Strategy",
    "StrategyUnavailable",
    "SummarizeEveryN",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "Truncate",
    "available",
    "compact",
    "get",
    "handoff",
    "register",
    "request_key",
    "strategy_type",
]

"""The one seam through which every request to a model goes: requests, responses, the
OpenAI-compatible client with its retries, the disk cache keyed by the full request."""

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
    "DiskCache",
    "OpenAICompatibleSummarizer",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "request_key",
]

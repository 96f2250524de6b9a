"""Compaction strategies and the summarizer seam they call models through."""

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

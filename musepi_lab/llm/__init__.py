"""The one seam through which every request to a model goes: requests, responses, the
client with its retries (`ModelClient`), one error type, key redaction, and the disk cache
keyed by the full request."""

from ._cache import DiskCache
from ._client import ModelClient
from ._endpoint import RemoteEndpointSummarizer
from ._errors import ModelCallError, SummarizerError, SummarizerNotConfigured, redact
from ._summarizer import OpenAICompatibleSummarizer, ResponsesCompaction
from ._types import Summarizer, SummaryRequest, SummaryResponse, request_key

__all__ = [
    "DiskCache",
    "ModelCallError",
    "ModelClient",
    "OpenAICompatibleSummarizer",
    "RemoteEndpointSummarizer",
    "ResponsesCompaction",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "redact",
    "request_key",
]

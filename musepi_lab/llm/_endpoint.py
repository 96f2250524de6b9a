"""A custom remote-compaction endpoint as a `Summarizer` (spec §5.7)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._answers import read_endpoint_summary
from ._errors import ModelCallError
from ._summarizer import cached_summary, connect
from ._types import DEFAULT_CONTEXT_WINDOW, SummaryRequest, SummaryResponse, request_key

REMOTE_API_KEY_ENV = "MUSEPI_LAB_REMOTE_API_KEY"
"""Environment variable holding a bearer key for a custom remote endpoint, if it needs one."""


@dataclass
class RemoteEndpointSummarizer:
    """A `Summarizer` over a custom remote-compaction endpoint (spec §5.7).

    The endpoint takes `POST {systemPrompt, prompt, maxTokens}` and answers `{summary}`
    (optionally with `usage: {input_tokens, output_tokens}`; without it, tokens are
    estimated at four characters each). Calls go through the seam's `ModelClient` (its
    retries, error type and key redaction) and its disk cache.

    Args:
        url: The endpoint URL.
        api_key: Bearer key; default from `MUSEPI_LAB_REMOTE_API_KEY` (no header if unset).
        context_window: Window of the model behind the endpoint (for folding).
        cache_dir: Folder of the request cache; None disables caching.
        max_retries: Retries after a retryable failure.
        timeout_s: Per-request timeout.
        backoff_s: First retry delay; doubles each retry (a `Retry-After` header wins).
        sleep: Injected for tests.

    Raises:
        ValueError: No url.
    """

    url: str
    api_key: str | None = field(default=None, repr=False)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    cache_dir: str | os.PathLike[str] | None = None
    max_retries: int = 4
    timeout_s: float = 120.0
    backoff_s: float = 0.5
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        if not self.url:
            raise ValueError("RemoteEndpointSummarizer needs an endpoint url")
        self.api_key = self.api_key or os.environ.get(REMOTE_API_KEY_ENV) or None
        self._client, self._cache = connect(self.url, self)

    @property
    def model(self) -> str:
        """What answers, as results record it."""
        return "remote-endpoint"

    @property
    def requests_sent(self) -> int:
        """HTTP requests made by this summarizer (retries included)."""
        return self._client.requests_sent

    @property
    def identity(self) -> dict[str, Any]:
        """What identifies the endpoint in cache keys (never the key)."""
        return {"remote_endpoint": self.url}

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request (from the cache when possible).

        Raises:
            ModelCallError: The endpoint failed after every retry, answered a client
                error, or sent no summary; or the request carries a chat history, which
                this protocol cannot express (also `SummarizerError`).
        """
        if request.history:
            raise ModelCallError("a custom remote endpoint takes no chat history (handoff)")
        return cached_summary(
            self._cache, request_key(self.identity, request), lambda: self._send(request)
        )

    def _send(self, request: SummaryRequest) -> SummaryResponse:
        body = {
            "systemPrompt": request.system_prompt,
            "prompt": request.prompt,
            "maxTokens": request.max_tokens,
        }
        sent_chars = len(request.system_prompt) + len(request.prompt)
        started = time.perf_counter()
        answer, _ = self._client.post_json(
            self.url, body, lambda data: read_endpoint_summary(data, sent_chars)
        )
        return SummaryResponse(
            text=answer.text,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            latency_s=time.perf_counter() - started,
            model=self.model,
        )

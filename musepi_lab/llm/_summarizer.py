"""The `Summarizer` seam: every LLM call of every strategy goes through it.

`OpenAICompatibleSummarizer` speaks Chat Completions, so OpenAI, vLLM, llama.cpp server and
ollama all work, and the OpenAI Responses compact endpoint for `remote`. Both go through
`ModelClient` (one retry loop, one error type, keys redacted) and one disk cache keyed by
the full request, so re-running a benchmark never pays twice and an interrupted run loses
nothing. The API key is never logged, cached or written into results.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ._answers import CompactAnswer, read_chat, read_compact
from ._cache import DiskCache
from ._cache_key import cache_key
from ._client import BadAnswer, ModelClient
from ._errors import ModelCallError, SummarizerError, SummarizerNotConfigured
from ._types import (
    DEFAULT_CONTEXT_WINDOW,
    Summarizer,
    SummaryRequest,
    SummaryResponse,
    request_key,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "CompactAnswer",
    "DiskCache",
    "ModelCallError",
    "OpenAICompatibleSummarizer",
    "ResponsesCompaction",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
    "cached_summary",
    "refuses_tool_choice",
    "request_key",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class _Connected(Protocol):
    """What a summarizer holds of its endpoint: key, retry settings, cache folder."""

    @property
    def api_key(self) -> str | None: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def backoff_s(self) -> float: ...
    @property
    def sleep(self) -> Callable[[float], None]: ...
    @property
    def cache_dir(self) -> str | os.PathLike[str] | None: ...


def connect(base_url: str, owner: _Connected) -> tuple[ModelClient, DiskCache | None]:
    """The model client a summarizer calls `base_url` through (its key and retry settings)
    and the disk cache of its answers (None without a `cache_dir`): made here for both the
    OpenAI-compatible and the remote-endpoint summarizer."""
    client = ModelClient(
        base_url=base_url,
        api_key=owner.api_key,
        timeout_s=owner.timeout_s,
        max_retries=owner.max_retries,
        backoff_s=owner.backoff_s,
        sleep=owner.sleep,
    )
    return client, DiskCache(Path(owner.cache_dir)) if owner.cache_dir is not None else None


def cached_summary(
    cache: DiskCache | None, key: str, call: Callable[[], SummaryResponse]
) -> SummaryResponse:
    """`call()` unless the cache holds the answer to this key; a fresh answer is stored.

    Only answers that passed the seam's checks reach here, so nothing unusable is cached.
    """
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    response = call()
    if cache is not None and response.stop_reason != "error":
        cache.put(key, response)
    return response


def refuses_tool_choice(error: ModelCallError, body: Mapping[str, Any]) -> bool:
    """True when a client error (4xx, not 408/409/429) names `tool_choice` and the body
    sent `tool_choice: "none"`: the provider does not take `none`."""
    status = error.status
    return (
        body.get("tool_choice") == "none"
        and status is not None
        and 400 <= status < 500
        and status not in (408, 409, 429)
        and "tool_choice" in str(error)
    )


@dataclass(frozen=True)
class ResponsesCompaction:
    """What the Responses compact lane returned.

    Attributes:
        answer: The replacement history, its compaction item and the usage reported.
        latency_s: Wall time of the call (0 for a cache hit).
        requests: HTTP requests made (0 for a cache hit).
        cached: True when served from the disk cache.
    """

    answer: CompactAnswer
    latency_s: float
    requests: int
    cached: bool


@dataclass
class OpenAICompatibleSummarizer:
    """A summarizer over any OpenAI-compatible Chat Completions endpoint.

    Args:
        model: Model name; default from `MUSEPI_LAB_MODEL` or `OPENAI_MODEL`.
        base_url: Endpoint, e.g. `http://127.0.0.1:8080/v1`; default from `OPENAI_BASE_URL`.
        api_key: Key; default from `OPENAI_API_KEY` (a local server may need none).
        context_window: The summarizer model's window (for folding oversized inputs).
        cache_dir: Folder of the request cache; None disables caching.
        max_retries: Retries after a 408/409/429, a 5xx, a timeout or a dropped connection.
        timeout_s: Per-request timeout.
        backoff_s: First retry delay; doubles each retry (a `Retry-After` header wins).
        supports_reasoning: Send `reasoning_effort` (reasoning-capable models only).
        temperature: Sampling temperature, or None to leave the server default.
        max_output_tokens: A cap on every request's `max_tokens` (a slow local model's
            answers); None sends each request's own. Part of the identity when set.
        sleep: Injected for tests.

    Raises:
        SummarizerNotConfigured: Neither a base URL nor an API key is available.
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    cache_dir: str | os.PathLike[str] | None = None
    max_retries: int = 4
    timeout_s: float = 120.0
    backoff_s: float = 0.5
    supports_reasoning: bool = False
    temperature: float | None = None
    max_output_tokens: int | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url or _env("OPENAI_BASE_URL")
        self.api_key = self.api_key or _env("OPENAI_API_KEY")
        if not self.base_url and not self.api_key:
            raise SummarizerNotConfigured(
                "no summarizer endpoint configured: pass base_url= (and api_key= if the server "
                "needs one) or set OPENAI_BASE_URL / OPENAI_API_KEY"
            )
        self.model = self.model or _env("MUSEPI_LAB_MODEL", "OPENAI_MODEL") or "gpt-4o-mini"
        self._client, self._cache = connect(self.base_url or DEFAULT_BASE_URL, self)

    @property
    def requests_sent(self) -> int:
        """HTTP requests made by this summarizer (retries included)."""
        return self._client.requests_sent

    @property
    def identity(self) -> dict[str, Any]:
        """What identifies the endpoint in cache keys and results (never the key)."""
        identity: dict[str, Any] = {
            "base_url": self.base_url or DEFAULT_BASE_URL,
            "model": self.model,
            "temperature": self.temperature,
            "reasoning": self.supports_reasoning,
        }
        if self.max_output_tokens is not None:
            identity["max_output_tokens"] = self.max_output_tokens
        return identity

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request (from the cache when possible).

        Raises:
            ModelCallError: The endpoint failed after every retry, answered a client
                error, or answered without usable text (also `SummarizerError`).
        """
        return cached_summary(
            self._cache, request_key(self.identity, request), lambda: self._send(request)
        )

    def chat_body(self, request: SummaryRequest) -> dict[str, Any]:
        """The Chat Completions request body for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.chat_messages(),
            "max_tokens": request.max_tokens
            if self.max_output_tokens is None
            else min(request.max_tokens, self.max_output_tokens),
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.supports_reasoning and request.reasoning_effort:
            body["reasoning_effort"] = request.reasoning_effort
        if request.tools:
            body["tools"] = [dict(t) for t in request.tools]
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        return body

    def _send(self, request: SummaryRequest) -> SummaryResponse:
        started = time.perf_counter()
        body = self.chat_body(request)
        try:
            answer, _ = self._client.post_json("/chat/completions", body, read_chat)
        except ModelCallError as error:
            if not refuses_tool_choice(error, body):
                raise
            # Some providers reject `tool_choice: "none"`; the request is sent once more
            # with `auto`, as the handoff still asks for text only.
            body = {**body, "tool_choice": "auto"}
            answer, _ = self._client.post_json("/chat/completions", body, read_chat)
        return SummaryResponse(
            text=answer.text,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            latency_s=time.perf_counter() - started,
            model=answer.model or str(self.model),
            stop_reason="length" if answer.finish_reason == "length" else "stop",
        )

    def responses_compact(self, items: Sequence[Mapping[str, Any]]) -> ResponsesCompaction:
        """`POST /responses/compact` with the input items (from the cache when possible).

        Raises:
            ModelCallError: The endpoint failed, or answered without a compaction item.
        """
        body = {"model": self.model, "input": [dict(i) for i in items]}
        key = cache_key({"identity": self.identity, "lane": "responses-compact", "body": body})
        stored = self._cache.get_json(key) if self._cache is not None else None
        if stored is not None:
            try:
                return ResponsesCompaction(read_compact(stored), 0.0, 0, cached=True)
            except BadAnswer:  # a stored file of the wrong shape is a miss
                pass
        started = time.perf_counter()
        answer, attempts = self._client.post_json(
            "/responses/compact", body, lambda data: (read_compact(data), data)
        )
        compact, raw = answer
        if self._cache is not None:
            self._cache.put_json(key, raw)
        return ResponsesCompaction(compact, time.perf_counter() - started, attempts, cached=False)

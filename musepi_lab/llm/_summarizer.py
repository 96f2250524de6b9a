"""The `Summarizer` seam: every LLM call of every strategy goes through it.

`OpenAICompatibleSummarizer` speaks Chat Completions through the `openai` client, so OpenAI,
vLLM, llama.cpp server and ollama all work; it retries 429/5xx/timeouts with backoff and keeps
a disk cache keyed by the full request, so re-running a benchmark never pays twice and an
interrupted run loses nothing. The API key is never logged, cached or written into results.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

DEFAULT_CONTEXT_WINDOW = 128_000


class SummarizerNotConfigured(RuntimeError):
    """No endpoint is configured for an LLM strategy."""


class SummarizerError(RuntimeError):
    """The summarizer endpoint failed after every retry, or answered with an error."""


@dataclass(frozen=True)
class SummaryRequest:
    """One summarizer call: a system prompt and a single user message (spec §5.2).

    Attributes:
        system_prompt: The system prompt.
        prompt: The user message text (conversation block, previous summary, instructions).
        max_tokens: The output-token cap.
        reasoning_effort: `low`/`medium`/`high`/... or None for no reasoning option.
        purpose: What the call is for (`summary`, `turn-prefix`, `branch`, `handoff`,
            `short-summary`): recorded, not sent.
        history: For handoff: the live message history (LLM-shaped dicts) sent before the
            prompt, so the provider's prompt cache is reused (spec §6.4).
    """

    system_prompt: str
    prompt: str
    max_tokens: int
    reasoning_effort: str | None = None
    purpose: str = "summary"
    history: tuple[Mapping[str, Any], ...] = ()

    def chat_messages(self) -> list[dict[str, Any]]:
        """The Chat Completions `messages` array."""
        msgs: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        msgs.extend(dict(m) for m in self.history)
        msgs.append({"role": "user", "content": self.prompt})
        return msgs


@dataclass(frozen=True)
class SummaryResponse:
    """What a summarizer returned, and what it cost.

    Attributes:
        text: The summary text (text parts joined with newlines).
        input_tokens: Prompt tokens billed (as reported, else estimated).
        output_tokens: Completion tokens billed.
        latency_s: Wall time of the call that produced it (0 for a cache hit).
        model: The model that answered.
        stop_reason: `stop`, `length` or `error`.
        cached: True when served from the disk cache without a request.
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    stop_reason: str = "stop"
    cached: bool = False


@runtime_checkable
class Summarizer(Protocol):
    """Anything that turns a `SummaryRequest` into a `SummaryResponse`."""

    model: str
    context_window: int

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request."""
        ...


def request_key(identity: Mapping[str, Any], request: SummaryRequest) -> str:
    """The cache key of a request: sha256 over the endpoint identity and the full request.

    `identity` holds base URL, model and sampling options, never the API key.
    """
    payload = {"identity": dict(identity), "request": asdict(request)}
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class DiskCache:
    """A folder of JSON files, one per request key, written atomically."""

    folder: Path

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> SummaryResponse | None:
        """The cached response, or None."""
        path = self._path(key)
        try:
            data = orjson.loads(path.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None
        return SummaryResponse(**{**data, "cached": True, "latency_s": 0.0})

    def put(self, key: str, response: SummaryResponse) -> None:
        """Store a response."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(asdict(response)))
        os.replace(tmp, path)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


@dataclass
class OpenAICompatibleSummarizer:
    """A summarizer over any OpenAI-compatible Chat Completions endpoint.

    Args:
        model: Model name; default from `MUSEPI_LAB_MODEL` or `OPENAI_MODEL`.
        base_url: Endpoint, e.g. `http://127.0.0.1:8080/v1`; default from `OPENAI_BASE_URL`.
        api_key: Key; default from `OPENAI_API_KEY` (a local server may need none).
        context_window: The summarizer model's window (for folding oversized inputs).
        cache_dir: Folder of the request cache; None disables caching.
        max_retries: Retries after a 429, a 5xx, a timeout or a dropped connection.
        timeout_s: Per-request timeout.
        backoff_s: First retry delay; doubles each retry (a `Retry-After` header wins).
        supports_reasoning: Send `reasoning_effort` (reasoning-capable models only).
        temperature: Sampling temperature, or None to leave the server default.
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
        self._cache = DiskCache(Path(self.cache_dir)) if self.cache_dir is not None else None
        self._client: Any = None
        self.requests_sent = 0

    @property
    def identity(self) -> dict[str, Any]:
        """What identifies the endpoint in cache keys and results (never the key)."""
        return {
            "base_url": self.base_url or "https://api.openai.com/v1",
            "model": self.model,
            "temperature": self.temperature,
            "reasoning": self.supports_reasoning,
        }

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self.api_key or "not-needed",
                max_retries=0,  # retries are ours, so tests can count them
                timeout=self.timeout_s,
            )
        return self._client

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request (from the cache when possible)."""
        key = request_key(self.identity, request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        response = self._send_with_retries(request)
        if self._cache is not None and response.stop_reason != "error":
            self._cache.put(key, response)
        return response

    def _send_with_retries(self, request: SummaryRequest) -> SummaryResponse:
        import openai

        retryable = (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            openai.APIConnectionError,
        )
        attempt = 0
        while True:
            try:
                return self._send(request)
            except retryable as exc:
                if attempt >= self.max_retries:
                    raise SummarizerError(
                        f"summarizer at {self.identity['base_url']} failed after "
                        f"{attempt + 1} attempts: {type(exc).__name__}"
                    ) from exc
                self.sleep(self._delay(exc, attempt))
                attempt += 1
            except openai.APIStatusError as exc:
                raise SummarizerError(
                    f"summarizer at {self.identity['base_url']} answered HTTP "
                    f"{exc.status_code}: {str(exc)[:300]}"
                ) from exc

    def _delay(self, exc: Exception, attempt: int) -> float:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                return min(float(header), 60.0)
            except ValueError:
                pass
        return self.backoff_s * (2**attempt)

    def _send(self, request: SummaryRequest) -> SummaryResponse:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": request.chat_messages(),
            "max_tokens": request.max_tokens,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.supports_reasoning and request.reasoning_effort:
            kwargs["reasoning_effort"] = request.reasoning_effort
        started = time.perf_counter()
        self.requests_sent += 1
        completion = self._openai().chat.completions.create(**kwargs)
        latency = time.perf_counter() - started
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        finish = (choice.finish_reason if choice is not None else None) or "stop"
        usage = completion.usage
        return SummaryResponse(
            text=text,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            model=completion.model or str(self.model),
            stop_reason="length" if finish == "length" else "stop",
        )

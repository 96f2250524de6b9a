"""`remote`: provider-native compaction (spec §5.7) and a custom remote summarizer endpoint.

Two lanes, chosen by the `endpoint` parameter:

- No endpoint: the OpenAI Responses compact endpoint (`POST /responses/compact`) through
  the `openai` client. The whole live context goes in as Responses input items; what comes
  back (the retained user messages and one opaque compaction item) is the replacement
  history, kept in `preserveData.openaiRemoteCompaction = {provider, replacementHistory,
  compactionItem}`. The summary is a one-line placeholder, the short summary "Remote
  compaction", the method `remote`. The MusePi context rebuilds from the preserved history
  and does not re-send the kept region (spec §2.3); pi entries cannot hold preserveData, so
  this lane needs the MusePi profile.
- An endpoint URL: a custom summarizer service taking `{systemPrompt, prompt, maxTokens}`
  and answering `{summary}`. It is called exactly as `llm-summary` calls a model (same
  prompts, split turns, folding, file block) through `RemoteEndpointSummarizer`, and the
  entry gets method `remote`.

Connection settings (base URL, model, key, timeout, retries) come from the summarizer
given to `compact()`, else from the standard environment variables; a key for a custom
endpoint comes only from `MUSEPI_LAB_REMOTE_API_KEY`. No key is ever put in a result.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..compaction._file_ops import compute_file_lists, file_details
from ..compaction._prepare import CompactionPreparation
from ..compaction._result import CompactionResult
from ..llm._http import _post_json, _Retry, _retry_after, call_with_retries
from ..llm._summarizer import (
    DEFAULT_CONTEXT_WINDOW,
    DiskCache,
    OpenAICompatibleSummarizer,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
    request_key,
)
from ._base import CompactionContext, Strategy, StrategyUnavailable, register
from ._chat_format import to_responses_input
from ._handoff import live_llm_messages
from ._llm_summary import (
    SummaryOptions,
    carried_preserve_data,
    summarize_preparation,
    with_tokens_after,
)

REMOTE_METHOD = "remote"
REMOTE_SHORT_SUMMARY = "Remote compaction"
OPENAI_PROVIDER = "openai"
REMOTE_PRESERVE_KEY = "openaiRemoteCompaction"
REMOTE_API_KEY_ENV = "MUSEPI_LAB_REMOTE_API_KEY"
"""Environment variable holding a bearer key for a custom remote endpoint, if it needs one."""


def remote_placeholder_summary(input_tokens: int | None = None) -> str:
    """The one-line summary stored when a provider kept the history itself (spec §5.7)."""
    if input_tokens:
        return (
            "Provider-native compacted history was preserved by remote compaction "
            f"({input_tokens:,} input tokens processed)."
        )
    return "Provider-native compacted history was preserved by remote compaction."


def _usage_number(data: Mapping[str, Any], *keys: str) -> int | None:
    usage = data.get("usage")
    for source in (usage if isinstance(usage, Mapping) else {}, data):
        for key in keys:
            value = source.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


@dataclass
class RemoteEndpointSummarizer:
    """A `Summarizer` over a custom remote-compaction endpoint (spec §5.7).

    The endpoint takes `POST {systemPrompt, prompt, maxTokens}` and answers `{summary}`
    (optionally with `usage: {input_tokens, output_tokens}`; without it, tokens are
    estimated at four characters each). Failures with HTTP 429, 5xx, timeouts and dropped
    connections are retried; responses are cached on disk like the OpenAI summarizer's.

    Args:
        url: The endpoint URL.
        api_key: Bearer key; default from `MUSEPI_LAB_REMOTE_API_KEY` (none if unset).
        context_window: Window of the model behind the endpoint (for folding).
        cache_dir: Folder of the request cache; None disables caching.
        max_retries: Retries after a retryable failure.
        timeout_s: Per-request timeout.
        backoff_s: First retry delay; doubles each retry (a `Retry-After` header wins).
        sleep: Injected for tests.
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
        self._cache = DiskCache(Path(self.cache_dir)) if self.cache_dir is not None else None
        self.requests_sent = 0

    @property
    def model(self) -> str:
        """What answers, as results record it."""
        return "remote-endpoint"

    @property
    def identity(self) -> dict[str, Any]:
        """What identifies the endpoint in cache keys (never the key)."""
        return {"remote_endpoint": self.url}

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request (from the cache when possible).

        Raises:
            SummarizerError: The endpoint failed after every retry, answered a client
                error, or sent no summary; or the request carries a chat history, which
                this protocol cannot express.
        """
        if request.history:
            raise SummarizerError("a custom remote endpoint takes no chat history (handoff)")
        key = request_key(self.identity, request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        body = {
            "systemPrompt": request.system_prompt,
            "prompt": request.prompt,
            "maxTokens": request.max_tokens,
        }

        def send() -> Any:
            self.requests_sent += 1
            return _post_json(self.url, body, api_key=self.api_key, timeout_s=self.timeout_s)

        started = time.perf_counter()
        data, _ = call_with_retries(
            send,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            sleep=self.sleep,
            label="remote endpoint",
        )
        latency = time.perf_counter() - started
        summary = data.get("summary") if isinstance(data, Mapping) else None
        if not isinstance(summary, str) or not summary.strip():
            raise SummarizerError("remote endpoint answered without a summary")
        sent_chars = len(request.system_prompt) + len(request.prompt)
        response = SummaryResponse(
            text=summary,
            input_tokens=_usage_number(data, "input_tokens", "inputTokens")
            or math.ceil(sent_chars / 4),
            output_tokens=_usage_number(data, "output_tokens", "outputTokens")
            or math.ceil(len(summary) / 4),
            latency_s=latency,
            model=self.model,
        )
        if self._cache is not None:
            self._cache.put(key, response)
        return response


# -- the OpenAI Responses compact lane -------------------------------------------------------
def _openai_connection(summarizer: Summarizer | None) -> OpenAICompatibleSummarizer:
    if isinstance(summarizer, OpenAICompatibleSummarizer):
        return summarizer
    if summarizer is not None and all(
        hasattr(summarizer, a) for a in ("base_url", "api_key", "model")
    ):
        return summarizer  # type: ignore[return-value]  # duck-typed connection settings
    # Raises SummarizerNotConfigured with the usual message when nothing is set.
    return OpenAICompatibleSummarizer()


def responses_compact(
    connection: OpenAICompatibleSummarizer, items: list[dict[str, Any]]
) -> tuple[dict[str, Any], int]:
    """`POST /responses/compact` with the input items; the JSON answer and attempts made.

    Uses `client.responses.compact` when the installed `openai` has it, else a raw
    `client.post` to the same path. 429, 5xx, timeouts and dropped connections are retried.

    Raises:
        SummarizerError: Every attempt failed, or the server answered a client error.
    """
    import openai

    client = openai.OpenAI(
        base_url=connection.base_url,
        api_key=connection.api_key or "not-needed",
        max_retries=0,  # retries are ours, with the summarizer's backoff and sleep
        timeout=getattr(connection, "timeout_s", 120.0),
    )
    model = connection.model or "gpt-4o-mini"

    def send() -> Any:
        try:
            if hasattr(client.responses, "compact"):
                raw = client.responses.with_raw_response.compact(model=model, input=items)
                return raw.http_response.json()
            return client.post(
                "/responses/compact", body={"model": model, "input": items}, cast_to=object
            )
        except openai.RateLimitError as exc:
            raise _Retry("HTTP 429", _retry_after(exc.response.headers.get("retry-after"))) from exc
        except openai.InternalServerError as exc:
            raise _Retry(f"HTTP {exc.status_code}") from exc
        except openai.APITimeoutError as exc:
            raise _Retry("timeout") from exc
        except openai.APIConnectionError as exc:
            raise _Retry("connection failed") from exc
        except openai.APIStatusError as exc:
            raise SummarizerError(
                f"responses compact endpoint answered HTTP {exc.status_code}: {str(exc)[:300]}"
            ) from exc

    data, attempts = call_with_retries(
        send,
        max_retries=getattr(connection, "max_retries", 4),
        backoff_s=getattr(connection, "backoff_s", 0.5),
        sleep=getattr(connection, "sleep", time.sleep),
        label="responses compact endpoint",
    )
    if not isinstance(data, Mapping):
        raise SummarizerError("responses compact endpoint answered with something that is not JSON")
    return dict(data), attempts


def compaction_item(output: list[Any]) -> dict[str, Any]:
    """The (last) compaction item of a compact response's output.

    Raises:
        SummarizerError: There is none.
    """
    for item in reversed(output):
        if isinstance(item, Mapping) and item.get("type") == "compaction":
            return dict(item)
    raise SummarizerError("responses compact endpoint returned no compaction item")


def _openai_remote(
    ctx: CompactionContext, prep: CompactionPreparation, images: bool
) -> CompactionResult:
    if prep.profile != "musepi":
        raise StrategyUnavailable(
            "remote compaction keeps the provider's history in preserveData, which pi "
            "entries cannot hold: use the musepi profile, or pass endpoint= for a custom "
            "remote summarizer"
        )
    connection = _openai_connection(ctx.summarizer)
    items = to_responses_input(live_llm_messages(ctx, "musepi"), images=images)
    started = time.perf_counter()
    data, attempts = responses_compact(connection, items)
    latency = time.perf_counter() - started
    output = data.get("output")
    if not isinstance(output, list):
        raise SummarizerError("responses compact endpoint returned no output list")
    history = [dict(i) for i in output if isinstance(i, Mapping)]
    item = compaction_item(history)
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    input_tokens = usage.get("input_tokens") if isinstance(usage.get("input_tokens"), int) else 0
    output_tokens = usage.get("output_tokens") if isinstance(usage.get("output_tokens"), int) else 0
    preserve = carried_preserve_data(prep.previous_preserve_data) or {}
    preserve[REMOTE_PRESERVE_KEY] = {
        "provider": OPENAI_PROVIDER,
        "replacementHistory": history,
        "compactionItem": item,
    }
    read_files, modified_files = compute_file_lists(prep.file_ops, profile="musepi")
    result = CompactionResult.from_preparation(
        prep,
        remote_placeholder_summary(input_tokens),
        details=file_details(read_files, modified_files),
        method=REMOTE_METHOD,
        short_summary=REMOTE_SHORT_SUMMARY,
        preserve_data=preserve,
        summarizer_input_tokens=input_tokens,
        summarizer_output_tokens=output_tokens,
        latency_s=latency,
        params={
            "prompts": ctx.prompts.label,
            "remote": "openai-responses-compact",
            "summarizer_model": connection.model,
            "summarizer_requests": attempts,
            "remote_input_items": len(items),
        },
    )
    return with_tokens_after(ctx, result)


def _endpoint_summarizer(
    given: Summarizer | None, endpoint: str | None
) -> RemoteEndpointSummarizer | None:
    """The summarizer for the custom-endpoint lane, or None for the OpenAI lane."""
    if isinstance(given, RemoteEndpointSummarizer) and endpoint in (None, given.url):
        return given
    if endpoint is None:
        return None
    # Borrow the given summarizer's operational settings, never its key.
    settings: dict[str, Any] = {}
    for name in ("context_window", "cache_dir", "max_retries", "timeout_s", "backoff_s", "sleep"):
        if given is not None and hasattr(given, name):
            settings[name] = getattr(given, name)
    return RemoteEndpointSummarizer(endpoint, **settings)


@register
@dataclass(frozen=True)
class Remote(Strategy):
    """Provider-native compaction, or a custom remote summarizer endpoint (spec §5.7).

    Attributes:
        endpoint: URL of a custom remote endpoint (`{systemPrompt, prompt, maxTokens}` →
            `{summary}`). None: the OpenAI Responses compact endpoint at the summarizer's
            base URL (or `OPENAI_BASE_URL`), unless the summarizer given to `compact()`
            is a `RemoteEndpointSummarizer`.
        fold: Custom endpoint: fold inputs larger than its window, as `llm-summary` does.
        custom_instructions: Custom endpoint: extra focus for the summary; when None, the
            instructions given to `compact()` are used.
        images: OpenAI lane: send images as data URLs (off: `[image omitted]`).
    """

    name: ClassVar[str] = "remote"
    needs_summarizer: ClassVar[bool] = False

    endpoint: str | None = None
    fold: bool = True
    custom_instructions: str | None = None
    images: bool = False

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Compact remotely (None when the engine found nothing to do)."""
        prep = ctx.preparation
        if prep is None:
            return None
        summarizer = _endpoint_summarizer(ctx.summarizer, self.endpoint)
        if summarizer is None:
            return _openai_remote(ctx, prep, self.images)
        options = SummaryOptions(fold=self.fold, custom_instructions=self.custom_instructions)
        result = summarize_preparation(ctx, summarizer, options, method=REMOTE_METHOD)
        return result.copy_with(params={**(result.params or {}), "remote": "custom-endpoint"})

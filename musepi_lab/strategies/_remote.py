"""`remote`: provider-native compaction (spec §5.7) and a custom remote summarizer endpoint.

Two lanes, chosen by the `endpoint` parameter:

- No endpoint: the OpenAI Responses compact endpoint (`POST /responses/compact`), called
  through the summarizer's `responses_compact` (the model seam, with its disk cache). The whole live context goes in as Responses input items; what comes
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

Both lanes call the model through the `llm` seam (one client, one retry loop, one error
type, one disk cache: a rerun never pays twice). Like the other model strategies, `remote`
needs configuration: the OpenAI lane takes its endpoint (base URL, model, key, timeout,
retries) from the summarizer given to `compact()`; the custom lane takes `endpoint=` (or a
`RemoteEndpointSummarizer` as the summarizer), with a key only from
`MUSEPI_LAB_REMOTE_API_KEY`. With neither, `remote` is unavailable (`needs_summarizer`).
No key is ever put in a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._file_ops import compute_file_lists, file_details
from ..compaction._prepare import CompactionPreparation
from ..compaction._result import CompactionResult
from ..llm._answers import compaction_item as _compaction_item
from ..llm._client import BadAnswer
from ..llm._endpoint import REMOTE_API_KEY_ENV, RemoteEndpointSummarizer
from ..llm._errors import ModelCallError, SummarizerNotConfigured
from ..llm._summarizer import OpenAICompatibleSummarizer, ResponsesCompaction
from ..llm._types import Summarizer
from ._base import CompactionContext, Strategy, StrategyUnavailable, register
from ._chat_format import to_responses_input
from ._handoff import live_llm_messages
from ._llm_summary import (
    SummaryOptions,
    summarize_preparation,
)
from ._summary_input import carried_preserve_data

__all__ = [
    "REMOTE_API_KEY_ENV",
    "Remote",
    "RemoteEndpointSummarizer",
    "compaction_item",
    "remote_placeholder_summary",
    "responses_compact",
]

REMOTE_METHOD = "remote"
REMOTE_SHORT_SUMMARY = "Remote compaction"
OPENAI_PROVIDER = "openai"
REMOTE_PRESERVE_KEY = "openaiRemoteCompaction"
_CONNECTION_SETTINGS = ("model", "base_url", "api_key", "context_window", "cache_dir")
_OPERATIONAL_SETTINGS = ("max_retries", "timeout_s", "backoff_s", "sleep")


def remote_placeholder_summary(input_tokens: int | None = None) -> str:
    """The one-line summary stored when a provider kept the history itself (spec §5.7)."""
    if input_tokens:
        return (
            "Provider-native compacted history was preserved by remote compaction "
            f"({input_tokens:,} input tokens processed)."
        )
    return "Provider-native compacted history was preserved by remote compaction."


def compaction_item(output: list[Any]) -> dict[str, Any]:
    """The (last) compaction item of a compact response's output.

    Raises:
        SummarizerError: There is none.
    """
    try:
        return _compaction_item(output)
    except BadAnswer as exc:
        raise ModelCallError(exc.reason) from None


# -- the OpenAI Responses compact lane -------------------------------------------------------
def _openai_connection(summarizer: Summarizer | None) -> OpenAICompatibleSummarizer:
    """The summarizer whose endpoint serves the Responses compact lane.

    Raises:
        SummarizerNotConfigured: No summarizer, or one without OpenAI connection settings.
    """
    if isinstance(summarizer, OpenAICompatibleSummarizer):
        return summarizer
    if summarizer is not None and all(hasattr(summarizer, a) for a in ("base_url", "api_key")):
        # A duck-typed connection: its settings, our client and cache.
        names = (*_CONNECTION_SETTINGS, *_OPERATIONAL_SETTINGS)
        return OpenAICompatibleSummarizer(
            **{n: getattr(summarizer, n) for n in names if hasattr(summarizer, n)}
        )
    raise SummarizerNotConfigured(
        "strategy 'remote' needs a model endpoint: pass summarizer=OpenAICompatibleSummarizer("
        "base_url=...) for the Responses compact lane, or endpoint= for a custom endpoint"
    )


def responses_compact(
    connection: OpenAICompatibleSummarizer, items: list[dict[str, Any]]
) -> ResponsesCompaction:
    """`POST /responses/compact` through the model seam (its retries and disk cache).

    Raises:
        SummarizerError: Every attempt failed, the server answered a client error, or the
            answer holds no compaction item.
    """
    return connection.responses_compact(items)


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
    live = live_llm_messages(ctx.session, ctx.leaf_id, "musepi", ctx.prompts)
    items = to_responses_input(live, images=images)
    call = responses_compact(connection, items)
    answer = call.answer
    history = [dict(i) for i in answer.history]
    preserve = carried_preserve_data(prep.previous_preserve_data) or {}
    preserve[REMOTE_PRESERVE_KEY] = {
        "provider": OPENAI_PROVIDER,
        "replacementHistory": history,
        "compactionItem": dict(answer.item),
    }
    read_files, modified_files = compute_file_lists(prep.file_ops, profile="musepi")
    result = CompactionResult.from_preparation(
        prep,
        remote_placeholder_summary(answer.input_tokens),
        details=file_details(read_files, modified_files),
        method=REMOTE_METHOD,
        short_summary=REMOTE_SHORT_SUMMARY,
        preserve_data=preserve,
        summarizer_input_tokens=answer.input_tokens,
        summarizer_output_tokens=answer.output_tokens,
        latency_s=call.latency_s,
        params={
            "prompts": ctx.prompts.label,
            "remote": "openai-responses-compact",
            "summarizer_model": connection.model,
            "summarizer_requests": call.requests,
            "summarizer_cached": int(call.cached),
            "remote_input_items": len(items),
        },
    )
    return result


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
    for name in ("context_window", "cache_dir", *_OPERATIONAL_SETTINGS):
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
            base URL, unless the summarizer given to `compact()` is a
            `RemoteEndpointSummarizer`. With neither an endpoint nor a summarizer the
            strategy is unavailable.
        fold: Custom endpoint: fold inputs larger than its window, as `llm-summary` does.
        custom_instructions: Custom endpoint: extra focus for the summary; when None, the
            instructions given to `compact()` are used.
        images: OpenAI lane: send images as data URLs (off: `[image omitted]`).
    """

    name: ClassVar[str] = "remote"
    needs_summarizer: ClassVar[bool] = True

    endpoint: str | None = None
    fold: bool = True
    custom_instructions: str | None = None
    images: bool = False

    def requires_summarizer(self) -> bool:
        """`endpoint=` is itself the configuration; without it a summarizer is needed (the
        class attribute, which the comparer and CLI ask, says a model endpoint is needed)."""
        return self.endpoint is None

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

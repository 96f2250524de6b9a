"""`llm-summary`: pi and MusePi summarization of the engine's cut (spec §5.1–5.7).

The messages before the cut are converted for the LLM (`convert_to_llm`), serialized as a
labelled transcript (`serialize_conversation`) and sent in one user message:

    <conversation>\\n…\\n</conversation>\\n\\n
    [<previous-summary>\\n…\\n</previous-summary>\\n\\n]
    [<additional-context>\\n- …\\n</additional-context>\\n\\n]
    base prompt (the update prompt when a previous summary exists)
    [\\n\\nAdditional focus: …]

with the `summarization-system` prompt. A split turn costs a second request (the turn
prefix, its own prompt and a `0.5·reserve` cap), merged with `merge_split_turn`. The file
operations are appended (pi: two tags; MusePi: one `<files>` block), and an input larger
than the summarizer's window is folded window by window (spec §5.7).

Profile differences (spec §5.2, §5.4, §5.7): MusePi neutralizes boundary tags in the
transcript and the previous summary, drops tool-call/result pairs flagged `useless`, caps
`maxTokens` at 16384, derives the reasoning effort from the session's thinking level, and
reuses the previous summary when a split turn has no history to summarize (pi writes
"No prior history." and loses it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._prompts import PromptSet
from ..compaction._file_ops import format_summary_files, upsert_file_operations
from ..compaction._prepare import CompactionPreparation
from ..compaction._result import CompactionResult
from ..compaction._serialize import (
    NO_PRIOR_HISTORY,
    merge_split_turn,
    neutralize_boundary_tags,
    serialize_conversation,
    truncate_tool_result,
)
from ..context._llm import convert_to_llm
from ..context._summaries import snapcompact_archive
from ..llm._summarizer import Summarizer, SummarizerError, SummaryRequest, SummaryResponse
from ..session._model import Entry
from ..tokens._counter import TokenCounter
from ..tokens._estimate import utf8_len, utf16_len
from ._base import CompactionContext, Strategy, register

DEFAULT_SUMMARIZER_WINDOW = 200_000
"""Window assumed when the summarizer does not say (oh-my-pi's fallback, spec §5.7)."""
FOLD_SLACK_TOKENS = 16384
"""Tokens kept free of a window besides the output cap (spec §5.7)."""
FOLD_MIN_INPUT_CAP = 16384
FOLD_MIN_INPUT_FLOOR = 1024
FOLD_INPUT_RATIO = 0.8
FOLD_CLIP_RATIO = 0.95
"""A single oversized window is clipped to 95% of its proportional share of the budget."""
FOLD_CLIP_MIN_CHARS = 1024

_REPLACED_PRESERVE_KEYS = ("snapcompact", "openaiRemoteCompaction")
"""preserveData a text summary supersedes: a snapcompact archive (its text was folded into
the summary) and provider-native history (kept, it would replace the summary on rebuild)."""


# -- pure pieces ---------------------------------------------------------------------------
def reasoning_effort(thinking_level: str | None) -> str | None:
    """MusePi's summarizer reasoning effort for a thinking level (spec §5.7).

    `off` → None (no reasoning option); unset or `inherit` → `high`; any other level is
    passed on as it is (`minimal`, `low`, `medium`, `high`, `xhigh`).
    """
    if thinking_level is None or thinking_level == "inherit":
        return "high"
    if thinking_level == "off":
        return None
    return thinking_level


def thinking_level_at(path: Iterable[Entry]) -> str | None:
    """The thinking level set last on a path, or None when no entry sets one."""
    level: str | None = None
    for entry in path:
        if entry.type == "thinking_level_change":
            value = entry.get("thinkingLevel")
            if isinstance(value, str) and value:
                level = value
    return level


def build_summary_prompt(
    conversation: str,
    *,
    base_prompt: str,
    previous_summary: str | None = None,
    additional_context: Sequence[str] = (),
    custom_instructions: str | None = None,
) -> str:
    """The user message of a summary request (spec §5.2, §5.7).

    Args:
        conversation: The serialized transcript.
        base_prompt: The instruction text (initial, update or turn-prefix prompt).
        previous_summary: Put in a `<previous-summary>` block when non-empty.
        additional_context: Lines of an `<additional-context>` block, each prefixed `- `.
        custom_instructions: Appended as `\\n\\nAdditional focus: …` when non-empty.
    """
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    if additional_context:
        lines = "\n".join(f"- {line}" for line in additional_context)
        prompt += f"<additional-context>\n{lines}\n</additional-context>\n\n"
    prompt += base_prompt
    if custom_instructions:
        prompt += f"\n\nAdditional focus: {custom_instructions}"
    return prompt


def fold_input_budget(context_window: int, max_tokens: int) -> int:
    """Input tokens one summary request may carry (spec §5.7).

    minimum = `min(16384, max(1024, floor(W/8)))`;
    budget = `max(minimum, floor(0.8·W) − maxTokens − 16384)`.
    """
    minimum = min(FOLD_MIN_INPUT_CAP, max(FOLD_MIN_INPUT_FLOOR, context_window // 8))
    return max(
        minimum, math.floor(FOLD_INPUT_RATIO * context_window) - max_tokens - FOLD_SLACK_TOKENS
    )


def clip_to_budget(text: str, tokens: int, budget: int) -> str:
    """A single part too big for any window, cut to `max(1024, floor(len·budget·0.95/tokens))`
    UTF-16 units plus pi's truncation marker (spec §5.7)."""
    keep = max(FOLD_CLIP_MIN_CHARS, math.floor(utf16_len(text) * budget * FOLD_CLIP_RATIO / tokens))
    return truncate_tool_result(text, keep)


def pack_windows(parts: Sequence[str], counts: Sequence[int], budget: int) -> list[str]:
    """Greedy packing of serialized messages into windows of at most `budget` tokens.

    Parts keep their order and are joined by a blank line, as in one transcript; empty
    parts are skipped. A part larger than the budget gets a window of its own, clipped by
    `clip_to_budget`.
    """
    windows: list[str] = []
    current: list[str] = []
    used = 0
    for part, tokens in zip(parts, counts, strict=True):
        if not part:
            continue
        if tokens > budget:
            if current:
                windows.append("\n\n".join(current))
                current, used = [], 0
            windows.append(clip_to_budget(part, tokens, budget))
            continue
        if current and used + tokens > budget:
            windows.append("\n\n".join(current))
            current, used = [], 0
        current.append(part)
        used += tokens
    if current:
        windows.append("\n\n".join(current))
    return windows


def drop_useless_pairs(llm_messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Without the tool results flagged `useless` (non-error) and their calls (spec §5.7)."""
    useless = {
        m.get("toolCallId")
        for m in llm_messages
        if m.get("role") == "toolResult"
        and m.get("useless") is True
        and m.get("isError") is not True
    }
    if not useless:
        return list(llm_messages)
    out: list[Mapping[str, Any]] = []
    for message in llm_messages:
        role = message.get("role")
        if role == "toolResult" and message.get("toolCallId") in useless:
            continue
        content = message.get("content")
        if role == "assistant" and isinstance(content, list):
            kept = [
                b
                for b in content
                if not (
                    isinstance(b, Mapping)
                    and b.get("type") == "toolCall"
                    and b.get("id") in useless
                )
            ]
            if len(kept) != len(content):
                if not kept:
                    continue
                message = {**message, "content": kept}
        out.append(message)
    return out


def summary_input_messages(
    messages: Iterable[Mapping[str, Any]], *, profile: str, prompts: PromptSet | None = None
) -> list[Mapping[str, Any]]:
    """The runtime messages to summarize, as the summarizer reads them.

    `convert_to_llm` (summaries wrapped by `prompts`' context templates); for MusePi also
    without useless pairs, and with `developer` messages (its custom messages) read as user
    text, since the transcript has no developer label.
    """
    llm: list[Mapping[str, Any]] = list(convert_to_llm(messages, profile=profile, prompts=prompts))
    if profile == "pi":
        return llm
    return [
        {**m, "role": "user"} if m.get("role") == "developer" else m
        for m in drop_useless_pairs(llm)
    ]


def serialize_parts(llm_messages: Iterable[Mapping[str, Any]], *, profile: str) -> list[str]:
    """Each message serialized alone; joined by blank lines they are the whole transcript."""
    parts = [serialize_conversation([m]) for m in llm_messages]
    if profile == "pi":
        return parts
    return [neutralize_boundary_tags(p) for p in parts]


def previous_archive_text(preserve_data: Mapping[str, Any] | None) -> str | None:
    """The source text of a previous snapcompact archive, if the preparation carries one."""
    archive = snapcompact_archive(preserve_data)
    if archive is None:
        return None
    text = archive.get("text")
    if not text:
        text = "\n".join(archive[k] for k in ("textHead", "textTail") if archive.get(k))
    return text or None


def carried_preserve_data(previous: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The previous compaction's preserveData a text summary keeps (spec §5.7)."""
    if not previous:
        return None
    kept = {k: v for k, v in previous.items() if k not in _REPLACED_PRESERVE_KEYS}
    return kept or None


# -- generating ----------------------------------------------------------------------------
def compaction_ask(ctx: CompactionContext) -> SummaryAsk:
    """The plain compaction-summary ask (initial or update prompt, no reasoning option), as
    the strategies that summarize chunks of history use it."""
    prompts = ctx.prompts
    return SummaryAsk(
        system_prompt=prompts.text("summarization-system"),
        base_prompt=prompts.text("compaction-summary"),
        update_prompt=prompts.text("compaction-update-summary"),
        max_tokens=ctx.settings.summary_max_tokens,
        reasoning_effort=None,
        purpose="summary",
    )


@dataclass(frozen=True)
class SummaryAsk:
    """How one text (history or turn prefix) is asked for.

    Attributes:
        system_prompt: The system prompt of every request.
        base_prompt: The instruction closing the first request.
        update_prompt: The instruction once a previous summary exists (None: keep the base).
        max_tokens: The output cap.
        reasoning_effort: Sent to reasoning models, or None.
        purpose: Recorded with the request (`summary`, `turn-prefix`, ...).
        custom_instructions: `Additional focus: …`, or None.
        additional_context: Lines of the `<additional-context>` block.
    """

    system_prompt: str
    base_prompt: str
    update_prompt: str | None
    max_tokens: int
    reasoning_effort: str | None
    purpose: str
    custom_instructions: str | None = None
    additional_context: tuple[str, ...] = ()


def _checked(response: SummaryResponse, purpose: str) -> SummaryResponse:
    if response.stop_reason == "error":
        raise SummarizerError(f"Summarization failed ({purpose}): the model answered with an error")
    return response


def _windows(parts: Sequence[str], *, budget: int, counter: TokenCounter, fold: bool) -> list[str]:
    whole = "\n\n".join(p for p in parts if p)
    # Cheap check first: a token is at least one byte for every counter we have.
    if not fold or utf8_len(whole) <= budget or counter.count_text(whole) <= budget:
        return [whole]
    return pack_windows(parts, counter.count_texts(parts), budget)


def generate_text(
    summarizer: Summarizer,
    ask: SummaryAsk,
    parts: Sequence[str],
    *,
    previous: str | None,
    counter: TokenCounter,
    fold: bool,
    escape: bool,
) -> tuple[str, list[SummaryResponse]]:
    """Summarize serialized parts, folding them window by window when they do not fit.

    Each window's output becomes the next window's previous summary (and the update
    prompt, when the ask has one).

    Returns:
        The last window's text and every response, in order.
    """
    window = getattr(summarizer, "context_window", None) or DEFAULT_SUMMARIZER_WINDOW
    budget = fold_input_budget(window, ask.max_tokens)
    responses: list[SummaryResponse] = []
    text = previous
    for conversation in _windows(parts, budget=budget, counter=counter, fold=fold):
        base = ask.update_prompt if (text and ask.update_prompt) else ask.base_prompt
        shown = neutralize_boundary_tags(text) if (escape and text) else text
        prompt = build_summary_prompt(
            conversation,
            base_prompt=base,
            previous_summary=shown,
            additional_context=ask.additional_context,
            custom_instructions=ask.custom_instructions,
        )
        request = SummaryRequest(
            system_prompt=ask.system_prompt,
            prompt=prompt,
            max_tokens=ask.max_tokens,
            reasoning_effort=ask.reasoning_effort,
            purpose=ask.purpose,
        )
        response = _checked(summarizer.summarize(request), ask.purpose)
        responses.append(response)
        text = response.text
    return text or "", responses


@dataclass(frozen=True)
class SummaryOptions:
    """What a summarizing strategy asks for (the `llm-summary` parameters).

    Attributes:
        fold: Fold inputs larger than the summarizer's window (spec §5.7).
        short_summary: Also ask for MusePi's one-line display summary.
        custom_instructions: Extra focus; the preparation's is used when None.
        additional_context: Lines of the `<additional-context>` block.
        thinking_level: Thinking level for the reasoning effort; None reads the session's.
    """

    fold: bool = True
    short_summary: bool = False
    custom_instructions: str | None = None
    additional_context: tuple[str, ...] = ()
    thinking_level: str | None = None


def with_file_operations(summary: str, prep: CompactionPreparation) -> tuple[str, dict[str, Any]]:
    """The summary with its file block, and the entry's `details` (spec §5.5, §5.6).

    pi appends `<read-files>` / `<modified-files>`; MusePi replaces any old block with one
    `<files>` block (`upsert_file_operations`).
    """
    block, details = format_summary_files(prep.file_ops, profile=prep.profile)
    if prep.profile == "pi":
        return summary + block, details
    return (
        upsert_file_operations(
            summary, details["readFiles"], details["modifiedFiles"], read_set=prep.file_ops.read
        ),
        details,
    )


def short_summary_request(
    system_prompt: str, summary: str, instruction: str, cap: int
) -> SummaryRequest:
    """MusePi's display-summary request: the summary as a previous summary, then the ask."""
    return SummaryRequest(
        system_prompt=system_prompt,
        prompt=(
            f"<previous-summary>\n{neutralize_boundary_tags(summary)}\n"
            f"</previous-summary>\n\n{instruction}"
        ),
        max_tokens=cap,
        reasoning_effort=None,
        purpose="short-summary",
    )


@dataclass(frozen=True)
class _Run:
    """One summarization: where requests go and what every one of them shares."""

    ctx: CompactionContext
    prep: CompactionPreparation
    summarizer: Summarizer
    fold: bool

    @property
    def musepi(self) -> bool:
        return self.prep.profile == "musepi"

    def generate(
        self, ask: SummaryAsk, messages: Sequence[Mapping[str, Any]], previous: str | None
    ) -> tuple[str, list[SummaryResponse]]:
        profile = self.prep.profile
        llm = summary_input_messages(messages, profile=profile, prompts=self.ctx.prompts)
        parts = serialize_parts(llm, profile=profile)
        return generate_text(
            self.summarizer,
            ask,
            parts,
            previous=previous,
            counter=self.ctx.counter,
            fold=self.fold,
            escape=self.musepi,
        )


def _history(
    run: _Run, ask: SummaryAsk, previous: str | None, archive: str | None
) -> tuple[str | None, list[SummaryResponse]]:
    """The history summary (None: nothing to summarize, and nothing to reuse)."""
    prep = run.prep
    # pi always summarizes a non-split cut, even an empty one; MusePi reuses the previous
    # summary when there is nothing new, unless an archive must be folded into text.
    if (
        prep.messages_to_summarize
        or archive is not None
        or (not run.musepi and not prep.is_split_turn)
    ):
        return run.generate(ask, prep.messages_to_summarize, previous)
    if run.musepi and prep.previous_summary:
        return prep.previous_summary, []
    return None, []


def summarize_preparation(
    ctx: CompactionContext,
    summarizer: Summarizer,
    options: SummaryOptions,
    *,
    method: str | None = None,
) -> CompactionResult:
    """Summarize a preparation with a summarizer, as pi or MusePi do (spec §5.2–5.7).

    Args:
        ctx: The compaction context; `ctx.preparation` must be set.
        summarizer: Where the requests go.
        options: Folding, short summary, instructions, context lines, thinking level.
        method: The entry's `method` (None for a plain summary, `remote` for a custom
            remote endpoint).

    Returns:
        The result with summary, details, cost summed over every request, the prompt
        set's label in `params` (`compact()` measures `tokens_after`).

    Raises:
        SummarizerError: A request failed or the model answered with an error.
    """
    prep = ctx.preparation
    if prep is None:
        raise ValueError("summarize_preparation needs a preparation")
    run = _Run(ctx, prep, summarizer, options.fold)
    prompts, settings = ctx.prompts, ctx.settings
    level = options.thinking_level
    if level is None:
        level = thinking_level_at(prep.path)
    # pi asks reasoning models for "high" on the summary and nothing on the turn prefix.
    effort = reasoning_effort(level) if run.musepi else "high"
    system = prompts.text("summarization-system")

    archive = previous_archive_text(prep.previous_preserve_data) if run.musepi else None
    previous = prep.previous_summary or None
    if archive:
        previous = prompts.render("snapcompact-archive-context", archive=archive)
    history_ask = SummaryAsk(
        system_prompt=system,
        base_prompt=prompts.text("compaction-summary"),
        update_prompt=prompts.text("compaction-update-summary"),
        max_tokens=settings.summary_max_tokens,
        reasoning_effort=effort,
        purpose="summary",
        custom_instructions=options.custom_instructions or prep.custom_instructions,
        additional_context=tuple(options.additional_context),
    )
    text, responses = _history(run, history_ask, previous, archive)
    if prep.is_split_turn:
        prefix_ask = SummaryAsk(
            system_prompt=system,
            base_prompt=prompts.text("compaction-turn-prefix"),
            update_prompt=None,
            max_tokens=settings.turn_prefix_max_tokens,
            reasoning_effort=effort if run.musepi else None,
            purpose="turn-prefix",
        )
        prefix, used = run.generate(prefix_ask, prep.turn_prefix_messages, None)
        responses = [*responses, *used]
        text = merge_split_turn(text, prefix)
    elif text is None:
        text = NO_PRIOR_HISTORY
    summary, details = with_file_operations(text, prep)

    short: str | None = None
    cap = settings.short_summary_max_tokens
    if options.short_summary and cap is not None:
        request = short_summary_request(system, text, prompts.text("compaction-short-summary"), cap)
        response = _checked(summarizer.summarize(request), "short-summary")
        responses.append(response)
        short = response.text.strip() or None

    result = CompactionResult.from_preparation(
        prep,
        summary,
        details=details,
        method=method,
        short_summary=short,
        preserve_data=carried_preserve_data(prep.previous_preserve_data) if run.musepi else None,
        summarizer_input_tokens=sum(r.input_tokens for r in responses),
        summarizer_output_tokens=sum(r.output_tokens for r in responses),
        latency_s=sum(r.latency_s for r in responses),
        params=run_params(ctx, responses, reasoning=effort),
    )
    return result


def run_params(
    ctx: CompactionContext, responses: Sequence[SummaryResponse], *, reasoning: str | None
) -> dict[str, Any]:
    """What a result records about how it was made (never an endpoint's key or URL)."""
    models = sorted({r.model for r in responses if r.model})
    return {
        "prompts": ctx.prompts.label,
        "summarizer_model": models[0] if len(models) == 1 else models or None,
        "summarizer_requests": len(responses),
        "summarizer_cached": sum(1 for r in responses if r.cached),
        "reasoning_effort": reasoning,
    }


@register
@dataclass(frozen=True)
class LlmSummary(Strategy):
    """pi / MusePi LLM summarization of everything before the engine's cut (spec §5).

    Attributes:
        fold: Fold inputs larger than the summarizer's `context_window`, window by window
            (spec §5.7). pi itself never folds; False sends one request whatever its size.
        short_summary: Also request MusePi's one-line display summary (`shortSummary`;
            the pi profile writes none).
        custom_instructions: Extra focus for the summary (`Additional focus: …`); when
            None, the instructions given to `compact()` are used.
        additional_context: Lines for the `<additional-context>` block (MusePi's extension
            and memory context; sent in the pi profile too when given, though pi has none).
        thinking_level: Thinking level that sets the reasoning effort (`off`, `minimal`,
            `low`, `medium`, `high`, `xhigh`, `inherit`); None reads the session's.
    """

    name: ClassVar[str] = "llm-summary"
    needs_summarizer: ClassVar[bool] = True

    fold: bool = True
    short_summary: bool = False
    custom_instructions: str | None = None
    additional_context: tuple[str, ...] = ()
    thinking_level: str | None = None

    def __post_init__(self) -> None:
        # A list from papermill or JSON parameters would make the value unhashable.
        object.__setattr__(self, "additional_context", tuple(self.additional_context))

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Summarize the preparation (None when the engine found nothing to do)."""
        if ctx.preparation is None:
            return None
        options = SummaryOptions(
            fold=self.fold,
            short_summary=self.short_summary,
            custom_instructions=self.custom_instructions,
            additional_context=tuple(self.additional_context),
            thinking_level=self.thinking_level,
        )
        return summarize_preparation(ctx, ctx.require_summarizer(self.name), options)

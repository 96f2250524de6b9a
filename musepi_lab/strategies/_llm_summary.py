"""`llm-summary`: pi and MusePi summarization of the engine's cut (spec §5.1–5.7).

The messages before the cut are converted for the LLM (`convert_to_llm`), serialized (a
`Transcript`: pi's labelled text, or for MusePi the transcript in the summarizer model's own
dialect, `serialize_for_summary`) and sent in one user message:

    <conversation>\\n…\\n</conversation>\\n\\n
    [<previous-summary>\\n…\\n</previous-summary>\\n\\n]
    [<additional-context>\\n- …\\n</additional-context>\\n\\n]
    base prompt (the update prompt when a previous summary exists)
    [\\n\\nAdditional focus: …]

with the `summarization-system` prompt. A split turn costs a second request (the turn
prefix, its own prompt and a `0.5·reserve` cap), merged with `merge_split_turn`. The file
operations are appended (pi: two tags; MusePi: one `<files>` block), and an input larger
than the summarizer's window is folded window by window (spec §5.7).

Profile differences (spec §5.2, §5.4, §5.7): MusePi renders the transcript in the dialect
oh-my-pi 18.2.3 picks for the summarizer's model (`preferred_dialect`: Claude markup for
Anthropic models, harmony for OpenAI's, a chat template for open-weight families, `xml`
otherwise), folds oversized inputs by runs of messages each rendered whole, neutralizes
boundary tags in the transcript and the previous summary, drops tool-call/result pairs flagged
`useless`, caps
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
from ..compaction._summary_dialects import preferred_dialect, serialize_for_summary
from ..context._build import default_model
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


@dataclass(frozen=True)
class Transcript:
    """The conversation a summary request carries, and how it splits when it is too big.

    Attributes:
        messages: LLM messages (after `convert_to_llm` for the profile).
        profile: `pi` serializes with pi's labels (`serialize_conversation`); `musepi` with
            the release's `serialize_for_summary` in `dialect`.
        dialect: The MusePi dialect (`none` for the release's legacy labels); unused for pi.
    """

    messages: tuple[Mapping[str, Any], ...]
    profile: str
    dialect: str | None = None

    def render(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Some of the messages serialized as one transcript."""
        if self.profile == "pi":
            return "\n\n".join(p for p in (serialize_conversation([m]) for m in messages) if p)
        return serialize_for_summary(messages, self.dialect)

    def text(self) -> str:
        """The whole transcript."""
        return self.render(self.messages)

    def windows(self, budget: int, counter: TokenCounter, *, fold: bool) -> list[str]:
        """The transcript as one text, or, folded, as texts of at most `budget` tokens.

        pi's parts are packed greedily (`pack_windows`). MusePi plans runs of messages as
        oh-my-pi does (`planSummaryWindows`: each message sized alone in the dialect, a run
        closed when the next would cross the budget) and renders each run whole, clipping a
        run still over the budget (`clampConversationToBudget`).
        """
        whole = self.text()
        # Cheap check first: a token is at least one byte for every counter we have.
        if not fold or utf8_len(whole) <= budget or counter.count_text(whole) <= budget:
            return [whole]
        if self.profile == "pi":
            parts = [serialize_conversation([m]) for m in self.messages]
            return pack_windows(parts, counter.count_texts(parts), budget)
        sizes = counter.count_texts([self.render([m]) for m in self.messages])
        runs: list[list[Mapping[str, Any]]] = []
        used = 0
        for message, tokens in zip(self.messages, sizes, strict=True):
            if not runs or (used > 0 and used + tokens > budget):
                runs.append([])
                used = 0
            runs[-1].append(message)
            used += tokens
        texts = [self.render(run) for run in runs]
        return [
            clip_to_budget(text, tokens, budget) if tokens > budget else text
            for text, tokens in zip(texts, counter.count_texts(texts), strict=True)
        ]


def summary_dialect(
    summarizer: Summarizer | None,
    profile: str,
    dialect: str | None = None,
    *,
    path: Sequence[Entry] = (),
) -> str | None:
    """The dialect a profile's summary input is rendered in (None for pi).

    MusePi: `dialect` when given, else the one oh-my-pi picks (`preferred_dialect`) for the
    model that reads it: the summarizer's `model`, or, when the summarizer names none (a
    custom endpoint), the session's default model at the end of `path`, which is the model
    the release itself summarizes with; `xml` when neither is known.
    """
    if profile == "pi":
        return None
    if dialect:
        return dialect
    return preferred_dialect(getattr(summarizer, "model", None) or default_model(path))


def summary_transcript(
    messages: Iterable[Mapping[str, Any]],
    *,
    profile: str,
    prompts: PromptSet | None = None,
    dialect: str | None = None,
) -> Transcript:
    """The runtime messages to summarize as the summarizer reads them.

    `convert_to_llm` for the profile (summaries wrapped by `prompts`' context templates).
    For MusePi, `useless` pairs, thinking for Claude targets and boundary tags are handled by
    the dialect serializer, as in the release.
    """
    llm = convert_to_llm(messages, profile=profile, prompts=prompts)
    return Transcript(tuple(llm), profile, dialect if profile != "pi" else None)


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


def generate_text(
    summarizer: Summarizer,
    ask: SummaryAsk,
    transcript: Transcript,
    *,
    previous: str | None,
    counter: TokenCounter,
    fold: bool,
    escape: bool,
) -> tuple[str, list[SummaryResponse]]:
    """Summarize a transcript, folding it window by window when it does not fit.

    Each window's output becomes the next window's previous summary (and the update
    prompt, when the ask has one).

    Returns:
        The last window's text and every response, in order.
    """
    window = getattr(summarizer, "context_window", None) or DEFAULT_SUMMARIZER_WINDOW
    budget = fold_input_budget(window, ask.max_tokens)
    responses: list[SummaryResponse] = []
    text = previous
    for conversation in transcript.windows(budget, counter, fold=fold):
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
        dialect: MusePi: the summary input's dialect; None picks it from the summarizer's
            model as oh-my-pi does (`preferred_dialect`).
    """

    fold: bool = True
    short_summary: bool = False
    custom_instructions: str | None = None
    additional_context: tuple[str, ...] = ()
    thinking_level: str | None = None
    dialect: str | None = None


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
    system_prompt: str,
    summary: str,
    instruction: str,
    cap: int,
    *,
    conversation: str = "",
    additional_context: Sequence[str] = (),
    reasoning_effort: str | None = None,
) -> SummaryRequest:
    """MusePi's display-summary request, as oh-my-pi 18.2.3's `generateShortSummary`.

    The kept (recent) messages as the conversation, the summary just made as the previous
    summary (boundary tags neutralized), the additional context, then the ask; the same
    reasoning effort as the summary.
    """
    return SummaryRequest(
        system_prompt=system_prompt,
        prompt=build_summary_prompt(
            conversation,
            base_prompt=instruction,
            previous_summary=neutralize_boundary_tags(summary),
            additional_context=additional_context,
        ),
        max_tokens=cap,
        reasoning_effort=reasoning_effort,
        purpose="short-summary",
    )


@dataclass(frozen=True)
class _Run:
    """One summarization: where requests go and what every one of them shares."""

    ctx: CompactionContext
    prep: CompactionPreparation
    summarizer: Summarizer
    fold: bool
    dialect: str | None = None

    @property
    def musepi(self) -> bool:
        return self.prep.profile == "musepi"

    def generate(
        self, ask: SummaryAsk, messages: Sequence[Mapping[str, Any]], previous: str | None
    ) -> tuple[str, list[SummaryResponse]]:
        transcript = summary_transcript(
            messages, profile=self.prep.profile, prompts=self.ctx.prompts, dialect=self.dialect
        )
        return generate_text(
            self.summarizer,
            ask,
            transcript,
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
    dialect = summary_dialect(summarizer, prep.profile, options.dialect, path=prep.path)
    run = _Run(ctx, prep, summarizer, options.fold, dialect)
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
    # The `session.compacting` hook may replace the instruction and add context lines.
    hook = ctx.compacting
    hook_prompt = hook.prompt if hook is not None else None
    history_ask = SummaryAsk(
        system_prompt=system,
        base_prompt=hook_prompt or prompts.text("compaction-summary"),
        update_prompt=None if hook_prompt else prompts.text("compaction-update-summary"),
        max_tokens=settings.summary_max_tokens,
        reasoning_effort=effort,
        purpose="summary",
        custom_instructions=options.custom_instructions or prep.custom_instructions,
        additional_context=(
            *(hook.context if hook is not None else ()),
            *options.additional_context,
        ),
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
        recent = summary_transcript(
            prep.recent_messages, profile=prep.profile, prompts=prompts, dialect=run.dialect
        )
        request = short_summary_request(
            system,
            text,
            prompts.text("compaction-short-summary"),
            cap,
            conversation=recent.text(),
            additional_context=history_ask.additional_context,
            reasoning_effort=effort,
        )
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
        dialect: MusePi profile: the dialect the transcript is rendered in (`anthropic`,
            `harmony`, `xml`, ..., or `none` for the release's legacy labels); None picks it
            from the summarizer's model as oh-my-pi 18.2.3 does.
    """

    name: ClassVar[str] = "llm-summary"
    needs_summarizer: ClassVar[bool] = True

    fold: bool = True
    short_summary: bool = False
    custom_instructions: str | None = None
    additional_context: tuple[str, ...] = ()
    thinking_level: str | None = None
    dialect: str | None = None

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
            dialect=self.dialect,
        )
        return summarize_preparation(ctx, ctx.require_summarizer(self.name), options)

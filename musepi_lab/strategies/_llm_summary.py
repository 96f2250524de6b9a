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
than the summarizer's window is folded window by window (spec §5.7). The pure pieces of that
input (prompt, transcript, fold windows, effort) are in `_summary_input`.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._file_ops import format_summary_files, upsert_file_operations
from ..compaction._prepare import CompactionPreparation
from ..compaction._result import CompactionResult
from ..compaction._serialize import (
    NO_PRIOR_HISTORY,
    merge_split_turn,
    neutralize_boundary_tags,
)
from ..llm._summarizer import Summarizer, SummarizerError, SummaryRequest, SummaryResponse
from ..tokens._counter import TokenCounter
from ._base import CompactionContext, Strategy, register
from ._summary_input import (
    DEFAULT_SUMMARIZER_WINDOW,
    Transcript,
    build_summary_prompt,
    carried_preserve_data,
    fold_input_budget,
    previous_archive_text,
    reasoning_effort,
    summary_dialect,
    summary_transcript,
    thinking_level_at,
)


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


def _history_ask(
    ctx: CompactionContext,
    prep: CompactionPreparation,
    options: SummaryOptions,
    system: str,
    effort: str | None,
) -> SummaryAsk:
    """The ask for the history: the compaction prompts, or what the hook replaced them with."""
    prompts = ctx.prompts
    # The `session.compacting` hook may replace the instruction and add context lines.
    hook = ctx.compacting
    hook_prompt = hook.prompt if hook is not None else None
    return SummaryAsk(
        system_prompt=system,
        base_prompt=hook_prompt or prompts.text("compaction-summary"),
        update_prompt=None if hook_prompt else prompts.text("compaction-update-summary"),
        max_tokens=ctx.settings.summary_max_tokens,
        reasoning_effort=effort,
        purpose="summary",
        custom_instructions=options.custom_instructions or prep.custom_instructions,
        additional_context=(
            *(hook.context if hook is not None else ()),
            *options.additional_context,
        ),
    )


def _short_summary(
    run: _Run, options: SummaryOptions, text: str, system: str, history_ask: SummaryAsk
) -> SummaryResponse | None:
    """The short summary's response, when asked for and the settings give it a cap."""
    cap = run.ctx.settings.short_summary_max_tokens
    if not options.short_summary or cap is None:
        return None
    prep, prompts = run.prep, run.ctx.prompts
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
        reasoning_effort=history_ask.reasoning_effort,
    )
    return _checked(run.summarizer.summarize(request), "short-summary")


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
    history_ask = _history_ask(ctx, prep, options, system, effort)
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

    short_response = _short_summary(run, options, text, system, history_ask)
    short: str | None = None
    if short_response is not None:
        responses.append(short_response)
        short = short_response.text.strip() or None

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

"""`handoff`: the model writes a handoff document for its successor (spec §6.4).

Unlike `llm-summary`, the request does not serialize the history into a transcript: it
replays the live context (what the agent would send next, as Chat Completions messages)
and ends with one more user message holding the `handoff-document` prompt (and an
`Additional focus:` line when instructions are given), so a provider's prompt cache is
reused. The document becomes a compaction entry with `method: "handoff"`, kept region from
the engine's cut; the MusePi context renders it through the handoff template.

The live agent reuses its own system prompt; a recorded session does not hold it, so the
request uses the prompt set's `handoff-system` prompt when the set has one, else
`summarization-system`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._file_ops import compute_file_lists, file_details
from ..compaction._result import CompactionResult
from ..context._build import build_session_context
from ..context._llm import convert_to_llm, provider_messages
from ..llm._summarizer import SummarizerError, SummaryRequest
from ..tokens._counter import TokenCounter
from ._base import CompactionContext, Strategy, register
from ._chat_format import to_chat_messages
from ._llm_summary import (
    DEFAULT_SUMMARIZER_WINDOW,
    carried_preserve_data,
    fold_input_budget,
    reasoning_effort,
    run_params,
    thinking_level_at,
)

HANDOFF_SYSTEM_PROMPTS: tuple[str, ...] = ("handoff-system", "summarization-system")
"""System prompts tried in order: the first one the prompt set holds is used."""


def handoff_prompt(document_prompt: str, focus: str | None) -> str:
    """The final user message: the handoff prompt, plus `Additional focus: …` when given."""
    return f"{document_prompt}\n\nAdditional focus: {focus}" if focus else document_prompt


def live_llm_messages(ctx: CompactionContext, profile: str) -> list[dict[str, Any]]:
    """The context the agent would send at the compacted leaf, as provider messages."""
    context = (
        build_session_context(ctx.session, profile=profile)
        if ctx.leaf_id is None
        else build_session_context(ctx.session, ctx.leaf_id, profile=profile)
    )
    return provider_messages(convert_to_llm(context.messages, profile=profile, prompts=ctx.prompts))


def history_start(messages: Sequence[Mapping[str, Any]], counter: TokenCounter, budget: int) -> int:
    """Index of the oldest message to replay so the rest fits `budget` tokens.

    Everything is replayed when it fits. Otherwise the replay starts at the oldest user
    (or developer) message whose suffix fits, so no tool result loses its call; when no
    such suffix fits, at the last user message anyway (the provider may then reject the
    request, which is the honest outcome).
    """
    counts = [counter.count_message(m) for m in messages]
    if sum(counts) <= budget:
        return 0
    starts = [i for i, m in enumerate(messages) if m.get("role") in ("user", "developer")]
    if not starts:
        return 0
    openers = set(starts)
    suffix = 0
    best = starts[-1]
    for index in range(len(messages) - 1, -1, -1):
        suffix += counts[index]
        if suffix > budget:
            break
        if index in openers:
            best = index
    return best


@register
@dataclass(frozen=True)
class Handoff(Strategy):
    """A handoff document written from the live context, stored with method `handoff`.

    Attributes:
        custom_instructions: Focus for the document; when None, the instructions given to
            `compact()` are used.
        auto: A threshold-triggered handoff: without instructions, the
            `auto-handoff-threshold-focus` prompt supplies the focus (spec §6.4).
        trim_history: Drop the oldest turns of the replayed history when it would not
            fit the summarizer's `context_window` (the live agent skips the handoff then;
            a benchmark would rather get a document).
        images: Replay images as data URLs (off: each becomes `[image omitted]`, which
            text-only endpoints accept).
        thinking_level: Thinking level that sets the reasoning effort; None reads the
            session's.
    """

    name: ClassVar[str] = "handoff"
    needs_summarizer: ClassVar[bool] = True

    custom_instructions: str | None = None
    auto: bool = False
    trim_history: bool = True
    images: bool = False
    thinking_level: str | None = None

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Ask for the handoff document (None when the engine found nothing to do)."""
        prep = ctx.preparation
        if prep is None:
            return None
        summarizer = ctx.require_summarizer(self.name)
        profile = prep.profile
        prompts = ctx.prompts
        system_name = next(n for n in HANDOFF_SYSTEM_PROMPTS if n in prompts.texts)
        focus = self.custom_instructions or prep.custom_instructions
        if focus is None and self.auto:
            focus = prompts.text("auto-handoff-threshold-focus")
        prompt = handoff_prompt(prompts.text("handoff-document"), focus)
        max_tokens = ctx.settings.summary_max_tokens

        live = live_llm_messages(ctx, profile)
        start = 0
        if self.trim_history:
            window = getattr(summarizer, "context_window", None) or DEFAULT_SUMMARIZER_WINDOW
            budget = fold_input_budget(window, max_tokens) - ctx.counter.count_text(prompt)
            start = history_start(live, ctx.counter, budget)
        history = to_chat_messages(live[start:], images=self.images)

        level = (
            self.thinking_level if self.thinking_level is not None else thinking_level_at(prep.path)
        )
        effort = reasoning_effort(level) if profile == "musepi" else "high"
        request = SummaryRequest(
            system_prompt=prompts.text(system_name),
            prompt=prompt,
            max_tokens=max_tokens,
            reasoning_effort=effort,
            purpose="handoff",
            history=tuple(history),
        )
        response = summarizer.summarize(request)
        if response.stop_reason == "error":
            raise SummarizerError("Handoff failed: the model answered with an error")
        document = response.text.strip()
        if not document:
            raise SummarizerError("Handoff failed: the model returned an empty document")

        read_files, modified_files = compute_file_lists(prep.file_ops, profile=profile)
        params = run_params(ctx, [response], reasoning=effort)
        params["handoff_history_messages"] = len(history)
        params["handoff_history_dropped"] = start
        result = CompactionResult.from_preparation(
            prep,
            document,
            details=file_details(read_files, modified_files),
            method="handoff",
            preserve_data=(
                carried_preserve_data(prep.previous_preserve_data) if profile == "musepi" else None
            ),
            summarizer_input_tokens=response.input_tokens,
            summarizer_output_tokens=response.output_tokens,
            latency_s=response.latency_s,
            params=params,
        )
        return result

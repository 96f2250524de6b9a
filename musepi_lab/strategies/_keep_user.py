"""`keep-user-messages`: every user message stays verbatim; agent and tool content goes.

Asked for by OpenHands SDK users: what the user said (requests, rules, corrections) is the
part of a history an agent must never lose, while the agent's own steps and tool outputs can
be dropped or condensed. At the engine's cut (the same cut every summarizing strategy gets),
the compaction entry's summary holds every user message on the path before the cut, in
order and word for word — also those an earlier compaction had already folded away, since
the session still holds them — followed by either:

- `agent_content="mask"` (default, model-free): one line saying how many agent and tool
  messages were dropped;
- `agent_content="summarize"`: an LLM summary of the agent and tool messages before the cut
  (user messages left out of its input, since they are kept anyway), through the summarizer
  seam with the project's summary prompts.

A `/clear` reset boundary (MusePi) bounds the collection: user messages before it were
cleared by the user and do not come back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._prepare import CompactionPreparation
from ..compaction._result import CompactionResult
from ..session._model import Entry
from ._base import CompactionContext, Strategy, register
from ._llm_summary import (
    compaction_ask,
    generate_text,
    run_params,
)
from ._summary_input import summary_dialect, summary_transcript

KEEP_USER_METHOD = "keep-user-messages"
AGENT_CONTENT_MODES: tuple[str, ...] = ("mask", "summarize")


def user_message_text(message: Mapping[str, Any]) -> str | None:
    """The text of a user message (text blocks joined by newlines); None for other roles.

    An image is kept as the marker `[image]`, so the order of a message's parts still shows.
    """
    if message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def user_messages_before(path: Sequence[Entry], stop: int, start: int = 0) -> tuple[str, ...]:
    """Texts of the user messages of `path[start:stop]`, in order (empty ones skipped)."""
    texts = (
        user_message_text(entry.message)
        for entry in path[start:stop]
        if entry.type == "message" and entry.message is not None
    )
    return tuple(t for t in texts if t)


def kept_user_block(texts: Sequence[str]) -> str:
    """The verbatim block of user messages that opens the summary."""
    noun = "message" if len(texts) == 1 else "messages"
    header = f"The user's {len(texts)} {noun} before this point, word for word and in order:"
    body = "\n\n".join(f"[user message {i}]\n{text}" for i, text in enumerate(texts, start=1))
    return f"{header}\n\n{body}" if texts else header


def masked_agent_line(dropped: int) -> str:
    """The line standing for the agent and tool messages a `mask` compaction dropped."""
    noun = "message was" if dropped == 1 else "messages were"
    return f"[{dropped} agent and tool {noun} dropped without a summary.]"


def _agent_messages(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [m for m in messages if m.get("role") != "user"]


def _check_mode(value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"agent_content must be a str, not {type(value).__name__}")
    if value not in AGENT_CONTENT_MODES:
        raise ValueError(f"agent_content must be one of {AGENT_CONTENT_MODES}, got {value!r}")


@register
@dataclass(frozen=True)
class KeepUserMessages(Strategy):
    """Keep every user message verbatim; mask or summarize the agent and tool content.

    Attributes:
        agent_content: `mask` (drop it, model-free) or `summarize` (an LLM summary of it;
            needs a summarizer).
    """

    name: ClassVar[str] = "keep-user-messages"

    agent_content: str = "mask"

    def __post_init__(self) -> None:
        _check_mode(self.agent_content)

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Compact at the engine's cut; None when the cut drops nothing."""
        prep = ctx.preparation
        if prep is None:
            return None
        dropped = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
        if not dropped:
            return None
        start = prep.reset_boundary_index + 1 if prep.reset_boundary_index >= 0 else 0
        users = user_messages_before(prep.path, prep.cut_index, start)
        agent = _agent_messages(dropped)
        if self.agent_content == "mask":
            summary = f"{kept_user_block(users)}\n\n{masked_agent_line(len(agent))}"
            return CompactionResult.from_preparation(
                prep,
                summary,
                method=KEEP_USER_METHOD,
                params={"prompts": ctx.prompts.label, "user_messages_kept": len(users)},
            )
        return _summarized(ctx, prep, users, agent, self.name)


def _summarized(
    ctx: CompactionContext,
    prep: CompactionPreparation,
    users: Sequence[str],
    agent: Sequence[Mapping[str, Any]],
    strategy: str,
) -> CompactionResult:
    summarizer = ctx.require_summarizer(strategy)
    prompts = ctx.prompts
    ask = compaction_ask(ctx)
    transcript = summary_transcript(
        agent,
        profile=prep.profile,
        prompts=prompts,
        dialect=summary_dialect(summarizer, prep.profile, path=prep.path),
    )
    text, responses = generate_text(
        summarizer,
        ask,
        transcript,
        previous=prep.previous_summary,
        counter=ctx.counter,
        fold=True,
        escape=prep.profile == "musepi",
    )
    summary = (
        f"{kept_user_block(users)}\n\nThe agent's work before this point, summarized:\n\n{text}"
    )
    params = run_params(ctx, responses, reasoning=None)
    params["user_messages_kept"] = len(users)
    return CompactionResult.from_preparation(
        prep,
        summary,
        method=KEEP_USER_METHOD,
        summarizer_input_tokens=sum(r.input_tokens for r in responses),
        summarizer_output_tokens=sum(r.output_tokens for r in responses),
        latency_s=sum(r.latency_s for r in responses),
        params=params,
    )

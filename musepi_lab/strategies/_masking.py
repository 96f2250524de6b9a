"""`observation-masking`: hide old tool outputs behind a short placeholder, keep everything else.

The baseline of Lindenbauer et al. 2025, "The Complexity Trap: Simple Observation Masking
Is as Efficient as LLM Summarization for Agent Context Management" (arXiv:2508.21433),
which runs SWE-agent's `last_n_observations` history processor: every environment
observation older than the last M agent steps is replaced by a one-line placeholder, while
the agent's own actions and reasoning stay verbatim.

Here an agent step ("turn") is one assistant message that calls tools, with the tool
results answering it. The results of the last `keep_turns` steps stay; every older tool
result in the context keeps its entry, id, `toolCallId`, `toolName` and `isError` (so each
call still has its result) and gets a placeholder of our own wording as content. The
default, 10, is the window the paper evaluates (`last_n_observations: n: 10` in its
SWE-agent configurations); SWE-agent's documentation shows 5.

No summary is written and no entry is appended: the result carries the rewritten records
in `replacements` (`append_entry=False`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._result import CompactionResult
from ..context._build import UNSET, build_session_context
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._base import CompactionContext, Strategy, register
from ._context_size import context_tokens, first_path_entry_id
from ._params import check_count

DEFAULT_KEEP_TURNS = 10
"""Steps whose tool outputs stay visible (the Complexity Trap paper's M = 10)."""

MASK_METHOD = "observation-masking"

_MASK_RE = re.compile(r"\[Earlier tool output masked: \d+ lines?(?: and \d+ images?)? omitted\]")


def mask_notice(lines: int, images: int = 0) -> str:
    """The placeholder written over a masked tool output.

    Args:
        lines: Lines of text the output had.
        images: Images the output had.
    """
    text = f"{lines} line{'s' if lines != 1 else ''}"
    if images:
        text += f" and {images} image{'s' if images != 1 else ''}"
    return f"[Earlier tool output masked: {text} omitted]"


def is_masked(message: Mapping[str, Any]) -> bool:
    """Whether a tool result already holds nothing but a masking placeholder."""
    content = message.get("content")
    if not isinstance(content, list) or len(content) != 1:
        return False
    block = content[0]
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and _MASK_RE.fullmatch(block["text"]) is not None
    )


def _output_shape(content: Any) -> tuple[int, int]:
    """(lines of text, images) of a tool result's content."""
    if isinstance(content, str):
        return (content.count("\n") + 1 if content else 0), 0
    if not isinstance(content, list):
        return 0, 0
    text = "".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    images = sum(1 for b in content if isinstance(b, Mapping) and b.get("type") == "image")
    return (text.count("\n") + 1 if text else 0), images


def _calls_tools(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "assistant"
        and isinstance(content, list)
        and any(isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content)
    )


def masked_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a tool result message whose content is the masking placeholder."""
    lines, images = _output_shape(message.get("content"))
    return {**message, "content": [{"type": "text", "text": mask_notice(lines, images)}]}


def mask_candidates(messages: Sequence[Mapping[str, Any]], keep_turns: int) -> tuple[int, ...]:
    """Indices of the tool results older than the last `keep_turns` tool-calling steps.

    A result belongs to the step of the assistant message before it, so every result
    placed before the oldest kept step's assistant message is older than the window.

    Args:
        messages: Context messages, oldest first.
        keep_turns: Steps whose results stay.
    """
    steps = [i for i, m in enumerate(messages) if _calls_tools(m)]
    if len(steps) <= keep_turns:
        return ()
    boundary = steps[-keep_turns] if keep_turns > 0 else len(messages)
    return tuple(i for i in range(boundary) if messages[i].get("role") == "toolResult")


def mask_observations(
    session: Session,
    counter: TokenCounter,
    *,
    keep_turns: int = DEFAULT_KEEP_TURNS,
    leaf_id: str | None = None,
    profile: str = "musepi",
) -> dict[str, dict[str, Any]]:
    """The records observation masking rewrites: entry id → new record.

    Only tool results the model still sees (those in the context at the leaf) are
    considered; one already masked, or one the placeholder would not make smaller
    (counted with `counter`), is left alone.

    Args:
        session: The session (not changed).
        counter: Token counter deciding whether a placeholder saves anything.
        keep_turns: Tool-calling steps whose results stay.
        leaf_id: The leaf (None: the session leaf).
        profile: Context profile, `"musepi"` or `"pi"`.
    """
    context = build_session_context(session, UNSET if leaf_id is None else leaf_id, profile=profile)
    out: dict[str, dict[str, Any]] = {}
    for index in mask_candidates(context.messages, keep_turns):
        entry = session.get(context.entry_ids[index])
        message = entry.message if entry is not None else None
        if entry is None or entry.id is None or message is None or is_masked(message):
            continue
        replacement = masked_message(message)
        if counter.count_message(replacement) >= counter.count_message(message):
            continue
        out[entry.id] = {**entry.record, "message": replacement}
    return out


@register
@dataclass(frozen=True)
class ObservationMasking(Strategy):
    """Replace tool outputs older than the last `keep_turns` steps with a placeholder.

    Attributes:
        keep_turns: Tool-calling assistant steps whose results stay visible (default 10,
            the Complexity Trap paper's window).
    """

    name: ClassVar[str] = "observation-masking"
    needs_preparation: ClassVar[bool] = False

    keep_turns: int = DEFAULT_KEEP_TURNS

    def __post_init__(self) -> None:
        check_count("keep_turns", self.keep_turns, 0)

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Mask; None when no tool output is old enough to mask."""
        return masking_result(ctx, self.keep_turns)


def masking_result(ctx: CompactionContext, keep_turns: int) -> CompactionResult | None:
    """The observation-masking result for a context, or None when nothing is masked.

    Args:
        ctx: The compaction context.
        keep_turns: Tool-calling steps whose results stay.
    """
    profile = ctx.settings.profile
    replacements = mask_observations(
        ctx.session, ctx.counter, keep_turns=keep_turns, leaf_id=ctx.leaf_id, profile=profile
    )
    first = first_path_entry_id(ctx.session, ctx.leaf_id)
    if not replacements or first is None:
        return None
    result = CompactionResult(
        summary="",
        first_kept_entry_id=first,
        tokens_before=context_tokens(ctx.session, ctx, ctx.leaf_id),
        method=MASK_METHOD,
        params={"prompts": ctx.prompts.label},
        leaf_id=ctx.leaf_id,
        profile=profile,
        replacements=replacements,
        append_entry=False,
    )
    return result

"""`oversized-output`: cut down a single tool result too large for the next request.

As asked of Inspect AI: a compaction cannot help when one tool result is by itself too big
for the request that has to carry it (it is the newest message, so it sits in the kept
region of every cut). This guard rewrites only such results: a tool result of the context
at the leaf whose own size is above `limit` tokens keeps its head and tail, with a marker
of our own wording in between saying how much was cut and why; everything else (every other
message, the call/result pairing, ids, `toolName`, `isError`, images) is left as it is.

`limit` is `max_tokens` when given; else `max_share` of the room a request has in `window`
(the compaction threshold of the settings: the window minus the reserve). With the default
share of one half, a result is cut when it alone would fill more than half of the next
request. No summary is written and no entry appended (`append_entry=False`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._result import CompactionResult
from ..compaction._threshold import threshold_tokens
from ..context._build import UNSET, build_session_context
from ..tokens._counter import TokenCounter
from ._base import CompactionContext, Strategy, register
from ._context_size import context_tokens, first_path_entry_id

OVERSIZED_OUTPUT_METHOD = "oversized-output"
DEFAULT_WINDOW = 200_000
"""Context window assumed when none is given (as `hybrid`)."""
DEFAULT_MAX_SHARE = 0.5
"""Largest share of a request's room one tool result may fill."""
KEEP_HEAD_SHARE = 0.5
"""Share of the kept characters taken from the start (the rest from the end): errors and
summaries sit at the end of command output as often as headers sit at its start."""
_SLACK = 0.9  # keep a little under the limit: the marker and the estimate's rounding


def cut_marker(lines: int, chars: int) -> str:
    """The marker written where the middle of an oversized output was cut."""
    return (
        f"\n\n[... {lines} lines ({chars} characters) of this tool output were cut here: "
        "the whole output would have overflowed the next request ...]\n\n"
    )


def cut_middle(text: str, keep_chars: int) -> str:
    """`text` with its middle replaced by `cut_marker`, keeping `keep_chars` characters
    (head share `KEEP_HEAD_SHARE`); unchanged when it is not longer than that."""
    if len(text) <= keep_chars:
        return text
    head = math.floor(keep_chars * KEEP_HEAD_SHARE)
    tail = keep_chars - head
    cut = text[head : len(text) - tail]
    return f"{text[:head]}{cut_marker(cut.count(chr(10)), len(cut))}{text[len(text) - tail :]}"


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def shortened_message(message: Mapping[str, Any], tokens: int, limit: int) -> dict[str, Any]:
    """A copy of a tool result whose text is cut to about `limit` tokens (images kept)."""
    text = _text_of(message)
    keep = math.floor(len(text) * limit * _SLACK / max(tokens, 1))
    content = message.get("content")
    images = [
        b
        for b in (content if isinstance(content, list) else ())
        if isinstance(b, Mapping) and b.get("type") == "image"
    ]
    return {**message, "content": [{"type": "text", "text": cut_middle(text, keep)}, *images]}


def oversized_replacements(
    ctx: CompactionContext, limit: int, counter: TokenCounter
) -> dict[str, dict[str, Any]]:
    """The records to rewrite: entry id → record with the tool result cut down."""
    leaf = UNSET if ctx.leaf_id is None else ctx.leaf_id
    context = build_session_context(ctx.session, leaf, profile=ctx.settings.profile)
    out: dict[str, dict[str, Any]] = {}
    for message, entry_id in zip(context.messages, context.entry_ids, strict=True):
        if message.get("role") != "toolResult":
            continue
        tokens = counter.count_message(message)
        if tokens <= limit:
            continue
        entry = ctx.session.get(entry_id)
        if entry is None or entry.id is None or entry.message is None:
            continue
        replacement = shortened_message(entry.message, tokens, limit)
        if counter.count_message(replacement) >= tokens:
            continue
        out[entry.id] = {**entry.record, "message": replacement}
    return out


def _check(name: str, value: Any, kind: type, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {kind.__name__}, not {type(value).__name__}")


@register
@dataclass(frozen=True)
class OversizedOutput(Strategy):
    """Cut the middle out of any single tool result too large for the next request.

    Attributes:
        window: The model's context window (tokens); None: the replay's window in a replay,
            else `DEFAULT_WINDOW` (as `hybrid`).
        max_share: Largest share of the request's room (threshold of `window`) one tool
            result may fill, 0 < share ≤ 1.
        max_tokens: An explicit limit in tokens; wins over `window` and `max_share`.
    """

    name: ClassVar[str] = "oversized-output"
    needs_preparation: ClassVar[bool] = False

    window: int | None = None
    max_share: float = DEFAULT_MAX_SHARE
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        _check("window", self.window, int, optional=True)
        _check("max_tokens", self.max_tokens, int, optional=True)
        if isinstance(self.max_share, bool) or not isinstance(self.max_share, (int, float)):
            raise TypeError(f"max_share must be a number, not {type(self.max_share).__name__}")
        if not 0 < self.max_share <= 1:
            raise ValueError(f"max_share must be in (0, 1], got {self.max_share}")
        if (self.window is not None and self.window <= 0) or (
            self.max_tokens is not None and self.max_tokens <= 0
        ):
            raise ValueError("window and max_tokens must be positive")

    def limit(self, ctx: CompactionContext) -> int:
        """The most tokens one tool result may keep."""
        if self.max_tokens is not None:
            return self.max_tokens
        window = self.window if self.window is not None else DEFAULT_WINDOW
        return math.floor(self.max_share * threshold_tokens(window, ctx.settings))

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Cut oversized results; None when no result is over the limit."""
        limit = self.limit(ctx)
        replacements = oversized_replacements(ctx, limit, ctx.counter)
        first = first_path_entry_id(ctx.session, ctx.leaf_id)
        if not replacements or first is None:
            return None
        return CompactionResult(
            summary="",
            first_kept_entry_id=first,
            tokens_before=context_tokens(ctx.session, ctx, ctx.leaf_id),
            method=OVERSIZED_OUTPUT_METHOD,
            params={
                "prompts": ctx.prompts.label,
                "limit_tokens": limit,
                "outputs_cut": len(replacements),
            },
            leaf_id=ctx.leaf_id,
            profile=ctx.settings.profile,
            replacements=replacements,
            append_entry=False,
        )

"""Triggers read from the recorded session, each labelled with where it came from.

A replay fires MusePi's triggers (spec §3.3, §6.5; seed "Triggers") from two kinds of
evidence, and the timeline's `trigger_source` says which:

- `recorded-error`: the record holds a provider error that says the prompt did not fit (pi
  `stopReason: "error"` with an overflow `errorMessage`, Claude Code's synthetic "Prompt is
  too long" API error line, an OpenAI `context_length_exceeded`, Codex's "ran out of room in
  the model's context window" event), or Codex's `response.incomplete` event for
  `max_output_tokens`.
- `recorded-stop`: a reply recorded as cut by the output limit (`stopReason: "length"`).
- `recorded-usage`: silent overflow: the reply's recorded usage is above the replay's window.
- `simulated`: the replay's own estimate says the next request would not fit the window.
- `measured`: threshold, mid-turn and idle triggers, from what the agent measures (recorded
  usage plus estimates while it applies, spec §3.2).
- `manual`: a manual compaction the caller asked for.
- `recorded`: the agent's own compaction, followed by the `recorded` strategy.

The guards on the recovery paths (spec §3.3, §6.5): overflow recovery compacts and retries
once; a second overflow before a new user message or a reply without error is a failure
("recovery failed after one compact-and-retry"). Incomplete-output recovery stops after
three consecutive recoveries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..compaction._threshold import OVERFLOW_PATTERNS, is_context_overflow
from ..session._model import Entry

TRIGGER_SOURCES: tuple[str, ...] = (
    "recorded-error",
    "recorded-stop",
    "recorded-usage",
    "simulated",
    "measured",
    "manual",
    "recorded",
)
"""Where a trigger came from (the timeline's `trigger_source`)."""

MAX_INCOMPLETE_RECOVERIES = 3
"""Consecutive incomplete-output recoveries before MusePi gives up (spec §6.5)."""

OVERFLOW_RETRY_FAILED = "recovery failed after one compact-and-retry"
"""The failure reason of a second overflow in a row (pi's wording, spec §3.3)."""

INCOMPLETE_LIMIT_REACHED = (
    f"incomplete-output recovery stopped after {MAX_INCOMPLETE_RECOVERIES} consecutive tries"
)

_CODEX_OVERFLOW = re.compile(r"ran out of room in the model's context window", re.IGNORECASE)
_CODEX_INCOMPLETE = re.compile(
    r"incomplete response returned, reason: max_output_tokens", re.IGNORECASE
)
_CODEX_ERROR_EVENTS = frozenset({"codex:error", "codex:stream_error"})


class Fired(NamedTuple):
    """A trigger and where it came from.

    Attributes:
        trigger: One of the replay's `TRIGGERS`.
        source: One of `TRIGGER_SOURCES`.
    """

    trigger: str
    source: str


def reply_fired(message: Mapping[str, Any], *, window: int) -> Fired | None:
    """The recovery trigger a recorded reply sets (threshold aside), or None.

    Incomplete: cut by the output limit. Overflow: a recorded overflow error, or a reply
    that stopped normally with recorded `usage.input + usage.cacheRead` above `window`
    (silent overflow, spec §3.3).
    """
    stop = message.get("stopReason")
    if stop == "length":
        return Fired("incomplete", "recorded-stop")
    if stop == "error" and is_context_overflow(message):
        return Fired("overflow", "recorded-error")
    if stop == "stop" and is_context_overflow(message, window):
        return Fired("overflow", "recorded-usage")
    return None


def event_fired(entry: Entry) -> Fired | None:
    """The trigger a recorded non-message event sets: Codex `error` / `stream_error`
    events for an overflow or a `max_output_tokens` incomplete response; else None."""
    if entry.type != "custom" or entry.get("customType") not in _CODEX_ERROR_EVENTS:
        return None
    data = entry.get("data")
    text = str(data.get("message") or "") if isinstance(data, Mapping) else ""
    if _CODEX_INCOMPLETE.search(text):
        return Fired("incomplete", "recorded-error")
    if _CODEX_OVERFLOW.search(text) or any(p.search(text) for p in OVERFLOW_PATTERNS):
        return Fired("overflow", "recorded-error")
    return None


def refused_recovery(fired: Fired, *, overflow_retried: bool, incomplete_streak: int) -> str:
    """Why a recovery trigger may not compact again ("" when it may): a second overflow
    before the context recovered, or a fourth incomplete-output recovery in a row."""
    if fired.trigger == "overflow" and overflow_retried:
        return OVERFLOW_RETRY_FAILED
    if fired.trigger == "incomplete" and incomplete_streak >= MAX_INCOMPLETE_RECOVERIES:
        return INCOMPLETE_LIMIT_REACHED
    return ""

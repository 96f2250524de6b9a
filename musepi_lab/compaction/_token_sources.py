"""Where a token figure comes from: recorded by the provider, or estimated by the counter.

One context has two sizes. The provider's is what its last reply's usage recorded (the
whole prompt it billed: system prompt, tool definitions and the conversation, in its own
tokenizer), plus an estimate of the messages after that reply; it is the figure the
compaction trigger compares with the threshold (`estimate_context_tokens`). The counter's
is the run's `TokenCounter` over the messages the session holds. Both are right about
different things, so every view says which one it shows (`RECORDED`, `ESTIMATED`), and
warns when they disagree so much that one of them cannot describe the session: a file
whose text was redacted or cut keeps the provider's counts but not the text behind them.

The warning compares growth, not totals: between two replies, the provider's count grows
by what the messages between them added, and the counter's estimate of those messages
should be near it (within the tokenizers' difference, about 1.5×). Totals would flag every
short Claude Code session, whose fixed system prompt alone is ten times its conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._threshold import calculate_context_tokens, estimate_from_counts, message_usage

RECORDED = "recorded by the provider"
"""Label of a figure taken from the session's recorded usage."""
ESTIMATED = "estimated by the counter"
"""Label of a figure the run's token counter computed from the session's text."""
EXTREME_RATIO = 4.0
"""Growth ratio (either way) past which the two figures are said to disagree extremely."""
MIN_GROWTH_TOKENS = 2_000
"""Least growth (the larger side) the ratio is judged on: below it one long tool output
moves the ratio more than any redaction."""


@dataclass(frozen=True, slots=True)
class ContextFigures:
    """Both sizes of one context, each with its source.

    Attributes:
        recorded: The context size the last valid usage recorded (None: no reply recorded
            usage, so only the estimate exists).
        trailing: Estimated tokens of the messages after that reply (all of them when
            `recorded` is None).
        estimated: The counter's tokens over every message of the context.
        method: The counter's token method (`pi`, `musepi`, `o200k_base`, ...).
        growth_ratio: How much more the provider's count grew between replies than the
            counter's estimate of the messages in between (None: too little growth to
            judge, fewer than two replies with usage).
    """

    recorded: int | None
    trailing: int
    estimated: int
    method: str
    growth_ratio: float | None = None

    @property
    def context(self) -> int:
        """The trigger's input: recorded plus the trailing estimate, else the estimate."""
        return self.recorded + self.trailing if self.recorded is not None else self.estimated

    @property
    def extreme(self) -> bool:
        """Whether the two figures disagree extremely (see `EXTREME_RATIO`)."""
        ratio = self.growth_ratio
        return ratio is not None and (ratio >= EXTREME_RATIO or ratio <= 1 / EXTREME_RATIO)

    def recorded_text(self) -> str:
        """The provider's figure with its source, e.g. `76,351 recorded by the provider`."""
        if self.recorded is None:
            return f"no usage recorded (the context is {ESTIMATED})"
        after = f" + {self.trailing:,} {ESTIMATED} after its last reply" if self.trailing else ""
        return f"{self.context:,} {RECORDED}{after}"

    def estimated_text(self) -> str:
        """The counter's figure with its source, e.g. `34,223 estimated by the counter (musepi)`."""
        return f"{self.estimated:,} {ESTIMATED} ({self.method})"

    def text(self) -> str:
        """Both figures on one line, the trigger's first."""
        if self.recorded is None:
            return self.estimated_text()
        return f"{self.recorded_text()} · {self.estimated_text()}"

    def warning(self) -> str | None:
        """A sentence when the figures disagree extremely, else None."""
        if not self.extreme or self.growth_ratio is None:
            return None
        ratio = self.growth_ratio
        if ratio >= 1:
            return (
                f"the provider's count grew {ratio:,.1f}× as fast as the counter's estimate of "
                "the same messages: the session's text is not what the provider saw (redacted, "
                "cut or summarized in the file?), so estimated figures are far too small"
            )
        return (
            f"the provider's count grew only {ratio:,.2f}× as fast as the counter's estimate of "
            "the same messages: the session holds more text than the provider was sent (tool "
            "outputs the harness cut, images or data counted as text?), so estimated figures "
            "are far too large"
        )


def growth_ratio(
    messages: Sequence[Mapping[str, Any] | None],
    counts: Sequence[int],
    *,
    profile: str = "musepi",
) -> float | None:
    """Recorded growth over estimated growth between consecutive replies with usage.

    A pair whose recorded size fell (a compaction, a cache reset, a new prompt between
    them) says nothing about the text and is left out; so are the messages before the
    first reply, which carry the fixed prompt the session does not record.

    Args:
        messages: The context's runtime messages, oldest first (None entries count 0).
        counts: The counter's tokens of each message.
        profile: Which usage is valid (`message_usage`).

    Returns:
        The ratio, or None when either side grew less than `MIN_GROWTH_TOKENS`.
    """
    if len(messages) != len(counts):
        raise ValueError("messages and counts differ in length")
    recorded_growth = 0
    estimated_growth = 0
    previous: tuple[int, int] | None = None  # (message index, recorded size)
    for index, message in enumerate(messages):
        usage = message_usage(message, profile=profile)
        if usage is None:
            continue
        size = calculate_context_tokens(usage, profile=profile)
        if previous is not None and size >= previous[1]:
            recorded_growth += size - previous[1]
            estimated_growth += sum(counts[previous[0] + 1 : index + 1])
        previous = (index, size)
    if max(recorded_growth, estimated_growth) < MIN_GROWTH_TOKENS or estimated_growth <= 0:
        return None
    return recorded_growth / estimated_growth


def context_figures(
    messages: Sequence[Mapping[str, Any] | None],
    counts: Sequence[int],
    *,
    method: str,
    profile: str = "musepi",
) -> ContextFigures:
    """Both sizes of a context from its messages and the counter's count of each.

    Args:
        messages: The context's runtime messages, oldest first.
        counts: The counter's tokens of each message (same length).
        method: The counter's method, for the label.
        profile: Which usage is valid (`"musepi"` or `"pi"`).
    """
    estimate = estimate_from_counts(messages, counts, profile=profile)
    recorded = estimate.usage_tokens if estimate.last_usage_index >= 0 else None
    return ContextFigures(
        recorded=recorded,
        trailing=estimate.trailing_tokens,
        estimated=sum(counts),
        method=method,
        growth_ratio=growth_ratio(messages, counts, profile=profile),
    )


_USAGE_FIELDS = (
    ("input", "input"),
    ("output", "output"),
    ("cacheRead", "cache read"),
    ("cacheWrite", "cache write"),
)


def recorded_usage_text(message: Mapping[str, Any] | None) -> str | None:
    """What the provider recorded for one reply: the context it counted and the usage
    fields behind it, e.g. `context 90,863 recorded by the provider (input 13,616, ...)`
    (None for a message without valid usage)."""
    usage = message_usage(message, profile="pi")
    if usage is None:
        return None
    parts = [
        f"{label} {int(usage[key]):,}"
        for key, label in _USAGE_FIELDS
        if isinstance(usage.get(key), (int, float))
        and not isinstance(usage.get(key), bool)
        and usage.get(key)
    ]
    context = calculate_context_tokens(usage, profile="pi")
    return f"context {context:,} {RECORDED}" + (f" ({', '.join(parts)})" if parts else "")


BEYOND = "beyond the estimate"
"""The cut bar's part the provider recorded but the counter's regions do not hold."""


def cut_bar_parts(regions: Mapping[str, int], context: int) -> dict[str, int]:
    """The parts of the cut bar, which add up to the figure it stands beside.

    The regions (summarized, turn prefix, kept) are the counter's estimates; the
    context is the trigger's figure (`ContextFigures.context`). What the provider recorded
    beyond the regions (the system prompt, tool definitions, the tokenizers' difference)
    is a part of its own, so the bar's total is `max(context, sum of the regions)`:
    the context when the provider counted more, the regions' sum when it counted less.

    Args:
        regions: Estimated tokens per region, in bar order.
        context: The context the bar stands beside.
    """
    parts = dict(regions)
    parts[BEYOND] = max(0, context - sum(regions.values()))
    return parts

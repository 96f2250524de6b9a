"""What a live view of a running session shows: the context against the model's window,
where a compaction would cut now and how far the trigger is, and the cost so far.

A pure function of a `Session` (`live_summary`), so the widget, the `watch` command and the
tests compute the same figures, and a full read of a file and a tail of it agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..compaction._prepare import prepare_compaction
from ..compaction._settings import CompactionSettings
from ..compaction._threshold import should_compact, threshold_tokens
from ..compaction._token_sources import ESTIMATED, RECORDED, ContextFigures, context_figures
from ..context._build import build_session_context
from ..metrics._prices import DEFAULT_PRICES, prices_for
from ..metrics._windows import DEFAULT_CONTEXT_WINDOW, context_window_for
from ..replay._calibration import recorded_bill
from ..session._session import Session
from ..tokens._counter import TokenCounter


@dataclass(frozen=True, slots=True)
class LiveSummary:
    """The live figures of a session at its leaf.

    Attributes:
        session_id: The header id.
        entries: Entries in the session (every branch).
        leaf_id: The leaf (the last entry in file order).
        model: `provider/modelId` in force at the leaf (or the last reply's model), if any.
        context_tokens: The context at the leaf: the last valid usage (recorded by the
            provider) plus an estimate of the messages after it (`estimate_context_tokens`,
            the trigger's input); all estimated when no reply recorded usage.
        window: The model's context window.
        window_source: `recorded` (the session says), `table` (`metrics.MODEL_WINDOWS`)
            or `unknown` (`DEFAULT_CONTEXT_WINDOW` assumed).
        threshold: The context size above which `should_compact` fires.
        would_compact: Whether `should_compact` fires now.
        tokens_to_threshold: Tokens the context can still grow before it fires (0 when it
            does).
        cut_entry_id: The first entry `prepare_compaction` would keep if it ran now (None
            when there is nothing to compact).
        cut_index: Its index on the leaf's path.
        tokens_kept: Tokens of the messages kept from the cut on, estimated by the counter
            (0 without a cut).
        cost_usd: Sum of every reply's cost: its recorded `usage.cost`, else its usage at
            its model's list prices (`metrics.prices_for`).
        priced_replies: Replies whose cost came from the price table (no recorded cost).
        unpriced_models: Models priced at `DEFAULT_PRICES` because the table lacks them.
        problems: Read problems of the session.
        pending_bytes: Bytes of an unfinished last line (a tail's; 0 for a whole file).
        figures: Both sizes of the context with their sources (`ContextFigures`: the
            provider's recorded count and the counter's estimate).
    """

    session_id: str
    entries: int
    leaf_id: str | None
    model: str | None
    context_tokens: int
    window: int
    window_source: str
    threshold: int
    would_compact: bool
    tokens_to_threshold: int
    cut_entry_id: str | None
    cut_index: int | None
    tokens_kept: int
    cost_usd: float
    priced_replies: int
    unpriced_models: tuple[str, ...]
    problems: int
    pending_bytes: int = 0
    figures: ContextFigures | None = None

    @property
    def context_source(self) -> str:
        """Where `context_tokens` comes from: `RECORDED` or `ESTIMATED`."""
        recorded = self.figures is not None and self.figures.recorded is not None
        return RECORDED if recorded else ESTIMATED

    def line(self) -> str:
        """One line of text for a terminal (what `musepi-lab watch` prints)."""
        unknown = ", unknown window: default assumed" if self.window_source == "unknown" else ""
        share = self.context_tokens / self.window if self.window else 0.0
        trigger = "compaction due" if self.would_compact else f"{self.tokens_to_threshold:,} to go"
        cut = (
            f"cut at #{self.cut_index:,} {self.cut_entry_id} (keeps {self.tokens_kept:,} estimated)"
            if self.cut_entry_id
            else "no cut"
        )
        parts = [
            f"{self.entries:,} entries",
            f"leaf {self.leaf_id}",
            f"context {self.context_tokens:,}/{self.window:,} tok ({share:.0%}{unknown}) "
            + self.context_source,
        ]
        if self.figures is not None and self.figures.recorded is not None:
            parts.append(self.figures.estimated_text())
        parts += [
            f"threshold {self.threshold:,}: {trigger}",
            cut,
            f"cost ${self.cost_usd:.4f}",
        ]
        if self.unpriced_models:
            parts.append(f"default prices for {', '.join(self.unpriced_models)}")
        if self.problems:
            parts.append(f"{self.problems} problem(s)")
        if self.pending_bytes:
            parts.append(f"pending partial line ({self.pending_bytes:,} bytes)")
        warning = self.figures.warning() if self.figures is not None else None
        if warning:
            parts.append(f"warning: {warning}")
        return " · ".join(parts)


def session_model(session: Session, context_model: Mapping[str, Any] | None) -> str | None:
    """`provider/modelId` in force (from the context), else the last reply's `model`."""
    if context_model and context_model.get("modelId"):
        provider = context_model.get("provider")
        model_id = str(context_model["modelId"])
        return f"{provider}/{model_id}" if provider else model_id
    for entry in reversed(session.entries):
        message = entry.message
        if entry.role == "assistant" and message is not None and message.get("model"):
            return str(message["model"])
    return None


def session_window(session: Session, model: str | None) -> tuple[int, str]:
    """The context window and where it came from (`recorded`, `table`, `unknown`)."""
    recorded = session.header.get("contextWindow")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return recorded, "recorded"
    known = context_window_for(model)
    if known is not None:
        return known, "table"
    return DEFAULT_CONTEXT_WINDOW, "unknown"


def cost_so_far(session: Session) -> tuple[float, int, tuple[str, ...]]:
    """`(cost, priced replies, unpriced models)` over every reply of the session: its
    recorded cost, else its usage at its model's prices (`replay.recorded_bill`)."""
    total = 0.0
    priced = 0
    unpriced: dict[str, None] = {}
    for entry in session.entries:
        message = entry.message
        if entry.role != "assistant" or message is None:
            continue
        bill = recorded_bill(message)
        if bill is None:
            continue
        total += bill["cost_usd"]
        usage = message.get("usage")
        cost = usage.get("cost") if isinstance(usage, Mapping) else None
        recorded = cost.get("total") if isinstance(cost, Mapping) else None
        if not isinstance(recorded, (int, float)) or recorded <= 0:
            priced += 1
            model = str(message.get("model") or "")
            if prices_for(model) is DEFAULT_PRICES:
                unpriced[model or "(no model)"] = None
    return total, priced, tuple(unpriced)


def live_summary(
    session: Session,
    *,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    window: int | None = None,
    pending_bytes: int = 0,
) -> LiveSummary:
    """The live figures of a session at its leaf (pure).

    Args:
        session: The session (a full read, or a tail's `TailState.session`).
        settings: Compaction settings (default: MusePi's); their profile builds the context.
        counter: Token counter (default: the profile's estimator); share one across
            updates so each entry is counted once.
        window: The model's window (default: recorded, else `MODEL_WINDOWS`, else
            `DEFAULT_CONTEXT_WINDOW`, marked unknown).
        pending_bytes: An unfinished last line's size, shown as pending.
    """
    settings = settings or CompactionSettings.musepi()
    profile = settings.profile
    counter = counter or TokenCounter.for_profile(profile)
    context = build_session_context(session, profile=profile)
    counts = [counter.count_message(m) for m in context.messages]
    figures = context_figures(context.messages, counts, method=counter.method, profile=profile)
    tokens = figures.context
    model = session_model(session, context.model)
    if window is not None:
        size, source = window, "given"
    else:
        size, source = session_window(session, model)
    threshold = threshold_tokens(size, settings)
    fires = should_compact(tokens, size, settings)
    preparation = prepare_compaction(session, settings, counter) if session.entries else None
    cut_id = preparation.first_kept_entry_id if preparation is not None else None
    kept = 0
    if preparation is not None:
        kept = sum(counter.count_message(m) for m in preparation.recent_messages)
    cost, priced, unpriced = cost_so_far(session)
    return LiveSummary(
        session_id=session.id,
        entries=len(session.entries),
        leaf_id=session.leaf_id,
        model=model,
        context_tokens=tokens,
        window=size,
        window_source=source,
        threshold=threshold,
        would_compact=fires,
        tokens_to_threshold=0 if fires else max(0, threshold + 1 - tokens),
        cut_entry_id=cut_id,
        cut_index=preparation.cut_index if preparation is not None else None,
        tokens_kept=kept,
        cost_usd=cost,
        priced_replies=priced,
        unpriced_models=unpriced,
        problems=len(session.errors),
        pending_bytes=pending_bytes,
        figures=figures,
    )

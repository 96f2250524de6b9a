"""`plot_context_timeline`: context size per request of a replay, with its compactions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..replay._replay import CompactionEvent, ReplayResult

TRIGGER_COLORS: dict[str, str] = {
    "threshold": "#d62728",
    "mid-turn": "#ff7f0e",
    "overflow": "#8c564b",
    "incomplete": "#e377c2",
    "idle": "#17becf",
    "manual": "#9467bd",
}
"""Colour of each replay trigger's compaction markers."""
WINDOW_COLOR = "#333333"
THRESHOLD_COLOR = "#d62728"
RECORDED_COLOR = "#7f7f7f"
CONTEXT_COLOR = "#1f77b4"


def _thousands(value: float, _pos: int | None = None) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _short(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if abs(tokens) >= 1000 else str(tokens)


def event_label(event: CompactionEvent) -> str:
    """The annotation of one compaction: trigger, method and the drop in tokens."""
    return f"{event.trigger} · {event.method}\n{_short(event.tokens_before)} → {_short(event.tokens_after)}"


def _recorded_points(timeline: Any) -> tuple[list[float], list[float]]:
    """Requests whose provider usage was recorded and still applies, and that usage."""
    if "recorded_tokens" not in timeline.columns:
        return [], []
    xs: list[float] = []
    ys: list[float] = []
    for request, recorded in zip(timeline["request"], timeline["recorded_tokens"], strict=True):
        if recorded is None or (isinstance(recorded, float) and math.isnan(recorded)):
            continue
        try:
            value = float(recorded)
        except (TypeError, ValueError):
            continue
        if not math.isnan(value):
            xs.append(float(request))
            ys.append(value)
    return xs, ys


def _recorded_compactions(timeline: Any) -> list[float]:
    if "recorded_compaction" not in timeline.columns:
        return []
    return [
        float(r)
        for r, flag in zip(timeline["request"], timeline["recorded_compaction"], strict=True)
        if bool(flag)
    ]


def _finish_axes(ax: Axes, requests: Sequence[float], top: float, title: str) -> None:
    """Limits, token ticks, labels, title and legend of the timeline."""
    from matplotlib.ticker import FuncFormatter

    ax.set_ylim(0, top * 1.08)
    if requests:
        ax.set_xlim(min(requests) - 0.5, max(requests) + 1)
    ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_xlabel("request (assistant reply) number")
    ax.set_ylabel("context tokens")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _draw_recorded(ax: Axes, timeline: Any) -> None:
    """Recorded provider usage as points, recorded compactions as dotted lines."""
    xs, ys = _recorded_points(timeline)
    if xs:
        ax.scatter(xs, ys, s=8, color=RECORDED_COLOR, zorder=3, label="recorded usage")
    for n, x in enumerate(_recorded_compactions(timeline)):
        ax.axvline(
            x, color=RECORDED_COLOR, ls=":", lw=1.0, label="recorded compaction" if n == 0 else None
        )


def _draw_events(
    ax: Axes, events: Sequence[CompactionEvent], last_request: float, annotate: bool
) -> None:
    """Each compaction as an arrow from its tokens before to after, marked and labelled."""
    seen_triggers: set[str] = set()
    for n, event in enumerate(events):
        color = TRIGGER_COLORS.get(event.trigger, "#000000")
        ax.annotate(
            "",
            xy=(event.request, event.tokens_after),
            xytext=(event.request, event.tokens_before),
            arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.4},
            zorder=4,
        )
        ax.scatter(
            [event.request],
            [event.tokens_before],
            marker="v",
            s=40,
            color=color,
            zorder=5,
            label=f"compaction: {event.trigger}" if event.trigger not in seen_triggers else None,
        )
        seen_triggers.add(event.trigger)
        if annotate:
            # Labels near the right edge go to the left of their arrow, off the legend;
            # neighbours alternate in height so close compactions stay readable.
            right = last_request > 0 and event.request > 0.85 * last_request
            ax.annotate(
                event_label(event),
                (event.request, event.tokens_before),
                xytext=(-4 if right else 4, 6 + 16 * (n % 2)),
                textcoords="offset points",
                ha="right" if right else "left",
                fontsize=7,
                color=color,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
                zorder=6,
            )


def plot_context_timeline(
    replay_result: ReplayResult,
    *,
    show_recorded: bool = True,
    show_agent_view: bool = False,
    annotate: bool = True,
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Draw the context size of every request of a replay, with its compactions.

    The context sent with each request is a step line; the model's window and the
    compaction threshold are horizontal lines; each compaction the replay fired is an arrow
    from its tokens before to its tokens after, coloured by trigger and labelled with
    trigger and method. Where the session recorded provider usage (and the replayed context
    is still the recorded one), that usage is drawn as points, so the estimate can be judged
    against it; where the recorded agent compacted, a grey dotted line marks the request.

    Args:
        replay_result: A `ReplayResult` (anything with `timeline`, `events`, `window`,
            `threshold` and `strategy` works).
        show_recorded: Draw recorded usage and recorded compactions when present.
        show_agent_view: Also draw what the agent measures (`agent_tokens`), which the
            triggers compare with the threshold.
        annotate: Label each compaction with trigger, method and token drop.
        title: Axes title (default: strategy and window).
        ax: Axes to draw on; a new figure when None.

    Returns:
        The Axes drawn on.
    """
    import matplotlib.pyplot as plt

    timeline = replay_result.timeline
    events: Sequence[CompactionEvent] = tuple(replay_result.events)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4))

    requests = [float(r) for r in timeline["request"]]
    context = [float(t) for t in timeline["context_tokens"]]
    ax.step(requests, context, where="post", color=CONTEXT_COLOR, lw=1.4, label="context sent")
    if show_agent_view and "agent_tokens" in timeline.columns:
        agent = [float(t) for t in timeline["agent_tokens"]]
        # Drawn over the context line, dashed and lighter: where the two agree, both show.
        ax.step(
            requests,
            agent,
            where="post",
            color="#6baed6",
            lw=1.0,
            ls=(0, (4, 3)),
            zorder=3,
            label="agent's view",
        )
    if show_recorded:
        _draw_recorded(ax, timeline)
    ax.axhline(
        replay_result.window,
        color=WINDOW_COLOR,
        ls="--",
        lw=1.0,
        label=f"window {replay_result.window:,}",
    )
    ax.axhline(
        replay_result.threshold,
        color=THRESHOLD_COLOR,
        ls="--",
        lw=1.0,
        alpha=0.7,
        label=f"threshold {replay_result.threshold:,}",
    )
    _draw_events(ax, events, max(requests, default=0.0), annotate)

    top = max([replay_result.window, *context, *(e.tokens_before for e in events)], default=1)
    _finish_axes(
        ax, requests, top, title or f"{replay_result.strategy} · window {replay_result.window:,}"
    )
    return ax

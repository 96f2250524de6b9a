"""`plot_context_composition`: what the context holds by kind, as stacked bars or areas.

Before/after frames (`context_composition_df`) draw one horizontal stacked bar per context
(`before`, then one per strategy); replay frames (`replay_composition_df`) draw stacked
areas along the requests. The table a figure is drawn from is a pure function of the frame
(`composition_table`), tested without matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..analysis._composition import context_composition_df, replay_composition_df
from ..replay._result import ReplayResult
from ..session._session import Session
from ..tokens._composition import COMPOSITION_KINDS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

COMPOSITION_COLORS: dict[str, str] = {
    "system/tools": "#7f7f7f",
    "user": "#1f77b4",
    "assistant text": "#2ca02c",
    "thinking": "#98df8a",
    "tool calls": "#ff7f0e",
    "tool results": "#ffbb78",
    "summaries": "#9467bd",
    "images": "#e377c2",
}
"""One colour per kind of `COMPOSITION_KINDS`."""
BEFORE_LABEL = "before"


def composition_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Tokens per kind (columns, in `COMPOSITION_KINDS` order), one row per context.

    Rows are labelled `before` and the strategy names for a before/after frame, and by
    request for a replay frame.
    """
    if "request" in frame.columns:
        index: Any = "request"
        data = frame
    else:
        data = frame.assign(
            context=[
                BEFORE_LABEL if stage == "before" else str(strategy)
                for stage, strategy in zip(frame["stage"], frame["strategy"], strict=True)
            ]
        )
        index = "context"
    table = data.pivot_table(
        index=index, columns="kind", values="tokens", aggfunc="sum", observed=False, sort=False
    )
    return table.reindex(columns=list(COMPOSITION_KINDS), fill_value=0).fillna(0).astype(int)


def _as_frame(data: Any, **options: Any) -> pd.DataFrame:
    if isinstance(data, Session):
        return context_composition_df(data, **options)
    if isinstance(data, ReplayResult):
        return replay_composition_df(data, **options)
    return cast("pd.DataFrame", data)


def _bars(ax: Axes, table: pd.DataFrame) -> None:
    labels = [str(label) for label in table.index]
    positions = list(range(len(labels)))
    left = [0] * len(labels)
    for kind in table.columns:
        widths = [int(v) for v in table[kind]]
        ax.barh(
            positions,
            widths,
            left=left,
            color=COMPOSITION_COLORS[kind],
            label=kind,
            edgecolor="white",
            linewidth=0.5,
        )
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for y, total in zip(positions, left, strict=True):
        ax.annotate(
            f"{total:,}",
            (total, y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(positions, labels)
    ax.invert_yaxis()  # `before` on top, strategies below in the order given
    ax.set_xlabel("tokens in the context")
    ax.margins(x=0.12)


def _areas(ax: Axes, table: pd.DataFrame) -> None:
    requests = [int(r) for r in table.index]
    ax.stackplot(
        requests,
        [[int(v) for v in table[kind]] for kind in table.columns],
        labels=list(table.columns),
        colors=[COMPOSITION_COLORS[kind] for kind in table.columns],
    )
    ax.set_xlabel("request")
    ax.set_ylabel("tokens in the context")


def plot_context_composition(
    data: pd.DataFrame | tuple[pd.DataFrame, Any] | Session | ReplayResult,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    **options: Any,
) -> Axes:
    """What the context holds by kind: before and after each strategy, or along a replay.

    Args:
        data: A frame from `context_composition_df` or `replay_composition_df`, or a
            `Session` / `ReplayResult` to make it from (with `options`).
        ax: Axes to draw on (default: a new figure's).
        title: Title (default: says which kind of view it is).
        **options: Passed to the frame function when `data` is not a frame (e.g.
            `strategies=`, `budget=`, `counter=`, `system_tokens=`).

    Returns:
        The Axes.
    """
    import matplotlib.pyplot as plt

    frame = _as_frame(data, **options)
    table = composition_table(frame)
    along_replay = "request" in frame.columns
    if ax is None:
        height = 4.0 if along_replay else max(2.5, 0.45 * len(table.index) + 1.6)
        _, ax = plt.subplots(figsize=(9, height), layout="constrained")
    if along_replay:
        _areas(ax, table)
    else:
        _bars(ax, table)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if title is None:
        if along_replay:
            title = "context composition along the replay"
        else:
            budgets = sorted({int(b) for b in frame["budget"]}) if len(frame) else []
            at = f" at keep-recent {budgets[0]:,} tokens" if len(budgets) == 1 else ""
            title = f"context composition before and after each strategy{at}"
    ax.set_title(title)
    return ax

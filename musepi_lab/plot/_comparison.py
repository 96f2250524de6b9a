"""Strategy comparison plots over a benchmark frame: what each strategy keeps, and its cost.

The frame is tidy: one row per (session, strategy, budget) with at least the columns
`strategy` and `budget` and the metrics plotted (`run_benchmark` and `StrategyComparer`
both make one). Rows of several sessions are averaged per (strategy, budget); a strategy
run with several parameter sets (a `params` column of JSON) is shown once per set, labelled
with its parameters; rows whose `error` column is set (failed cells) are left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..strategies._base import strategy_label as _strategy_label

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

AGGREGATIONS: tuple[str, ...] = ("mean", "median", "sum", "max", "min")
"""How rows of several sessions are combined per (strategy, budget)."""
COST_COLUMNS: tuple[str, ...] = ("replay_cost_usd", "summarizer_cost_usd", "cost_usd")
"""Cost columns `plot_cost` looks for, in order: the first with a value is drawn."""


def _require(df: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(
            f"the frame has no column(s) {missing}; it has {sorted(map(str, df.columns))}"
        )


def _check_agg(agg: str) -> None:
    if agg not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {agg!r}; expected one of {AGGREGATIONS}")


SERIES_MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Marker of the n-th series (cycled), so series that coincide stay told apart."""
SERIES_DASHES: tuple[str, ...] = ("-", "--", "-.", ":")
"""Line style of the n-th series (cycled)."""
OVERLAP_OFFSET_POINTS = 3.5
"""How far (points, on screen only) a series is nudged per earlier series it lies on."""


def series_style(n: int) -> dict[str, Any]:
    """Marker, dashes and fill of the n-th series: every other one hollow, so a series
    drawn over another still shows the one below."""
    return {
        "marker": SERIES_MARKERS[n % len(SERIES_MARKERS)],
        "linestyle": SERIES_DASHES[n % len(SERIES_DASHES)],
        "markerfacecolor": "none" if n % 2 else None,
    }


def overlap_ranks(series: Sequence[Sequence[tuple[float, float]]]) -> list[int]:
    """For each series, how many earlier series share at least one of its points (0: none).

    A series with rank k is drawn nudged by k offsets, so it cannot hide under another.
    """
    seen: list[set[tuple[float, float]]] = []
    ranks = []
    for points in series:
        spots = {(round(x, 6), round(y, 6)) for x, y in points}
        ranks.append(sum(1 for earlier in seen if earlier & spots))
        seen.append(spots)
    return ranks


def _thousands(value: float, _pos: int | None = None) -> str:
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def budget_text(budget: Any) -> str:
    try:
        value = float(budget)
    except (TypeError, ValueError):
        return str(budget)
    if value >= 1000 and value % 1000 == 0:
        return f"{int(value) // 1000}k"
    return f"{value:g}"


def params_label(name: Any, params: Any = None) -> str:
    """`name`, or `name(k=v, ...)` when the row has parameters (JSON text or a mapping)."""
    values = params
    if isinstance(params, str):
        try:
            values = json.loads(params) if params else {}
        except json.JSONDecodeError:
            return f"{name}({params})"
    return _strategy_label(str(name), values if isinstance(values, dict) else None)


def _usable(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Rows that did not fail, with a `label` column naming the strategy, and its
    parameters when the frame holds the same strategy with several parameter sets."""
    _require(df, ["strategy", "budget", *columns])
    frame = df[df["error"].isna()] if "error" in df.columns else df
    if "params" not in frame.columns:
        return frame.assign(label=[str(n) for n in frame["strategy"]])
    params = [None if p is None or p != p else str(p) for p in frame["params"]]
    variants: dict[str, set[str | None]] = {}
    for name, p in zip(frame["strategy"], params, strict=True):
        variants.setdefault(str(name), set()).add(p)
    labels = [
        params_label(n, p) if len(variants[str(n)]) > 1 else str(n)
        for n, p in zip(frame["strategy"], params, strict=True)
    ]
    return frame.assign(label=labels)


def strategy_points(
    df: pd.DataFrame, *, x: str, y: str, agg: str = "mean"
) -> dict[str, list[tuple[Any, float, float]]]:
    """`(budget, x, y)` per strategy label, budgets ascending, rows of a budget aggregated.

    Failed rows and rows where `x` or `y` is missing (nothing to score) are left out.

    Raises:
        KeyError: A needed column is missing.
        ValueError: Unknown aggregation.
    """
    import pandas as pd

    _check_agg(agg)
    frame = _usable(df, [x, y])
    values = frame[["label", "budget"]].assign(
        **{x: pd.to_numeric(frame[x], errors="coerce"), y: pd.to_numeric(frame[y], errors="coerce")}
    )
    values = values.dropna(subset=[x, y])
    grouped = values.groupby(["label", "budget"], sort=True)[[x, y]].agg(agg)
    points: dict[str, list[tuple[Any, float, float]]] = {}
    for key, row in grouped.iterrows():
        label, budget = cast(tuple[Any, Any], key)
        points.setdefault(str(label), []).append((budget, float(row[x]), float(row[y])))
    return points


def _coincident(rows: Sequence[tuple[Any, float, float]]) -> dict[tuple[float, float], list[Any]]:
    """Budgets by point, so budgets that land on the same spot share one label."""
    spots: dict[tuple[float, float], list[Any]] = {}
    for budget, px, py in rows:
        spots.setdefault((round(px, 6), round(py, 6)), []).append(budget)
    return spots


def plot_strategy_comparison(
    df: pd.DataFrame,
    *,
    x: str = "tokens_after",
    y: str = "fact_retention",
    agg: str = "mean",
    annotate: bool = True,
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Plot one metric against another per strategy, one point per budget.

    The default answers "how small does the context get, and how much does it keep?":
    tokens after the compaction on x, fact retention on y. Each strategy is one colour,
    marker and dash pattern, its budgets joined in ascending order and labelled; a
    strategy whose points fall on another's (`none` and `prune` often do) is nudged a few
    points on screen and marked so in the legend, so no series hides another.

    Args:
        df: A benchmark frame with columns `strategy`, `budget`, `x` and `y`.
        x: Column for the x axis.
        y: Column for the y axis.
        agg: How rows of several sessions combine per (strategy, budget); one of
            `AGGREGATIONS`.
        annotate: Label each point with its budget.
        title: Axes title.
        ax: Axes to draw on; a new figure when None.

    Returns:
        The Axes drawn on.

    Raises:
        KeyError: A needed column is missing.
        ValueError: Unknown aggregation.
    """
    import matplotlib.pyplot as plt
    from matplotlib.transforms import offset_copy

    points = strategy_points(df, x=x, y=y, agg=agg)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    ranks = overlap_ranks([[(px, py) for _, px, py in rows] for rows in points.values()])
    for n, (strategy, rows) in enumerate(points.items()):
        xs = [px for _, px, _ in rows]
        ys = [py for _, _, py in rows]
        # A series on top of another is nudged on screen (the data stay exact) and says so.
        shift = ranks[n] * OVERLAP_OFFSET_POINTS
        transform = offset_copy(
            ax.transData, fig=cast(Any, ax.figure), x=shift, y=-shift, units="points"
        )
        (line,) = ax.plot(
            xs,
            ys,
            lw=1.2,
            markersize=6,
            label=strategy + (" (nudged: overlaps)" if ranks[n] else ""),
            transform=transform,
            zorder=2 + n,
            **series_style(n),
        )
        if annotate:
            for (px, py), budgets in _coincident(rows).items():
                ax.annotate(
                    "/".join(budget_text(b) for b in budgets),
                    (px, py),
                    xytext=(4 + shift, 3 - shift - 9 * ranks[n]),
                    textcoords="offset points",
                    fontsize=8,
                    color=line.get_color(),
                )
    _fit_limits(ax, [(px, py) for rows in points.values() for _, px, py in rows], x, y)
    _label_axes(ax, x=x, y=y, agg=agg, title=title)
    return ax


def _fit_limits(ax: Axes, spots: Sequence[tuple[float, float]], x: str, y: str) -> None:
    """Limits from the data (the nudged transforms keep the lines out of them), or a note
    when no cell has both figures (no facts planted, nothing compacted), not a blank."""
    if spots:
        ax.update_datalim(spots)
        ax.autoscale_view()
        return
    note = f"no cell has both {x.replace('_', ' ')} and {y.replace('_', ' ')}"
    ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", color="#555")


def _legend(ax: Axes, **options: Any) -> None:
    """A legend when something on the axes has a label (matplotlib warns otherwise)."""
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(**options)


def _label_axes(ax: Axes, *, x: str, y: str, agg: str, title: str | None) -> None:
    """Axis labels (with the aggregation), thousands on token axes, 0–1 for retention."""
    from matplotlib.ticker import FuncFormatter

    if x.startswith("tokens") or x.endswith("_tokens"):
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_xlabel(x.replace("_", " ") + ("" if agg == "mean" else f" ({agg})"))
    ax.set_ylabel(y.replace("_", " ") + ("" if agg == "mean" else f" ({agg})"))
    if y in ("fact_retention",) or y.endswith("_retention"):
        ax.set_ylim(-0.03, 1.05)
    ax.set_title(title or f"{y.replace('_', ' ')} vs {x.replace('_', ' ')} (labels: budget)")
    _legend(ax, loc="best", fontsize=8, frameon=False)
    ax.grid(True, alpha=0.3)


def cost_column(df: pd.DataFrame) -> str:
    """The cost column of a frame: the first of `COST_COLUMNS` holding a value (a replay
    benchmark's `replay_cost_usd`, else the summarizer's cost).

    Raises:
        KeyError: The frame has none of them.
    """
    present = [c for c in COST_COLUMNS if c in df.columns]
    if not present:
        raise KeyError(f"the frame has no cost column (one of {COST_COLUMNS}); pass y=")
    return next((c for c in present if df[c].notna().any()), present[0])


def has_cost_interval(df: pd.DataFrame) -> bool:
    """Whether a frame carries replay cost intervals (`replay_cost_expected`, `_low`,
    `_high`, from `ReplayResult.cost_interval`)."""
    columns = ("replay_cost_expected", "replay_cost_low", "replay_cost_high")
    return all(c in df.columns for c in columns) and bool(df[columns[0]].notna().any())


def cost_table(df: pd.DataFrame, *, y: str | None = None, agg: str = "mean") -> pd.DataFrame:
    """Cost per strategy label (rows) and budget (columns), rows of several sessions
    aggregated; failed rows are left out.

    Raises:
        KeyError: A needed column is missing.
        ValueError: Unknown aggregation.
    """
    import pandas as pd

    _check_agg(agg)
    y = y or cost_column(df)
    frame = _usable(df, [y])
    frame = frame.assign(**{y: pd.to_numeric(frame[y], errors="coerce")})
    return frame.pivot_table(
        index="label", columns="budget", values=y, aggfunc=cast(Any, agg), sort=True
    )


def plot_cost(
    df: pd.DataFrame,
    *,
    y: str | None = None,
    agg: str = "mean",
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Bar chart of cost per strategy, one bar per budget. A replay frame with cost
    intervals draws, by default, the expected bill (`replay_cost_expected`) with the mean
    of its cells' 90% prediction intervals as error bars (the model's uncertainty).

    Args:
        df: A benchmark frame with columns `strategy`, `budget` and `y`.
        y: The cost column (USD); default: `cost_column(df)`.
        agg: How rows of several sessions combine per (strategy, budget); one of
            `AGGREGATIONS` (`sum` gives the cost of the whole dataset).
        title: Axes title.
        ax: Axes to draw on; a new figure when None.

    Returns:
        The Axes drawn on.

    Raises:
        KeyError: A needed column is missing.
        ValueError: Unknown aggregation.
    """
    import matplotlib.pyplot as plt

    interval = y is None and agg == "mean" and has_cost_interval(df)
    y = ("replay_cost_expected" if interval else None) or y or cost_column(df)
    table = cost_table(df, y=y, agg=agg)
    ends = [cost_table(df, y=f"replay_cost_{e}", agg=agg) for e in ("low", "high") if interval]
    if ax is None:
        _, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(table.index) + 2), 4))
    budgets = list(table.columns)
    width = 0.8 / max(1, len(budgets))
    for k, budget in enumerate(budgets):
        positions = [i + (k - (len(budgets) - 1) / 2) * width for i in range(len(table.index))]
        heights = [0.0 if v != v else float(v) for v in table[budget]]  # NaN: no such cell
        ax.bar(positions, heights, width=width, label=budget_text(budget))
        if interval:
            low, high = (e.reindex(index=table.index)[budget].fillna(0.0) for e in ends)
            spans = [
                [max(0.0, h - lo) for h, lo in zip(heights, low, strict=True)],
                [max(0.0, hi - h) for h, hi in zip(heights, high, strict=True)],
            ]
            ax.errorbar(positions, heights, yerr=spans, fmt="none", ecolor="black", capsize=3)
    ax.set_xticks(range(len(table.index)))
    ax.set_xticklabels([str(s) for s in table.index], rotation=20, ha="right", fontsize=8)
    total = float(table.fillna(0).to_numpy().sum()) if table.size else 0.0
    if total == 0:
        # Model-free strategies cost nothing: say so rather than draw an empty axis.
        ax.text(0.5, 0.5, "every cost is zero", transform=ax.transAxes, ha="center")
        ax.set_ylim(0, 1)
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{y.replace('_', ' ')} ({agg})" + (", 90% interval" if interval else ""))
    ax.set_title(title or y.replace("_", " "))
    _legend(ax, title="budget", fontsize=8, title_fontsize=8, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def has_cost(df: pd.DataFrame, y: str | None = None) -> bool:
    """Whether any usable cell of a frame cost something (in `y`, default `cost_column`)."""
    import pandas as pd

    try:
        column = y or cost_column(df)
    except KeyError:
        return False
    if column not in df.columns:
        return False
    values = pd.to_numeric(_usable(df, [column])[column], errors="coerce")
    return bool((values.fillna(0) > 0).any())


def plot_comparison(
    df: pd.DataFrame,
    *,
    x: str = "tokens_after",
    y: str = "fact_retention",
    cost: str | None = None,
    fig: Figure | None = None,
) -> Figure:
    """The strategy comparison, with the cost per strategy beside it when any cell cost
    something; a run of model-free strategies (every cost zero) gets the whole width.

    Args:
        df: A benchmark frame (`run_benchmark`, `StrategyComparer.frame`).
        x: Column for the comparison's x axis.
        y: Column for its y axis.
        cost: The cost column (default: `cost_column(df)`).
        fig: The figure to draw in (default: a new pyplot figure, shown in a notebook).

    Returns:
        The figure drawn in.
    """
    import matplotlib.pyplot as plt

    with_cost = has_cost(df, cost)
    if fig is None:
        fig = plt.figure(figsize=(13 if with_cost else 9, 4.5), layout="constrained")
    if with_cost:
        left, right = fig.subplots(1, 2, width_ratios=(3, 2))
        plot_strategy_comparison(df, x=x, y=y, ax=left)
        plot_cost(df, y=cost, ax=right)
    else:
        plot_strategy_comparison(df, x=x, y=y, ax=fig.subplots())
    return fig

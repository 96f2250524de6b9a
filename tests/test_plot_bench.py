"""plot_benchmark: the summary's means where defined, intervals as error bars, every series
visible (own marker, nudged when it lies on another), budgets as the x ticks."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from musepi_lab.plot._bench import benchmark_series, plot_benchmark


def _row(session, strategy, budget, retention, compacted=True):
    return {
        "session_id": session,
        "strategy": strategy,
        "label": strategy,
        "params": "{}",
        "mode": "compact",
        "budget": budget,
        "compacted": compacted,
        "facts": 2,
        "fact_retention": retention,
        "error": None,
    }


# `none` and `prune` keep everything at both budgets: the same points.
FRAME = pd.DataFrame(
    [
        _row("s1", "none", 2000, 1.0, compacted=False),
        _row("s2", "none", 2000, 1.0, compacted=False),
        _row("s1", "none", 8000, 1.0, compacted=False),
        _row("s2", "none", 8000, 1.0, compacted=False),
        _row("s1", "prune", 2000, 1.0),
        _row("s2", "prune", 2000, 1.0),
        _row("s1", "prune", 8000, 1.0),
        _row("s2", "prune", 8000, 1.0),
        _row("s1", "truncate", 2000, 0.0),
        _row("s2", "truncate", 2000, 0.5),
        _row("s1", "truncate", 8000, 0.5),
        _row("s2", "truncate", 8000, None),
    ]
)


def test_series_are_the_means_where_defined():
    series = benchmark_series(FRAME, "fact_retention")
    assert [(b, m) for b, m, _, _ in series["truncate"]] == [(2000, 0.25), (8000, 0.5)]
    # One session at 8000: no interval.
    assert series["truncate"][1][2:] == (None, None)
    low, high = series["truncate"][0][2:]
    assert low is not None and high is not None and 0.0 <= low <= 0.25 <= high <= 0.5


def test_every_series_is_visible_and_budgets_are_ticks():
    ax = plot_benchmark(FRAME, "fact_retention")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["none", "prune (nudged: overlaps)", "truncate"]
    markers = {container.lines[0].get_marker() for container in ax.containers}
    assert len(markers) == 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2k", "8k"]
    # Every point is inside the view (nudged artists do not feed autoscaling by themselves).
    low, high = ax.get_ylim()
    assert low < 0.0 and high > 1.0
    assert list(ax.get_xticks()) == pytest.approx([2000, 8000])

"""plot_strategy_comparison and plot_cost: the points and bars are the frame's means."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from musepi_lab.plot._comparison import (
    cost_column,
    cost_table,
    params_label,
    plot_cost,
    plot_strategy_comparison,
    strategy_points,
)

# Two sessions × two strategies × two budgets; the numbers are chosen so means are exact.
ROWS = [
    # session, strategy, budget, tokens_after, fact_retention, summarizer_cost_usd
    ("s1", "truncate", 2000, 1000, 0.25, 0.0),
    ("s2", "truncate", 2000, 3000, 0.75, 0.0),
    ("s1", "truncate", 8000, 7000, 0.50, 0.0),
    ("s2", "truncate", 8000, 9000, 1.00, 0.0),
    ("s1", "llm-summary", 2000, 2500, 0.80, 0.02),
    ("s2", "llm-summary", 2000, 3500, 0.90, 0.04),
    ("s1", "llm-summary", 8000, 8500, 0.95, 0.01),
    ("s2", "llm-summary", 8000, 9500, 0.85, 0.03),
]


def frame(rows=ROWS, **extra_columns) -> pd.DataFrame:
    df = pd.DataFrame(
        rows,
        columns=[
            "session_id",
            "strategy",
            "budget",
            "tokens_after",
            "fact_retention",
            "summarizer_cost_usd",
        ],
    )
    for name, values in extra_columns.items():
        df[name] = values
    return df


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _lines(ax) -> dict[str, tuple[list[float], list[float]]]:
    return {
        line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.get_lines()
    }


def test_one_line_per_strategy_through_budget_means():
    ax = plot_strategy_comparison(frame())
    lines = _lines(ax)
    assert set(lines) == {"truncate", "llm-summary"}
    # Means over the two sessions, budgets ascending (2000 then 8000).
    assert lines["truncate"] == ([2000.0, 8000.0], [0.5, 0.75])
    assert lines["llm-summary"] == ([3000.0, 9000.0], pytest.approx([0.85, 0.90]))
    assert ax.get_xlabel() == "tokens after"
    assert ax.get_ylabel() == "fact retention"
    # Every point is in view (the nudged lines do not feed autoscaling by themselves).
    left, right = ax.get_xlim()
    assert left <= 2000 and right >= 9000


def test_points_are_labelled_with_their_budget():
    ax = plot_strategy_comparison(frame())
    assert sorted(t.get_text() for t in ax.texts) == ["2k", "2k", "8k", "8k"]


def test_budgets_landing_on_the_same_point_share_one_label():
    rows = [("s1", "none", b, 5000, 1.0, 0.0) for b in (2000, 4000, 8000)]
    ax = plot_strategy_comparison(frame(rows))
    assert [t.get_text() for t in ax.texts] == ["2k/4k/8k"]


def test_other_axes_and_aggregations():
    ax = plot_strategy_comparison(frame(), x="budget", y="tokens_after", agg="max")
    lines = _lines(ax)
    assert lines["truncate"] == ([2000.0, 8000.0], [3000.0, 9000.0])
    assert ax.get_ylabel() == "tokens after (max)"


def test_failed_rows_and_unscored_rows_are_left_out():
    rows = [*ROWS, ("s3", "truncate", 2000, 100, None, 0.0)]
    errors = [None] * len(ROWS) + [None]
    df = frame(rows, error=errors)
    df.loc[0, "error"] = "RuntimeError: boom"  # s1/truncate/2000 failed
    points = strategy_points(df, x="tokens_after", y="fact_retention")
    # Only s2 is left at truncate/2000: s1 failed, s3 had nothing to score.
    assert points["truncate"][0] == (2000, 3000.0, 0.75)


def test_parameter_sets_are_separate_lines():
    rows = [
        ("s1", "observation-masking", 2000, 1000, 0.5, 0.0),
        ("s1", "observation-masking", 2000, 2000, 0.7, 0.0),
    ]
    params = [json.dumps({"keep_turns": 1}), json.dumps({"keep_turns": 3})]
    ax = plot_strategy_comparison(frame(rows, params=params))
    assert set(_lines(ax)) == {
        "observation-masking(keep_turns=1)",
        "observation-masking(keep_turns=3)",
    }


def test_parameters_are_named_only_when_they_tell_lines_apart():
    params = [json.dumps({"keep_turns": 10})] * len(ROWS)
    ax = plot_strategy_comparison(frame(params=params))
    assert set(_lines(ax)) == {"truncate", "llm-summary"}


def test_params_label():
    assert params_label("truncate") == "truncate"
    assert params_label("truncate", "{}") == "truncate"
    assert params_label("mask", {"keep_turns": 2}) == "mask(keep_turns=2)"
    assert params_label("mask", '{"keep_turns": 2, "x": "y"}') == "mask(keep_turns=2, x='y')"


def test_missing_column_and_bad_aggregation_are_clear_errors():
    with pytest.raises(KeyError, match="fact_retention"):
        plot_strategy_comparison(frame().drop(columns=["fact_retention"]))
    with pytest.raises(ValueError, match="aggregation"):
        plot_strategy_comparison(frame(), agg="mode")


def _bars(ax) -> list[tuple[str, float]]:
    out = []
    for container in ax.containers:
        for patch in container.patches:
            assert isinstance(patch, Rectangle)
            out.append((container.get_label(), patch.get_height()))
    return out


def test_cost_bars_are_mean_cost_per_strategy_and_budget():
    ax = plot_cost(frame())
    bars = _bars(ax)
    # Strategies sorted: llm-summary, truncate; one bar container per budget.
    assert [label for label, _ in bars] == ["2k", "2k", "8k", "8k"]
    assert [h for _, h in bars] == pytest.approx([0.03, 0.0, 0.02, 0.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["llm-summary", "truncate"]


def test_cost_sum_gives_the_dataset_total():
    table = cost_table(frame(), agg="sum")
    assert table.loc["llm-summary", 2000] == pytest.approx(0.06)
    assert table.loc["llm-summary", 8000] == pytest.approx(0.04)


def test_cost_column_prefers_a_replay_cost_with_values():
    df = frame(replay_cost_usd=[None] * len(ROWS))
    assert cost_column(df) == "summarizer_cost_usd"
    df["replay_cost_usd"] = [1.0] * len(ROWS)
    assert cost_column(df) == "replay_cost_usd"
    with pytest.raises(KeyError, match="cost"):
        cost_column(frame().drop(columns=["summarizer_cost_usd"]))


def test_all_zero_cost_says_so():
    ax = plot_cost(frame([r for r in ROWS if r[1] == "truncate"]))
    assert [t.get_text() for t in ax.texts] == ["every cost is zero"]


def test_a_series_on_top_of_another_stays_visible():
    # prune and none land on the very same points: the second is nudged and marked.
    rows = [
        (s, name, b, 5000, 1.0, 0.0)
        for s in ("s1", "s2")
        for name in ("none", "prune")
        for b in (2000, 8000)
    ]
    ax = plot_strategy_comparison(frame(rows))
    ax.figure.canvas.draw()
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"none", "prune (nudged: overlaps)"}
    first, second = lines["none"], lines["prune (nudged: overlaps)"]
    assert first.get_marker() != second.get_marker()
    assert first.get_linestyle() != second.get_linestyle()
    # Same data, different place on screen.
    assert list(first.get_xdata()) == list(second.get_xdata())
    a = first.get_transform().transform((5000, 1.0))
    b = second.get_transform().transform((5000, 1.0))
    assert abs(a[0] - b[0]) >= 3 and abs(a[1] - b[1]) >= 3


def test_budget_labels_name_every_point_of_every_series():
    ax = plot_strategy_comparison(frame())
    labels = [t.get_text() for t in ax.texts]
    budgets = sorted({r[2] for r in ROWS})
    strategies = {r[1] for r in ROWS}
    assert len(labels) == len(budgets) * len(strategies)


def test_replay_cost_bars_carry_the_prediction_interval():
    # Expected bills and interval ends per cell; the bar is the mean expected bill, the
    # error bar runs from the mean low end to the mean high end (both sessions).
    df = frame(
        replay_cost_usd=[1.0] * len(ROWS),
        replay_cost_expected=[1.0, 3.0, 2.0, 2.0, 4.0, 6.0, 5.0, 5.0],
        replay_cost_low=[0.5, 2.5, 1.0, 1.0, 3.0, 5.0, 4.0, 4.0],
        replay_cost_high=[2.0, 4.0, 3.0, 5.0, 6.0, 8.0, 7.0, 9.0],
    )
    ax = plot_cost(df)
    heights = [p.get_height() for c in ax.containers if hasattr(c, "patches") for p in c.patches]
    # llm-summary 2k, 2k truncate... one container per budget: [llm@2k, trunc@2k], [llm@8k, trunc@8k]
    assert heights == pytest.approx([5.0, 2.0, 5.0, 2.0])
    segments = [
        seg
        for coll in ax.collections
        for seg in coll.get_segments()  # the error bars
    ]
    spans = sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segments)
    assert spans == sorted([(4.0, 7.0), (1.5, 3.0), (4.0, 8.0), (1.0, 4.0)])
    assert "90% interval" in ax.get_ylabel()
    plt.close(ax.figure)

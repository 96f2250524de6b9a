"""Honest aggregates (issue 10 item 6): counts per strategy and budget, means only over the
cells where a metric is defined, bootstrap intervals across sessions. Every expected value
is worked out by hand from the small frame below."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from musepi_lab.bench import summary_table, table_markdown
from musepi_lab.bench._aggregate import bootstrap_ci


def _cell(session, strategy, budget, *, compacted, reduction, facts, retention, error=None):
    return {
        "session_id": session,
        "strategy": strategy,
        "label": strategy,
        "params": "{}",
        "mode": "compact",
        "budget": budget,
        "compacted": compacted,
        "token_reduction": reduction,
        "facts": facts,
        "fact_retention": retention,
        "error": error,
    }


FRAME = pd.DataFrame(
    [
        # truncate @ 1000: three sessions; s3 did not compact and carried no facts.
        _cell("s1", "truncate", 1000, compacted=True, reduction=0.8, facts=4, retention=0.25),
        _cell("s2", "truncate", 1000, compacted=True, reduction=0.6, facts=2, retention=0.5),
        _cell("s3", "truncate", 1000, compacted=False, reduction=0.0, facts=0, retention=None),
        # truncate @ 4000: one failure, one cell that compacted.
        _cell("s1", "truncate", 4000, compacted=True, reduction=0.5, facts=4, retention=1.0),
        _cell(
            "s2",
            "truncate",
            4000,
            compacted=None,
            reduction=None,
            facts=None,
            retention=None,
            error="boom",
        ),
        # none @ 1000: never compacts; retention is defined (facts present) and 1.
        _cell("s1", "none", 1000, compacted=False, reduction=0.0, facts=4, retention=1.0),
        _cell("s2", "none", 1000, compacted=False, reduction=0.0, facts=2, retention=1.0),
    ]
)


def test_counts_and_means_only_where_defined():
    table = summary_table(FRAME, ["token_reduction", "fact_retention"], resamples=200)
    t1 = table.loc[("truncate", 1000)]
    assert (t1["cells"], t1["errors"], t1["compacted"], t1["with_facts"]) == (3, 0, 2, 2)
    # Reduction over the two compacted cells only: (0.8 + 0.6) / 2, not (0.8 + 0.6 + 0) / 3.
    assert t1["token_reduction"] == pytest.approx(0.7)
    assert t1["token_reduction_n"] == 2
    # Retention over the two cells with facts: (0.25 + 0.5) / 2.
    assert t1["fact_retention"] == pytest.approx(0.375)
    assert t1["fact_retention_n"] == 2

    t4 = table.loc[("truncate", 4000)]
    assert (t4["cells"], t4["errors"], t4["compacted"], t4["with_facts"]) == (2, 1, 1, 1)
    assert t4["token_reduction"] == pytest.approx(0.5)
    # One session: no interval.
    assert pd.isna(t4["token_reduction_ci_low"]) and pd.isna(t4["token_reduction_ci_high"])

    none = table.loc[("none", 1000)]
    assert (none["cells"], none["compacted"], none["with_facts"]) == (2, 0, 2)
    assert none["token_reduction_n"] == 0 and pd.isna(none["token_reduction"])
    assert none["fact_retention"] == 1.0
    # Every resample of two sessions at 1.0 has mean 1.0.
    assert none["fact_retention_ci_low"] == none["fact_retention_ci_high"] == 1.0


def test_bootstrap_interval_of_two_values():
    # Resampling two sessions [0, 1] gives means 0, 0.5, 1 with chances 1/4, 1/2, 1/4, so
    # the 2.5% and 97.5% quantiles of many resamples are 0 and 1.
    assert bootstrap_ci([0.0, 1.0], resamples=4000, seed=1) == (0.0, 1.0)
    # Equal values: no spread.
    assert bootstrap_ci([0.3, 0.3, 0.3]) == pytest.approx((0.3, 0.3))
    assert bootstrap_ci([0.5]) is None


def test_bootstrap_is_seeded_and_inside_the_range():
    values = np.array([0.1, 0.4, 0.35, 0.9, 0.2])
    first = bootstrap_ci(values, seed=7)
    assert first == bootstrap_ci(values, seed=7)
    assert first is not None and 0.1 <= first[0] <= values.mean() <= first[1] <= 0.9


def test_markdown_shows_counts_and_intervals():
    table = summary_table(FRAME, ["token_reduction", "fact_retention"], resamples=200)
    markdown = table_markdown(table)
    assert "| strategy | budget | cells | errors | compacted | with facts |" in markdown
    assert "| none | 1,000 | 2 | 0 | 0 | 2 | n=0 | 1.000 [1.000, 1.000] n=2 |" in markdown


# -- the replay model's uncertainty of a cost difference (issue 23) ------------------------
COST_METRICS = ("replay_cost_expected", "replay_cost_low", "replay_cost_high")


def _replay_cell(session, strategy, draws, expected=None):
    return {
        **_cell(session, strategy, 64000, compacted=True, reduction=0.5, facts=0, retention=None),
        "mode": "replay",
        "compactions": 1,
        "replay_cost_usd": min(draws),
        "replay_cost_expected": float(np.mean(draws)) if expected is None else expected,
        "replay_cost_low": min(draws),
        "replay_cost_high": max(draws),
        "replay_cost_draws": json.dumps(draws),
    }


def test_cost_difference_is_paired_draw_by_draw():
    # Two sessions, four draws each. `cheap` is 1.0 below `none` in every draw of s1 and
    # 0.5 below in s2, while each strategy's own draws spread over 10: paired, the mean
    # difference is -0.75 in every draw, so the interval is [-0.75, -0.75] (outside 0);
    # `same` differs from `none` by +1, -1, +1, -1 (s1) and 0 (s2): means +0.5, -0.5, ...,
    # an interval around 0.
    base1, base2 = [10.0, 20.0, 15.0, 12.0], [5.0, 7.0, 6.0, 9.0]
    frame = pd.DataFrame(
        [
            _replay_cell("s1", "none", base1),
            _replay_cell("s2", "none", base2),
            _replay_cell("s1", "cheap", [b - 1.0 for b in base1]),
            _replay_cell("s2", "cheap", [b - 0.5 for b in base2]),
            _replay_cell("s1", "same", [b + d for b, d in zip(base1, [1, -1, 1, -1], strict=True)]),
            _replay_cell("s2", "same", base2),
        ]
    )
    table = summary_table(frame, COST_METRICS)
    cheap = table.loc[("cheap", 64000)]
    assert cheap["cost_baseline"] == "none"
    assert cheap["cost_difference"] == pytest.approx(-0.75)
    assert (cheap["cost_difference_low"], cheap["cost_difference_high"]) == pytest.approx(
        (-0.75, -0.75)
    )
    assert not cheap["cost_difference_within_uncertainty"]
    same = table.loc[("same", 64000)]
    assert same["cost_difference"] == pytest.approx(0.0)
    assert same["cost_difference_low"] < 0 < same["cost_difference_high"]
    assert same["cost_difference_within_uncertainty"]
    assert table.loc[("none", 64000), "cost_difference"] == 0.0
    # The unpaired intervals of `cheap` and `none` overlap widely, which is why the
    # difference is taken draw by draw.
    assert (
        table.loc[("cheap", 64000), "replay_cost_high_ci_high"]
        > table.loc[("none", 64000), "replay_cost_low_ci_low"]
    )
    text = table_markdown(table)
    assert "cost vs none [90%]" in text and "(within uncertainty)" in text
    assert "-0.7500 [-0.7500, -0.7500]" in text


def test_cost_difference_against_a_chosen_baseline_and_without_draws():
    frame = pd.DataFrame([_replay_cell("s1", "a", [1.0, 2.0]), _replay_cell("s1", "b", [3.0, 5.0])])
    table = summary_table(frame, COST_METRICS, baseline="b")
    assert table.loc[("a", 64000), "cost_difference"] == pytest.approx(-2.5)
    assert table.loc[("a", 64000), "cost_baseline"] == "b"
    # Compact frames carry no draws, hence no difference columns.
    assert "cost_difference" not in summary_table(FRAME, ("token_reduction",)).columns

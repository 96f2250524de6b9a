"""`plot_probe_scores`: grouped bars per strategy and kind, from a constructed cell table."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from musepi_lab.plot import plot_probe_scores
from musepi_lab.plot._probes import probe_score_matrix


def cells() -> pd.DataFrame:
    rows = [
        ("none", 2000, 1.0, 1.0, 0.5, 0.8, None),
        ("none", 2000, 1.0, 0.5, 0.3, 0.6, None),
        ("truncate", 2000, 0.0, 0.5, math.nan, 0.2, None),
        ("truncate", 8000, 0.5, 0.5, 0.5, 0.5, None),
        ("llm-summary", 2000, math.nan, math.nan, math.nan, math.nan, "StrategyUnavailable"),
    ]
    columns = [
        "label",
        "budget",
        *(f"score_{k}" for k in ("recall", "artifact", "continuation", "decision")),
        "error",
    ]
    return pd.DataFrame(rows, columns=columns)


def test_matrix_means_over_sessions_per_budget_without_failed_cells() -> None:
    matrix = probe_score_matrix(cells(), budget=2000)
    assert list(matrix.index) == ["none", "truncate"]
    assert matrix.loc["none", "artifact"] == pytest.approx(0.75)
    assert math.isnan(matrix.loc["truncate", "continuation"])  # never asked, not zero
    assert probe_score_matrix(cells()).loc["truncate", "recall"] == pytest.approx(0.25)


def test_plot_draws_one_bar_per_strategy_and_kind() -> None:
    ax = plot_probe_scores(cells(), budget=2000)
    assert len(ax.patches) == 2 * 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "truncate"]
    assert "budget 2000" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "recall",
        "artifact",
        "continuation",
        "decision",
    ]

"""What the comparison figures and text tables look like to a reader (issue 29, item 9):
no panel that only says "every cost is zero", no legend warning, text tables that fit a
terminal or a notebook cell, and no internal tracker numbers in the notebooks.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from musepi_lab.bench import run_benchmark, summary_table, table_text
from musepi_lab.bench._summary import TEXT_WIDTH
from musepi_lab.plot import plot_comparison, plot_cost, plot_strategy_comparison
from musepi_lab.widgets._comparer import StrategyComparer

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
SMALL = SAMPLE / "sample-0004.jsonl"
MODEL_FREE = ["none", "truncate", "observation-masking", "prune", "extractive", "snapcompact"]


@pytest.fixture(scope="module")
def compact_frame() -> pd.DataFrame:
    return run_benchmark(
        [SMALL],
        ["none", "truncate", "extractive"],
        [4000, 16000],
        executor="serial",
        progress=False,
    )


@pytest.fixture(scope="module")
def replay_frame() -> pd.DataFrame:
    return run_benchmark(
        [SMALL], MODEL_FREE, [24000, 64000], executor="serial", progress=False, mode="replay"
    )


# -- the comparison figure -----------------------------------------------------------------
def test_model_free_comparison_gets_the_whole_figure(compact_frame):
    assert (compact_frame["summarizer_cost_usd"].fillna(0) == 0).all()  # model-free: no cost
    fig = plot_comparison(compact_frame)
    try:
        assert len(fig.axes) == 1
        assert not any("every cost is zero" in t.get_text() for t in fig.axes[0].texts)
    finally:
        plt.close(fig)


def test_a_cost_brings_its_panel_back(compact_frame):
    costly = compact_frame.assign(summarizer_cost_usd=0.01)
    fig = plot_comparison(costly)
    try:
        assert len(fig.axes) == 2
        bars = [p.get_height() for p in fig.axes[1].patches]
        assert bars and max(bars) == pytest.approx(0.01)
    finally:
        plt.close(fig)


def test_the_strategy_comparer_drops_the_empty_cost_panel():
    from musepi_lab.formats._registry import read_session

    comparer = StrategyComparer(
        read_session(SMALL), strategies=["none", "truncate"], budgets=[4000, 16000]
    )
    comparer.run()
    assert comparer.figure_axes == 1


def test_no_legend_warning_when_nothing_can_be_plotted(compact_frame):
    nothing = compact_frame.assign(fact_retention=float("nan"))
    fig, (left, right) = plt.subplots(1, 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "No artists with labels found" would raise
            plot_strategy_comparison(nothing, ax=left)
            plot_cost(nothing.iloc[0:0], y="summarizer_cost_usd", ax=right)
        assert left.get_legend() is None
        assert any("no cell has both" in t.get_text() for t in left.texts)
    finally:
        plt.close(fig)


# -- text tables ------------------------------------------------------------------------------
def header_cells(table: pd.DataFrame) -> list[str]:
    metrics = [c for c in table.columns if f"{c}_n" in table.columns]
    return ["strategy", "budget", *metrics]


@pytest.mark.parametrize("frame_name", ["compact_frame", "replay_frame"])
def test_text_tables_fit_the_width_and_keep_every_column(frame_name, request):
    frame = request.getfixturevalue(frame_name)
    table = summary_table(frame)
    text = table_text(table)
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= TEXT_WIDTH <= 120, max(widths)
    blocks = text.split("\n\n")
    for block in blocks:
        lines = block.splitlines()
        assert lines[0].startswith("strategy") and "budget" in lines[0]
        assert len(lines) == 2 + len(table)  # header, rule, a row per (strategy, budget)
    headers = " ".join(block.splitlines()[0] for block in blocks)
    for name in header_cells(table):
        assert name in headers, name
    if frame_name == "replay_frame":
        # One line holding every column would be more than twice the width.
        assert sum(len(h) + 2 for h in headers.split()) > 2 * TEXT_WIDTH


def test_a_row_keeps_its_values_across_blocks(replay_frame):
    table = summary_table(replay_frame)
    text = table_text(table)
    label, budget = table.index[0]
    rows = [
        line
        for line in text.splitlines()
        if line.startswith(str(label)) and f"{int(budget):,}" in line.split()[1]
    ]
    assert len(rows) == len(text.split("\n\n"))  # the row appears once in every block
    value = f"{table.iloc[0]['compactions']:.3f}"
    assert any(value in row for row in rows)


# -- notebooks -------------------------------------------------------------------------------
def test_notebooks_cite_no_internal_tracker_number():
    pattern = re.compile(r"\b(issues?|tracker|ticket) #?\d+", re.IGNORECASE)
    for path in sorted((REPO / "notebooks").glob("*.py")):
        prose = [
            line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")
        ]
        found = [line for line in prose if pattern.search(line)]
        assert not found, (path.name, found)

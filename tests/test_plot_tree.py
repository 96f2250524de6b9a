"""`plot_tree` draws what the layout says: nodes, regions of a cut, compaction links."""

from __future__ import annotations

from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

import musepi_lab as ml  # noqa: E402
from musepi_lab.plot import plot_tree, tree_layout  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"


def test_nodes_regions_and_links():
    session = ml.read_session(SAMPLE)
    prep = ml.prepare_compaction(session)
    fig, ax = plt.subplots()
    out = plot_tree(session, cut=prep, ax=ax, collapse=None)
    assert out is ax
    layout = tree_layout(session, collapse=None)
    drawn = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert drawn == len(layout.nodes)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"summarized", "kept"} <= set(legend)
    assert ("turn prefix" in legend) == bool(prep.turn_prefix_entry_ids)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    compactions = sum(1 for e in session.entries if e.type == "compaction")
    assert len(arrows) == compactions
    plt.close(fig)


def test_new_figure_when_no_axes_and_zoom():
    session = ml.read_session(SAMPLE)
    ax = plot_tree(session, path_range=(0, 40))
    assert ax.figure is not None
    assert ax.get_xlim()[1] <= 41
    plt.close(ax.figure)

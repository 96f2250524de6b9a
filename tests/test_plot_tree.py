"""`plot_tree` draws what the layout says, in a bounded, readable, unclipped figure."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from _corpus import CORPUS, needs_corpus  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402
from PIL import Image  # noqa: E402

import musepi_lab as ml  # noqa: E402
from musepi_lab.datasets._generator import GeneratorConfig, generate_session  # noqa: E402
from musepi_lab.plot import plot_tree  # noqa: E402
from musepi_lab.plot._layout import tree_layout  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"
BOUND = (1600, 900)  # the bound at the default dpi


@pytest.fixture(scope="module")
def big_session():
    session, _ = generate_session(GeneratorConfig(seed=11, tasks=820))
    assert len(session.entries) >= 9500
    return session


def png_size(fig) -> tuple[int, int]:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")  # plain savefig: no bbox_inches
    return Image.open(io.BytesIO(buffer.getvalue())).size


def visible_texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]


def test_nodes_regions_and_links():
    session = ml.read_session(SAMPLE)
    prep = ml.prepare_compaction(session)
    fig, ax = plt.subplots()
    out = plot_tree(session, cut=prep, ax=ax, collapse=None)
    assert out is ax
    layout = tree_layout(session)
    drawn = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert drawn == len(layout.nodes)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"summarized", "kept"} <= set(legend)
    assert ("turn prefix" in legend) == bool(prep.turn_prefix_entry_ids)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    compactions = sum(1 for e in session.entries if e.type == "compaction")
    # Each branch summary whose `fromId` names an entry gets an arc to it as well.
    summaries = sum(
        1 for e in session.entries if e.type == "branch_summary" and e.get("fromId") in session
    )
    assert [p.get_gid() for p in arrows].count("first-kept") == compactions
    assert [p.get_gid() for p in arrows].count("from-id") == summaries
    assert len(arrows) == compactions + summaries
    plt.close(fig)


def test_ten_thousand_entries_stay_within_the_pixel_bound(big_session):
    ax = plot_tree(big_session)
    width, height = png_size(ax.figure)
    assert width <= BOUND[0] and height <= BOUND[1]
    # Collapsed runs carry the length: a ×N label for N > 1.
    runs = [t.get_text() for t in ax.texts if t.get_text().startswith("×")]
    assert runs and all(int(r[1:]) > 1 for r in runs)
    plt.close(ax.figure)


def test_run_labels_never_overlap(big_session):
    for session in (big_session, ml.read_session(SAMPLE)):
        ax = plot_tree(session)
        fig = ax.figure
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_visible()]
        assert sum(t.get_text().startswith("×") for t in labels) >= 10
        boxes = [t.get_window_extent(renderer) for t in labels]
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), (a, b)
        plt.close(fig)


def test_text_is_at_least_8_px_at_notebook_width(big_session):
    ax = plot_tree(big_session)
    fig = ax.figure
    width_px = fig.get_figwidth() * fig.dpi
    texts = visible_texts(fig)
    assert len(texts) > 20  # title, ticks, legend, run labels
    for text in texts:
        shown_px = text.get_fontsize() * fig.dpi / 72 * (900 / width_px)
        assert shown_px >= 8, (text.get_text(), shown_px)
    plt.close(fig)


def test_nothing_is_clipped_by_a_plain_savefig():
    session = ml.read_session(SAMPLE)
    ax = plot_tree(session, cut=ml.prepare_compaction(session))
    fig = ax.figure
    png_size(fig)  # draws with the final layout
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for text in visible_texts(fig):
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0, text.get_text()
        assert box.x1 <= width and box.y1 <= height, text.get_text()
    plt.close(fig)


def test_zoom_shows_only_the_range_of_the_active_path(big_session):
    path = big_session.path()
    ax = plot_tree(big_session, start=200, end=260)
    ticks = [int(t.get_text()) for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and min(ticks) >= 200 and max(ticks) < 260
    assert "200–259" in ax.get_title()
    plt.close(ax.figure)
    by_id = plot_tree(big_session, start=path[200].id, end=path[259].id)
    assert [t.get_text() for t in by_id.get_xticklabels()] == [str(t) for t in ticks]
    plt.close(by_id.figure)


def test_path_range_still_zooms():
    session = ml.read_session(SAMPLE)
    ax = plot_tree(session, path_range=(0, 40))
    assert ax.get_xlim()[1] <= 41
    plt.close(ax.figure)


def test_token_scale_on_the_bars():
    session = ml.read_session(SAMPLE)
    counter = ml.TokenCounter()
    ax = plot_tree(session, counter=counter, collapse=None)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "active path" and labels[-1].endswith(" tok (active)")
    # The scale tops out at most at the largest active-path entry's tokens, counted here.
    largest = max(counter.count_entry(e) for e in session.path())
    top = labels[-1].removesuffix(" tok (active)")
    value = float(top[:-1]) * 1000 if top.endswith("k") else float(top)
    assert largest / 2 <= value <= largest
    plt.close(ax.figure)


@needs_corpus
def test_largest_claude_code_session_is_bounded_with_real_branches_only():
    files = sorted((CORPUS / "claude-code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    session = ml.read_session(files[-1])
    message_ids = {e.id for e in session.entries if e.type != "custom"}
    # Real forks, counted here: messages whose nearest message ancestor is shared.
    by_id = session.by_id
    hosts = []
    for entry in session.entries:
        if entry.id not in message_ids:
            continue
        up = by_id.get(entry.parent_id)
        while up is not None and up.id not in message_ids:
            up = by_id.get(up.parent_id)
        hosts.append(up.id if up is not None else None)
    forks = sum(1 for h in set(hosts) if h is not None and hosts.count(h) > 1)
    ax = plot_tree(session)
    lanes = [t.get_text() for t in ax.get_yticklabels() if "branch" in t.get_text()]
    assert len(lanes) <= forks
    width, height = png_size(ax.figure)
    assert width <= BOUND[0] and height <= BOUND[1]
    plt.close(ax.figure)

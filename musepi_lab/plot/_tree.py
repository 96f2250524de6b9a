"""`plot_tree`: the entry tree of a session, with compactions and a proposed cut point."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..session._session import Session
from ..tokens import TokenCounter
from ._layout import TreeLayout, tree_layout

if TYPE_CHECKING:
    from matplotlib.axes import Axes

KIND_COLORS: dict[str, str] = {
    "user": "#1f77b4",
    "assistant": "#ff7f0e",
    "toolResult": "#2ca02c",
    "bashExecution": "#17becf",
    "custom": "#9467bd",
    "compaction": "#d62728",
    "branch_summary": "#e377c2",
    "meta": "#b0b0b0",
    "run": "#7f7f7f",
}
REGION_COLORS: dict[str, str] = {
    "summarized": "#fdd49e",
    "turn prefix": "#dadaeb",
    "kept": "#c7e9c0",
}
AUTO_COLLAPSE_ABOVE = 300
"""Sessions with more entries than this collapse linear runs by default."""


def _cut_regions(cut: Any) -> dict[str, Collection[str]]:
    """Entry ids of each region of a `CompactionPreparation` (duck-typed)."""
    if cut is None:
        return {}
    return {
        "summarized": tuple(getattr(cut, "summarize_entry_ids", ()) or ()),
        "turn prefix": tuple(getattr(cut, "turn_prefix_entry_ids", ()) or ()),
        "kept": tuple(getattr(cut, "kept_entry_ids", ()) or ()),
    }


def plot_tree(
    session: Session,
    *,
    cut: Any = None,
    leaf_id: str | None = None,
    counter: TokenCounter | None = None,
    collapse: int | str | None = "auto",
    path_range: tuple[int, int] | None = None,
    show_labels: bool = True,
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Draw the entry tree of a session.

    Nodes are coloured by type and role and sized by tokens; the active path is drawn bold;
    branches fan out below it; labels are shown; each compaction is linked to its first
    kept entry; a proposed cut (a `CompactionPreparation`) shades the summarized,
    turn-prefix and kept regions. A strip of token bars under the tree makes the size of
    every node readable.

    Args:
        session: The session to draw.
        cut: A `CompactionPreparation` to show, or None.
        leaf_id: The leaf whose path is active (default: the session leaf).
        counter: Token counter for sizes (default: MusePi's estimator).
        collapse: Collapse linear runs of at least this many entries; `"auto"` collapses
            runs of 12 when the session has more than `AUTO_COLLAPSE_ABOVE` entries;
            None never collapses.
        path_range: Zoom to entries whose depth is in `[start, stop)`.
        show_labels: Annotate labelled entries.
        title: Axes title (default: session id and size).
        ax: Axes to draw on; a new figure sized to the tree when None.

    Returns:
        The Axes drawn on.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch

    counter = counter or TokenCounter()
    if collapse == "auto":
        collapse = 12 if len(session.entries) > AUTO_COLLAPSE_ABOVE else None
    regions = _cut_regions(cut)
    pinned = {i for ids in regions.values() for i in ids[:1]} | {
        i for ids in regions.values() for i in ids[-1:]
    }
    if cut is not None and getattr(cut, "first_kept_entry_id", None):
        pinned.add(cut.first_kept_entry_id)
    layout = tree_layout(
        session,
        leaf_id=leaf_id,
        tokens=counter.count_entry,
        collapse=collapse if isinstance(collapse, int) else None,
        pinned=pinned,
        path_range=path_range,
    )
    if ax is None:
        width = min(40.0, max(8.0, layout.width * 0.09))
        height = 2.4 + 0.7 * max(1, layout.lanes)
        _, ax = plt.subplots(figsize=(width, height))
    _draw(ax, layout, regions, show_labels)

    handles = [
        Line2D([], [], marker="o", linestyle="", color=KIND_COLORS[k], label=k)
        for k in KIND_COLORS
        if any(n.kind == k for n in layout.nodes)
    ]
    handles += [Patch(color=REGION_COLORS[r], label=r) for r, ids in regions.items() if ids]
    if layout.links:
        handles.append(
            FancyArrowPatch((0, 0), (1, 1), color=KIND_COLORS["compaction"], label="first kept")
        )
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
    )
    ax.set_title(title or f"{session.id} · {len(session.entries)} entries", fontsize=10)
    return ax


def _draw(
    ax: Axes, layout: TreeLayout, regions: dict[str, Collection[str]], show_labels: bool
) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.patches import FancyArrowPatch

    by_key = layout.by_key
    lanes = max(1, layout.lanes)
    bar_base = lanes + 0.35  # token bars live under the lowest lane
    for name, ids in regions.items():
        span = layout.x_span(ids) if ids else None
        if span is not None:
            ax.axvspan(*span, color=REGION_COLORS[name], alpha=0.6, zorder=0, lw=0)

    # Edges as two line collections (active path bold, the rest thin): one artist each.
    segments: dict[bool, list[list[tuple[float, float]]]] = {True: [], False: []}
    for parent, child in layout.edges:
        a, b = by_key[parent], by_key[child]
        corner = [(a.x, a.y), (a.x, b.y), (b.x, b.y)] if a.y != b.y else [(a.x, a.y), (b.x, b.y)]
        segments[a.on_path and b.on_path].append(corner)
    for bold, segs in segments.items():
        if segs:
            ax.add_collection(
                LineCollection(
                    segs,
                    colors="black" if bold else "#999999",
                    linewidths=2.0 if bold else 0.8,
                    zorder=1,
                )
            )

    max_tokens = max((n.tokens for n in layout.nodes), default=1) or 1
    xs = [n.x for n in layout.nodes]
    ys = [n.y for n in layout.nodes]
    sizes = [12 + 220 * math.sqrt(n.tokens / max_tokens) for n in layout.nodes]
    colors = [KIND_COLORS.get(n.kind, "#333333") for n in layout.nodes]
    edgecolors = ["black" if n.on_path else "none" for n in layout.nodes]
    markers_square = [n.kind in ("compaction", "branch_summary") for n in layout.nodes]
    for square in (False, True):
        sel = [i for i, s in enumerate(markers_square) if s == square]
        if sel:
            ax.scatter(
                [xs[i] for i in sel],
                [ys[i] for i in sel],
                s=[sizes[i] * (2.2 if square else 1) for i in sel],
                c=[colors[i] for i in sel],
                edgecolors=[edgecolors[i] for i in sel],
                marker="D" if square else "o",
                linewidths=0.6,
                zorder=3,
            )
    # Token bars, one per node, rising from a baseline (the y axis is inverted).
    ax.bar(
        xs,
        [-0.9 * n.tokens / max_tokens for n in layout.nodes],
        bottom=bar_base + 0.9,
        width=0.8,
        color=colors,
        zorder=2,
        lw=0,
    )
    for node in layout.nodes:
        if node.kind == "run":
            ax.annotate(
                f"×{len(node.entry_ids)}",
                (node.x, node.y),
                xytext=(0, -11),
                textcoords="offset points",
                ha="center",
                fontsize=6,
                color="#555555",
            )
        if show_labels and node.label:
            ax.annotate(
                node.label,
                (node.x, node.y),
                xytext=(0, 9),
                textcoords="offset points",
                ha="center",
                fontsize=7,
                bbox={"boxstyle": "round,pad=0.2", "fc": "#ffffcc", "lw": 0.4},
            )
    for comp, kept in layout.links:
        a, b = by_key[comp], by_key[kept]
        ax.add_patch(
            FancyArrowPatch(
                (a.x, a.y - 0.08),
                (b.x, b.y - 0.08),
                connectionstyle="arc3,rad=0.35",
                arrowstyle="-|>",
                mutation_scale=8,
                color=KIND_COLORS["compaction"],
                lw=1.0,
                zorder=2,
            )
        )
    ax.set_xlim(-1, max(layout.width, 1))
    ax.set_ylim(bar_base + 1.0, -0.8)
    ax.set_yticks([*list(range(lanes)), bar_base + 0.45])
    ax.set_yticklabels(
        ["active path" if i == 0 else f"branch {i}" for i in range(lanes)] + ["tokens"], fontsize=8
    )
    ax.set_xlabel("position along branch (collapsed runs count once)", fontsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

"""`plot_tree`: the entry tree of a session, with compactions and a proposed cut point.

The figure is bounded whatever the session (`TREE_WIDTH` × at most `TREE_MAX_HEIGHT`
inches, 1200 × 900 px at matplotlib's default 100 dpi): the layout folds metadata, keeps
real branches only and cuts long runs to the columns the axes can show. Text is never
smaller than `readable_fontsize` of the figure width, so it stays at least 8 px when a
notebook shows the figure 900 px wide.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..session._session import Session
from ..tokens import TokenCounter
from ._layout import FoldedTree, TreeLayout, TreeNode, tree_layout
from ._runs import place_labels
from ._tree_options import TreeOptions

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

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
TREE_WIDTH = 12.0
"""Width of a new tree figure, inches (1200 px at 100 dpi)."""
TREE_MAX_HEIGHT = 9.0
"""Most height of a new tree figure, inches (900 px at 100 dpi)."""
NOTEBOOK_WIDTH_PX = 900
"""Width a notebook output shows a figure at, for the readability rule."""
MIN_TEXT_PX = 8.0
"""Smallest text height on screen at `NOTEBOOK_WIDTH_PX`."""
COLUMN_POINTS = 7.0
"""Width of one column when the column budget is derived from the axes width."""
_SQUARE = {"compaction": "D", "branch_summary": "D", "run": "s"}


def readable_fontsize(figure_width_inches: float) -> float:
    """The smallest font size (points) whose text is `MIN_TEXT_PX` high when the figure is
    shown `NOTEBOOK_WIDTH_PX` wide: pt · dpi/72 · 900/(width · dpi) ≥ 8, whatever the dpi."""
    needed = MIN_TEXT_PX * 72 * figure_width_inches / NOTEBOOK_WIDTH_PX
    return max(8.0, math.ceil(needed * 10) / 10)


def _cut_regions(cut: Any) -> dict[str, Collection[str]]:
    """Entry ids of each region of a `CompactionPreparation` (duck-typed)."""
    if cut is None:
        return {}
    return {
        "summarized": tuple(getattr(cut, "summarize_entry_ids", ()) or ()),
        "turn prefix": tuple(getattr(cut, "turn_prefix_entry_ids", ()) or ()),
        "kept": tuple(getattr(cut, "kept_entry_ids", ()) or ()),
    }


def _pins(cut: Any, regions: dict[str, Collection[str]]) -> set[str]:
    """Region boundaries, kept as their own nodes so the shading starts where it should."""
    pins = {i for ids in regions.values() for i in (*tuple(ids)[:1], *tuple(ids)[-1:])}
    if cut is not None and getattr(cut, "first_kept_entry_id", None):
        pins.add(cut.first_kept_entry_id)
    return pins


def _thousands(value: float) -> str:
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def _figure(ax: Axes) -> Figure:
    """The figure an Axes is drawn in (the root figure, not a subfigure)."""
    return ax.get_figure(root=True)  # type: ignore[return-value]


def _axes_width_points(ax: Axes) -> float:
    return ax.get_position().width * _figure(ax).get_figwidth() * 72


def plot_tree(
    session: Session,
    *,
    cut: Any = None,
    ax: Axes | None = None,
    folded: FoldedTree | None = None,
    layout: TreeLayout | None = None,
    options: TreeOptions | None = None,
    **keywords: Any,
) -> Axes:
    """Draw the entry tree of a session, bounded in size at any session length.

    Nodes are coloured by type and role and sized by tokens; metadata (model changes,
    progress lines, labels) is folded into the message it belongs to; the active path is
    lane 0, drawn bold; real branches take lanes below it; long runs collapse into grey
    squares labelled `×N` (N messages); labels are shown; each compaction is linked to its
    first kept entry; a proposed cut (a `CompactionPreparation`) shades the summarized,
    turn-prefix and kept regions. Token bars under the tree, with a scale, give the size of
    every node of the active path; the x axis gives active-path indices, for `start`/`end`.

    Args:
        session: The session to draw.
        cut: A `CompactionPreparation` to show, or None.
        ax: Axes to draw on; a new, size-bounded figure when None.
        folded: `fold_tree(session)`, when the caller keeps it between redraws.
        layout: A layout already made (kept by a view); the layout options are ignored.
        options: A `TreeOptions` (default: every option at its default).
        **keywords: Any option of `TreeOptions` by name (`leaf_id=`, `counter=`,
            `start=`, `end=`, `collapse=`, `max_columns=`, `max_lanes=`, `path_range=`,
            `show_labels=`, `title=`), replacing the one in `options`.

    Returns:
        The Axes drawn on.

    Raises:
        KeyError: `start` or `end` is an id not on the active path.
        TypeError: A keyword that is not an option.
    """
    import matplotlib.pyplot as plt

    opts = TreeOptions.given(options, keywords, "plot_tree")
    own = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=(TREE_WIDTH, 4.0), layout="constrained")
    if layout is None:
        layout = _layout(
            session, opts, cut, _budget(ax, own, opts.collapse, opts.max_columns), folded
        )
    if own:
        _figure(ax).set_size_inches(*tree_figure_size(layout))
    title = opts.title or _default_title(session, layout, opts.leaf_id)
    _render(ax, layout, cut, title, opts.show_labels)
    if own:
        # The layout is done (the declutter pass made it): keep it, so saving or showing
        # the figure does not lay it out again.
        _figure(ax).set_layout_engine("none")
    return ax


def _layout(
    session: Session,
    opts: TreeOptions,
    cut: Any,
    max_columns: int | None,
    folded: FoldedTree | None,
) -> TreeLayout:
    """The layout `opts` asks for, the cut's region boundaries kept as their own nodes."""
    counter = opts.counter or TokenCounter()
    return tree_layout(
        session,
        leaf_id=opts.leaf_id,
        tokens=counter.count_entry,
        collapse=opts.collapse if isinstance(opts.collapse, int) else None,
        pinned=_pins(cut, _cut_regions(cut)),
        start=opts.start,
        end=opts.end,
        path_range=opts.path_range,
        max_columns=max_columns,
        max_lanes=opts.max_lanes,
        folded=folded,
    )


def _render(ax: Axes, layout: TreeLayout, cut: Any, title: str, show_labels: bool) -> None:
    """Draw a layout with its cut and title, then hide the labels that would overlap."""
    fontsize = readable_fontsize(_figure(ax).get_figwidth())
    texts = _draw(ax, layout, show_labels, fontsize)
    shade_cut(ax, layout, cut)
    ax.set_title(title, fontsize=fontsize + 1.5)
    _declutter(ax, texts)


def tree_figure_size(layout: TreeLayout) -> tuple[float, float]:
    """Inches of a new tree figure: `TREE_WIDTH` wide, as tall as its lanes need, bounded."""
    lanes = max(1, layout.lanes)
    return TREE_WIDTH, min(TREE_MAX_HEIGHT, max(3.6, 2.4 + 0.3 * lanes))


def tree_columns(width_points: float) -> int:
    """The column budget of axes this wide (points)."""
    return max(10, int(width_points / COLUMN_POINTS))


def _budget(ax: Axes, own: bool, collapse: Any, max_columns: Any) -> int | None:
    if collapse is None:
        return None
    if max_columns == "auto":
        # The legend and tick labels take about 2.8 inches of a new figure.
        return tree_columns((TREE_WIDTH - 2.8) * 72 if own else _axes_width_points(ax))
    return None if max_columns is None else int(max_columns)


def shade_cut(ax: Axes, layout: TreeLayout, cut: Any) -> None:
    """Shade the regions of a cut (replacing any shaded before) and update the legend.

    A view moving the cut calls this on a tree already drawn: the nodes stay, only the
    shading and the legend change. A region boundary inside a run is drawn where it falls
    in the run (`TreeLayout.x_span`).
    """
    for artist in [p for p in ax.patches if p.get_gid() == "cut-region"]:
        artist.remove()
    regions = _cut_regions(cut)
    for name, ids in regions.items():
        span = layout.x_span(ids) if ids else None
        if span is not None:
            patch = ax.axvspan(*span, color=REGION_COLORS[name], alpha=0.6, zorder=0, lw=0)
            patch.set_gid("cut-region")
    _legend(ax, layout, regions, readable_fontsize(_figure(ax).get_figwidth()))


def _default_title(session: Session, layout: TreeLayout, leaf_id: str | None) -> str:
    total = len(session.path(leaf_id))
    lo, hi = layout.path_range
    zoom = f" · active path {lo}–{hi - 1} of {total}" if (lo, hi) != (0, total) else ""
    return f"{session.id} · {len(session.entries):,} entries as {len(layout.nodes):,} nodes{zoom}"


def _legend(
    ax: Axes, layout: TreeLayout, regions: dict[str, Collection[str]], fontsize: float
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    kinds = {n.kind for n in layout.nodes}
    handles: list[Any] = [
        Line2D(
            [],
            [],
            marker=_SQUARE.get(k, "o"),
            linestyle="",
            color=KIND_COLORS[k],
            label="run (×N messages)" if k == "run" else k,
        )
        for k in KIND_COLORS
        if k in kinds
    ]
    handles += [Patch(color=REGION_COLORS[r], label=r) for r, ids in regions.items() if ids]
    if layout.links:
        handles.append(
            Line2D([], [], color=KIND_COLORS["compaction"], marker=">", label="→ first kept")
        )
    if layout.from_links:
        handles.append(
            Line2D(
                [], [], color=KIND_COLORS["branch_summary"], marker=">", label="→ summarized from"
            )
        )
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=fontsize,
        frameon=False,
    )


def _marker_sizes(ax: Axes, layout: TreeLayout) -> dict[str, float]:
    """Marker diameter (points) per node: by tokens, never wider than a column."""
    column = _axes_width_points(ax) / max(layout.width + 1, 2)
    big = min(14.0, max(3.0, 0.85 * column))
    top = max((n.tokens for n in layout.nodes), default=1) or 1
    return {n.key: big * (0.45 + 0.55 * math.sqrt(n.tokens / top)) for n in layout.nodes}


def _draw(
    ax: Axes, layout: TreeLayout, show_labels: bool, fontsize: float
) -> list[tuple[Annotation, float]]:
    """Draw edges, nodes, bars and links; return the labels to declutter, each with the
    shift (points) of its second position."""
    lanes = max(1, layout.lanes)
    bar_top, bar_height = lanes - 0.2, max(1.6, 0.35 * lanes)
    _draw_edges(ax, layout)
    sizes = _marker_sizes(ax, layout)
    for marker in ("o", "s", "D"):
        group = [n for n in layout.nodes if _SQUARE.get(n.kind, "o") == marker]
        if group:
            ax.scatter(
                [n.x for n in group],
                [n.y for n in group],
                s=[sizes[n.key] ** 2 for n in group],
                c=[KIND_COLORS.get(n.kind, "#333333") for n in group],
                edgecolors=["black" if n.on_path else "none" for n in group],
                marker=marker,
                linewidths=0.5,
                zorder=3,
            )
    _draw_bars(ax, layout, bar_top, bar_height, fontsize)
    _draw_links(ax, layout)
    texts = _node_texts(ax, layout, sizes, show_labels, fontsize)
    ax.set_xlim(-1, max(layout.width, 1))
    ax.set_ylim(bar_top + bar_height + 0.1, -0.75)
    _x_ticks(ax, layout, fontsize)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return texts


def _draw_edges(ax: Axes, layout: TreeLayout) -> None:
    from matplotlib.collections import LineCollection

    by_key = layout.by_key
    # Two line collections (active path bold, the rest thin): one artist each.
    segments: dict[bool, list[list[tuple[float, float]]]] = {True: [], False: []}
    corner: list[tuple[float, float]]
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
                    linewidths=1.6 if bold else 0.8,
                    zorder=1,
                )
            )


def _draw_bars(ax: Axes, layout: TreeLayout, top: float, height: float, fontsize: float) -> None:
    """Token bars of the active path's nodes, under the lowest lane, with a token scale."""
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import MaxNLocator

    # Bars for the active path only: branch nodes share its columns and would overlap.
    nodes = [n for n in layout.nodes if n.on_path] or list(layout.nodes)
    most = max((n.tokens for n in nodes), default=0) or 1
    base = top + height
    # One collection rather than a patch per bar: a tenth of the drawing time.
    bars = [
        [(n.x - 0.4, base), (n.x - 0.4, y), (n.x + 0.4, y), (n.x + 0.4, base)]
        for n in nodes
        if (y := base - height * n.tokens / most) != base
    ]
    colors = [KIND_COLORS.get(n.kind, "#333333") for n in nodes if n.tokens]
    ax.add_collection(
        PolyCollection(bars, facecolors=colors, linewidths=0, zorder=2, gid="token-bars")
    )
    ax.axhline(base, color="#cccccc", lw=0.6, zorder=1)
    steps = [v for v in MaxNLocator(nbins=3, steps=[1, 2, 5, 10]).tick_values(0, most) if v <= most]
    lanes = max(1, layout.lanes)
    ticks = [float(y) for y in range(lanes)] + [base - height * v / most for v in steps]
    names = ["active path" if i == 0 else f"branch {i}" for i in range(lanes)]
    values = [_thousands(v) for v in steps]
    if values:
        values[-1] += " tokens" if layout.lanes <= 1 else " tok (active)"
    ax.set_yticks(ticks, names + values, fontsize=fontsize)


def _draw_links(ax: Axes, layout: TreeLayout) -> None:
    """Arcs from each compaction to its first kept entry, and from each branch summary to
    the abandoned leaf it summarizes (`fromId`)."""
    from matplotlib.patches import FancyArrowPatch

    by_key = layout.by_key
    arcs = [(pair, "compaction", "first-kept") for pair in layout.links]
    arcs += [(pair, "branch_summary", "from-id") for pair in layout.from_links]
    for (start, end), kind, gid in arcs:
        a, b = by_key[start], by_key[end]
        ax.add_patch(
            FancyArrowPatch(
                (a.x, a.y - 0.08),
                (b.x, b.y - 0.08),
                connectionstyle="arc3,rad=0.3",
                arrowstyle="-|>",
                mutation_scale=8,
                color=KIND_COLORS[kind],
                lw=1.0,
                zorder=2,
                gid=gid,
            )
        )


def _x_ticks(ax: Axes, layout: TreeLayout, fontsize: float) -> None:
    """Ticks at active-path columns, labelled with the path index they start at."""
    on_path = sorted(
        (n for n in layout.nodes if n.y == 0 and n.path_index is not None), key=lambda n: n.x
    )
    step = max(1, math.ceil(len(on_path) / 10))
    chosen = on_path[::step]
    ax.set_xticks([n.x for n in chosen], [str(n.path_index) for n in chosen], fontsize=fontsize)
    ax.set_xlabel("active-path index of the entry each column starts at", fontsize=fontsize)


def _node_texts(
    ax: Axes,
    layout: TreeLayout,
    sizes: dict[str, float],
    show_labels: bool,
    fontsize: float,
) -> list[tuple[Annotation, float]]:
    """Entry labels above their node, then `×N` and hidden-branch notes below, in order of
    importance (the declutter pass keeps the first of overlapping ones)."""
    out: list[tuple[Annotation, float]] = []

    def note(node: TreeNode, text: str, above: bool, **style: Any) -> None:
        gap = sizes[node.key] / 2 + 1
        annotation = ax.annotate(
            text,
            (node.x, node.y),
            xytext=(0, gap if above else -gap),
            textcoords="offset points",
            ha="center",
            va="bottom" if above else "top",
            fontsize=fontsize,
            annotation_clip=True,
            **style,
        )
        annotation.set_in_layout(False)  # layout must not move when labels are hidden
        out.append((annotation, fontsize * 1.25 * (1 if above else -1)))

    if show_labels:
        for node in layout.nodes:
            if node.label:
                note(
                    node,
                    node.label,
                    True,
                    bbox={"boxstyle": "round,pad=0.2", "fc": "#ffffcc", "lw": 0.4},
                )
    for node in layout.nodes:
        if node.hidden_branches:
            note(node, f"+{node.hidden_branches} br.", False, color="#a33")
    runs = sorted((n for n in layout.nodes if n.kind == "run"), key=lambda n: (-n.messages, n.x))
    for node in runs:
        note(node, f"×{node.messages}", False, color="#444444")
    return out


def _declutter(ax: Axes, texts: list[tuple[Annotation, float]]) -> None:
    """Hide labels that would overlap one already placed, after trying a second height.

    Measured with the figure's own renderer after its layout is done, so what is kept is
    exactly what does not overlap when drawn.
    """
    if not texts:
        return
    figure = _figure(ax)
    engine = figure.get_layout_engine()
    if engine is not None:
        engine.execute(figure)  # positions are final only after the layout
    renderer = figure._get_renderer()  # type: ignore[attr-defined]  # the canvas's own (Agg)
    scale = figure.dpi / 72
    axes_box = ax.get_window_extent(renderer)
    options: list[list[tuple[tuple[float, float, float, float], float]]] = []
    for annotation, shift in texts:
        box = annotation.get_window_extent(renderer)
        moved = shift * scale
        options.append(
            [
                ((box.x0, box.y0 + dy, box.x1, box.y1 + dy), offset)
                for dy, offset in ((0.0, 0.0), (moved, shift))
                # Labels stay inside the axes, so nothing is clipped on save.
                if box.x0 >= axes_box.x0
                and box.x1 <= axes_box.x1
                and box.y0 + dy >= axes_box.y0
                and box.y1 + dy <= axes_box.y1
            ]
        )
    picks = place_labels([[b for b, _ in o] for o in options], pad=2.0)
    for (annotation, _), option, pick in zip(texts, options, picks, strict=True):
        if pick is None:
            annotation.set_visible(False)
        elif option[pick][1]:
            x, y = annotation.xyann
            annotation.xyann = (x, y + option[pick][1])

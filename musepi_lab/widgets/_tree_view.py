"""The entry tree with a cut on it, drawn for a view and kept between redraws.

`CutPointExplorer`, `SessionExplorer` and the live view draw the same picture
(`plot.plot_tree` over a `plot.tree_layout`, the cut shaded by `plot.shade_cut`). Laying a
long session out is the slow part, so a `TreeDrawing` keeps the folded tree, the layouts
(per leaf, counter and zoom) and the last figure: moving a cut re-shades that figure, and
only a new leaf, counter, zoom or session lays the tree out again.
"""

from __future__ import annotations

from typing import Any

from ..session._session import Session
from ..tokens._counter import TokenCounter

LAYOUTS_KEPT = 16
"""Layouts a drawing keeps (the oldest goes first)."""


class TreeDrawing:
    """The tree figure of one session, with its caches.

    Args:
        session: The session drawn (a new session needs a new drawing).
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._folded: Any = None
        self._layouts: dict[tuple[Any, ...], Any] = {}
        self._key: tuple[Any, ...] | None = None
        self._tree: tuple[Any, Any, Any] | None = None  # figure, axes, layout

    def png(
        self,
        *,
        leaf_id: str | None,
        counter: TokenCounter,
        cut: Any = None,
        start: int | None = None,
        end: int | None = None,
    ) -> bytes:
        """The tree of `leaf_id`'s path (zoomed to `start`–`end`) with `cut` shaded, as PNG."""
        from ..plot._tree import shade_cut
        from ._figures import figure_png

        figure, ax, layout = self._figure(leaf_id, counter, start, end)
        shade_cut(ax, layout, cut)
        return figure_png(figure, tight=False)

    def _figure(
        self, leaf_id: str | None, counter: TokenCounter, start: int | None, end: int | None
    ) -> tuple[Any, Any, Any]:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from ..plot._layout import fold_tree, tree_layout
        from ..plot._tree import TREE_WIDTH, plot_tree, tree_columns, tree_figure_size

        key = (leaf_id, counter.method, start, end)
        if self._tree is not None and key == self._key:
            return self._tree
        if self._folded is None:
            self._folded = fold_tree(self.session)
        layout = self._layouts.get(key)
        if layout is None:
            layout = tree_layout(
                self.session,
                leaf_id=leaf_id,
                tokens=counter.count_entry,
                start=start,
                end=end,
                max_columns=tree_columns((TREE_WIDTH - 2.8) * 72),
                folded=self._folded,
            )
            if len(self._layouts) >= LAYOUTS_KEPT:
                self._layouts.pop(next(iter(self._layouts)))
            self._layouts[key] = layout
        figure = Figure(figsize=tree_figure_size(layout), layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        plot_tree(self.session, leaf_id=leaf_id, counter=counter, layout=layout, ax=ax)
        figure.set_layout_engine("none")  # laid out once; each cut only re-renders
        self._tree, self._key = (figure, ax, layout), key
        return self._tree

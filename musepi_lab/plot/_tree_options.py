"""`TreeOptions`: what `plot_tree` draws of a session's tree, as one frozen value."""

from __future__ import annotations

import dataclasses

from .._options import Options
from ..tokens import TokenCounter


@dataclasses.dataclass(frozen=True)
class TreeOptions(Options):
    """The options of `plot_tree` (each one also a keyword of it).

    Attributes:
        leaf_id: The leaf whose path is active (default: the session leaf).
        counter: Token counter for sizes (default: MusePi's estimator).
        start: Zoom: first active-path entry shown, an index or an entry id.
        end: Zoom: end of the range, an index (exclusive, as a slice) or an id (included).
        path_range: `(start, end)` indices (older spelling).
        collapse: `"auto"`: collapse only as far as the columns need; an int: runs of at
            least this many ordinary entries always collapse; None: draw every node.
        max_columns: Column budget; `"auto"` derives it from the axes width.
        max_lanes: Most branch lanes; further branches fold into their fork.
        show_labels: Annotate labelled entries.
        title: Axes title (default: session id, size and range).
    """

    leaf_id: str | None = None
    counter: TokenCounter | None = None
    start: int | str | None = None
    end: int | str | None = None
    path_range: tuple[int, int] | None = None
    collapse: int | str | None = "auto"
    max_columns: int | str | None = "auto"
    max_lanes: int = 24
    show_labels: bool = True
    title: str | None = None

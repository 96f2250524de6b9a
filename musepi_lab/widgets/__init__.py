"""Widgets (ipywidgets): views over sessions, cut points and strategy comparisons.

Each widget is a `VBox` whose controls are child widgets and whose current state is
readable from Python (`.session`, `.selected_entry`, `.preparation`, `.results`).
"""

from ._comparer import StrategyComparer
from ._cut import CutPointExplorer
from ._explorer import SessionExplorer
from ._live import LiveFeed

__all__ = ["CutPointExplorer", "LiveFeed", "SessionExplorer", "StrategyComparer"]

"""Compaction strategies, their registry, and the summarizer seam they call models through.

`available()` lists the registered names, `get(name, **params)` makes a strategy value,
`compact(session, name, ...)` runs one and returns a `CompactionResult`. Importing this
package imports every built-in strategy module below, and each registers itself.
"""

# Each built-in strategy registers itself when its module is imported (the classes are
# reached through `get(name)`; their modules are the private `_x` files below).
from . import (  # noqa: F401
    _extractive,
    _hybrid,
    _keep_user,
    _llm_summary,
    _masking,
    _none,
    _oversized_output,
    _prune,
    _recorded,
    _remote,
    _summarize_every_n,
    _truncate,
    snapcompact,
)
from ._base import (
    CompactionContext,
    Strategy,
    StrategyUnavailable,
    available,
    compact,
    get,
    register,
)
from ._handoff import HandoffOptions, HandoffResult, handoff

__all__ = [
    "CompactionContext",
    "HandoffOptions",
    "HandoffResult",
    "Strategy",
    "StrategyUnavailable",
    "available",
    "compact",
    "get",
    "handoff",
    "register",
]

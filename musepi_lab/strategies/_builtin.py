"""Imports every built-in strategy module, which registers it (see `_base.register`)."""

from . import (  # noqa: F401
    _extractive,
    _handoff,
    _hybrid,
    _llm_summary,
    _masking,
    _none,
    _prune,
    _remote,
    _truncate,
    snapcompact,
)

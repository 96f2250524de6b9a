"""Imports every built-in strategy module, which registers it (see `_base.register`)."""

from . import (  # noqa: F401
    _extractive,
    _handoff,
    _hybrid,
    _keep_user,
    _llm_summary,
    _masking,
    _none,
    _oversized_output,
    _prune,
    _remote,
    _summarize_every_n,
    _truncate,
    snapcompact,
)

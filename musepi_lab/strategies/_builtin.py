"""Imports every built-in strategy module, which registers it (see `_base.register`)."""

from . import (  # noqa: F401
    _extractive,
    _hybrid,
    _masking,
    _none,
    _prune,
    _snapcompact,
    _truncate,
)

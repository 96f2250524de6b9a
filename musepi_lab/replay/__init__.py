"""Replay: a recorded session walked forward under a window, compactions where triggers fire."""

from ..metrics._metrics import DEFAULT_PRICES
from ._replay import TRIGGERS, CompactionEvent, CompactionFailure, ReplayResult, replay

__all__ = [
    "DEFAULT_PRICES",
    "TRIGGERS",
    "CompactionEvent",
    "CompactionFailure",
    "ReplayResult",
    "replay",
]

"""Replay: a recorded session walked forward under a window, compactions where triggers fire,
each request billed under its provider's prompt-cache model and checked against the bill."""

from ..metrics._prices import DEFAULT_PRICES, MODEL_PRICES, prices_for
from ._cache import CACHE_MODELS
from ._calibration import calibration_rows, calibration_summary
from ._replay import TRIGGERS, CompactionEvent, CompactionFailure, ReplayResult, replay
from ._triggers import TRIGGER_SOURCES

__all__ = [
    "CACHE_MODELS",
    "DEFAULT_PRICES",
    "MODEL_PRICES",
    "TRIGGERS",
    "TRIGGER_SOURCES",
    "CompactionEvent",
    "CompactionFailure",
    "ReplayResult",
    "calibration_rows",
    "calibration_summary",
    "prices_for",
    "replay",
]

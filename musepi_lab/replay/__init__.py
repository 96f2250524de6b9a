"""Replay: a recorded session walked forward under a window, compactions where triggers fire."""

from ._replay import DEFAULT_PRICES, TRIGGERS, CompactionEvent, ReplayResult, replay

__all__ = ["DEFAULT_PRICES", "TRIGGERS", "CompactionEvent", "ReplayResult", "replay"]

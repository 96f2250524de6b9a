"""Replay: a recorded session walked forward under a window, compactions where triggers fire,
each request billed under its provider's prompt-cache model and checked against the bill.

The cache and token model's free parameters (token ratios, miss rates, OpenAI's TTL, the
harnesses' system prompts) are fitted on one part of the corpus (`calibrate`, the train
side of `CALIBRATION_SPLIT`) and judged on the other (`judge`); a result's `cost_interval`
is the bill's 90% prediction interval under them.
"""

from ..metrics._prices import DEFAULT_PRICES, MODEL_PRICES, prices_for
from ._cache import CACHE_MODELS, CacheModel
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._calibration import calibration_rows, calibration_summary
from ._fit import calibrate
from ._judge import REQUEST_CLASSES, family_figures, judge, judge_session
from ._replay import TRIGGERS, CompactionEvent, CompactionFailure, ReplayResult, replay
from ._result import cost_difference_interval
from ._split import CALIBRATION_SPLIT, SplitEntry, read_split, session_digest, split_sides
from ._triggers import TRIGGER_SOURCES

__all__ = [
    "CACHE_MODELS",
    "CALIBRATION_SPLIT",
    "DEFAULT_CALIBRATION",
    "DEFAULT_PRICES",
    "MODEL_PRICES",
    "REQUEST_CLASSES",
    "TRIGGERS",
    "TRIGGER_SOURCES",
    "CacheModel",
    "Calibration",
    "CompactionEvent",
    "CompactionFailure",
    "ReplayResult",
    "SplitEntry",
    "calibrate",
    "calibration_rows",
    "calibration_summary",
    "cost_difference_interval",
    "family_figures",
    "judge",
    "judge_session",
    "prices_for",
    "read_split",
    "replay",
    "session_digest",
    "split_sides",
]

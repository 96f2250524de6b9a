"""Replay: a recorded session walked forward stream by stream (its main path, sidechains and
subagents) under a window, compactions where triggers fire, each request billed under its
provider's prompt-cache model and checked against the bill.

Each stream's system prompt and token ratio are its own, estimated from its recorded
requests with the family fit as the prior (`calibrate`, on every source of the corpus,
`CALIBRATION_SPLIT`); the fit is judged leave-one-source-out against the plain rules
(`judge_sources`). A result's `cost` is the bill's exact expectation and `cost_interval` its
90% prediction interval; `coverage` counts the recorded requests it holds.
"""

from ..metrics._prices import DEFAULT_PRICES, MODEL_PRICES, prices_for
from ._cache import CACHE_MODELS, CacheModel
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._calibration import calibration_rows, calibration_summary
from ._coverage import Coverage
from ._fit import calibrate
from ._judge import REQUEST_CLASSES, family_figures, judge, judge_session, judge_sources
from ._provenance import corpus_sources
from ._replay import RATIOS, TRIGGERS, CompactionEvent, CompactionFailure, ReplayResult, replay
from ._result import StreamResult, cost_difference_interval
from ._split import CALIBRATION_SPLIT, SplitEntry, corpus_split, read_split, session_digest
from ._streams import STREAM_KINDS
from ._triggers import TRIGGER_SOURCES

__all__ = [
    "CACHE_MODELS",
    "CALIBRATION_SPLIT",
    "DEFAULT_CALIBRATION",
    "DEFAULT_PRICES",
    "MODEL_PRICES",
    "RATIOS",
    "REQUEST_CLASSES",
    "STREAM_KINDS",
    "TRIGGERS",
    "TRIGGER_SOURCES",
    "CacheModel",
    "Calibration",
    "CompactionEvent",
    "CompactionFailure",
    "Coverage",
    "ReplayResult",
    "SplitEntry",
    "StreamResult",
    "calibrate",
    "calibration_rows",
    "calibration_summary",
    "corpus_sources",
    "corpus_split",
    "cost_difference_interval",
    "family_figures",
    "judge",
    "judge_session",
    "judge_sources",
    "prices_for",
    "read_split",
    "replay",
    "session_digest",
]

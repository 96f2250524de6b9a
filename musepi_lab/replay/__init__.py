"""Replay: a recorded session walked forward stream by stream (its main path, sidechains and
subagents) under a window, compactions where triggers fire, each request billed under its
provider's prompt-cache model and checked against the bill.

Each stream's system prompt and token ratio are its own, estimated from its recorded
requests with the family fit as the prior (`calibrate`, on every source of the corpus,
`CALIBRATION_SPLIT`); the fit is judged leave-one-source-out against the plain rules
(`judge_sources`). A result's `cost` is the bill's exact expectation and `cost_interval` its
90% prediction interval; `coverage` counts the recorded requests it holds.
"""

from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._coverage import Coverage
from ._fit import calibrate
from ._judge import REQUEST_CLASSES, judge, judge_sources
from ._options import ReplayOptions
from ._replay import CompactionEvent, ReplayResult, replay_session
from ._result import StreamResult, cost_difference_interval
from ._split import CALIBRATION_SPLIT, corpus_split, read_split

__all__ = [
    "CALIBRATION_SPLIT",
    "DEFAULT_CALIBRATION",
    "REQUEST_CLASSES",
    "Calibration",
    "CompactionEvent",
    "Coverage",
    "ReplayOptions",
    "ReplayResult",
    "StreamResult",
    "calibrate",
    "corpus_split",
    "cost_difference_interval",
    "judge",
    "judge_sources",
    "read_split",
    "replay_session",
]

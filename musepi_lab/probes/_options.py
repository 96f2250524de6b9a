"""`ProbeOptions`: how `run_probe_answers` compacts, probes and prices, as one frozen value."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .._options import Options
from .._prompts import PromptSet
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..tokens._counter import TokenCounter
from ._make import ProbeLimits


@dataclasses.dataclass(frozen=True)
class ProbeOptions(Options):
    """The options of `run_probe_answers` and `run_probes` (each one also a keyword).

    Attributes:
        summarizer: For strategies that call a model.
        settings: Compaction settings (default MusePi's); `keep_recent_tokens` is set per
            budget.
        counter: Token counter (default: the profile's).
        prompts: Prompt set (holds `probe-reader` and `probe-judge`), or a folder of them.
        point: `last-request` (before the last user request the agent answers with a tool
            call: see `probe_point`), `leaf` (the session leaf: no continuation probes),
            or an entry id.
        facts: `auto`, `planted` or `extracted` (see `make_probes`).
        limits: Probes per kind (default: `ProbeLimits()`).
        reader_prices: USD per million tokens of the reader (`input`, `output`).
        judge_prices: Likewise for the judge.
        images: Send images to the reader.
    """

    summarizer: Summarizer | None = None
    settings: CompactionSettings | None = None
    counter: TokenCounter | None = None
    prompts: PromptSet | str | None = None
    point: str | None = "last-request"
    facts: str = "auto"
    limits: ProbeLimits | None = None
    reader_prices: Mapping[str, float] | None = None
    judge_prices: Mapping[str, float] | None = None
    images: bool = False

"""`ReplayOptions`: how `replay_session` replays a session, as one frozen value.

Grouped by what they decide: the window and when compactions fire (`window`, `settings`,
`triggers`, `manual_at`, `leaf_id`, `hooks`), what the strategy runs with (`counter`,
`summarizer`, `params`) and how each request is billed (`prices`, `system_tokens`, `cache`,
`calibration`, `ratio`). Every field is also a keyword of `replay_session`; a keyword that
is not one of them is a strategy parameter (it joins `params`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, Self

from .._options import Options
from ..compaction._hooks import SessionHooks
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..tokens._counter import TokenCounter
from ._cache import CACHE_MODELS
from ._calibrated import Calibration
from ._result import TRIGGERS

RATIOS: tuple[str, ...] = ("session", "causal", "family")
"""What `replay_session(ratio=...)` bills each stream's line from (`_replay` notes)."""

DEFAULT_TRIGGERS: tuple[str, ...] = ("threshold", "mid-turn", "overflow", "incomplete", "manual")
"""The triggers a replay lets fire unless told (idle is off, as MusePi's `idleEnabled`)."""


def check_cache(cache: str) -> None:
    """Raise `ValueError` for a cache model that is neither "auto" nor a `CACHE_MODELS` name."""
    if cache != "auto" and cache not in CACHE_MODELS:
        raise ValueError(f"unknown cache model {cache!r}; expected 'auto' or one of {CACHE_MODELS}")


def check_triggers(triggers: Collection[str]) -> None:
    """Raise `ValueError` for a trigger that is not one of `TRIGGERS`."""
    unknown = set(triggers) - set(TRIGGERS)
    if unknown:
        raise ValueError(f"unknown triggers {sorted(unknown)}; expected some of {TRIGGERS}")


@dataclasses.dataclass(frozen=True)
class ReplayOptions(Options):
    """The options of `replay_session` (each one also a keyword of it).

    Attributes:
        window: Context window in tokens (None: the session's, `session_context_window`).
        settings: Compaction settings (None: MusePi's); their profile picks the threshold
            rule, `mid_turn_enabled` gates the mid-turn trigger and `idle_timeout_seconds`
            / `idle_threshold_tokens` the idle one.
        counter: Token counter for estimates (None: the profile's estimator).
        summarizer: For strategies that call a model.
        triggers: Which triggers may fire (any of `TRIGGERS`; idle is off by default).
        manual_at: Entry ids after which a manual compaction runs.
        prices: USD per million tokens (`input`, `cache_write`, `cache_write_1h`,
            `cache_read`, `output`), overriding the prices of each reply's model.
        system_tokens: Tokens of the system prompt and tools, added to every request and
            billed as every stream's system prompt (None: each stream's own).
        cache: The prompt-cache model: "auto" (from each reply's provider) or a name of
            `CACHE_MODELS`.
        leaf_id: Replay the main path to this leaf (None: the session leaf).
        hooks: The seed's touchpoints, asked and told at every compaction.
        calibration: The fitted parameters (None: `DEFAULT_CALIBRATION`).
        ratio: One of `RATIOS`: what each stream's system prompt and token ratio come from.
        params: Strategy parameters when the strategy is a name.
    """

    window: int | None = None
    settings: CompactionSettings | None = None
    counter: TokenCounter | None = None
    summarizer: Summarizer | None = None
    triggers: Collection[str] = DEFAULT_TRIGGERS
    manual_at: Collection[str] = ()
    prices: Mapping[str, float] | None = None
    system_tokens: int | None = None
    cache: str = "auto"
    leaf_id: str | None = None
    hooks: SessionHooks | None = None
    calibration: Calibration | None = None
    ratio: str = "session"
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def of_call(cls, options: Self | None, keywords: Mapping[str, Any], where: str) -> Self:
        """The options of a call to `where`: `given` for the keywords that are options, the
        others strategy parameters merged over `params`."""
        names = {f.name for f in dataclasses.fields(cls)}
        chosen = cls.given(options, {k: v for k, v in keywords.items() if k in names}, where)
        extra = {k: v for k, v in keywords.items() if k not in names}
        return chosen.copy_with(params={**chosen.params, **extra}) if extra else chosen

    def check(self) -> None:
        """Raise `ValueError` for an unknown `ratio`, cache model or trigger."""
        if self.ratio not in RATIOS:
            raise ValueError(f"unknown ratio {self.ratio!r}; expected one of {RATIOS}")
        check_cache(self.cache)
        check_triggers(self.triggers)

"""The calibration a replay runs under: the cache models with their fitted token ratio,
ratio spread and miss rate, the harness tables (system prompt, warm prefix), and the
sessions the fit saw. `DEFAULT_CALIBRATION` is the fit shipped in `_fitted`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _fitted
from ._cache import (
    ANTHROPIC,
    ANTHROPIC_1H,
    CACHE_MODELS,
    NEUTRAL,
    OPENAI,
    SYSTEM_PROMPT_TOKENS,
    WARM_PREFIX_TOKENS,
    CacheModel,
    cache_model_for,
    declared_tokens,
    table_key,
    table_row,
)
from ._own import Prior

TokenTable = tuple[tuple[str, tuple[int, ...], int], ...]
"""`(harness, from version, tokens)` rows, as `SYSTEM_PROMPT_TOKENS`."""
RateTable = tuple[tuple[str, float, float], ...]
"""`(harness table key, miss rate, unpredicted-hit rate)` rows."""

FAMILIES: tuple[str, ...] = ("anthropic", "openai", "neutral")
"""The tokenizer families a calibration fits one token ratio and miss rate for."""

FITTED_FIELDS: tuple[str, ...] = (
    "token_ratio",
    "ratio_spread",
    "system_spread",
    "noise",
    "noise_correlation",
    "miss_rate",
    "miss_concentration",
    "key_concentration",
    "hit_rate",
    "memory",
    "version_spread",
)
"""The `CacheModel` fields a calibration fits per family."""


@dataclass(frozen=True)
class Calibration:
    """The free parameters of the replay's cache and token model, as one frozen value.

    Attributes:
        models: One `CacheModel` per name of `CACHE_MODELS`, each carrying its family's
            fitted `FITTED_FIELDS` (and OpenAI's TTL).
        system_prompt: System prompt and tools per harness version, stream kind and
            family (`TokenTable`, keys as `_cache.table_key`).
        warm_prefix: The static prefix a stream finds cached, keyed alike.
        sessions: Ids of the sessions the parameters were fitted on, sorted (() for a
            hand-made calibration): a session judged under this calibration must not be
            among them (`judge_session` refuses it).
        fitted: The date of the fit (ISO 8601), or "".
        event_rates: Per harness table key (`_cache.table_key`, any version), the miss
            rate and the unpredicted-hit rate of its streams (`RateTable`); a stream whose
            key has no row takes its family's (`CacheModel.miss_rate`, `hit_rate`).
    """

    models: tuple[CacheModel, ...]
    system_prompt: TokenTable = ()
    warm_prefix: TokenTable = ()
    sessions: tuple[str, ...] = ()
    fitted: str = ""
    event_rates: RateTable = ()

    def __post_init__(self) -> None:
        names = tuple(m.name for m in self.models)
        if sorted(names) != sorted(CACHE_MODELS):
            raise ValueError(f"a calibration needs one model per name of {CACHE_MODELS}: {names}")

    def model(self, name: str) -> CacheModel:
        """The cache model of a name in `CACHE_MODELS`.

        Raises:
            ValueError: An unknown name.
        """
        for model in self.models:
            if model.name == name:
                return model
        raise ValueError(f"unknown cache model {name!r}; expected one of {CACHE_MODELS}")

    def model_for(self, message: Mapping[str, Any]) -> CacheModel:
        """The cache model of a recorded reply (`cache_model_for`), with these parameters."""
        return self.model(cache_model_for(message).name)

    def family(self, provider: str) -> CacheModel:
        """The first model of a tokenizer family (its ratio, spread and miss rate)."""
        return next(m for m in self.models if m.provider == provider)

    def system_prompt_tokens(self, header: Mapping[str, Any], family: str | None = None) -> int:
        """System prompt and tools of a stream (its header's harness, version and kind;
        `family`: its tokenizer family's row first)."""
        return declared_tokens(self.system_prompt, header, family)

    def warm_prefix_tokens(self, header: Mapping[str, Any], family: str | None = None) -> int:
        """The static prefix a stream of this harness finds already cached."""
        return declared_tokens(self.warm_prefix, header, family)

    def rates(self, header: Mapping[str, Any], family: str) -> tuple[float, float]:
        """A stream's prior miss and unpredicted-hit rates: its harness key's row of
        `event_rates`, else its family's."""
        key = table_key(header, family)
        for name, miss, hit in self.event_rates:
            if name == key:
                return miss, hit
        model = self.family(family)
        return model.miss_rate, model.hit_rate

    def concentration(self, header: Mapping[str, Any], family: str) -> float:
        """The concentration of a stream's beta priors on its miss and unpredicted-hit
        rates: the family's `miss_concentration` where its harness key has a row of
        `event_rates`, else (a harness the fit never saw) its `key_concentration`."""
        model = self.family(family)
        key = table_key(header, family)
        if any(name == key for name, _, _ in self.event_rates) or model.key_concentration <= 0:
            return model.miss_concentration
        return model.key_concentration

    def prior(self, header: Mapping[str, Any], family: str) -> Prior:
        """The family fit as the prior of a stream's own line (`_own.Prior`)."""
        model = self.family(family)
        tokens, own = table_row(self.system_prompt, header, family)
        spread = model.system_spread
        if not own:
            # Another version's (or harness kind's) prompt: that far from this one.
            spread = math.hypot(spread, model.version_spread * tokens)
        return Prior(
            system=float(tokens),
            ratio=model.token_ratio,
            system_sd=spread,
            ratio_sd=model.token_ratio * model.ratio_spread,
            noise=model.noise,
            correlation=model.noise_correlation,
            memory=model.memory,
        )

    def with_family(self, provider: str, **changes: Any) -> Calibration:
        """A copy whose models of one family have `changes` (`CacheModel` fields)."""
        models = tuple(
            dataclasses.replace(m, **changes) if m.provider == provider else m for m in self.models
        )
        return dataclasses.replace(self, models=models)

    def copy_with(self, **changes: Any) -> Calibration:
        """A copy with some fields replaced."""
        return dataclasses.replace(self, **changes)

    def parameters(self) -> dict[str, float]:
        """The fitted numbers, flat: per family `<family>_<field>` of `FITTED_FIELDS`, then
        `openai_ttl_seconds`."""
        out: dict[str, float] = {}
        for family in FAMILIES:
            model = self.family(family)
            for name in FITTED_FIELDS:
                out[f"{family}_{name}"] = float(getattr(model, name))
        out["openai_ttl_seconds"] = float(self.model("openai").ttl_seconds or 0.0)
        return out


DEFAULT_CALIBRATION = Calibration(
    models=(ANTHROPIC, ANTHROPIC_1H, OPENAI, NEUTRAL),
    system_prompt=SYSTEM_PROMPT_TOKENS,
    warm_prefix=WARM_PREFIX_TOKENS,
    sessions=tuple(sorted(_fitted.FIT_SESSIONS)),
    fitted=_fitted.FIT_DATE,
    event_rates=getattr(_fitted, "EVENT_RATES", ()),
)
"""The calibration shipped: fitted on the train split of `CALIBRATION_SPLIT` (regenerate
with `python perf/calibration_judge.py --write-defaults`)."""

"""Model prices: USD per million tokens, per model, in one place.

Each price set has `input` (uncached prompt), `cache_write` (a 5-minute cache write),
`cache_write_1h` (a 1-hour cache write), `cache_read` and `output`. Anthropic bills cache
writes at 1.25x input (5 minutes) or 2x (1 hour) and reads at 0.1x; OpenAI bills no writes
(a write costs what uncached input costs) and reads at the model's cached-input price.
Figures are the providers' list prices; the pi fixtures' recorded `usage.cost` agrees with
them for `claude-opus-4-5` and `claude-sonnet-4-5`.

This is the package's one price table (`PRICES_SOURCE`, `PRICES_DATE`): replay, calibration
and the usage reports (`analysis.usage_df`) read it. Nothing is ever fetched. `prices_for`
falls back to `DEFAULT_PRICES` for replays; `known_prices` does not (a usage report flags a
model it cannot price instead of guessing).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._model_ids import by_model_id


def _anthropic(input_: float, output: float) -> Mapping[str, float]:
    return MappingProxyType(
        {
            "input": input_,
            "cache_write": input_ * 1.25,
            "cache_write_1h": input_ * 2.0,
            "cache_read": input_ * 0.1,
            "output": output,
        }
    )


def _openai(input_: float, cached: float, output: float) -> Mapping[str, float]:
    return MappingProxyType(
        {
            "input": input_,
            "cache_write": input_,
            "cache_write_1h": input_,
            "cache_read": cached,
            "output": output,
        }
    )


PRICES_SOURCE = (
    "The providers' published list prices: https://www.anthropic.com/pricing (Claude API; "
    "cache writes 1.25x input for 5 minutes, 2x for 1 hour, reads 0.1x) and "
    "https://openai.com/api/pricing (input, cached input, output); Gemini models as the "
    "google provider's `cost` in pi-ai 0.58.3's model table (dist/models.generated.js; prompts "
    "up to 200k tokens). Standard tier only: no "
    "batch discount, no long-context (>200k) surcharge, no regional uplift. Cross-checked "
    "on PRICES_DATE against the LiteLLM prices bundled in ccusage 18.0.11 for every model of "
    "the corpus (the same cost to 1e-9 relative; tests/conformance/test_ccusage.py)."
)
"""Where the figures in `MODEL_PRICES` come from."""

PRICES_DATE = "2026-12-03"
"""The day the figures in `MODEL_PRICES` were written into this table and cross-checked."""

DEFAULT_PRICES: Mapping[str, float] = _anthropic(3.0, 15.0)
"""USD per million tokens (Anthropic Sonnet-class list prices); pass your own `prices=`."""

MODEL_PRICES: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "claude-opus-4-6": _anthropic(5.0, 25.0),
        "claude-opus-4-5": _anthropic(5.0, 25.0),
        "claude-opus-4-1": _anthropic(15.0, 75.0),
        "claude-opus-4": _anthropic(15.0, 75.0),
        "claude-sonnet-4-5": _anthropic(3.0, 15.0),
        "claude-sonnet-4": _anthropic(3.0, 15.0),
        "claude-3-7-sonnet": _anthropic(3.0, 15.0),
        "claude-haiku-4-5": _anthropic(1.0, 5.0),
        "claude-3-5-haiku": _anthropic(0.8, 4.0),
        "gpt-5.3-codex": _openai(1.75, 0.175, 14.0),
        "gpt-5.2-codex": _openai(1.75, 0.175, 14.0),
        "gpt-5.2": _openai(1.75, 0.175, 14.0),
        "gpt-5.1-codex-max": _openai(1.25, 0.125, 10.0),
        "gpt-5.1-codex-mini": _openai(0.25, 0.025, 2.0),
        "gpt-5.1-codex": _openai(1.25, 0.125, 10.0),
        "gpt-5.1": _openai(1.25, 0.125, 10.0),
        "gpt-5-codex": _openai(1.25, 0.125, 10.0),
        "gpt-5": _openai(1.25, 0.125, 10.0),
        "gpt-5-mini": _openai(0.25, 0.025, 2.0),
        "gpt-4.1": _openai(2.0, 0.5, 8.0),
        "gpt-4o": _openai(2.5, 1.25, 10.0),
        # The first gpt-4o snapshot keeps its own, higher price (and no cached-input rate).
        "gpt-4o-2024-05-13": _openai(5.0, 5.0, 15.0),
        # Gemini bills implicit cache hits at its cached price and charges no writes, as OpenAI.
        "gemini-3-pro-preview": _openai(2.0, 0.2, 12.0),
        "gemini-2.5-pro": _openai(1.25, 0.31, 10.0),
        "gemini-2.5-flash-lite": _openai(0.1, 0.025, 0.4),
        "gemini-2.5-flash": _openai(0.3, 0.075, 2.5),
        "gemini-2.0-flash": _openai(0.1, 0.025, 0.4),
    }
)
"""List prices per model id (USD per million tokens), keyed by the id without a date; an id
finds only its own key (`by_model_id`: the key, an alias, a dated snapshot)."""


def known_prices(model: str | None) -> Mapping[str, float] | None:
    """The price set of a model id: its `MODEL_PRICES` key, a known alias of it or a dated
    snapshot of it (so `claude-sonnet-4-20250514` is `claude-sonnet-4`, `openai/gpt-5` is
    `gpt-5`), else None: the table has no price for it (`gpt-5-pro` is not `gpt-5`)."""
    return by_model_id(MODEL_PRICES, model)


def prices_for(model: str | None) -> Mapping[str, float]:
    """The price set of a model id (`known_prices`), else `DEFAULT_PRICES`."""
    return known_prices(model) or DEFAULT_PRICES


def usage_cost(
    prices: Mapping[str, float],
    *,
    input: int,
    output: int,
    cache_read: int,
    cache_write_5m: int,
    cache_write_1h: int = 0,
) -> float:
    """USD for one request's token counts at `prices` (USD per million tokens)."""
    return (
        input * prices["input"]
        + output * prices["output"]
        + cache_read * prices["cache_read"]
        + cache_write_5m * prices["cache_write"]
        + cache_write_1h * prices.get("cache_write_1h", prices["cache_write"])
    ) / 1e6

"""Per-model tables (prices, context windows) keyed by a model id without its date."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

V = TypeVar("V")


def by_model_id(table: Mapping[str, V], model: str | None) -> V | None:
    """The value of the longest key of `table` that the model id starts with, compared in
    lower case without a provider prefix (so `claude-sonnet-4-20250514` finds
    `claude-sonnet-4`, `openai/gpt-5` finds `gpt-5`), else None."""
    if model:
        name = model.rsplit("/", 1)[-1].lower()
        matches = [key for key in table if name.startswith(key)]
        if matches:
            return table[max(matches, key=len)]
    return None

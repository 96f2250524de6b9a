"""Per-model tables (prices, context windows) keyed by a model id without its date.

A recorded id finds a table key only when it *is* that model: the key itself, a known alias
of it, or a dated snapshot of it (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`, the
Bedrock and Vertex AI spellings of those). A longer id that merely starts with a key is
another model (`gpt-5-pro` is not `gpt-5`: its list price is twelve times higher), so it
finds nothing and the caller reports it as unknown instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

V = TypeVar("V")

MODEL_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        # Anthropic's published aliases (docs.anthropic.com, "Model names"; pi-ai 0.58.3
        # lists them with the same price and window as the model they name).
        "claude-opus-4-0": "claude-opus-4",
        "claude-sonnet-4-0": "claude-sonnet-4",
        "claude-3-7-sonnet-latest": "claude-3-7-sonnet",
        "claude-3-5-sonnet-latest": "claude-3-5-sonnet",
        "claude-3-5-haiku-latest": "claude-3-5-haiku",
        "claude-3-opus-latest": "claude-3-opus",
    }
)
"""Alias → the table key of the model it names."""

_SNAPSHOT = re.compile(
    r"""(?:
        -\d{8}              # Anthropic: claude-sonnet-4-5-20250929
      | @\d{8}              # Vertex AI: claude-sonnet-4-5@20250929
      | -\d{4}-\d{2}-\d{2}  # OpenAI: gpt-5-2025-08-07
      | -\d{4}              # OpenAI's older form: gpt-4-0613
      | -\d{3}              # Google's stable versions: gemini-2.0-flash-001
    )$""",
    re.VERBOSE,
)
"""A dated (or versioned) snapshot suffix after a model id."""

_BEDROCK = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.(?P<id>.+?)(?:-v\d+(?::\d+)?)?$")
"""Bedrock's spelling: an optional region prefix, `anthropic.`, the id, a `-vN:M` suffix."""


def model_key(model: str | None) -> str | None:
    """The bare id a table is keyed by: lower case, without a provider prefix
    (`openai/gpt-5`) or Bedrock's decoration, or None for no id."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].strip().lower()
    bedrock = _BEDROCK.match(name)
    return bedrock.group("id") if bedrock else name


def by_model_id(table: Mapping[str, V], model: str | None) -> V | None:
    """The value of the table key that `model` is: the key itself, a known alias of it
    (`MODEL_ALIASES`) or a dated snapshot of either (`claude-sonnet-4-20250514` finds
    `claude-sonnet-4`, `openai/gpt-5` finds `gpt-5`), else None (`gpt-5-pro` does not
    find `gpt-5`)."""
    name = model_key(model)
    if name is None:
        return None
    for candidate in (name, _SNAPSHOT.sub("", name)):
        candidate = MODEL_ALIASES.get(candidate, candidate)
        if candidate in table:
            return table[candidate]
    return None

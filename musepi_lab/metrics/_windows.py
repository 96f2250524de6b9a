"""Model context windows (tokens), per model, in one place.

Source: the `contextWindow` of each model in pi-ai's generated model table
(`@mariozechner/pi-ai` 0.58.3, `dist/models.generated.js`, providers `anthropic`, `openai`
and `google`), the table the pi agent itself compacts against; read 2026-12-03. These are
the providers' published windows: Anthropic's 200K for Claude 3.5 to 4.5 (the 1M beta
needs a request header, so pi does not count on it), 1M for Claude Opus and Sonnet 4.6;
OpenAI's 400K for the GPT-5 family (128K for the `-chat-latest` ids), 1,047,576 for GPT-4.1
and 128K for GPT-4o; Google's 1,048,576 for Gemini 2.5. A session that records its own
window (Codex rollouts: `model_context_window`, read into the header's `contextWindow`)
needs none of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._model_ids import by_model_id

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model the table does not know (as the package's other
defaults, e.g. `compaction._branch.DEFAULT_CONTEXT_WINDOW`); shown as unknown."""

MODEL_WINDOWS: Mapping[str, int] = MappingProxyType(
    {
        # anthropic (the dated ids of pi-ai's table under their undated key)
        "claude-opus-4-6": 1_000_000,
        "claude-sonnet-4-6": 1_000_000,
        "claude-opus-4-5": 200_000,
        "claude-opus-4-1": 200_000,
        "claude-opus-4": 200_000,
        "claude-sonnet-4-5": 200_000,
        "claude-sonnet-4": 200_000,
        "claude-haiku-4-5": 200_000,
        "claude-3-7-sonnet": 200_000,
        "claude-3-5-sonnet": 200_000,
        "claude-3-5-haiku": 200_000,
        "claude-3-opus": 200_000,
        "claude-3-sonnet": 200_000,
        "claude-3-haiku": 200_000,
        # openai
        "codex-mini-latest": 200_000,
        "gpt-4": 8_192,
        "gpt-4-turbo": 128_000,
        "gpt-4.1": 1_047_576,
        "gpt-4.1-mini": 1_047_576,
        "gpt-4.1-nano": 1_047_576,
        "gpt-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "gpt-5": 400_000,
        "gpt-5-chat-latest": 128_000,
        "gpt-5-codex": 400_000,
        "gpt-5-mini": 400_000,
        "gpt-5-nano": 400_000,
        "gpt-5-pro": 400_000,
        "gpt-5.1": 400_000,
        "gpt-5.1-chat-latest": 128_000,
        "gpt-5.1-codex": 400_000,
        "gpt-5.1-codex-max": 400_000,
        "gpt-5.1-codex-mini": 400_000,
        "gpt-5.2": 400_000,
        "gpt-5.2-chat-latest": 128_000,
        "gpt-5.2-codex": 400_000,
        "gpt-5.2-pro": 400_000,
        "gpt-5.3-codex": 400_000,
        "gpt-5.3-codex-spark": 128_000,
        "gpt-5.4": 272_000,
        "gpt-5.4-pro": 1_050_000,
        "o1": 200_000,
        "o1-pro": 200_000,
        "o3": 200_000,
        "o3-deep-research": 200_000,
        "o3-mini": 200_000,
        "o3-pro": 200_000,
        "o4-mini": 200_000,
        "o4-mini-deep-research": 200_000,
        # google
        "gemini-1.5-flash": 1_000_000,
        "gemini-1.5-flash-8b": 1_000_000,
        "gemini-1.5-pro": 1_000_000,
        "gemini-2.0-flash": 1_048_576,
        "gemini-2.0-flash-lite": 1_048_576,
        "gemini-2.5-flash": 1_048_576,
        "gemini-2.5-flash-lite": 1_048_576,
        "gemini-2.5-flash-lite-preview-06-17": 1_048_576,
        "gemini-2.5-flash-lite-preview-09-2025": 1_048_576,
        "gemini-2.5-flash-preview-04-17": 1_048_576,
        "gemini-2.5-flash-preview-05-20": 1_048_576,
        "gemini-2.5-flash-preview-09-2025": 1_048_576,
        "gemini-2.5-pro": 1_048_576,
        "gemini-2.5-pro-preview-05-06": 1_048_576,
        "gemini-2.5-pro-preview-06-05": 1_048_576,
        "gemini-3-flash-preview": 1_048_576,
        "gemini-3-pro-preview": 1_000_000,
        "gemini-3.1-flash-lite-preview": 1_048_576,
        "gemini-3.1-pro-preview": 1_048_576,
        "gemini-3.1-pro-preview-customtools": 1_048_576,
        "gemini-flash-latest": 1_048_576,
        "gemini-flash-lite-latest": 1_048_576,
        "gemini-live-2.5-flash": 128_000,
        "gemini-live-2.5-flash-preview-native-audio": 131_072,
    }
)
"""Context windows per model id (tokens): every id of pi-ai's table for the three providers,
keyed by the id without a date. An id finds only its own key (`by_model_id`: the key, an
alias, a dated snapshot), never a shorter id it starts with."""


def context_window_for(model: str | None) -> int | None:
    """The table's context window of a model id: its `MODEL_WINDOWS` key, an alias or a dated
    snapshot of it (so `claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`), else None."""
    return by_model_id(MODEL_WINDOWS, model)

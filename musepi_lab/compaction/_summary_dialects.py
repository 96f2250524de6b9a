"""The summarizer's input in the target model's own dialect (MusePi profile, issue 11).

oh-my-pi 18.2.3 sends the messages to summarize (and a split turn's prefix, and an abandoned
branch) as one transcript rendered in the dialect of the model that will read it
(`serializeConversationForSummary(convertToLlm(messages), preferredDialect(model.id))`):
Claude-style tool-call markup for Anthropic models, OpenAI's harmony tokens for OpenAI
models, a chat template's own tokens for open-weight families, and a plain XML transcript
for everything else. This module ports that FORMAT: one pure function per dialect (in `_dialects/`), the
dispatcher `serialize_for_summary` (here), and the model-to-dialect rule `preferred_dialect`
(`_dialects/_models.py`).

Every byte here is format (tokens, tags, labels) taken from the release's sources
(`pi-agent-core/src/compaction/utils.ts`, `pi-ai/src/dialect/*.ts`,
`pi-catalog/src/identity/dialect.ts`, `pi-catalog/src/compat/taxonomy.ts`); none of it is
our own wording.

Before a dialect renders, the release prepares the messages the same way for every dialect:
tool results flagged `useless` (and not errors) are dropped with their calls, an assistant
message left with no block is dropped, a tool result keeps only its text (cut at 2000 UTF-16
units by `truncate_tool_result`) and is dropped when that is empty, and for `anthropic` the
thinking blocks are dropped. The rendered text then has harmony's control tokens escaped
(`harmony` only) and `<conversation>` / `<previous-summary>` tags neutralized (all).

JavaScript semantics are kept where they change the bytes: object keys in `for…in` order
(integer-like keys first), `String(number)`, `JSON.stringify`, `JSON.parse`, `trim`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from ._dialects._js import js_keys, js_number
from ._dialects._legacy import render_legacy
from ._dialects._models import FALLBACK_DIALECT, preferred_dialect
from ._dialects._parts import Message
from ._dialects._prepare import dialect_input, without_useless
from ._dialects._tagged import (
    render_anthropic,
    render_deepseek,
    render_glm,
    render_hermes,
    render_kimi,
    render_minimax,
    render_qwen3,
    render_xml,
)
from ._dialects._templates import (
    escape_harmony_control_tokens,
    render_gemini,
    render_gemma,
    render_harmony,
)
from ._serialize import neutralize_boundary_tags

__all__ = [
    "FALLBACK_DIALECT",
    "LEGACY_DIALECT",
    "RENDERERS",
    "SUMMARY_DIALECTS",
    "js_keys",
    "js_number",
    "preferred_dialect",
    "serialize_for_summary",
]

SUMMARY_DIALECTS: Final = (
    "anthropic",
    "harmony",
    "xml",
    "glm",
    "hermes",
    "kimi",
    "deepseek",
    "qwen3",
    "gemini",
    "gemma",
    "minimax",
)
"""The release's dialects (`pi-catalog` `Dialect`)."""
LEGACY_DIALECT: Final = "none"
"""No dialect: the release's legacy labelled serializer (`[User]:`, `[Think]:`, …)."""


RENDERERS: Final[Mapping[str, Callable[[Sequence[Message]], str]]] = {
    "anthropic": render_anthropic,
    "harmony": render_harmony,
    "xml": render_xml,
    "glm": render_glm,
    "hermes": render_hermes,
    "kimi": render_kimi,
    "deepseek": render_deepseek,
    "qwen3": render_qwen3,
    "gemini": render_gemini,
    "gemma": render_gemma,
    "minimax": render_minimax,
}
"""One transcript renderer per dialect (`getDialectDefinition(d).renderTranscript`)."""


def serialize_for_summary(messages: Iterable[Message], dialect: str | None) -> str:
    """The summarizer's input text: `serializeConversationForSummary(messages, dialect)`.

    Args:
        messages: LLM messages (after `convert_to_llm`, MusePi profile).
        dialect: One of `SUMMARY_DIALECTS`, or None / `"none"` for the legacy labelled serializer.

    Raises:
        ValueError: An unknown dialect.
    """
    listed = list(messages)
    if dialect is None or dialect == LEGACY_DIALECT:
        text = render_legacy(without_useless(listed))
    else:
        render = RENDERERS.get(dialect)
        if render is None:
            known = ", ".join((LEGACY_DIALECT, *SUMMARY_DIALECTS))
            raise ValueError(f"unknown summary dialect {dialect!r} (known: {known})")
        text = render(dialect_input(listed, dialect))
        if dialect == "harmony":
            text = escape_harmony_control_tokens(text)
    return neutralize_boundary_tags(text)

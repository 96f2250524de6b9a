"""The summarizer's input, pure pieces (spec §5.1–5.7): the prompt text, the transcript in
pi's labels or the summarizer model's dialect, the fold budget and its windows (spec §5.7),
the reasoning effort from the thinking level, and the preserveData a text summary carries.

`_llm_summary` sends them; the other summarizing strategies use them too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._prompts import PromptSet
from ..compaction._serialize import (
    serialize_conversation,
    truncate_tool_result,
)
from ..compaction._summary_dialects import preferred_dialect, serialize_for_summary
from ..context._build import default_model
from ..context._llm import convert_to_llm
from ..context._summaries import snapcompact_archive
from ..llm._summarizer import Summarizer
from ..session._model import Entry, thinking_level_of
from ..tokens._counter import TokenCounter
from ..tokens._estimate import utf8_len, utf16_len

DEFAULT_SUMMARIZER_WINDOW = 200_000
"""Window assumed when the summarizer does not say (oh-my-pi's fallback, spec §5.7)."""
FOLD_SLACK_TOKENS = 16384
"""Tokens kept free of a window besides the output cap (spec §5.7)."""
FOLD_MIN_INPUT_CAP = 16384
FOLD_MIN_INPUT_FLOOR = 1024
FOLD_INPUT_RATIO = 0.8
FOLD_CLIP_RATIO = 0.95
"""A single oversized window is clipped to 95% of its proportional share of the budget."""
FOLD_CLIP_MIN_CHARS = 1024

_REPLACED_PRESERVE_KEYS = ("snapcompact", "openaiRemoteCompaction")
"""preserveData a text summary supersedes: a snapcompact archive (its text was folded into
the summary) and provider-native history (kept, it would replace the summary on rebuild)."""


# -- pure pieces ---------------------------------------------------------------------------
def reasoning_effort(thinking_level: str | None) -> str | None:
    """MusePi's summarizer reasoning effort for a thinking level (spec §5.7).

    `off` → None (no reasoning option); unset or `inherit` → `high`; any other level is
    passed on as it is (`minimal`, `low`, `medium`, `high`, `xhigh`).
    """
    if thinking_level is None or thinking_level == "inherit":
        return "high"
    if thinking_level == "off":
        return None
    return thinking_level


def thinking_level_at(path: Iterable[Entry]) -> str | None:
    """The thinking level set last on a path, or None when no entry sets one."""
    level = ""
    for entry in path:
        if entry.type == "thinking_level_change":
            level = thinking_level_of(entry, level)
    return level or None


def build_summary_prompt(
    conversation: str,
    *,
    base_prompt: str,
    previous_summary: str | None = None,
    additional_context: Sequence[str] = (),
    custom_instructions: str | None = None,
) -> str:
    """The user message of a summary request (spec §5.2, §5.7).

    Args:
        conversation: The serialized transcript.
        base_prompt: The instruction text (initial, update or turn-prefix prompt).
        previous_summary: Put in a `<previous-summary>` block when non-empty.
        additional_context: Lines of an `<additional-context>` block, each prefixed `- `.
        custom_instructions: Appended as `\\n\\nAdditional focus: …` when non-empty.
    """
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    if additional_context:
        lines = "\n".join(f"- {line}" for line in additional_context)
        prompt += f"<additional-context>\n{lines}\n</additional-context>\n\n"
    prompt += base_prompt
    if custom_instructions:
        prompt += f"\n\nAdditional focus: {custom_instructions}"
    return prompt


def fold_input_budget(context_window: int, max_tokens: int) -> int:
    """Input tokens one summary request may carry (spec §5.7).

    minimum = `min(16384, max(1024, floor(W/8)))`;
    budget = `max(minimum, floor(0.8·W) − maxTokens − 16384)`.
    """
    minimum = min(FOLD_MIN_INPUT_CAP, max(FOLD_MIN_INPUT_FLOOR, context_window // 8))
    return max(
        minimum, math.floor(FOLD_INPUT_RATIO * context_window) - max_tokens - FOLD_SLACK_TOKENS
    )


def clip_to_budget(text: str, tokens: int, budget: int) -> str:
    """A single part too big for any window, cut to `max(1024, floor(len·budget·0.95/tokens))`
    UTF-16 units plus pi's truncation marker (spec §5.7)."""
    keep = max(FOLD_CLIP_MIN_CHARS, math.floor(utf16_len(text) * budget * FOLD_CLIP_RATIO / tokens))
    return truncate_tool_result(text, keep)


def pack_windows(parts: Sequence[str], counts: Sequence[int], budget: int) -> list[str]:
    """Greedy packing of serialized messages into windows of at most `budget` tokens.

    Parts keep their order and are joined by a blank line, as in one transcript; empty
    parts are skipped. A part larger than the budget gets a window of its own, clipped by
    `clip_to_budget`.
    """
    windows: list[str] = []
    current: list[str] = []
    used = 0
    for part, tokens in zip(parts, counts, strict=True):
        if not part:
            continue
        if tokens > budget:
            if current:
                windows.append("\n\n".join(current))
                current, used = [], 0
            windows.append(clip_to_budget(part, tokens, budget))
            continue
        if current and used + tokens > budget:
            windows.append("\n\n".join(current))
            current, used = [], 0
        current.append(part)
        used += tokens
    if current:
        windows.append("\n\n".join(current))
    return windows


@dataclass(frozen=True)
class Transcript:
    """The conversation a summary request carries, and how it splits when it is too big.

    Attributes:
        messages: LLM messages (after `convert_to_llm` for the profile).
        profile: `pi` serializes with pi's labels (`serialize_conversation`); `musepi` with
            the release's `serialize_for_summary` in `dialect`.
        dialect: The MusePi dialect (`none` for the release's legacy labels); unused for pi.
    """

    messages: tuple[Mapping[str, Any], ...]
    profile: str
    dialect: str | None = None

    def render(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Some of the messages serialized as one transcript."""
        if self.profile == "pi":
            return "\n\n".join(p for p in (serialize_conversation([m]) for m in messages) if p)
        return serialize_for_summary(messages, self.dialect)

    def text(self) -> str:
        """The whole transcript."""
        return self.render(self.messages)

    def windows(self, budget: int, counter: TokenCounter, *, fold: bool) -> list[str]:
        """The transcript as one text, or, folded, as texts of at most `budget` tokens.

        pi's parts are packed greedily (`pack_windows`). MusePi plans runs of messages as
        oh-my-pi does (`planSummaryWindows`: each message sized alone in the dialect, a run
        closed when the next would cross the budget) and renders each run whole, clipping a
        run still over the budget (`clampConversationToBudget`).
        """
        whole = self.text()
        # Cheap check first: a token is at least one byte for every counter we have.
        if not fold or utf8_len(whole) <= budget or counter.count_text(whole) <= budget:
            return [whole]
        if self.profile == "pi":
            parts = [serialize_conversation([m]) for m in self.messages]
            return pack_windows(parts, counter.count_texts(parts), budget)
        sizes = counter.count_texts([self.render([m]) for m in self.messages])
        runs: list[list[Mapping[str, Any]]] = []
        used = 0
        for message, tokens in zip(self.messages, sizes, strict=True):
            if not runs or (used > 0 and used + tokens > budget):
                runs.append([])
                used = 0
            runs[-1].append(message)
            used += tokens
        texts = [self.render(run) for run in runs]
        return [
            clip_to_budget(text, tokens, budget) if tokens > budget else text
            for text, tokens in zip(texts, counter.count_texts(texts), strict=True)
        ]


def summary_dialect(
    summarizer: Summarizer | None,
    profile: str,
    dialect: str | None = None,
    *,
    path: Sequence[Entry] = (),
) -> str | None:
    """The dialect a profile's summary input is rendered in (None for pi).

    MusePi: `dialect` when given, else the one oh-my-pi picks (`preferred_dialect`) for the
    model that reads it: the summarizer's `model`, or, when the summarizer names none (a
    custom endpoint), the session's default model at the end of `path`, which is the model
    the release itself summarizes with; `xml` when neither is known.
    """
    if profile == "pi":
        return None
    if dialect:
        return dialect
    return preferred_dialect(getattr(summarizer, "model", None) or default_model(path))


def summary_transcript(
    messages: Iterable[Mapping[str, Any]],
    *,
    profile: str,
    prompts: PromptSet | None = None,
    dialect: str | None = None,
) -> Transcript:
    """The runtime messages to summarize as the summarizer reads them.

    `convert_to_llm` for the profile (summaries wrapped by `prompts`' context templates).
    For MusePi, `useless` pairs, thinking for Claude targets and boundary tags are handled by
    the dialect serializer, as in the release.
    """
    llm = convert_to_llm(messages, profile=profile, prompts=prompts)
    return Transcript(tuple(llm), profile, dialect if profile != "pi" else None)


def previous_archive_text(preserve_data: Mapping[str, Any] | None) -> str | None:
    """The source text of a previous snapcompact archive, if the preparation carries one."""
    archive = snapcompact_archive(preserve_data)
    if archive is None:
        return None
    text = archive.get("text")
    if not text:
        text = "\n".join(archive[k] for k in ("textHead", "textTail") if archive.get(k))
    return text or None


def carried_preserve_data(previous: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The previous compaction's preserveData a text summary keeps (spec §5.7)."""
    if not previous:
        return None
    kept = {k: v for k, v in previous.items() if k not in _REPLACED_PRESERVE_KEYS}
    return kept or None

"""The context window a session ran under, and where that figure came from: one rule for
every view (`CutPointExplorer`, `SessionExplorer`, the live view), `replay(window=None)`
and `musepi-lab watch`.

A window depends on the harness and the model as the session records them, not on the model
alone: Claude Code runs Claude Opus and Sonnet 4.6 at 200,000 tokens unless the user asked
for the 1M context (a `[1m]` model id; the JSONL then still records the bare id), although
the API, and so pi-ai's table, offers 1M. What the session itself records is evidence: a
request whose recorded prompt is above 200,000 tokens needed the 1M window, and an automatic
compaction at `preTokens` (Claude Code's `compactMetadata`) below 200,000 is Claude Code's
threshold for the 200,000 window.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compaction._threshold import calculate_prompt_tokens, message_usage
from ..session._session import Session
from ._model_ids import model_key
from ._windows import DEFAULT_CONTEXT_WINDOW, context_window_for

WINDOW_SOURCES: tuple[str, ...] = ("given", "recorded", "evidence", "harness", "table", "unknown")
"""Where a window can come from: `given` by the caller; `recorded` by the session itself
(Codex: `model_context_window`); `evidence` (the session's records show the larger window
the harness offers); `harness` (the harness's own window for that model); `table`
(`MODEL_WINDOWS`, pi-ai's model table); `unknown` (`DEFAULT_CONTEXT_WINDOW` assumed)."""

CLAUDE_CODE_WINDOW = 200_000
"""The window Claude Code runs a Claude model at unless the session uses the 1M context."""

CLAUDE_CODE_LONG_WINDOW = 1_000_000
"""The 1M context Claude Code offers as an option (`[1m]`) for the models whose API window
is that large."""


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """A context window and where it came from.

    Attributes:
        tokens: The window, in tokens.
        source: One of `WINDOW_SOURCES`.
        reason: Where the figure came from, in words (with the evidence, when any).
        model: The model id the window is for, as the session records it (None if none).
    """

    tokens: int
    source: str
    reason: str
    model: str | None = None

    def label(self) -> str:
        """`200,000 (Claude Code runs claude-opus-4-6 at 200,000 …)`: what a view prints."""
        return f"{self.tokens:,} ({self.reason})"


def last_reply_model(session: Session) -> str | None:
    """The `model` of the session's last assistant reply (file order), if any."""
    for entry in reversed(session.entries):
        message = entry.message
        if entry.role == "assistant" and message is not None and message.get("model"):
            return str(message["model"])
    return None


@dataclass(frozen=True, slots=True)
class _Evidence:
    """What the session records about its window: the largest prompt a request carried,
    and the context sizes its automatic compactions fired at."""

    largest_prompt: int
    auto_compactions: tuple[int, ...]


def _evidence(session: Session) -> _Evidence:
    largest = 0
    autos: list[int] = []
    for entry in session.entries:
        if entry.type == "compaction":
            before = entry.get("tokensBefore")
            if entry.get("trigger") == "auto" and isinstance(before, int) and before > 0:
                autos.append(before)
            continue
        usage = message_usage(entry.message, skip_all_zero=True)
        if usage is not None:
            largest = max(largest, calculate_prompt_tokens(usage))
    return _Evidence(largest, tuple(autos))


def _claude_code_window(model: str, seen: _Evidence) -> ContextWindow:
    """Claude Code's window for a Claude model whose API window is above 200,000."""
    name = model_key(model)
    if model.lower().endswith("[1m]"):
        return ContextWindow(
            CLAUDE_CODE_LONG_WINDOW, "evidence", f"the session runs {model}: the 1M context", model
        )
    beyond = max((seen.largest_prompt, *seen.auto_compactions))
    if beyond > CLAUDE_CODE_WINDOW:
        return ContextWindow(
            CLAUDE_CODE_LONG_WINDOW,
            "evidence",
            f"the session recorded a {beyond:,}-token context: Claude Code's 1M context for {name}",
            model,
        )
    reason = (
        f"Claude Code runs {name} at {CLAUDE_CODE_WINDOW:,} unless the session shows the 1M context"
    )
    below = [t for t in seen.auto_compactions if t < CLAUDE_CODE_WINDOW]
    if below:
        reason += f"; it auto-compacted at {below[0]:,} tokens"
    return ContextWindow(CLAUDE_CODE_WINDOW, "harness", reason, model)


def session_context_window(
    session: Session, model: str | None = None, *, window: int | None = None
) -> ContextWindow:
    """The context window `session` ran under, and where the figure came from.

    In order: `window` when given; the window the session records (its header's
    `contextWindow`); the harness's window for the model with the session's evidence
    (Claude Code: 200,000 unless a `[1m]` model or a recorded prompt above 200,000 shows
    the 1M context); the model's window in `MODEL_WINDOWS`; else `DEFAULT_CONTEXT_WINDOW`,
    marked `unknown`.

    Args:
        session: The session (a full read or a live tail's).
        model: The model in force (default: the last reply's `model`).
        window: A window the caller chose (source `given`).
    """
    model = model or last_reply_model(session)
    if window is not None:
        return ContextWindow(window, "given", "given", model)
    recorded = session.header.get("contextWindow")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return ContextWindow(recorded, "recorded", "recorded in the session", model)
    bare = model[: -len("[1m]")] if model and model.lower().endswith("[1m]") else model
    table = context_window_for(bare)
    key = model_key(bare) or ""
    claude_code = session.source_format == "claude-code" and key.startswith("claude-")
    if model and claude_code and (table or 0) > CLAUDE_CODE_WINDOW:
        return _claude_code_window(model, _evidence(session))
    if table is not None:
        return ContextWindow(table, "table", f"{key}'s window in pi-ai's model table", model)
    what = f"no window known for {model}" if model else "no model recorded"
    return ContextWindow(DEFAULT_CONTEXT_WINDOW, "unknown", f"{what}: default assumed", model)

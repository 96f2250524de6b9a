"""The values that cross the model seam: a summary request, its response, the protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from ._cache_key import cache_key

DEFAULT_CONTEXT_WINDOW = 128_000


@dataclass(frozen=True)
class SummaryRequest:
    """One summarizer call: a system prompt and a single user message (spec §5.2).

    Attributes:
        system_prompt: The system prompt.
        prompt: The user message text (conversation block, previous summary, instructions).
        max_tokens: The output-token cap.
        reasoning_effort: `low`/`medium`/`high`/... or None for no reasoning option.
        purpose: What the call is for (`summary`, `turn-prefix`, `branch`, `handoff`,
            `short-summary`): recorded, not sent.
        history: For handoff: the live message history (LLM-shaped dicts) sent before the
            prompt, so the provider's prompt cache is reused (spec §6.4).
        tools: For handoff: the live tool definitions (Chat Completions `tools` entries),
            sent so the cached prefix matches the agent's own requests.
        tool_choice: For handoff: `none` (the seed forces no tool use); sent only with
            tools. None: not sent.
    """

    system_prompt: str
    prompt: str
    max_tokens: int
    reasoning_effort: str | None = None
    purpose: str = "summary"
    history: tuple[Mapping[str, Any], ...] = ()
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str | None = None

    def chat_messages(self) -> list[dict[str, Any]]:
        """The Chat Completions `messages` array."""
        msgs: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        msgs.extend(dict(m) for m in self.history)
        msgs.append({"role": "user", "content": self.prompt})
        return msgs


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class SummaryResponse:
    """What a summarizer returned, and what it cost.

    Attributes:
        text: The summary text (text parts joined with newlines).
        input_tokens: Prompt tokens billed (as reported, else estimated).
        output_tokens: Completion tokens billed.
        latency_s: Wall time of the call that produced it (0 for a cache hit).
        model: The model that answered.
        stop_reason: `stop`, `length` or `error`.
        cached: True when served from the disk cache without a request.
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    stop_reason: str = "stop"
    cached: bool = False

    def to_record(self) -> dict[str, Any]:
        """The JSON object the disk cache stores."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> SummaryResponse | None:
        """A cached response from its record; None when the record has the wrong shape."""
        if not isinstance(record, Mapping):
            return None
        text, model, stop = record.get("text"), record.get("model", ""), record.get("stop_reason")
        tokens_in = _count(record.get("input_tokens", 0))
        tokens_out = _count(record.get("output_tokens", 0))
        if not isinstance(text, str) or not text.strip() or not isinstance(model, str):
            return None
        if stop not in ("stop", "length") or tokens_in is None or tokens_out is None:
            return None
        return cls(text, tokens_in, tokens_out, 0.0, model, stop, cached=True)


@runtime_checkable
class Summarizer(Protocol):
    """Anything that turns a `SummaryRequest` into a `SummaryResponse`.

    `model` and `context_window` are read-only here, so a field or a property satisfies them.
    """

    @property
    def model(self) -> str | None:
        """The model that answers, as results record it."""
        ...

    @property
    def context_window(self) -> int:
        """The model's window in tokens (for folding oversized inputs)."""
        ...

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Run one request."""
        ...


def request_key(identity: Mapping[str, Any], request: SummaryRequest) -> str:
    """The cache key of a request: sha256 over the endpoint identity and the full request.

    `identity` holds base URL, model and sampling options, never the API key. The handoff
    fields `tools` and `tool_choice` enter the key only when set, so the keys of every
    other request (and the caches already on disk) stay as they were.
    """
    fields = asdict(request)
    for name in _KEYED_WHEN_SET:
        if not fields[name]:
            del fields[name]
    return cache_key({"identity": dict(identity), "request": fields})


_KEYED_WHEN_SET: tuple[str, ...] = ("tools", "tool_choice")

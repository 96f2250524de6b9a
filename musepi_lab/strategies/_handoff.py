"""`handoff`: the model writes a handoff document, and the agent continues in a new session.

As the seed describes MusePi's handoff: the request replays the live context (the system
prompt, the tools when known, the message history as the agent would send it next) and ends
with one more user message holding the `handoff-document` prompt (and an
`Additional focus:` line when instructions are given), with `tool_choice: "none"`, so a
provider's prompt cache is reused. No compaction entry is written: `handoff()` returns a
**new** session whose header names the parent (`parentSession`) and whose first entry is a
visible `custom_message` with `customType: "handoff"` holding the document (wrapped by the
`handoff-context` prompt). The parent session is not changed.

A recorded session holds neither the live system prompt nor the tools; the caller may pass
them, else the request uses the prompt set's `handoff-system` prompt when the set has one,
else `summarization-system`, and no tools.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._options import Options
from .._prompts import PromptSet, resolve_prompts
from ..compaction._file_ops import compute_file_lists, file_details
from ..compaction._result import CompactionResult
from ..compaction._settings import CompactionSettings
from ..context._build import UNSET, build_session_context
from ..context._llm import convert_to_llm, provider_messages
from ..formats._records import stable_id
from ..llm._summarizer import Summarizer, SummarizerError, SummaryRequest, SummaryResponse
from ..session._model import Entry
from ..session._session import Session, iso_timestamp
from ..tokens._counter import TokenCounter
from ._base import CompactionContext, Strategy, register
from ._chat_format import to_chat_messages
from ._llm_summary import run_params
from ._summary_input import (
    DEFAULT_SUMMARIZER_WINDOW,
    fold_input_budget,
    reasoning_effort,
    thinking_level_at,
)

HANDOFF_SYSTEM_PROMPTS: tuple[str, ...] = ("handoff-system", "summarization-system")
"""System prompts tried in order: the first one the prompt set holds is used."""

HANDOFF_CUSTOM_TYPE = "handoff"
"""`customType` of the custom message that opens the new session (the seed)."""

MIN_HANDOFF_MESSAGES = 2
"""MusePi refuses a handoff with fewer message entries on the branch."""


def handoff_prompt(document_prompt: str, focus: str | None) -> str:
    """The final user message: the handoff prompt, plus `Additional focus: …` when given."""
    return f"{document_prompt}\n\nAdditional focus: {focus}" if focus else document_prompt


def live_llm_messages(
    session: Session, leaf_id: str | None, profile: str, prompts: PromptSet
) -> list[dict[str, Any]]:
    """The context the agent would send at the leaf, as provider messages."""
    context = build_session_context(session, UNSET if leaf_id is None else leaf_id, profile=profile)
    return provider_messages(convert_to_llm(context.messages, profile=profile, prompts=prompts))


def history_start(messages: Sequence[Mapping[str, Any]], counter: TokenCounter, budget: int) -> int:
    """Index of the oldest message to replay so the rest fits `budget` tokens.

    Everything is replayed when it fits. Otherwise the replay starts at the oldest user
    (or developer) message whose suffix fits, so no tool result loses its call; when no
    such suffix fits, at the last user message anyway (the provider may then reject the
    request, which is the honest outcome).
    """
    counts = [counter.count_message(m) for m in messages]
    if sum(counts) <= budget:
        return 0
    starts = [i for i, m in enumerate(messages) if m.get("role") in ("user", "developer")]
    if not starts:
        return 0
    openers = set(starts)
    suffix = 0
    best = starts[-1]
    for index in range(len(messages) - 1, -1, -1):
        suffix += counts[index]
        if suffix > budget:
            break
        if index in openers:
            best = index
    return best


@dataclass(frozen=True)
class HandoffOptions(Options):
    """How the handoff request is made (the strategy's parameters, and `handoff()`'s
    options: each one also a keyword of `handoff()`).

    Attributes:
        custom_instructions: Focus for the document (`Additional focus: …`).
        auto: A threshold-triggered handoff: without instructions, the
            `auto-handoff-threshold-focus` prompt supplies the focus (spec §6.4).
        trim_history: Drop the oldest turns of the replayed history when it would not fit
            the summarizer's `context_window` (the live agent skips the handoff then; a
            benchmark would rather get a document).
        images: Replay images as data URLs (off: each becomes `[image omitted]`).
        thinking_level: Thinking level that sets the reasoning effort; None reads the
            session's.
        system_prompt: The live system prompt; None uses the prompt set's (see module).
        tools: The live tool definitions (Chat Completions `tools` entries), if known.
    """

    custom_instructions: str | None = None
    auto: bool = False
    trim_history: bool = True
    images: bool = False
    thinking_level: str | None = None
    system_prompt: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class HandoffRequest:
    """The request a handoff sends, and what it replays.

    Attributes:
        request: The request through the model seam.
        history_dropped: Oldest live messages left out to fit the window.
        cache_prefix_tokens: Tokens of the live context the request repeats from its start
            (the prefix a provider's prompt cache can serve; 0 when the history was trimmed).
    """

    request: SummaryRequest
    history_dropped: int
    cache_prefix_tokens: int


def build_handoff_request(
    session: Session,
    options: HandoffOptions,
    *,
    leaf_id: str | None,
    profile: str,
    prompts: PromptSet,
    counter: TokenCounter,
    max_tokens: int,
    context_window: int,
) -> HandoffRequest:
    """The handoff request for the path to `leaf_id` (pure)."""
    system_prompt = options.system_prompt
    if system_prompt is None:
        system_prompt = prompts.text(next(n for n in HANDOFF_SYSTEM_PROMPTS if n in prompts.texts))
    focus = options.custom_instructions
    if focus is None and options.auto:
        focus = prompts.text("auto-handoff-threshold-focus")
    prompt = handoff_prompt(prompts.text("handoff-document"), focus)
    live = live_llm_messages(session, leaf_id, profile, prompts)
    start = 0
    if options.trim_history:
        budget = fold_input_budget(context_window, max_tokens) - counter.count_text(prompt)
        start = history_start(live, counter, budget)
    history = to_chat_messages(live[start:], images=options.images)
    level = options.thinking_level
    if level is None:
        level = thinking_level_at(session.path(leaf_id))
    effort = reasoning_effort(level) if profile == "musepi" else "high"
    request = SummaryRequest(
        system_prompt=system_prompt,
        prompt=prompt,
        max_tokens=max_tokens,
        reasoning_effort=effort,
        purpose="handoff",
        history=tuple(history),
        tools=tuple(options.tools),
        tool_choice="none",
    )
    prefix = counter.count_messages(live) if start == 0 else 0
    return HandoffRequest(request, start, prefix)


def handoff_document(response: SummaryResponse) -> str:
    """The document of a handoff answer; an error or an empty answer is an error."""
    if response.stop_reason == "error":
        raise SummarizerError("Handoff failed: the model answered with an error")
    document = response.text.strip()
    if not document:
        raise SummarizerError("Handoff failed: the model returned an empty document")
    return document


def handoff_session(
    parent: Session,
    document: str,
    *,
    prompts: PromptSet,
    session_id: str | None = None,
    timestamp: str | None = None,
) -> Session:
    """The new session a handoff starts (pure): a header naming the parent, then the
    visible `custom_message` (`customType: "handoff"`, attributed to the agent) holding
    the document wrapped by the `handoff-context` prompt.

    Args:
        parent: The session handed off.
        document: The handoff document.
        prompts: The prompt set (its `handoff-context` wraps the document).
        session_id: The new session's id (default: derived from the parent's id and
            the document, so a benchmark gives identical sessions run after run).
        timestamp: ISO timestamp of the header and the entry (default: now).
    """
    moment = timestamp or iso_timestamp()
    sid = session_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent.id}\x1fhandoff\x1f{document}"))
    header: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "timestamp": moment}
    if parent.cwd is not None:
        header["cwd"] = parent.cwd
    # pi's header names the parent session's file; a session never written names its id.
    header["parentSession"] = parent.source_path or parent.id
    record = {
        "type": "custom_message",
        "id": stable_id(sid, HANDOFF_CUSTOM_TYPE),
        "parentId": None,
        "timestamp": moment,
        "customType": HANDOFF_CUSTOM_TYPE,
        "content": prompts.render("handoff-context", document=document),
        "display": True,
        "attribution": "agent",
    }
    return Session(header, (Entry.from_record(record),))


@dataclass(frozen=True)
class HandoffResult:
    """What `handoff()` produced.

    Attributes:
        session: The new session (header with `parentSession`, then the handoff message).
        message: The `custom_message` entry holding the document.
        document: The document the model wrote.
        request: The request sent, and the cache prefix it repeats.
        response: The model's answer (tokens, latency, model).
    """

    session: Session
    message: Entry
    document: str
    request: HandoffRequest
    response: SummaryResponse


def handoff(
    session: Session,
    summarizer: Summarizer,
    *,
    leaf_id: str | None = None,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    prompts: PromptSet | str | None = None,
    session_id: str | None = None,
    timestamp: str | None = None,
    options: HandoffOptions | None = None,
    **keywords: Any,
) -> HandoffResult:
    """Hand a session off: ask for the handoff document and start the new session.

    Args:
        session: The session handed off (not changed; nothing is written).
        summarizer: The model seam.
        leaf_id: The leaf whose path is handed off (default: the session leaf).
        settings: Compaction settings (profile, output cap); default MusePi's.
        counter: Token counter (default: the profile's estimator).
        prompts: The prompt set or a folder of prompts.
        session_id: Id of the new session (default: derived).
        timestamp: Time of the new session (default: now).
        options: How the request is made, a `HandoffOptions` (default: its defaults).
        **keywords: Any option of `HandoffOptions` by name (`custom_instructions=`,
            `system_prompt=`, `tools=`, `auto=`, `trim_history=`, `images=`,
            `thinking_level=`), replacing the one in `options`.

    Raises:
        ValueError: Fewer than two message entries on the path (nothing to hand off).
        SummarizerError: The model failed, or returned no document.
        TypeError: A keyword that is not an option.
    """
    opts = HandoffOptions.given(options, keywords, "handoff")
    opts = opts.copy_with(tools=tuple(opts.tools))
    settings = settings or CompactionSettings.musepi()
    prompt_set = resolve_prompts(prompts)
    if sum(1 for e in session.path(leaf_id) if e.type == "message") < MIN_HANDOFF_MESSAGES:
        raise ValueError(f"Nothing to hand off in session {session.id!r} (no messages yet)")
    built = build_handoff_request(
        session,
        opts,
        leaf_id=leaf_id,
        profile=settings.profile,
        prompts=prompt_set,
        counter=counter or TokenCounter.for_profile(settings.profile),
        max_tokens=settings.summary_max_tokens,
        context_window=getattr(summarizer, "context_window", None) or DEFAULT_SUMMARIZER_WINDOW,
    )
    response = summarizer.summarize(built.request)
    document = handoff_document(response)
    new = handoff_session(
        session, document, prompts=prompt_set, session_id=session_id, timestamp=timestamp
    )
    return HandoffResult(new, new.entries[0], document, built, response)


@register
@dataclass(frozen=True)
class Handoff(Strategy):
    """A handoff document written from the live context; the result's `new_session` is the
    session the agent continues in (no compaction entry, as the seed says).

    Attributes:
        custom_instructions: Focus for the document; when None, the instructions given to
            `compact()` are used.
        auto: A threshold-triggered handoff: without instructions, the
            `auto-handoff-threshold-focus` prompt supplies the focus (spec §6.4).
        trim_history: Drop the oldest turns of the replayed history when it would not
            fit the summarizer's `context_window`.
        images: Replay images as data URLs (off: each becomes `[image omitted]`, which
            text-only endpoints accept).
        thinking_level: Thinking level that sets the reasoning effort; None reads the
            session's.
    """

    name: ClassVar[str] = "handoff"
    needs_summarizer: ClassVar[bool] = True

    custom_instructions: str | None = None
    auto: bool = False
    trim_history: bool = True
    images: bool = False
    thinking_level: str | None = None

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Ask for the handoff document (None when the engine found nothing to do)."""
        prep = ctx.preparation
        if prep is None:
            return None
        summarizer = ctx.require_summarizer(self.name)
        done = handoff(
            ctx.session,
            summarizer,
            leaf_id=ctx.leaf_id,
            custom_instructions=self.custom_instructions or prep.custom_instructions,
            settings=ctx.settings,
            counter=ctx.counter,
            prompts=ctx.prompts,
            auto=self.auto,
            trim_history=self.trim_history,
            images=self.images,
            thinking_level=self.thinking_level,
            timestamp=ctx.session.leaf.timestamp if ctx.session.leaf is not None else None,
        )
        read_files, modified_files = compute_file_lists(prep.file_ops, profile=prep.profile)
        request = done.request.request
        params = run_params(ctx, [done.response], reasoning=request.reasoning_effort)
        params["handoff_history_messages"] = len(request.history)
        params["handoff_history_dropped"] = done.request.history_dropped
        params["handoff_request_cache_prefix_tokens"] = done.request.cache_prefix_tokens
        params["handoff_session_id"] = done.session.id
        result = CompactionResult.from_preparation(
            prep,
            done.document,
            first_kept_entry_id=str(done.message.id),
            details=file_details(read_files, modified_files),
            method="handoff",
            summarizer_input_tokens=done.response.input_tokens,
            summarizer_output_tokens=done.response.output_tokens,
            # The replayed live context is the request's prefix: a prompt cache serves it.
            summarizer_cached_input_tokens=min(
                done.request.cache_prefix_tokens, done.response.input_tokens
            ),
            latency_s=done.response.latency_s,
            params=params,
            new_session=done.session,
        )
        return result

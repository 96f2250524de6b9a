"""The LLM context of a session (spec §2): what the model sees at a leaf, in two profiles.

`build_session_context` walks root→leaf and rebuilds the runtime messages (pi
`buildSessionContext`, spec §2.1; MusePi/oh-my-pi `session-context.ts`, spec §2.3).
`convert_to_llm` turns runtime messages into provider roles (spec §2.2, §2.3) and
`provider_messages` applies pi's provider-layer repairs. `transcript` is the display view:
every path entry, compactions inline.

Everything here is pure: entries and their messages are never changed; a message that needs
rewriting is copied. Messages that pass through unchanged are the session's own objects, so
treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from ..session._messages import branch_summary_message, compaction_summary_message, custom_message
from ..session._model import Entry, Message, thinking_level_of
from ..session._profiles import Profile, check_profile
from ..session._session import Session
from . import _templates as tpl
from ._passes import drop_failed_turns, strip_unpaired_calls
from ._summaries import (
    FRAME_DATA_BYTES_BUDGET,
    _crash_risk_legacy_archive,
    openai_remote_payload,
    snapcompact_archive,
    snapcompact_blocks,
)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of `leaf_id`: use the session leaf (pi's `undefined`; `None` means "no leaf")."""

# customType values oh-my-pi treats specially (spec §2.3; the continuity one is in `_passes`).
PREWALK_PLAN_TYPE = "prewalk-plan"
ADVISOR_TYPE = "advisor"

_EMPTY: Mapping[str, str] = MappingProxyType({})


# ---------------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SessionContext:
    """What the model sees at one leaf of a session.

    Attributes:
        messages: Runtime messages (pi `AgentMessage`s, before `convert_to_llm`), oldest
            first. Treat them as read-only: unchanged ones are the session's own objects.
        thinking_level: The thinking level in force at the leaf (`"off"` by default).
        model: `{"provider": ..., "modelId": ...}` of the model in force, or None.
        models: MusePi model roles → `"provider/modelId"` (`default`, `smol`, ...); the pi
            profile fills `default` only.
        entry_ids: The id of the entry each message came from (same length as `messages`).
        compaction_id: The id of the compaction whose summary opens the context, if any.
        profile: `"musepi"` or `"pi"`.
    """

    messages: tuple[Message, ...]
    thinking_level: str
    model: dict[str, str] | None
    models: Mapping[str, str]
    entry_ids: tuple[str | None, ...]
    compaction_id: str | None
    profile: str

    def __len__(self) -> int:
        return len(self.messages)


# ---------------------------------------------------------------------------------------
# Path
# ---------------------------------------------------------------------------------------
def entry_path(entries: Sequence[Entry], leaf_id: str | None = None) -> tuple[Entry, ...]:
    """Root→leaf path over a bare list of entries (pi `buildSessionContext(entries, leafId)`).

    The leaf is the entry with id `leaf_id`; an unknown or absent id falls back to the last
    entry of the list. The walk follows `parentId` and ends at a missing parent or a cycle.

    Args:
        entries: Entries in file order.
        leaf_id: The leaf to walk from.
    """
    by_id: dict[str | None, Entry] = dict(zip([e.id for e in entries], entries, strict=True))
    by_id.pop(None, None)  # entries without an id are no parents; for a duplicate, last wins
    leaf = by_id.get(leaf_id) if leaf_id is not None else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is not None and leaf.id is not None and by_id[leaf.id] is leaf:
        walked = _walk_without_cycle(by_id, leaf)
        if walked is not None:
            return walked
    out: list[Entry] = []
    seen: set[str] = set()
    node = leaf
    while node is not None:
        out.append(node)
        if node.id is None:
            break
        seen.add(node.id)
        parent = node.parent_id
        node = by_id.get(parent) if parent is not None and parent not in seen else None
    out.reverse()
    return tuple(out)


def _walk_without_cycle(by_id: dict[str | None, Entry], leaf: Entry) -> tuple[Entry, ...] | None:
    """The root→leaf path when the walk meets no cycle, else None.

    Without a cycle the walk visits each entry of `by_id` at most once, so it needs no
    seen-set (which costs about as much again per step); a longer walk has met a cycle.
    A root's `parentId` of None finds nothing: None is never a key.
    """
    get = by_id.get
    out = [leaf]
    append = out.append
    parent = leaf.parent_id
    for _ in range(len(by_id)):
        node = get(parent)
        if node is None:
            out.reverse()
            return tuple(out)
        append(node)
        parent = node.parent_id
    return None


def _as_entries(items: Iterable[Entry | Mapping[str, Any]]) -> list[Entry]:
    items = list(items)
    if set(map(type, items)) == {Entry}:  # the usual case, checked in C
        return items  # type: ignore[return-value]
    return [i if isinstance(i, Entry) else Entry.from_record(i) for i in items]


def _resolve_path(
    source: Session | Iterable[Entry | Mapping[str, Any]], leaf_id: Any
) -> tuple[Entry, ...]:
    leaf = None if leaf_id is UNSET else leaf_id
    if isinstance(source, Session):
        return source.path(leaf)
    return entry_path(_as_entries(source), leaf)


# ---------------------------------------------------------------------------------------
# Settings: thinking level, model, compaction (spec §2.1 step 3, §2.3)
# ---------------------------------------------------------------------------------------
def _split_model(ref: str | None) -> dict[str, str] | None:
    if not ref:
        return None
    provider, sep, model_id = ref.partition("/")
    return {"provider": provider, "modelId": model_id} if sep else {"provider": "", "modelId": ref}


def _pi_model_of(entry: Entry) -> tuple[bool, dict[str, str] | None]:
    """`(sets, model)`: whether a pi entry sets the model, and to what."""
    kind = entry.type
    if kind == "model_change":
        provider, model_id = entry.get("provider"), entry.get("modelId")
        if isinstance(provider, str) and isinstance(model_id, str):
            return True, {"provider": provider, "modelId": model_id}
        if isinstance(entry.get("model"), str):
            return True, _split_model(entry.get("model"))
    elif kind == "message":
        msg = entry.message
        if msg is not None and msg.get("role") == "assistant":
            return True, {"provider": str(msg.get("provider")), "modelId": str(msg.get("model"))}
    return False, None


def _pi_settings(path: Sequence[Entry], kinds: list[str]) -> tuple[str, dict[str, str] | None]:
    """pi: the last thinking_level_change sets the level, the last model_change or assistant
    message the model. The level is found by a scan of the kinds (in C); the model by a walk
    from the leaf, which usually meets an assistant message within a few entries."""
    at = _last_of(kinds, "thinking_level_change")
    level = thinking_level_of(path[at], "off") if at >= 0 else "off"
    for index in range(len(kinds) - 1, -1, -1):
        kind = kinds[index]
        if kind == "message" or kind == "model_change":
            sets, model = _pi_model_of(path[index])
            if sets:
                return level, model
    return level, None


def _model_change_ref(entry: Entry) -> str | None:
    ref = entry.get("model")
    if isinstance(ref, str) and ref:
        return ref
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(provider, str) and isinstance(model_id, str):
        return f"{provider}/{model_id}"  # legacy pi layout, migrated by oh-my-pi on load
    return None


def _assistant_model_ref(entry: Entry) -> str | None:
    msg = entry.message
    if msg is not None and msg.get("role") == "assistant":
        provider, model = msg.get("provider"), msg.get("model")
        if isinstance(provider, str) and isinstance(model, str):
            return f"{provider}/{model}"
    return None


def _musepi_settings(path: Sequence[Entry]) -> tuple[str, dict[str, str]]:
    """MusePi: the last model_change of each role sets that role; an explicit default
    model_change wins over every assistant message, else the last assistant message sets
    the default. Walked from the leaf, looking into messages only until one sets it."""
    level: str | None = None
    latest: dict[str, str] = {}  # role → ref, the latest model_change first seen
    assistant: str | None = None
    for entry in reversed(path):
        kind = entry.type
        if kind == "message":
            if assistant is None:
                assistant = _assistant_model_ref(entry)
        elif kind == "thinking_level_change":
            if level is None:
                level = thinking_level_of(entry, "off")
        elif kind == "model_change":
            ref = _model_change_ref(entry)
            if ref is not None:
                role = entry.get("role")
                latest.setdefault(role if isinstance(role, str) and role else "default", ref)
    # Roles oldest first (by their latest change); only the mapping is meaningful.
    models = dict(reversed(latest.items()))
    if "default" not in models and assistant is not None:
        models = {"default": assistant, **models}
    return level if level is not None else "off", models


def default_model(path: Sequence[Entry]) -> str | None:
    """MusePi: the `provider/modelId` of the default model in force at the end of `path`
    (an explicit default `model_change`, else the last assistant message's), or None."""
    return _musepi_settings(path)[1].get("default")


def _last_index(path: Sequence[Entry], kind: str) -> int:
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == kind:
            return index
    return -1


def _last_of(kinds: list[str], kind: str) -> int:
    """Index of the last `kind` in `kinds` (entry types of a path), or -1; scanned in C."""
    try:
        return len(kinds) - 1 - kinds[::-1].index(kind)
    except ValueError:
        return -1


# ---------------------------------------------------------------------------------------
# Entry → runtime message
# ---------------------------------------------------------------------------------------
def _pi_message(entry: Entry) -> Message | None:
    """pi `appendMessage` (spec §2.1 step 4)."""
    kind = entry.type
    if kind == "message":
        return entry.message
    if kind == "custom_message":
        return custom_message(entry)
    if kind == "branch_summary" and entry.get("summary"):
        return branch_summary_message(entry)
    return None


def _has_output(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if kind == "text":
        return _nonblank(block.get("text"))
    if kind == "thinking":
        return _nonblank(block.get("thinking")) or _nonblank(block.get("thinkingSignature"))
    if kind == "redactedThinking":
        return _nonblank(block.get("data"))
    return kind != "fallback"  # tool calls and unknown kinds count as output


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def is_empty_error_turn(message: Message) -> bool:
    """An assistant turn with stopReason `error` and no output at all (oh-my-pi skips it)."""
    if message.get("stopReason") != "error":
        return False
    content = message.get("content")
    return not (isinstance(content, list) and any(_has_output(b) for b in content))


def _sent_turn(msg: Message) -> bool:
    """Whether oh-my-pi sends an assistant turn: not a retry's recovery, not an empty error."""
    return not (msg.get("retryRecovery") or is_empty_error_turn(msg))


def _musepi_message(entry: Entry, *, llm: bool) -> Message | None:
    """oh-my-pi `appendMessage` (spec §2.3); `llm=False` is the display transcript."""
    kind = entry.type
    if kind == "message":
        msg = entry.message
        if llm and msg is not None and msg.get("role") == "assistant" and not _sent_turn(msg):
            return None
        return msg
    if kind == "custom_message":
        if llm and entry.get("customType") == PREWALK_PLAN_TYPE:
            return None
        if not isinstance(entry.get("content"), (str, list)):
            return None  # malformed content never reaches the model
        msg = custom_message(entry)
        attribution = entry.get("attribution")
        if attribution is not None:
            msg["attribution"] = "user" if attribution == "user" else "agent"
        return msg
    if kind == "branch_summary" and entry.get("summary"):
        return branch_summary_message(entry)
    return None


def _pi_compaction_message(entry: Entry) -> dict[str, Any]:
    full = compaction_summary_message(entry)
    return {k: full[k] for k in ("role", "summary", "tokensBefore", "timestamp")}


def _musepi_compaction_message(
    entry: Entry, *, active: bool = True, frame_budget: int | None = FRAME_DATA_BYTES_BUDGET
) -> dict[str, Any]:
    """The compactionSummary of oh-my-pi: metadata, remote payload, snapcompact blocks."""
    msg = compaction_summary_message(entry)
    if not active:
        msg["summary"] = tpl.SUPERSEDED_COMPACTION_SUMMARY
        msg["shortSummary"] = tpl.SUPERSEDED_COMPACTION_SHORT_SUMMARY
        return msg
    payload = openai_remote_payload(entry)
    if payload is not None:
        msg["providerPayload"] = payload
    archive = snapcompact_archive(entry.get("preserveData"))
    if archive is not None:
        budget = frame_budget
        if budget is not None and _crash_risk_legacy_archive(archive):
            budget = 0
        blocks = snapcompact_blocks(archive, max_frame_bytes=budget)
        if blocks:
            msg["blocks"] = blocks
            images = [b for b in blocks if b.get("type") == "image"]
            if images:
                msg["images"] = images
    return msg


# ---------------------------------------------------------------------------------------
# build_session_context
# ---------------------------------------------------------------------------------------
def _empty_context(profile: str) -> SessionContext:
    return SessionContext((), "off", None, _EMPTY, (), None, profile)


_first, _second = itemgetter(0), itemgetter(1)


def _pi_run(entries: Sequence[Entry], kinds: list[str]) -> tuple[list[Message], list[str | None]]:
    """pi `appendMessage` over consecutive path entries: their messages and entry ids.

    Same result as `_pi_message` per entry, without its call for the common case: a path
    holding only `message` entries and settings changes (which add nothing).
    """
    if "custom_message" in kinds or "branch_summary" in kinds:
        pairs = [(m, e.id) for e in entries if (m := _pi_message(e)) is not None]
        return list(map(_first, pairs)), list(map(_second, pairs))
    # Two plain comprehensions cost less than one building pairs and two splitting them.
    messages = [m for e in entries if (m := e.message) is not None]
    return messages, [e.id for e in entries if e.message is not None]


def _pi_messages(
    path: Sequence[Entry], kinds: list[str]
) -> tuple[list[Message], list[str | None], str | None]:
    """pi's messages at the end of `path`, their entry ids, and the compaction id if any."""
    c = _last_of(kinds, "compaction")
    if c < 0:
        messages, ids = _pi_run(path, kinds)
        return messages, ids, None
    compaction = path[c]
    messages, ids = [_pi_compaction_message(compaction)], [compaction.id]
    first_kept = compaction.get("firstKeptEntryId")
    k = _index_or([entry.id for entry in path[:c]], first_kept, c)  # c: no kept region
    for start, end in ((k, c), (c + 1, len(path))):
        more, more_ids = _pi_run(path[start:end], kinds[start:end])
        messages += more
        ids += more_ids
    return messages, ids, compaction.id


def _musepi_run(entries: Sequence[Entry], kinds: list[str]) -> list[tuple[Message, str | None]]:
    """oh-my-pi `appendMessage` (for the model) over consecutive path entries: (message,
    entry id) pairs. The per-entry function is called only when the run holds a custom
    message or a branch summary; otherwise the entries' messages are taken directly."""
    if "custom_message" in kinds or "branch_summary" in kinds:
        return [(m, e.id) for e in entries if (m := _musepi_message(e, llm=True)) is not None]
    return [
        (m, e.id)
        for e in entries
        if (m := e.message) is not None and (m.get("role") != "assistant" or _sent_turn(m))
    ]


def _musepi_messages(
    path: Sequence[Entry],
) -> tuple[list[tuple[Message, str | None]], str | None]:
    kinds = [entry.type for entry in path]
    c = _last_of(kinds, "compaction")
    reset = _last_of(kinds, "reset_boundary")
    if reset >= 0 and reset > c:
        # A /clear after the latest compaction hides it and its kept tail too.
        return _musepi_run(path[reset + 1 :], kinds[reset + 1 :]), None
    if c < 0:
        return _musepi_run(path, kinds), None
    compaction = path[c]
    summary = _musepi_compaction_message(compaction)
    out: list[tuple[Message, str | None]] = [(summary, compaction.id)]
    ids = [entry.id for entry in path[:c]]
    if "providerPayload" not in summary:
        start = _index_or(ids, compaction.get("firstKeptEntryId"), c)
    else:
        # The remote payload already holds the kept turns; only what came after the
        # replayed point is re-sent.
        through = compaction.get("providerReplayThroughEntryId")
        start = _index_or(ids, through, c - 1) + 1 if isinstance(through, str) else c
    out += _musepi_run(path[start:c], kinds[start:c])
    out += _musepi_run(path[c + 1 :], kinds[c + 1 :])
    return out, compaction.id


def _index_or(ids: list[str | None], entry_id: Any, missing: int) -> int:
    """The first index of `entry_id` in `ids`, or `missing`."""
    try:
        return ids.index(entry_id)
    except ValueError:
        return missing


def build_session_context(
    session: Session | Iterable[Entry | Mapping[str, Any]],
    leaf_id: str | None = UNSET,
    *,
    profile: Profile | str = "musepi",
) -> SessionContext:
    """The messages, thinking level and model the LLM sees at a leaf (spec §2.1, §2.3).

    Args:
        session: A `Session`, or entries (`Entry` or v3 records) in file order, as pi's
            `buildSessionContext(entries, leafId)` takes them.
        leaf_id: The leaf. Left out: the session leaf (the last entry in file order);
            None: an empty context (navigated before the first entry); an unknown id falls
            back to the last entry in file order.
        profile: `"musepi"` (default, spec §2.3) or `"pi"` (exactly spec §2.1).

    Returns:
        The context; `entry_ids[i]` names the entry `messages[i]` came from.

    Raises:
        ValueError: Unknown profile.
    """
    check_profile(profile)
    if leaf_id is None:
        return _empty_context(profile)
    path = _resolve_path(session, leaf_id)
    if not path:
        return _empty_context(profile)
    if profile == "pi":
        kinds = [entry.type for entry in path]
        level, model = _pi_settings(path, kinds)
        models = {"default": f"{model['provider']}/{model['modelId']}"} if model else {}
        messages, ids, compaction_id = _pi_messages(path, kinds)
        return SessionContext(
            tuple(messages),
            level,
            model,
            MappingProxyType(models),
            tuple(ids),
            compaction_id,
            profile,
        )
    level, role_models = _musepi_settings(path)
    items, compaction_id = _musepi_messages(path)
    items = drop_failed_turns(strip_unpaired_calls(items, transcript=False))
    return SessionContext(
        messages=tuple(map(_first, items)),
        thinking_level=level,
        model=_split_model(role_models.get("default")),
        models=MappingProxyType(role_models),
        entry_ids=tuple(map(_second, items)),
        compaction_id=compaction_id,
        profile=profile,
    )

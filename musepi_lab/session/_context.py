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
from types import MappingProxyType
from typing import Any, Literal

import orjson

from .._prompts import PromptSet, resolve_prompts
from . import _templates as tpl
from ._messages import branch_summary_message, compaction_summary_message, custom_message
from ._model import Entry
from ._session import Session

Profile = Literal["musepi", "pi"]
PROFILES: tuple[str, ...] = ("musepi", "pi")
"""Context profiles: `musepi` (the default, spec §2.3) and `pi` (spec §2.1–2.2)."""


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of `leaf_id`: use the session leaf (pi's `undefined`; `None` means "no leaf")."""

# customType values oh-my-pi treats specially (spec §2.3).
INTERRUPTED_THINKING_TYPE = "interrupted-thinking"
PREWALK_PLAN_TYPE = "prewalk-plan"
ADVISOR_TYPE = "advisor"

# Snapcompact archive rebuild (spec §6.2).
SNAPCOMPACT_PRESERVE_KEY = "snapcompact"
FRAME_DATA_BYTES_BUDGET = 3_000_000
"""Base64 bytes of snapcompact frames one rebuilt request may carry (newest frames win)."""
_LEGACY_FRAME_COUNT_GUARD = 16
_LEGACY_ARCHIVE_TEXT_GUARD = 250_000
_LEGACY_TRUNCATED_CHARS_GUARD = 1_000_000
_NEWLINE_GLYPH = "\u2588"

_EMPTY: Mapping[str, str] = MappingProxyType({})
Message = Mapping[str, Any]


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


@dataclass(frozen=True, slots=True)
class TranscriptItem:
    """One row of the display transcript.

    Attributes:
        entry_id: The entry the row shows.
        entry_type: That entry's type (`message`, `compaction`, `custom_message`, ...).
        message: The runtime message shown (a `compactionSummary` for compactions).
        superseded: True for a compaction replaced by a later one on the path (its summary
            is elided).
    """

    entry_id: str | None
    entry_type: str
    message: Message
    superseded: bool = False

    @property
    def role(self) -> str | None:
        """The role of the row's message."""
        role = self.message.get("role")
        return role if isinstance(role, str) else None


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
    by_id: dict[str, Entry] = {}
    for entry in entries:
        if entry.id is not None:
            by_id[entry.id] = entry
    leaf = by_id.get(leaf_id) if leaf_id is not None else None
    if leaf is None:
        leaf = entries[-1] if entries else None
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


def _as_entries(items: Iterable[Entry | Mapping[str, Any]]) -> list[Entry]:
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


def _level(entry: Entry) -> str:
    value = entry.get("thinkingLevel")
    return value if isinstance(value, str) and value else "off"


def _pi_settings(path: Sequence[Entry]) -> tuple[str, dict[str, str] | None]:
    """pi: the last model_change or assistant message sets the model."""
    level = "off"
    model: dict[str, str] | None = None
    for entry in path:
        kind = entry.type
        if kind == "thinking_level_change":
            level = _level(entry)
        elif kind == "model_change":
            provider, model_id = entry.get("provider"), entry.get("modelId")
            if isinstance(provider, str) and isinstance(model_id, str):
                model = {"provider": provider, "modelId": model_id}
            elif isinstance(entry.get("model"), str):
                model = _split_model(entry.get("model"))
        elif kind == "message":
            msg = entry.message
            if msg is not None and msg.get("role") == "assistant":
                model = {"provider": msg.get("provider"), "modelId": msg.get("model")}
    return level, model


def _model_change_ref(entry: Entry) -> str | None:
    ref = entry.get("model")
    if isinstance(ref, str) and ref:
        return ref
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if isinstance(provider, str) and isinstance(model_id, str):
        return f"{provider}/{model_id}"  # legacy pi layout, migrated by oh-my-pi on load
    return None


def _musepi_settings(path: Sequence[Entry]) -> tuple[str, dict[str, str]]:
    """MusePi: an explicit default model_change wins over later assistant messages."""
    level = "off"
    models: dict[str, str] = {}
    explicit_default = False
    for entry in path:
        kind = entry.type
        if kind == "thinking_level_change":
            level = _level(entry)
        elif kind == "model_change":
            ref = _model_change_ref(entry)
            if ref is not None:
                role = entry.get("role")
                role = role if isinstance(role, str) and role else "default"
                models[role] = ref
                explicit_default = explicit_default or role == "default"
        elif kind == "message" and not explicit_default:
            msg = entry.message
            if msg is not None and msg.get("role") == "assistant":
                provider, model = msg.get("provider"), msg.get("model")
                if isinstance(provider, str) and isinstance(model, str):
                    models["default"] = f"{provider}/{model}"
    return level, models


def _last_index(path: Sequence[Entry], kind: str) -> int:
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == kind:
            return index
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


def _musepi_message(entry: Entry, *, llm: bool) -> Message | None:
    """oh-my-pi `appendMessage` (spec §2.3); `llm=False` is the display transcript."""
    kind = entry.type
    if kind == "message":
        msg = entry.message
        if (
            llm
            and msg is not None
            and msg.get("role") == "assistant"
            and (msg.get("retryRecovery") or is_empty_error_turn(msg))
        ):
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


def openai_remote_payload(entry: Entry) -> dict[str, Any] | None:
    """The OpenAI remote-compaction history a compaction carries, as a provider payload."""
    preserve = entry.get("preserveData")
    remote = preserve.get("openaiRemoteCompaction") if isinstance(preserve, Mapping) else None
    if not isinstance(remote, Mapping):
        return None
    provider, history = remote.get("provider"), remote.get("replacementHistory")
    if not isinstance(provider, str) or not provider or not isinstance(history, list):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


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
# Snapcompact archive → blocks (spec §6.2 "Context rebuild")
# ---------------------------------------------------------------------------------------
def _valid_frame(frame: Any) -> bool:
    return (
        isinstance(frame, Mapping)
        and isinstance(frame.get("data"), str)
        and isinstance(frame.get("mimeType"), str)
        and all(_is_number(frame.get(k)) for k in ("cols", "rows", "chars"))
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def snapcompact_archive(preserve_data: Any) -> dict[str, Any] | None:
    """The snapcompact archive kept in a compaction's `preserveData`, validated, or None.

    Invalid frames are left out; an archive with neither frames nor text is None.
    """
    if not isinstance(preserve_data, Mapping):
        return None
    archive = preserve_data.get(SNAPCOMPACT_PRESERVE_KEY)
    if not isinstance(archive, Mapping):
        return None
    raw_frames = archive.get("frames")
    frames = [f for f in raw_frames if _valid_frame(f)] if isinstance(raw_frames, list) else []
    out: dict[str, Any] = {
        "frames": frames,
        "totalChars": archive.get("totalChars") if _is_number(archive.get("totalChars")) else 0,
        "truncatedChars": (
            archive.get("truncatedChars") if _is_number(archive.get("truncatedChars")) else 0
        ),
    }
    for key in ("text", "textHead", "textTail"):
        value = archive.get(key)
        if isinstance(value, str) and value:
            out[key] = value
    if not frames and not any(k in out for k in ("text", "textHead", "textTail")):
        return None
    return out


def _archive_text_len(archive: Mapping[str, Any]) -> int:
    text = archive.get("text")
    if text is None:
        text = _NEWLINE_GLYPH.join(archive[k] for k in ("textHead", "textTail") if k in archive)
    return len(text)


def _crash_risk_legacy_archive(archive: Mapping[str, Any]) -> bool:
    """Old archives (frames without shape metadata) that were too big to send whole."""
    frames = archive["frames"]
    legacy = any(f.get("font") is None and f.get("variant") is None for f in frames)
    many = len(frames) >= _LEGACY_FRAME_COUNT_GUARD
    heavy = many or sum(len(f["data"]) for f in frames) >= FRAME_DATA_BYTES_BUDGET
    large = (
        many
        or archive["truncatedChars"] >= _LEGACY_TRUNCATED_CHARS_GUARD
        or _archive_text_len(archive) >= _LEGACY_ARCHIVE_TEXT_GUARD
    )
    return legacy and heavy and large


def _human_bytes(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1_000:
        return f"{n / 1_000:.1f} KB"
    return f"{n} B"


def _image_block(frame: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "image", "data": frame["data"], "mimeType": frame["mimeType"]}
    if frame.get("detail"):
        block["detail"] = frame["detail"]
    return block


def snapcompact_blocks(
    archive: Mapping[str, Any], *, max_frame_bytes: int | None = FRAME_DATA_BYTES_BUDGET
) -> list[dict[str, Any]]:
    """Rebuild an archive into summary blocks, oldest to newest: head text, images, tail text.

    Frames are kept newest first within `max_frame_bytes` of base64 (None: no limit); the
    older frames that do not fit are replaced by one notice.

    Args:
        archive: A validated archive (`snapcompact_archive`).
        max_frame_bytes: Base64 byte budget for the frames.
    """
    frames = archive["frames"]
    kept: list[Mapping[str, Any]] = []
    omitted = omitted_bytes = used = 0
    for frame in reversed(frames):
        size = len(frame["data"])
        if max_frame_bytes is not None and used + size > max_frame_bytes:
            omitted += 1
            omitted_bytes += size
            continue
        used += size
        kept.append(frame)
    kept.reverse()
    notice = tpl.render(
        tpl.SNAPCOMPACT_FRAMES_OMITTED, frames=f"{omitted:,}", bytes=_human_bytes(omitted_bytes)
    )
    blocks: list[dict[str, Any]] = []
    head = archive.get("textHead")
    if head:
        suffix = tpl.SNAPCOMPACT_IMAGES_BELOW if kept else f"\n{notice}\n" if omitted else ""
        blocks.append({"type": "text", "text": head + suffix})
    elif omitted and not kept:
        blocks.append({"type": "text", "text": notice})
    if kept and omitted:
        blocks.append({"type": "text", "text": notice})
    blocks.extend(_image_block(f) for f in kept)
    tail = archive.get("textTail")
    if tail:
        if kept:
            prefix = tpl.SNAPCOMPACT_IMAGES_ABOVE
        elif archive["truncatedChars"] > 0 or omitted:
            prefix = tpl.SNAPCOMPACT_MIDDLE_DROPPED
        else:
            prefix = ""
        if blocks and blocks[-1]["type"] == "text":
            blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + prefix + tail}
        else:
            blocks.append({"type": "text", "text": prefix + tail})
    return blocks


# ---------------------------------------------------------------------------------------
# build_session_context
# ---------------------------------------------------------------------------------------
def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")


def _empty_context(profile: str) -> SessionContext:
    return SessionContext((), "off", None, _EMPTY, (), None, profile)


def _emit(out: list[tuple[Message, str | None]], entries: Iterable[Entry], convert: Any) -> None:
    for entry in entries:
        msg = convert(entry)
        if msg is not None:
            out.append((msg, entry.id))


def _kept_region(path: Sequence[Entry], compaction_index: int) -> Sequence[Entry]:
    """Entries from `firstKeptEntryId` up to the compaction (none if the id is not found)."""
    first_kept = path[compaction_index].get("firstKeptEntryId")
    for index in range(compaction_index):
        if path[index].id == first_kept:
            return path[index:compaction_index]
    return ()


def _pi_messages(
    path: Sequence[Entry],
) -> tuple[list[tuple[Message, str | None]], str | None]:
    out: list[tuple[Message, str | None]] = []
    c = _last_index(path, "compaction")
    if c < 0:
        _emit(out, path, _pi_message)
        return out, None
    compaction = path[c]
    out.append((_pi_compaction_message(compaction), compaction.id))
    _emit(out, _kept_region(path, c), _pi_message)
    _emit(out, path[c + 1 :], _pi_message)
    return out, compaction.id


def _musepi_messages(
    path: Sequence[Entry],
) -> tuple[list[tuple[Message, str | None]], str | None]:
    def convert(entry: Entry) -> Message | None:
        return _musepi_message(entry, llm=True)

    out: list[tuple[Message, str | None]] = []
    c = _last_index(path, "compaction")
    reset = _last_index(path, "reset_boundary")
    if reset >= 0 and reset > c:
        # A /clear after the latest compaction hides it and its kept tail too.
        _emit(out, path[reset + 1 :], convert)
        return out, None
    if c < 0:
        _emit(out, path, convert)
        return out, None
    compaction = path[c]
    summary = _musepi_compaction_message(compaction)
    out.append((summary, compaction.id))
    if "providerPayload" not in summary:
        _emit(out, _kept_region(path, c), convert)
    else:
        # The remote payload already holds the kept turns; only what came after the
        # replayed point is re-sent.
        through = compaction.get("providerReplayThroughEntryId")
        if isinstance(through, str):
            for index in range(c):
                if path[index].id == through:
                    _emit(out, path[index + 1 : c], convert)
                    break
    _emit(out, path[c + 1 :], convert)
    return out, compaction.id


def _tool_call_ids(message: Message) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        b.get("id")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def _strip_unpaired_calls(
    items: list[tuple[Message, str | None]], *, transcript: bool
) -> list[tuple[Message, str | None]]:
    """Remove tool calls with no result on the path (spec §2.3 post-pass (a)).

    A rewritten turn also loses `redactedThinking` and its thinking signatures (a provider
    rejects a modified signed turn); an emptied turn is dropped, except in the transcript,
    where it stays with a `strippedToolCalls` count.
    """
    paired = {m.get("toolCallId") for m, _ in items if m.get("role") == "toolResult"}
    out: list[tuple[Message, str | None]] = []
    for msg, entry_id in items:
        content = msg.get("content")
        if msg.get("role") != "assistant" or not isinstance(content, list):
            out.append((msg, entry_id))
            continue
        stripped = sum(
            1
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "toolCall" and b.get("id") not in paired
        )
        if stripped == 0:
            out.append((msg, entry_id))
            continue
        kept: list[Any] = []
        for block in content:
            if isinstance(block, Mapping):
                kind = block.get("type")
                if (kind == "toolCall" and block.get("id") not in paired) or (
                    kind == "redactedThinking"
                ):
                    continue
                if kind == "thinking" and block.get("thinkingSignature"):
                    block = {k: v for k, v in block.items() if k != "thinkingSignature"}
            kept.append(block)
        if not kept and not transcript:
            continue
        rewritten = {**msg, "content": kept}
        if transcript:
            rewritten["strippedToolCalls"] = stripped
        out.append((rewritten, entry_id))
    return out


def _drop_failed_turns(
    items: list[tuple[Message, str | None]],
) -> list[tuple[Message, str | None]]:
    """Drop aborted/error assistant turns and their results (spec §2.3 post-pass (b)).

    A turn followed by the interrupted-thinking continuity message stays.
    """
    out = list(items)
    index = len(out) - 1
    while index >= 0:
        msg = out[index][0]
        if msg.get("role") == "assistant" and msg.get("stopReason") in ("aborted", "error"):
            nxt = out[index + 1][0] if index + 1 < len(out) else None
            continuity = (
                nxt is not None
                and nxt.get("role") == "custom"
                and nxt.get("customType") == INTERRUPTED_THINKING_TYPE
            )
            if not continuity:
                dropped = set(_tool_call_ids(msg))
                del out[index]
                if dropped:
                    out[index:] = [
                        item
                        for item in out[index:]
                        if not (
                            item[0].get("role") == "toolResult"
                            and item[0].get("toolCallId") in dropped
                        )
                    ]
        index -= 1
    return out


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
    _check_profile(profile)
    if leaf_id is None:
        return _empty_context(profile)
    path = _resolve_path(session, leaf_id)
    if not path:
        return _empty_context(profile)
    if profile == "pi":
        level, model = _pi_settings(path)
        models: Mapping[str, str] = (
            {"default": f"{model['provider']}/{model['modelId']}"} if model else {}
        )
        items, compaction_id = _pi_messages(path)
    else:
        level, role_models = _musepi_settings(path)
        models = role_models
        model = _split_model(role_models.get("default"))
        items, compaction_id = _musepi_messages(path)
        items = _drop_failed_turns(_strip_unpaired_calls(items, transcript=False))
    return SessionContext(
        messages=tuple(m for m, _ in items),
        thinking_level=level,
        model=model,
        models=MappingProxyType(dict(models)),
        entry_ids=tuple(e for _, e in items),
        compaction_id=compaction_id,
        profile=profile,
    )


# ---------------------------------------------------------------------------------------
# Display transcript
# ---------------------------------------------------------------------------------------
def transcript(
    session: Session | Iterable[Entry | Mapping[str, Any]],
    leaf_id: str | None = UNSET,
    *,
    keep_dangling_tool_calls: bool = False,
) -> list[TranscriptItem]:
    """The display transcript: every path entry in order, each compaction inline (spec §2.3).

    Nothing is hidden for the model's sake (retried or failed turns stay). The latest
    compaction carries its summary and snapcompact blocks; earlier ones show a fixed
    placeholder. Tool calls without a result on the path are stripped (the turn stays,
    marked with `strippedToolCalls`) unless `keep_dangling_tool_calls` is set, for a
    session caught mid-turn.

    Args:
        session: A `Session` or entries in file order.
        leaf_id: As in `build_session_context`.
        keep_dangling_tool_calls: Keep tool calls that have no result.
    """
    if leaf_id is None:
        return []
    path = _resolve_path(session, leaf_id)
    latest = _last_index(path, "compaction")
    rows: list[tuple[Message, str | None]] = []
    labels: list[tuple[str, bool]] = []
    for index, entry in enumerate(path):
        if entry.type == "compaction":
            active = index == latest
            msg: Message | None = _musepi_compaction_message(
                entry, active=active, frame_budget=None
            )
        else:
            msg = _musepi_message(entry, llm=False)
        if msg is not None:
            rows.append((msg, entry.id))
            labels.append((entry.type, entry.type == "compaction" and index != latest))
    if not keep_dangling_tool_calls:
        # Stripping never removes a row in transcript mode, so rows and labels stay aligned.
        rows = _strip_unpaired_calls(rows, transcript=True)
    return [
        TranscriptItem(entry_id=eid, entry_type=kind, message=msg, superseded=superseded)
        for (msg, eid), (kind, superseded) in zip(rows, labels, strict=True)
    ]


# ---------------------------------------------------------------------------------------
# convert_to_llm (spec §2.2 pi, §2.3 MusePi)
# ---------------------------------------------------------------------------------------
def bash_execution_text(message: Message) -> str:
    """The user text a `bashExecution` message becomes (spec §2.2)."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif _is_number(exit_code) and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def python_execution_text(message: Message) -> str:
    """The user text a MusePi `pythonExecution` message becomes (same shape as bash)."""
    text = f"Ran Python:\n```python\n{message.get('code', '')}\n```\n"
    output = message.get("output")
    text += f"Output:\n```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(execution cancelled)"
    elif _is_number(exit_code) and exit_code != 0:
        text += f"\n\nExecution failed with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _text_content(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _user(content: list[Any], message: Message, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": "user",
        "content": content,
        "timestamp": message.get("timestamp"),
    }
    out.update(extra)
    return out


def render_compaction_summary(
    message: Message, *, profile: Profile | str = "musepi", prompts: PromptSet | None = None
) -> str:
    """The wrapped text of a compactionSummary message (without snapcompact blocks).

    pi wraps with its fixed prefix and suffix; MusePi renders the prompt set's
    `compaction-summary-context` (or `handoff-summary-context` for a handoff).
    """
    summary = str(message.get("summary", ""))
    if profile == "pi":
        return tpl.COMPACTION_SUMMARY_PREFIX + summary + tpl.COMPACTION_SUMMARY_SUFFIX
    name = (
        "handoff-summary-context"
        if message.get("method") == "handoff"
        else "compaction-summary-context"
    )
    return resolve_prompts(prompts).render(name, summary=summary)


def render_branch_summary(
    message: Message, *, profile: Profile | str = "musepi", prompts: PromptSet | None = None
) -> str:
    """The wrapped text of a branchSummary message (MusePi: `branch-summary-context`)."""
    summary = str(message.get("summary", ""))
    if profile == "pi":
        return tpl.BRANCH_SUMMARY_PREFIX + summary + tpl.BRANCH_SUMMARY_SUFFIX
    return resolve_prompts(prompts).render("branch-summary-context", summary=summary)


def _pi_to_llm(message: Message) -> dict[str, Any] | None:
    role = message.get("role")
    if role in ("user", "assistant", "toolResult"):
        return dict(message)
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user([{"type": "text", "text": bash_execution_text(message)}], message)
    if role == "custom":
        return _user(_text_content(message.get("content")), message)
    if role == "branchSummary":
        return _user(
            [{"type": "text", "text": render_branch_summary(message, profile="pi")}], message
        )
    if role == "compactionSummary":
        text = render_compaction_summary(message, profile="pi")
        return _user([{"type": "text", "text": text}], message)
    return None


def pruned_tool_result_content(content: Any) -> list[Any]:
    """A pruned tool result's content: its texts as one block at the first text, images kept."""
    blocks = list(content) if isinstance(content, list) else []
    texts = [
        b.get("text", "")
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    text = "".join(texts) or tpl.PRUNED_TOOL_RESULT_TEXT
    first = next(
        (i for i, b in enumerate(blocks) if isinstance(b, Mapping) and b.get("type") == "text"),
        -1,
    )
    if first < 0:
        return [{"type": "text", "text": text}, *blocks]
    out: list[Any] = []
    for index, block in enumerate(blocks):
        is_text = isinstance(block, Mapping) and block.get("type") == "text"
        if not is_text:
            out.append(block)
        elif index == first:
            out.append({"type": "text", "text": text})
    return out


def custom_message_role(message: Message) -> str:
    """`developer` for custom messages, except advisor cards addressed to the user."""
    if message.get("customType") != ADVISOR_TYPE:
        return "developer"
    details = message.get("details")
    if isinstance(details, Mapping) and details.get("messageRole") == "user":
        return "user"
    return "developer"


def _musepi_to_llm(message: Message, prompts: PromptSet | None = None) -> dict[str, Any] | None:
    role = message.get("role")
    if role in ("custom", "hookMessage"):
        out: dict[str, Any] = {
            "role": custom_message_role(message),
            "content": _text_content(message.get("content")),
            "timestamp": message.get("timestamp"),
        }
        attribution = message.get("attribution")
        if attribution is None and message.get("customType") == ADVISOR_TYPE:
            attribution = "agent"
        if attribution is not None:
            out["attribution"] = attribution
        return out
    if role == "branchSummary":
        text = render_branch_summary(message, prompts=prompts)
        return _user([{"type": "text", "text": text}], message, attribution="agent")
    if role == "compactionSummary":
        blocks = message.get("blocks")
        if blocks is not None:
            content = [{"type": "text", "text": str(message.get("summary", ""))}, *blocks]
        else:
            images = message.get("images") or []
            content = [
                {"type": "text", "text": render_compaction_summary(message, prompts=prompts)},
                *images,
            ]
        out = _user(content, message, attribution="agent")
        if message.get("providerPayload") is not None:
            out["providerPayload"] = message["providerPayload"]
        return out
    if role == "user":
        return {**message, "attribution": message.get("attribution") or "user"}
    if role == "developer":
        return {**message, "attribution": message.get("attribution") or "agent"}
    if role == "assistant":
        return dict(message)
    if role == "toolResult":
        out = {**message, "attribution": message.get("attribution") or "agent"}
        if message.get("prunedAt") is not None:
            out["content"] = pruned_tool_result_content(message.get("content"))
        return out
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        text = bash_execution_text(message)
        return _user([{"type": "text", "text": text}], message, attribution="user")
    if role == "pythonExecution":
        if message.get("excludeFromContext"):
            return None
        text = python_execution_text(message)
        return _user([{"type": "text", "text": text}], message, attribution="user")
    return None


def convert_to_llm(
    messages: Iterable[Message],
    *,
    profile: Profile | str = "musepi",
    prompts: PromptSet | None = None,
) -> list[dict[str, Any]]:
    """Runtime messages → provider-role messages (spec §2.2 pi, §2.3 MusePi).

    pi: user/assistant/toolResult pass; bashExecution, custom and both summaries become
    user messages. MusePi: custom/hookMessage become `developer` (advisor cards addressed to
    the user stay `user`), summaries are rendered through the context templates (a handoff
    through its own), snapcompact blocks follow the raw summary, pruned tool results
    collapse to one text block, and every message gets its attribution. Roles a profile
    does not know are dropped. Each result is a new top-level dict.

    Args:
        messages: Runtime messages, e.g. `SessionContext.messages`.
        profile: `"musepi"` or `"pi"`.
        prompts: The prompt set whose context templates wrap summaries (MusePi; default:
            the project's).

    Raises:
        ValueError: Unknown profile.
    """
    _check_profile(profile)
    prompt_set = resolve_prompts(prompts) if profile != "pi" else None
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        llm = _pi_to_llm(message) if profile == "pi" else _musepi_to_llm(message, prompt_set)
        if llm is not None:
            out.append(llm)
    return out


# ---------------------------------------------------------------------------------------
# Provider layer (pi `transformMessages`, second pass)
# ---------------------------------------------------------------------------------------
def _synthetic_results(
    pending: Sequence[Mapping[str, Any]], seen: set[Any], timestamp: Any
) -> list[dict[str, Any]]:
    return [
        {
            "role": "toolResult",
            "toolCallId": call.get("id"),
            "toolName": call.get("name"),
            "content": [{"type": "text", "text": tpl.SYNTHETIC_TOOL_RESULT_TEXT}],
            "isError": True,
            "timestamp": timestamp,
        }
        for call in pending
        if call.get("id") not in seen
    ]


def provider_messages(llm_messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pi's provider-layer repairs of LLM messages (spec §2.2, `transform-messages.ts`).

    Assistant turns with stopReason `error`/`aborted` are skipped; a tool call left without
    a result gets a made-up error result ("No result provided") inserted before the next
    user message or the next assistant turn. Calls still pending at the end stay as they
    are, as in pi. pi stamps the made-up result with the current time; we use the calling
    turn's timestamp so the output is deterministic.

    Args:
        llm_messages: Output of `convert_to_llm`.
    """
    out: list[dict[str, Any]] = []
    pending: list[Mapping[str, Any]] = []
    pending_ts: Any = None
    seen: set[Any] = set()
    for message in llm_messages:
        role = message.get("role")
        if role in ("assistant", "user") and pending:
            out.extend(_synthetic_results(pending, seen, pending_ts))
            pending, seen = [], set()
        if role == "assistant":
            if message.get("stopReason") in ("error", "aborted"):
                continue
            content = message.get("content")
            calls = [
                b
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, Mapping) and b.get("type") == "toolCall"
            ]
            if calls:
                pending, seen, pending_ts = calls, set(), message.get("timestamp")
        elif role == "toolResult":
            seen.add(message.get("toolCallId"))
        out.append(dict(message))
    return out


# ---------------------------------------------------------------------------------------
# Plain-text rendering of a transcript
# ---------------------------------------------------------------------------------------
def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more chars]"


def _render_blocks(content: Any, limit: int | None) -> list[str]:
    if isinstance(content, str):
        return [_clip(content, limit)] if content else []
    lines: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            lines.append(_clip(str(block["text"]), limit))
        elif kind == "thinking" and block.get("thinking"):
            lines.append("(thinking) " + _clip(str(block["thinking"]), limit))
        elif kind == "redactedThinking":
            lines.append("(redacted thinking)")
        elif kind == "toolCall":
            args = orjson.dumps(block.get("arguments", {}), default=str).decode()
            lines.append(f"-> {block.get('name')}({_clip(args, limit)})")
        elif kind == "image":
            lines.append(f"[image {block.get('mimeType', '')}]")
    return lines


def _heading(item: TranscriptItem) -> str:
    msg = item.message
    role = item.role or "?"
    if role == "compactionSummary":
        state = " (superseded)" if item.superseded else ""
        before = msg.get("tokensBefore")
        tokens = f" · {before:,} tokens before" if isinstance(before, int) else ""
        method = f" · {msg['method']}" if msg.get("method") else ""
        return f"== compaction{state}{tokens}{method} =="
    if role == "assistant":
        model = f"{msg.get('provider', '')}/{msg.get('model', '')}"
        stop = msg.get("stopReason")
        return f"-- assistant ({model}{', ' + stop if stop else ''}) --"
    if role == "toolResult":
        mark = " (error)" if msg.get("isError") else ""
        return f"-- toolResult {msg.get('toolName', '')}{mark} --"
    if role == "custom":
        return f"-- custom {msg.get('customType', '')} --"
    return f"-- {role} --"


def _body(item: TranscriptItem, limit: int | None) -> list[str]:
    msg = item.message
    role = item.role
    if role in ("compactionSummary", "branchSummary"):
        short = msg.get("shortSummary")
        text = str(msg.get("summary", ""))
        return [_clip(str(short) if short and item.superseded else text, limit)]
    if role == "bashExecution":
        return [_clip(bash_execution_text(msg), limit)]
    if role == "pythonExecution":
        return [_clip(python_execution_text(msg), limit)]
    lines = _render_blocks(msg.get("content"), limit)
    if msg.get("strippedToolCalls"):
        lines.append(f"({msg['strippedToolCalls']} tool call(s) without a result not shown)")
    if msg.get("errorMessage"):
        lines.append(f"(error: {_clip(str(msg['errorMessage']), limit)})")
    return lines


def render_transcript(
    source: Session | Sequence[TranscriptItem],
    leaf_id: str | None = UNSET,
    *,
    max_chars: int | None = 2000,
) -> str:
    """A plain-text rendering of the display transcript, for terminals and logs.

    Args:
        source: A `Session` (its transcript at `leaf_id` is rendered) or transcript items.
        leaf_id: The leaf, when `source` is a session.
        max_chars: Longest text shown per block (None: everything).

    Returns:
        One section per transcript row, a heading line then the content, blank-line separated.
    """
    items = transcript(source, leaf_id) if isinstance(source, Session) else source
    sections = []
    for item in items:
        lines = [_heading(item), *_body(item, max_chars)]
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + ("\n" if sections else "")

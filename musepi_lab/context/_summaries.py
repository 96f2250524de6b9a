"""How compaction entries come back into the context: snapcompact archives (text head/tail and
frame images) and OpenAI remote-compaction payloads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..session._model import Entry
from . import _templates as tpl

# Snapcompact archive rebuild (spec §6.2).
SNAPCOMPACT_PRESERVE_KEY = "snapcompact"


NEWLINE_GLYPH = "\u2588"
"""The archive's line-break mark: printed in place of any whitespace run that held a line
break (the snapcompact archive format; the frame font draws it as a full block)."""
FRAME_DATA_BYTES_BUDGET = 3_000_000
"""Base64 bytes of snapcompact frames one rebuilt request may carry (newest frames win)."""


_LEGACY_FRAME_COUNT_GUARD = 16


_LEGACY_ARCHIVE_TEXT_GUARD = 250_000


_LEGACY_TRUNCATED_CHARS_GUARD = 1_000_000


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
        text = NEWLINE_GLYPH.join(archive[k] for k in ("textHead", "textTail") if k in archive)
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


def plain_archive_text(text: str) -> str:
    """Archive text as the model reads it in text blocks: the zero-width dim-ink toggles
    (U+000E, U+000F) removed and each newline glyph a newline (oh-my-pi `toPlainText`)."""
    return text.replace("\x0e", "").replace("\x0f", "").replace(NEWLINE_GLYPH, "\n")


def snapcompact_blocks(
    archive: Mapping[str, Any], *, max_frame_bytes: int | None = FRAME_DATA_BYTES_BUDGET
) -> list[dict[str, Any]]:
    """Rebuild an archive into summary blocks, oldest to newest: head text, images, tail text.

    The head and tail are sent as plain text (`plain_archive_text`).

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
    head = plain_archive_text(archive.get("textHead") or "")
    if head:
        suffix = tpl.SNAPCOMPACT_IMAGES_BELOW if kept else f"\n{notice}\n" if omitted else ""
        blocks.append({"type": "text", "text": head + suffix})
    elif omitted and not kept:
        blocks.append({"type": "text", "text": notice})
    if kept and omitted:
        blocks.append({"type": "text", "text": notice})
    blocks.extend(_image_block(f) for f in kept)
    tail = plain_archive_text(archive.get("textTail") or "")
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

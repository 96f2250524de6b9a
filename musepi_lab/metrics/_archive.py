"""The text of snapcompact's imaged pages, for scoring retention both ways.

A snapcompact compaction keeps the discarded history in its entry's
`preserveData.snapcompact`: `text` (the kept archive text: first page, imaged middle, last
page), `textHead` and `textTail` (the first and last page, which the model reads as text),
and `frames` (one PNG per imaged page, each with the number of characters it shows,
`chars`, in reading order). The page of frame `i` is the next `chars[i]` printed characters of
`text` after `textHead` and the earlier pages (the zero-width dim-ink toggles print nothing).
Texts are compared as the model reads them: toggles removed, newline glyphs as newlines.

Two bounds follow. The lower bound counts imaged pages as unreadable: only the literal text
of the context (`context_text(messages)`). The upper bound counts them as perfectly read:
the literal text plus, for every archive whose frames the context carries, its head, the
pages of the frames present and its tail (`context_text(messages, archives=...)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..context._summaries import plain_archive_text, snapcompact_archive
from ..session._session import Session

_GAP = "\n"


@dataclass(frozen=True)
class ArchiveText:
    """One snapcompact archive's readable text, page by page.

    Attributes:
        head: The first page (sent as text).
        tail: The last page (sent as text).
        pages: The text of each imaged page, in reading order.
        frame_data: The base64 PNG of each page's frame (same order), to recognise the
            image blocks of a context.
    """

    head: str
    tail: str
    pages: tuple[str, ...]
    frame_data: tuple[str, ...]


def archive_text(preserve_data: Any) -> ArchiveText | None:
    """The page texts of the snapcompact archive in a compaction's `preserveData`.

    None when there is no archive, or when its frames cannot be matched to its text (an
    archive written without `text`, or whose frames' `chars` do not add up to it): then
    the imaged pages' text is unknown and only the lower bound can be scored.
    """
    archive = snapcompact_archive(preserve_data)
    if archive is None:
        return None
    head = str(archive.get("textHead", ""))
    tail = str(archive.get("textTail", ""))
    text = archive.get("text")
    frames = archive["frames"]
    chars = [f.get("chars") for f in frames]
    if not isinstance(text, str) or not all(isinstance(c, int) and c >= 0 for c in chars):
        return None
    pages: list[str] = []
    at = len(head)
    for count in chars:
        end = _after_printed(text, at, count)
        pages.append(plain_archive_text(text[at:end]))
        at = end
    if at + len(tail) != len(text):
        return None
    return ArchiveText(
        plain_archive_text(head),
        plain_archive_text(tail),
        tuple(pages),
        tuple(str(f["data"]) for f in frames),
    )


def _after_printed(text: str, start: int, count: int) -> int:
    """The index after `count` printed characters of `text` from `start` (toggles skipped)."""
    at = start
    printed = 0
    while printed < count and at < len(text):
        if text[at] not in "\x0e\x0f":
            printed += 1
        at += 1
    return at


def session_archives(session: Session, leaf_id: str | None = None) -> tuple[ArchiveText, ...]:
    """The snapcompact archives of the compaction entries on the path to `leaf_id`."""
    out: list[ArchiveText] = []
    for entry in session.path(leaf_id):
        if entry.type != "compaction":
            continue
        found = archive_text(entry.get("preserveData"))
        if found is not None:
            out.append(found)
    return tuple(out)


def _image_data(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    present: set[str] = set()
    for message in messages:
        for key in ("blocks", "content"):
            blocks = message.get(key)
            if not isinstance(blocks, list):
                continue
            for block in blocks:
                if isinstance(block, Mapping) and block.get("type") == "image":
                    data = block.get("data")
                    if isinstance(data, str):
                        present.add(data)
    return present


def imaged_text(messages: Iterable[Mapping[str, Any]], archives: Sequence[ArchiveText]) -> str:
    """The archives' text as a perfect reader of the context's images would read it.

    For each archive with at least one frame among the image blocks of `messages`: its
    head, the pages of the frames present (adjacent pages joined directly, so a fact cut by
    a page break is found; a newline across a gap) and its tail. Frames the context does
    not carry (left out for the request's byte budget) add nothing.
    """
    if not archives:
        return ""
    present = _image_data(messages)
    parts: list[str] = []
    for archive in archives:
        shown = [i for i, data in enumerate(archive.frame_data) if data in present]
        if not shown:
            continue
        text = archive.head
        previous = -1
        for i in shown:
            text += ("" if i == previous + 1 else _GAP) + archive.pages[i]
            previous = i
        if previous == len(archive.pages) - 1:
            text += archive.tail
        else:
            text += _GAP + archive.tail
        parts.append(text)
    return _GAP.join(parts)

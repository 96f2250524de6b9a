"""Snapcompact frames: archive planning, frame geometry, billing estimates and PNG rendering.

Spec §6.2. An archive's normalised text is laid out row-major into a grid of character
cells; each full grid is one square PNG "frame". Text is drawn with Pillow's built-in 6x11
bitmap font (no font files, fully deterministic), one glyph per cell, black on white; the
newline marker `█` is a solid black cell, as the spec's "black cell = newline".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

MAX_FRAMES_DEFAULT = 80
"""Default and hard cap of frames per archive (`MAX_FRAMES_DEFAULT`)."""
HQ_EDGE_FRAMES = 3
"""High-quality frames kept at each end when the archive is foveated (`HQ_EDGE_FRAMES`)."""
DENSE_SHAPE = "8on16-bw"
"""The denser shape the middle of a foveated archive is re-paginated with."""


_GLYPH_W, _GLYPH_H = 6, 11


@dataclass(frozen=True)
class FrameShape:
    """Frame geometry: character cells of `cell_w` x `cell_h` pixels on a square frame.

    Attributes:
        name: Shape name, `<w>on<h>-bw`.
        cell_w: Cell width in pixels.
        cell_h: Cell height in pixels.
        size_px: Frame side in pixels.
    """

    name: str
    cell_w: int
    cell_h: int
    size_px: int

    @property
    def cols(self) -> int:
        """Cells per row."""
        return self.size_px // self.cell_w

    @property
    def rows(self) -> int:
        """Rows per frame."""
        return self.size_px // self.cell_h

    @property
    def capacity(self) -> int:
        """Characters per frame (`cols x rows`)."""
        return self.cols * self.rows


_CELLS = {"8on22-bw": (8, 22), "8on16-bw": (8, 16), "11on16-bw": (11, 16), "silver16-bw": (16, 16)}
SHAPE_NAMES: tuple[str, ...] = tuple(_CELLS)


def frame_shape(name: str, size_px: int = 1568) -> FrameShape:
    """A shape by name at a frame size."""
    try:
        w, h = _CELLS[name]
    except KeyError:
        raise ValueError(f"unknown frame shape {name!r}; known: {SHAPE_NAMES}") from None
    return FrameShape(name, w, h, size_px)


@dataclass(frozen=True)
class Page:
    """One imaged page: its text and the shape it is drawn with."""

    text: str
    shape: FrameShape


@dataclass(frozen=True)
class ArchivePlan:
    """How an archive's text is split into verbatim text and imaged pages.

    Attributes:
        text_head: The first page, kept as text.
        text_tail: The last page, kept as text.
        pages: The imaged middle, in reading order.
        total_chars: Characters of the archive text.
        truncated_chars: Characters dropped (oldest dense pages beyond the frame budget).
    """

    text_head: str
    text_tail: str
    pages: tuple[Page, ...]
    total_chars: int
    truncated_chars: int

    @property
    def frames(self) -> int:
        """Number of imaged pages."""
        return len(self.pages)


def _paginate(text: str, shape: FrameShape) -> list[str]:
    cap = shape.capacity
    return [text[i : i + cap] for i in range(0, len(text), cap)]


def plan_archive(
    text: str, shape: FrameShape, *, max_frames: int = MAX_FRAMES_DEFAULT
) -> ArchivePlan:
    """Plan an archive (spec §6.2 `planArchive`).

    Text of at most two pages stays text. Otherwise the first and the last page stay
    verbatim text and the middle is paginated into frames of `shape`; beyond `max_frames`
    (capped at 80) the archive is foveated: `min(3, (max-1)//2)` frames at each end keep
    `shape`, the middle is re-paginated with the denser `8on16-bw` at the same size, and its
    oldest pages beyond the budget are dropped (counted in `truncated_chars`).
    """
    max_frames = max(1, min(max_frames, MAX_FRAMES_DEFAULT))
    page = shape.capacity
    total = len(text)
    if total <= 2 * page:
        return ArchivePlan(text, "", (), total, 0)
    head, middle, tail = text[:page], text[page:-page], text[-page:]
    hq = [Page(t, shape) for t in _paginate(middle, shape)]
    if len(hq) <= max_frames:
        return ArchivePlan(head, tail, tuple(hq), total, 0)
    edge = min(HQ_EDGE_FRAMES, (max_frames - 1) // 2)
    edge_chars = edge * page
    first, rest = middle[:edge_chars], middle[edge_chars:]
    last_start = len(rest) - edge_chars if edge else len(rest)
    dense_text, last = rest[:last_start], rest[last_start:]
    dense_shape = frame_shape(DENSE_SHAPE, shape.size_px)
    dense = _paginate(dense_text, dense_shape)
    budget = max_frames - 2 * edge
    dropped = dense[: max(0, len(dense) - budget)]
    kept_dense = dense[len(dropped) :]
    pages = (
        [Page(t, shape) for t in _paginate(first, shape)]
        + [Page(t, dense_shape) for t in kept_dense]
        + [Page(t, shape) for t in _paginate(last, shape)]
    )
    return ArchivePlan(head, tail, tuple(pages), total, sum(len(d) for d in dropped))

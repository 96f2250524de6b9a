"""Snapcompact frames: frame shapes, their geometry and the archive plan (spec §6.2).

An archive's normalised text is laid out row-major into a grid of character cells; each page
of cells is one PNG frame `size_px` wide, as tall as the rows it prints (oh-my-pi 18.2.3
`geometry`, `paginateCells`, `planArchive`). The zero-width dim-ink toggles take no cell; a
wide (East Asian) character takes two, padded to the next row rather than straddling it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ._normalize import DIM_OFF, DIM_ON

MAX_FRAMES_DEFAULT = 80
"""Default and hard cap of frames per archive (`MAX_FRAMES_DEFAULT`)."""
HQ_EDGE_FRAMES = 3
"""High-quality frames kept at each end when the archive is foveated (`HQ_EDGE_FRAMES`)."""
DENSE_SHAPE = "8on16-bw"
"""The denser shape the middle of a foveated archive is re-paginated with."""
TEXT_EDGE_PAGES = 1
"""Pages of plain text kept at each end of the archive (`TEXT_EDGE_PAGES`)."""


@dataclass(frozen=True)
class FrameShape:
    """Frame geometry: character cells of `cell_w` x `cell_h` pixels on a `size_px` frame.

    Attributes:
        name: Shape name, `<w>on<h>-bw`.
        cell_w: Cell advance in pixels.
        cell_h: Cell pitch in pixels.
        size_px: Frame width (and the height of a full frame) in pixels.
        font: The glyph font (`8x13`: misc-fixed; `silver`: oh-my-pi's CJK font, drawn here
            with misc-fixed glyphs too).
    """

    name: str
    cell_w: int
    cell_h: int
    size_px: int
    font: str = "8x13"

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
        """Cells per frame (`cols x rows`)."""
        return self.cols * self.rows

    @property
    def wide_cells(self) -> bool:
        """Whether wide characters take two cells (every font but Silver's square cells)."""
        return self.font != "silver"


_CELLS = {
    "8on22-bw": (8, 22, "8x13"),
    "8on16-bw": (8, 16, "8x13"),
    "11on16-bw": (11, 16, "8x13"),
    "silver16-bw": (16, 16, "silver"),
}
SHAPE_NAMES: tuple[str, ...] = tuple(_CELLS)


def frame_shape(name: str, size_px: int = 1568) -> FrameShape:
    """A shape by name at a frame size."""
    try:
        w, h, font = _CELLS[name]
    except KeyError:
        raise ValueError(f"unknown frame shape {name!r}; known: {SHAPE_NAMES}") from None
    return FrameShape(name, w, h, size_px, font)


def is_wide_code_point(cp: int) -> bool:
    """East Asian wide/fullwidth code points (oh-my-pi `isWideCodePoint`)."""
    return any(lo <= cp <= hi for lo, hi in _WIDE_RANGES)


_WIDE_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x115F), (0x2E80, 0x2EFF), (0x2F00, 0x2FDF), (0x3000, 0x303E),
    (0x3041, 0x33FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF),
    (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFF60),
    (0xFFE0, 0xFFE6), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD),
)  # fmt: skip


_WIDE_RE = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _WIDE_RANGES) + "]")
"""Any character of `_WIDE_RANGES` (one search instead of a call per character)."""


def char_cells(ch: str, wide_cells: bool) -> int:
    """Cells one character takes: 0 for the ink toggles, 2 for a wide one, else 1."""
    if ch in (DIM_ON, DIM_OFF):
        return 0
    return 2 if wide_cells and ch > "\u10ff" and is_wide_code_point(ord(ch)) else 1


def cell_positions(text: str, shape: FrameShape) -> list[tuple[int, str]]:
    """`(cell, character)` of every character one page prints, in order, ink toggles as 0-wide
    entries at the current cell; stops at the first character that does not fit."""
    cols, capacity, wide = shape.cols, shape.capacity, shape.wide_cells
    out: list[tuple[int, str]] = []
    cell = 0
    for ch in text:
        w = char_cells(ch, wide)
        if w == 0:
            out.append((cell, ch))
            continue
        at = cell + 1 if w == 2 and cols >= 2 and cell % cols == cols - 1 else cell
        if at + w > capacity:
            break
        out.append((at, ch))
        cell = at + w
    return out


def paginate(text: str, shape: FrameShape) -> list[str]:
    """Split text into contiguous pages of at most `shape.capacity` cells (`paginateCells`)."""
    if not has_wide_cells(text, shape):
        return _paginate_narrow(text, shape.capacity)
    cols, capacity, wide = shape.cols, shape.capacity, shape.wide_cells
    pages: list[str] = []
    start, cell, has_cell = 0, 0, False
    for i, ch in enumerate(text):
        w = char_cells(ch, wide)
        if w == 0:
            continue
        at = cell + 1 if w == 2 and cols >= 2 and cell % cols == cols - 1 else cell
        if has_cell and at + w > capacity:
            pages.append(text[start:i])
            start, at = i, 0
        cell = at + w
        has_cell = True
    if has_cell:
        pages.append(text[start:])
    return pages


def _paginate_narrow(text: str, capacity: int) -> list[str]:
    """`paginate` when every visible character takes one cell: a page starts at every
    `capacity`-th visible character (ink toggles stay with the page before), as the
    character walk splits it."""
    capacity = max(capacity, 1)  # the walk puts one character on a page of no cells
    if DIM_ON not in text and DIM_OFF not in text:
        return [text[i : i + capacity] for i in range(0, len(text), capacity)]
    import numpy as np  # lazily: `import musepi_lab` stays light

    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    visible = np.flatnonzero((codes != ord(DIM_ON)) & (codes != ord(DIM_OFF)))
    if not len(visible):
        return []
    starts = [0, *visible[capacity::capacity].tolist(), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(starts)]


def has_wide_cells(text: str, shape: FrameShape) -> bool:
    """Whether any character of `text` takes two cells in `shape`."""
    return shape.wide_cells and not text.isascii() and _WIDE_RE.search(text) is not None


def printed_chars(text: str, shape: FrameShape) -> int:
    """Characters a page prints (ink toggles excluded; `renderedChars`)."""
    if not has_wide_cells(text, shape):
        visible = len(text) - text.count(DIM_ON) - text.count(DIM_OFF)
        return min(visible, max(shape.capacity, 0))
    return sum(1 for _, ch in cell_positions(text, shape) if ch not in (DIM_ON, DIM_OFF))


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


def plan_archive(
    text: str, shape: FrameShape, *, max_frames: int = MAX_FRAMES_DEFAULT
) -> ArchivePlan:
    """Plan an archive (oh-my-pi 18.2.3 `planArchive`, grid shapes).

    Text of at most two pages' capacity stays text. Otherwise one page's capacity of
    characters at each end stays verbatim text and the middle is paginated into frames of
    `shape`; beyond `max_frames` (capped at 80) the middle is foveated: `min(3, (max-1)//2)`
    pages at each end keep `shape`, the rest is re-paginated with the denser `8on16-bw` at
    the same size (when it holds more), and its oldest pages beyond the budget are dropped
    (counted in `truncated_chars`).
    """
    max_frames = max(1, min(max_frames, MAX_FRAMES_DEFAULT))
    edge = TEXT_EDGE_PAGES * shape.capacity
    total = len(text)
    if total <= 2 * edge:
        return ArchivePlan(text, "", (), total, 0)
    head, middle, tail = text[:edge], text[edge : total - edge], text[total - edge :]
    hq = paginate(middle, shape)
    if len(hq) <= max_frames:
        return ArchivePlan(head, tail, tuple(Page(t, shape) for t in hq), total, 0)
    dense_shape = frame_shape(DENSE_SHAPE, shape.size_px)
    if dense_shape.capacity <= shape.capacity or shape.font == "silver":
        dense_shape = shape
    edge_frames = min(HQ_EDGE_FRAMES, (max_frames - 1) // 2)
    first = hq[:edge_frames]
    last = hq[len(hq) - edge_frames :] if edge_frames else []
    first_chars, last_chars = sum(map(len, first)), sum(map(len, last))
    dense_source = middle[first_chars : len(middle) - last_chars]
    dense = paginate(dense_source, dense_shape)
    budget = max_frames - 2 * edge_frames
    dropped = dense[: max(0, len(dense) - budget)]
    kept_dense = dense[len(dropped) :]
    pages = (
        [Page(t, shape) for t in first]
        + [Page(t, dense_shape) for t in kept_dense]
        + [Page(t, shape) for t in last]
    )
    return ArchivePlan(head, tail, tuple(pages), total, sum(len(d) for d in dropped))

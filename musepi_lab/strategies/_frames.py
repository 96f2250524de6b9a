"""Snapcompact frames: archive planning, frame geometry, billing estimates and PNG rendering.

Spec §6.2. An archive's normalised text is laid out row-major into a grid of character
cells; each full grid is one square PNG "frame". Text is drawn with Pillow's built-in 6x11
bitmap font (no font files, fully deterministic), one glyph per cell, black on white; the
newline marker `█` is a solid black cell, as the spec's "black cell = newline".
"""

from __future__ import annotations

import io
import math
import re
import zlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

NEWLINE_MARK = "█"
MAX_FRAMES_DEFAULT = 80
"""Default and hard cap of frames per archive (`MAX_FRAMES_DEFAULT`)."""
HQ_EDGE_FRAMES = 3
"""High-quality frames kept at each end when the archive is foveated (`HQ_EDGE_FRAMES`)."""
DENSE_SHAPE = "8on16-bw"
"""The denser shape the middle of a foveated archive is re-paginated with."""
FRAME_DATA_BYTES_BUDGET = 3_000_000
"""Base64 bytes of frames a rebuilt context carries at most (`FRAME_DATA_BYTES_BUDGET`)."""

PNG_DEFLATE_LEVEL = 6
"""zlib level of the frame PNGs. Deflate is most of a frame's render time (about four
fifths at 1568 px); level 5 roughly halves it but grows frames 2–6 %, so fewer of them fit
`FRAME_DATA_BYTES_BUDGET` when a large archive is rebuilt into context."""

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


def api_family(model_id: str) -> str:
    """The billing family of a model id: anthropic, google, openai, kimi, glm or unknown."""
    m = model_id.lower()
    if "claude" in m or "anthropic" in m or "opus" in m or "sonnet" in m or "haiku" in m:
        return "anthropic"
    if "gemini" in m or "google" in m:
        return "google"
    if m.startswith(("gpt", "o1", "o3", "o4", "codex")) or "openai" in m or "codex" in m:
        return "openai"
    if "kimi" in m:
        return "kimi"
    if "glm" in m:
        return "glm"
    return "unknown"


_OPUS_VERSION = re.compile(r"opus[-_. ]?(\d+)(?:[-_.](\d+))?")


def _opus_ge_47(model_id: str) -> bool:
    """True for Claude Opus 4.7 and later (`claude-opus-4-7`, `opus-4.8`, `opus-5`)."""
    match = _OPUS_VERSION.search(model_id)
    if match is None:
        return False
    major = int(match.group(1))
    minor = int(match.group(2)) if match.group(2) and len(match.group(2)) <= 2 else 0
    return (major, minor) >= (4, 7)


def shape_for_model(model_id: str) -> FrameShape:
    """The frame shape a model reads best (spec §6.2 "Shapes")."""
    m = model_id.lower()
    family = api_family(m)
    if family == "anthropic":
        big = ("opus" in m and _opus_ge_47(m)) or "fable" in m or "mythos" in m
        return frame_shape("11on16-bw", 1932 if big else 1568)
    if family == "google":
        return frame_shape("8on22-bw", 2048)
    if family in ("openai", "kimi"):
        return frame_shape("8on22-bw", 1568)
    if family == "glm":
        return frame_shape("8on16-bw", 1568)
    return frame_shape("8on22-bw", 1568)


def frame_billing_tokens(family: str, size_px: int) -> int:
    """Estimated input tokens one frame is billed as, per API family (spec §6.2)."""
    if family == "anthropic":
        return math.ceil(min(math.ceil(size_px / 28) ** 2, 4784) * 1.05)
    if family == "google":
        return 1120
    if family in ("openai", "kimi"):
        return math.ceil(min(math.ceil(size_px / 32) ** 2, 10000) * 1.2)
    return math.ceil(min(math.ceil(size_px / 28) ** 2, 4784) * 1.05)


IMAGE_BUDGETS: dict[str, int] = {
    "anthropic": 90,
    "bedrock": 90,
    "openrouter": 90,
    "openai": 200,
    "codex": 200,
    "google": 200,
    "umans": 10,
}
"""Images a single request may carry, per provider; unknown providers get 5."""


def image_budget(provider: str) -> int:
    """How many images one request to `provider` may carry."""
    return IMAGE_BUDGETS.get(provider.lower(), 5)


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


@cache
def _atlas() -> dict[str, np.ndarray]:
    """Glyph bitmaps (True = ink) of printable Latin-1 from Pillow's bitmap font."""
    import numpy as np  # lazily: `import musepi_lab` stays light
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default_imagefont()
    glyphs: dict[str, np.ndarray] = {}
    for code in list(range(32, 127)) + list(range(160, 256)):
        ch = chr(code)
        im = Image.new("L", (_GLYPH_W + 2, _GLYPH_H + 1), 0)
        ImageDraw.Draw(im).text((0, 0), ch, fill=255, font=font)
        glyphs[ch] = np.asarray(im, dtype=np.uint8)[: _GLYPH_H + 1, : _GLYPH_W + 1] > 127
    return glyphs


def _cell_bitmap(ch: str, shape: FrameShape) -> np.ndarray:
    import numpy as np  # lazily: `import musepi_lab` stays light

    cell = np.zeros((shape.cell_h, shape.cell_w), dtype=bool)
    if ch == NEWLINE_MARK:
        cell[:, :] = True
        return cell
    glyph = _atlas().get(ch) if ch in _atlas() else _atlas()["?"]
    gh, gw = glyph.shape
    top = max(0, (shape.cell_h - gh) // 2)
    left = max(0, (shape.cell_w - gw) // 2)
    h, w = min(gh, shape.cell_h), min(gw, shape.cell_w)
    cell[top : top + h, left : left + w] = glyph[:h, :w]
    return cell


@dataclass(frozen=True)
class _CellTable:
    """A shape's cells: the pixels of every drawable character and how text picks them."""

    lines: np.ndarray
    """(cell_h * characters, cell_w) uint8, 1 = white paper, 0 = ink: pixel line `y` of
    character `k` is row `y * characters + k`."""
    characters: int
    latin1: np.ndarray
    """Cell index of each code point 0–255 (`?` for those outside the font)."""
    newline: int
    fallback: int
    blank: int
    blank_line: np.ndarray
    """One packed scanline of white paper (PNG pads each line with 0 bits)."""
    margin: np.ndarray
    """The white bits right of the text area in a packed text scanline's bytes."""


@cache
def _cell_table(shape: FrameShape) -> _CellTable:
    import numpy as np  # lazily: `import musepi_lab` stays light

    chars = [*_atlas().keys(), NEWLINE_MARK]
    index = {c: i for i, c in enumerate(chars)}
    white = ~np.stack([_cell_bitmap(c, shape) for c in chars])
    # Line-major, so one gather yields whole pixel lines of the page in reading order.
    lines = white.transpose(1, 0, 2).reshape(shape.cell_h * len(chars), shape.cell_w)
    text_width = shape.cols * shape.cell_w
    blank_line = np.packbits(np.ones(shape.size_px, dtype=np.uint8))
    in_text = np.packbits(np.ones(text_width, dtype=np.uint8))
    return _CellTable(
        lines=lines.astype(np.uint8),
        characters=len(chars),
        latin1=np.array([index.get(chr(cp), index["?"]) for cp in range(256)], dtype=np.intp),
        newline=index[NEWLINE_MARK],
        fallback=index["?"],
        blank=index[" "],
        blank_line=blank_line,
        margin=blank_line[: len(in_text)] & ~in_text,
    )


def _cell_indices(page: str, table: _CellTable, capacity: int) -> np.ndarray:
    import numpy as np  # lazily: `import musepi_lab` stays light

    # Code points as one array (lone surrogates pass through and print as `?`), mapped to
    # cells by table lookups instead of a Python loop; unused cells stay blank.
    points = np.frombuffer(page.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    cells = table.latin1[np.minimum(points, 255)]
    wide = points > 255
    if wide.any():
        outside = np.where(points == ord(NEWLINE_MARK), table.newline, table.fallback)
        cells = np.where(wide, outside, cells)
    out = np.full(capacity, table.blank, dtype=np.intp)
    out[: len(cells)] = cells
    return out


def _scanlines(codes: np.ndarray, shape: FrameShape, table: _CellTable) -> np.ndarray:
    """The frame's PNG scanlines: filter byte 0, then 1-bit pixels, 1 = white."""
    import numpy as np  # lazily: `import musepi_lab` stays light

    cell_h, text_width = shape.cell_h, shape.cols * shape.cell_w
    out = np.empty((shape.size_px, 1 + len(table.blank_line)), dtype=np.uint8)
    out[:, 0] = 0
    out[:, 1:] = table.blank_line
    # Row r, pixel line y, column c takes line y of the cell at (r, c): gathering whole
    # cell lines in this order lays the text out without a strided transpose.
    line_offsets = (np.arange(cell_h) * table.characters)[None, :, None]
    pixels = np.take(table.lines, codes[:, None, :] + line_offsets, axis=0)
    packed = np.packbits(pixels.reshape(shape.rows * cell_h, text_width), axis=1)
    text_area = out[: shape.rows * cell_h, 1 : 1 + len(table.margin)]
    np.bitwise_or(packed, table.margin, out=text_area)
    return out


def render_frame(text: str, shape: FrameShape) -> bytes:
    """Render one page of text into a square black-on-white PNG of `shape.size_px` pixels.

    Characters outside the font render as `?`. Deterministic: the same text and shape give
    the same bytes.
    """
    table = _cell_table(shape)
    codes = _cell_indices(text[: shape.capacity], table, shape.capacity)
    scanlines = _scanlines(codes.reshape(shape.rows, shape.cols), shape, table)
    return _png_1bit(scanlines.tobytes(), shape.size_px, shape.size_px)


def _png_1bit(scanlines: bytes, width: int, height: int) -> bytes:
    """A 1-bit grayscale PNG of ready scanlines (filter byte, packed pixels), deterministic."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n")
    out.write(chunk(b"IHDR", header))
    out.write(chunk(b"IDAT", zlib.compress(scanlines, PNG_DEFLATE_LEVEL)))
    out.write(chunk(b"IEND", b""))
    return out.getvalue()

"""Drawing snapcompact frames: pages of archive text as 1-bit PNG images."""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
from ...context._summaries import NEWLINE_GLYPH
from ._plan import _GLYPH_H, _GLYPH_W, FrameShape


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
    if ch == NEWLINE_GLYPH:
        cell[:, :] = True
        return cell
    glyph = _atlas().get(ch)
    if glyph is None:
        glyph = _atlas()["?"]
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

    chars = [*_atlas().keys(), NEWLINE_GLYPH]
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
        newline=index[NEWLINE_GLYPH],
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
        outside = np.where(points == ord(NEWLINE_GLYPH), table.newline, table.fallback)
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


PNG_DEFLATE_LEVEL = 6
"""zlib level of the frame PNGs. Deflate is most of a frame's render time (about four
fifths at 1568 px); level 5 roughly halves it but grows frames 2–6 %, so fewer of them fit
`FRAME_DATA_BYTES_BUDGET` when a large archive is rebuilt into context."""

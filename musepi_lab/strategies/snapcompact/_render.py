"""Drawing snapcompact frames as oh-my-pi 18.2.3's native renderer does (`bw` grid shapes).

A page of normalized archive text is drawn cell by cell with the misc-fixed 8x13 glyphs
(`_font`), each glyph at its natural size at the top left of its cell (`stretch: false`). The
newline marker `█` fills its whole cell with black ink; text between the dim toggles (U+000E
on, U+000F off, zero-width) prints gray. The frame is `size_px` wide and as tall as the rows
printed, a palette PNG: index 0 white paper, 1 black ink, 2 gray (128) dim ink (2-bit; 1-bit
with the first two only when nothing is dim).
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from zlib_ng.zlib_ng import compress as deflate

from ...context._summaries import NEWLINE_GLYPH
from ._font import DEFAULT_CHAR, GLYPH_H, GLYPH_W, font_glyphs
from ._normalize import DIM_OFF, DIM_ON
from ._plan import FrameShape, cell_positions, has_wide_cells

if TYPE_CHECKING:
    import numpy as np

PAPER, INK, DIM_INK = 0, 1, 2
"""Palette indices of a frame."""

PALETTE = bytes([255, 255, 255, 0, 0, 0, 128, 128, 128])
"""White paper, black ink, gray dim ink (the release's `PLTE`)."""


@dataclass(frozen=True)
class _CellTable:
    """A shape's cell bitmaps: every glyph padded (or cut) to one cell, plus the lookups."""

    cells: np.ndarray
    """(glyphs + 2, cell_h, cell_w) bool, True = ink; the last two are blank and newline."""
    by_code_point: np.ndarray
    """Cell index per BMP code point (the default character where the font has none)."""
    blank: int
    newline: int


@cache
def _cell_table(cell_w: int, cell_h: int) -> _CellTable:
    import numpy as np  # lazily: `import musepi_lab` stays light

    glyphs = font_glyphs()
    code_points = sorted(glyphs)
    bits = np.unpackbits(
        np.frombuffer(b"".join(glyphs[cp] for cp in code_points), dtype=np.uint8)
    ).reshape(len(code_points), GLYPH_H, GLYPH_W)
    cells = np.zeros((len(code_points) + 2, cell_h, cell_w), dtype=bool)
    h, w = min(GLYPH_H, cell_h), min(GLYPH_W, cell_w)
    cells[: len(code_points), :h, :w] = bits[:, :h, :w].astype(bool)
    blank, newline = len(code_points), len(code_points) + 1
    cells[newline] = True
    index = {cp: i for i, cp in enumerate(code_points)}
    lookup = np.full(0x10000, index[DEFAULT_CHAR], dtype=np.intp)
    lookup[np.array(code_points, dtype=np.intp)] = np.arange(len(code_points), dtype=np.intp)
    lookup[ord(NEWLINE_GLYPH)] = newline
    return _CellTable(cells, lookup, blank, newline)


def _cells(text: str, shape: FrameShape) -> tuple[np.ndarray, np.ndarray, int]:
    """(code point per cell, dim flag per cell, cells used) of one page; -1 = empty cell."""
    import numpy as np  # lazily: `import musepi_lab` stays light

    capacity = max(shape.capacity, 0)
    points = np.full(capacity, -1, dtype=np.int64)
    dims = np.zeros(capacity, dtype=bool)
    if has_wide_cells(text, shape):
        dim, used = False, 0
        for cell, ch in cell_positions(text, shape):
            if ch in (DIM_ON, DIM_OFF):
                dim = ch == DIM_ON
                continue
            points[cell], dims[cell], used = ord(ch), dim, cell + 1
        return points, dims, used
    # One cell per character but the zero-width toggles: laid out with array operations.
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64)
    toggle = (codes == ord(DIM_ON)) | (codes == ord(DIM_OFF))
    # The dim state at each character: that of the latest toggle before it (off at first).
    last = (
        np.maximum.accumulate(np.where(toggle, np.arange(len(codes)), -1)) if len(codes) else codes
    )
    state = np.where(last >= 0, codes[np.maximum(last, 0)] == ord(DIM_ON), False)
    visible = codes[~toggle][:capacity]
    points[: len(visible)] = visible
    dims[: len(visible)] = state[~toggle][:capacity]
    return points, dims, len(visible)


def frame_pixels(text: str, shape: FrameShape) -> np.ndarray:
    """The palette indices of one frame (rows x `size_px`), before PNG encoding.

    Characters past the page's capacity are not drawn; a character without a glyph prints as
    the font's default character. Height: the rows printed times the cell pitch (one row at
    least).
    """
    import numpy as np  # lazily: `import musepi_lab` stays light

    table = _cell_table(shape.cell_w, shape.cell_h)
    cols, rows = shape.cols, shape.rows
    points, dims, used = _cells(text, shape)
    printed_rows = min(max(1, -(-used // cols)) if cols else 1, max(rows, 1))
    n = printed_rows * cols
    points, dims = points[:n], dims[:n]
    lookup = table.by_code_point
    codes = np.where(
        points < 0,
        table.blank,
        lookup[np.where((points >= 0) & (points < len(lookup)), points, DEFAULT_CHAR)],
    )
    inks = np.where(dims & (codes != table.newline), DIM_INK, INK).astype(np.uint8)
    cells = table.cells[codes] * inks[:, None, None]
    grid = cells.reshape(printed_rows, cols, shape.cell_h, shape.cell_w).transpose(0, 2, 1, 3)
    out = np.zeros((printed_rows * shape.cell_h, shape.size_px), dtype=np.uint8)
    out[:, : cols * shape.cell_w] = grid.reshape(printed_rows * shape.cell_h, cols * shape.cell_w)
    return out


def render_frame(text: str, shape: FrameShape) -> bytes:
    """Render one page of text into a frame PNG, `size_px` wide.

    A palette PNG for the bitmap font; an 8-bit RGB PNG on the Silver grid, as the release
    writes its anti-aliased Silver frames (whose glyphs are not ported: drawn here with
    misc-fixed). Deterministic: the same text and shape give the same bytes.
    """
    pixels = frame_pixels(text, shape)
    if shape.font == "silver":
        return encode_rgb_png(pixels)
    return encode_palette_png(pixels)


def encode_rgb_png(pixels: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of palette indices 0–2 (`PALETTE`'s colors)."""
    import numpy as np  # lazily: `import musepi_lab` stays light

    height, width = pixels.shape
    rgb = np.frombuffer(PALETTE, dtype=np.uint8).reshape(3, 3)[pixels]
    scanlines = np.zeros((height, 1 + 3 * width), dtype=np.uint8)
    scanlines[:, 1:] = rgb.reshape(height, 3 * width)
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return _png([(b"IHDR", header), (b"IDAT", deflate(scanlines.tobytes(), PNG_DEFLATE_LEVEL))])


def _png(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n")
    for kind, data in [*chunks, (b"IEND", b"")]:
        body = kind + data
        out.write(len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big"))
    return out.getvalue()


def encode_palette_png(pixels: np.ndarray) -> bytes:
    """A palette PNG of palette indices 0–2 (`PALETTE`), deterministic bytes.

    As the release writes them: the palette holds white and the inks the frame uses, in
    the order black, gray; 2-bit with all three, else 1-bit (white and black, or white and
    gray for a frame printed in dim ink alone).
    """
    import numpy as np  # lazily: `import musepi_lab` stays light

    height, width = pixels.shape
    dimmed = bool(pixels.size) and bool((pixels == DIM_INK).any())
    black = bool(pixels.size) and bool((pixels == INK).any())
    if dimmed and not black:  # white and gray only: gray takes index 1
        pixels = np.where(pixels == DIM_INK, INK, pixels)
        palette = PALETTE[:3] + PALETTE[6:]
    else:
        palette = PALETTE if dimmed else PALETTE[:6]
    depth = 2 if len(palette) > 6 else 1
    packed = _pack_2bit(pixels) if depth == 2 else np.packbits(pixels.astype(bool), axis=1)
    scanlines = np.zeros((height, 1 + packed.shape[1]), dtype=np.uint8)
    scanlines[:, 1:] = packed

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([depth, 3, 0, 0, 0])
    return _png(
        [
            (b"IHDR", header),
            (b"PLTE", palette),
            (b"IDAT", deflate(scanlines.tobytes(), PNG_DEFLATE_LEVEL)),
        ]
    )


def _pack_2bit(pixels: np.ndarray) -> np.ndarray:
    """Four 2-bit palette indices a byte, the leftmost pixel in the high bits (PNG order);
    each row padded with index 0."""
    import numpy as np  # lazily: `import musepi_lab` stays light

    height, width = pixels.shape
    pad = (-width) % 4
    padded = np.pad(pixels, ((0, 0), (0, pad))) if pad else pixels
    g = padded.astype(np.uint8, copy=False).reshape(height, -1, 4)
    return (g[:, :, 0] << 6) | (g[:, :, 1] << 4) | (g[:, :, 2] << 2) | g[:, :, 3]


PNG_DEFLATE_LEVEL = 6
"""zlib level of the frame PNGs (filter 0 on every scanline). Compressed with zlib-ng: at
this level its frames are about 3 % smaller than the zlib module's (close to the release's
own, 77–89 KB a 1568 px frame) in a third of the time (`perf/bench_snapcompact.py`)."""

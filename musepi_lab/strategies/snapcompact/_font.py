"""The frame font: X.org misc-fixed 8x13 (public domain), as oh-my-pi's renderer draws it.

The glyphs ship as package data (`fonts/misc-fixed-8x13.hex.gz`, see `fonts/PROVENANCE.md`):
one line per code point, `XXXX:` then 13 rows of 8 pixels as hex.
"""

from __future__ import annotations

import gzip
from functools import cache
from importlib import resources

GLYPH_W, GLYPH_H = 8, 13
"""Every misc-fixed 8x13 glyph fills one 8x13 box."""

FONT_RESOURCE = "fonts/misc-fixed-8x13.hex.gz"

DEFAULT_CHAR = 0
"""The BDF's `DEFAULT_CHAR`: what a code point without a glyph prints as."""


def parse_hex_font(text: str, *, source: str = FONT_RESOURCE) -> dict[int, bytes]:
    """Glyph rows per code point from the hex format (`XXXX:` + 26 hex digits a line).

    Raises:
        ValueError: A malformed line, naming `source` and the line number.
    """
    glyphs: dict[int, bytes] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line:
            continue
        code, sep, rows = line.partition(":")
        try:
            if not sep or len(rows) != 2 * GLYPH_H:
                raise ValueError("expected XXXX: and 26 hex digits")
            glyphs[int(code, 16)] = bytes.fromhex(rows)
        except ValueError as exc:
            raise ValueError(f"{source}:{number}: bad glyph line {line[:40]!r}: {exc}") from None
    return glyphs


@cache
def font_glyphs() -> dict[int, bytes]:
    """The misc-fixed 8x13 glyphs, read once from package data."""
    data = resources.files(__package__).joinpath(FONT_RESOURCE).read_bytes()
    return parse_hex_font(gzip.decompress(data).decode("ascii"))


SUPPORT_RESOURCE = "fonts/supported-chars.txt.gz"

FONTS: tuple[str, ...] = ("8x13", "silver")


def parse_supported_chars(
    text: str, *, source: str = SUPPORT_RESOURCE
) -> dict[str, frozenset[int]]:
    """Code points per font from `<font> XXXX[-YYYY]` lines.

    Raises:
        ValueError: A malformed line, naming `source` and the line number.
    """
    found: dict[str, set[int]] = {font: set() for font in FONTS}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line:
            continue
        font, _, span = line.partition(" ")
        first, _, last = span.partition("-")
        try:
            if font not in found:
                raise ValueError(f"unknown font {font!r}")
            lo, hi = int(first, 16), int(last or first, 16)
        except ValueError as exc:
            raise ValueError(f"{source}:{number}: bad line {line[:40]!r}: {exc}") from None
        found[font].update(range(lo, hi + 1))
    return {font: frozenset(cps) for font, cps in found.items()}


@cache
def supported_code_points(font: str) -> frozenset[int]:
    """Code points oh-my-pi 18.2.3's renderer draws with `font` (`8x13` or `silver`)."""
    data = resources.files(__package__).joinpath(SUPPORT_RESOURCE).read_bytes()
    table = parse_supported_chars(gzip.decompress(data).decode("ascii"))
    if font not in table:
        raise ValueError(f"unknown font {font!r}; known: {FONTS}")
    return table[font]


@cache
def kept_code_points(font: str) -> frozenset[int]:
    """What the normalizer keeps as it is for a shape's font (`renderableUnicodeChars`): the
    font's characters plus, for a bitmap font, the Silver fallback's."""
    if font == "silver":
        return supported_code_points("silver")
    return supported_code_points(font) | supported_code_points("silver")

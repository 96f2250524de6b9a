"""Which font a transcript needs (oh-my-pi 18.2.3 `resolveShapeForText`): CJK-heavy text that
the Silver font can draw is archived on the `silver16-bw` grid."""

from __future__ import annotations

import re

from ._normalize import DIM_OFF, DIM_ON, _unrenderable, input_chars, normalize_with_stats
from ._plan import _WIDE_RANGES, is_wide_code_point

CJK_HEAVY_MIN_WIDE_CHARS = 8
"""At least this many wide characters (`CJK_HEAVY_MIN_WIDE_CHARS`)."""
CJK_HEAVY_WIDE_RATIO = 0.25
"""And at least this share of the graphic characters (`CJK_HEAVY_WIDE_RATIO`)."""
UNSAFE_FALLBACK_RATIO = 0.05
"""A font is unsafe for a text when more than this share of its graphic characters would
print as `?` (`scanRenderability`)."""

_WIDE_RE = re.compile(
    "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _WIDE_RANGES) + "]"
)
_NOT_GRAPHIC = (" ", DIM_ON, DIM_OFF, "\u2588")


def _graphic(ch: str) -> bool:
    return ch not in _NOT_GRAPHIC and not _unrenderable(ch)


def is_cjk_heavy(text: str) -> bool:
    """Whether wide (CJK) characters dominate a transcript (`isCjkHeavyText`)."""
    if len(_WIDE_RE.findall(text)) < CJK_HEAVY_MIN_WIDE_CHARS:
        return False
    chars = [ch for ch in input_chars(text) if _graphic(ch)]
    wide = sum(1 for ch in chars if is_wide_code_point(ord(ch)))
    return wide >= CJK_HEAVY_MIN_WIDE_CHARS and wide / len(chars) >= CJK_HEAVY_WIDE_RATIO


def fallback_ratio(text: str, font: str) -> float:
    """The share of graphic characters that would print as `?` with `font`."""
    counts = normalize_with_stats(text, font=font)
    return counts.fallbacks / counts.graphics if counts.graphics else 0.0


def needs_silver(text: str) -> bool:
    """Whether `auto` picks the Silver grid for this transcript: CJK-heavy and Silver draws
    all but 5 % of it. (The release also tries Silver when the bitmap font is unsafe; that
    never picks it, since the bitmap font keeps everything Silver draws too.)"""
    return is_cjk_heavy(text) and fallback_ratio(text, "silver") <= UNSAFE_FALLBACK_RATIO

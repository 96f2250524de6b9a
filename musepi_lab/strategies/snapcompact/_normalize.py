"""The archive normaliser: text folded to what the frame font draws (Latin-1, ASCII folds for
punctuation and emoji, ANSI and format characters removed, whitespace runs collapsed)."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache

from ...compaction._serialize import (
    JS_WHITESPACE,
)
from ...context._summaries import NEWLINE_GLYPH
from ._font import kept_code_points

DIM_ON = "\x0e"
"""Zero-width ink toggle (shift-out): following text prints dim."""


DIM_OFF = "\x0f"
"""Zero-width ink toggle (shift-in): back to normal ink."""


# Folds for punctuation and symbols that NFKD leaves alone (or leaves non-ASCII).
CHAR_FOLD: Mapping[str, str] = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"',
    "\u2032": "'", "\u2033": '"', "\u2035": "'", "\u2036": '"',
    "\u2039": "<", "\u203a": ">",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2044": "/",
    "\u2024": ".", "\u2025": "..", "\u2026": "...", "\u22ef": "...",
    "\u2022": "*", "\u2023": "*", "\u2043": "-", "\u2219": "*",
    "\u25cf": "*", "\u25a0": "*", "\u25aa": "*",
    "\u2190": "<-", "\u2191": "^", "\u2192": "->", "\u2193": "v", "\u2194": "<->",
    "\u21d0": "<=", "\u21d2": "=>", "\u21d4": "<=>",
    "\u2713": "v", "\u2714": "v", "\u2717": "x", "\u2718": "x",
}  # fmt: skip


# Status pictographs that carry meaning in tool output; other emoji are dropped.
EMOJI_FOLD: Mapping[str, str] = {
    "\u2705": "[OK]", "\u2611": "[OK]", "\u2714": "[OK]",
    "\u274c": "[FAIL]", "\u274e": "[FAIL]", "\u2716": "[FAIL]",
    "\u26a0": "[WARN]", "\U0001f6a8": "[ALERT]", "\u2139": "[INFO]",
    "\U0001f41b": "[BUG]", "\U0001f4a5": "[CRASH]", "\U0001f525": "[HOT]",
    "\U0001f512": "[LOCK]", "\U0001f513": "[UNLOCK]",
    "\U0001f4c1": "[DIR]", "\U0001f4c2": "[DIR]", "\U0001f4c4": "[FILE]",
    "\U0001f4dd": "[NOTE]", "\U0001f9ea": "[TEST]",
    "\u23f3": "[WAIT]", "\u231b": "[WAIT]", "\U0001f680": "[RUN]",
}  # fmt: skip


# Unicode `Extended_Pictographic` (emoji-data.txt), which Python's `re` cannot name.
_PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D), (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip


_LINE_BREAKS = "\n\r\u2028\u2029"


_LINE_BREAK_RE = re.compile(f"[{_LINE_BREAKS}]")


# JavaScript whitespace without U+FEFF (a format character too, dropped with them first),
# escaped for a character class.
_SPACING = re.escape(JS_WHITESPACE.replace("\ufeff", ""))


# A spacing run, unless it is one plain space (most runs: left alone, no callback). The
# pattern opens with a character class so the regex engine skips other text in C.
_SPACING_RUN_RE = re.compile(f"[{_SPACING}](?:[{_SPACING}]+|(?<! ))")


_EDGES = " " + NEWLINE_GLYPH


_EXTRA_SPACES_RE = re.compile(" {2,}")


# Everything the pixel font does not print as it is: not ASCII/Latin-1, the ink toggles or `█`.
_UNPRINTED_RUN_RE = re.compile(f"[^\\x20-\\x7e\\xa0-\\xff{DIM_ON}{DIM_OFF}{NEWLINE_GLYPH}]+")


# Folds are cached per distinct character; bounded, so text cycling through all of Unicode
# cannot grow the cache without limit.
_FOLD_CACHE_SIZE = 1 << 16


# ECMA-48 escape sequences, as the `ansi-regex` package matches them, then any bare ESC pair.
_ANSI_RE = re.compile(
    "[\x1b\x9b][\\[\\]()#;?]*(?:"
    "(?:(?:(?:;[-a-zA-Z\\d/#&.:=?%@~_]+)*|[a-zA-Z\\d]+(?:;[-a-zA-Z\\d/#&.:=?%@~_]*)*)?"
    "(?:\x07|\x1b\\\\|\x9c))"
    "|(?:(?:\\d{1,4}(?:;\\d{0,4})*)?[\\dA-PR-TZcf-nq-uy=><~])"
    ")",
    re.ASCII,
)


_ESC_PAIR_RE = re.compile("\x1b[\\s\\S]?")


def is_pictographic(ch: str) -> bool:
    """Whether a character is Unicode `Extended_Pictographic` (an emoji pictograph)."""
    cp = ord(ch)
    if cp < 0xA9:
        return False
    return any(lo <= cp <= hi for lo, hi in _PICTOGRAPHIC_RANGES)


def _ascii_or_latin1(cp: int) -> bool:
    return 0x20 <= cp < 0x7F or 0xA0 <= cp <= 0xFF


def _unrenderable(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Mn", "Me", "Cs")


def fold_to_ascii(ch: str) -> str | None:
    """A one-character ASCII/Latin-1 fold by NFKD (fullwidth, ligatures, accents, …).

    Combining marks are dropped; residual punctuation goes through `CHAR_FOLD`. None when
    the character has no decomposition or still leaves an undrawable character.
    """
    decomposed = "".join(
        c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.category(c).startswith("M")
    )
    if decomposed == ch:
        return None
    out: list[str] = []
    for part in decomposed:
        if _ascii_or_latin1(ord(part)):
            out.append(part)
        elif part in CHAR_FOLD:
            out.append(CHAR_FOLD[part])
        else:
            return None
    return "".join(out)


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (and any stray ESC pair)."""
    if "\x1b" not in text:
        return text
    return _ESC_PAIR_RE.sub("", _ANSI_RE.sub("", text))


def _char_class(codes: Iterable[int]) -> str:
    # A regex character class body of sorted code points, consecutive ones as ranges.
    ranges: list[list[int]] = []
    for cp in codes:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges
    )


@cache
def _format_char_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # (runs of characters that may be format characters, format characters). Taken from
    # this Python's Unicode database, so the set is exactly what `unicodedata.category`
    # calls Cf; built on first use (about 0.1 s), not at import. The first pattern lets
    # the common text (ASCII and Latin-1 only, no soft hyphen) through one quick scan.
    category = unicodedata.category
    codes = [cp for cp in range(sys.maxunicode + 1) if category(chr(cp)) == "Cf"]
    latin1_plain = (cp for cp in range(256) if cp not in codes)
    return (
        re.compile(f"[^{_char_class(latin1_plain)}]+"),
        re.compile(f"[{_char_class(codes)}]+"),
    )


def _drop_format_chars(text: str) -> str:
    if text.isascii():  # every format character lies outside ASCII
        return text
    candidates, format_chars = _format_char_res()
    if candidates.search(text) is None:
        return text
    return candidates.sub(lambda m: format_chars.sub("", m.group()), text)


def _spacing_run(match: re.Match[str]) -> str:
    return NEWLINE_GLYPH if _LINE_BREAK_RE.search(match.group()) else " "


def _collapse_whitespace(text: str) -> str:
    # A run of whitespace and format (Cf) characters with a line break becomes the newline
    # glyph, a run with real whitespace one space, a run of only format characters (zero-
    # width space, BOM, direction marks…) nothing. Dropping the format characters first
    # gives the same runs, since they never decide a run's kind.
    return _SPACING_RUN_RE.sub(_spacing_run, _drop_format_chars(text))


@lru_cache(maxsize=_FOLD_CACHE_SIZE)
def _fold_char(ch: str, font: str = "8x13") -> str:
    # What one character outside the font prints as ("" when it is dropped).
    if ch in EMOJI_FOLD:
        return EMOJI_FOLD[ch]
    if ch in CHAR_FOLD:
        return CHAR_FOLD[ch]
    cp = ord(ch)
    if 0x2500 <= cp <= 0x257F:
        return "|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+"
    folded = fold_to_ascii(ch)
    if folded is not None:
        return folded
    if is_pictographic(ch) or _unrenderable(ch):
        return ""
    # A character with no fold that the release's renderer draws prints as itself.
    return ch if ord(ch) in kept_code_points(font) else "?"


def _fold_run(match: re.Match[str], font: str = "8x13") -> str:
    return "".join(_fold_char(ch, font) for ch in match.group())


# The release runs on Bun, whose regular expressions do not match U+FEFF in `[\s\p{Cf}]+`
# right after a character in U+F800–U+FBFF (Alphabetic Presentation Forms such as the `ﬁ`
# ligature, and the private-use characters before them); checked against Bun 1.3.14 on every
# code point. That BOM stays out of the whitespace run and prints as `?`, as here.
_STRANDED_BOM_RE = re.compile("(?<=[\uf800-\ufbff])\ufeff")


def _edges_stripped(text: str) -> str:
    return text.strip(_EDGES)


def _stranded_bom(text: str) -> str:
    return _STRANDED_BOM_RE.sub("?", text) if "\ufeff" in text else text


def normalize_archive_text(text: str, *, font: str = "8x13") -> str:
    """Prepare archive text for snapcompact's pixel font (oh-my-pi `normalize`, spec §6.2).

    Steps: strip ANSI escapes; collapse every whitespace/format-character run — a run with
    a line break becomes one `█` (U+2588), other runs one space, pure format runs vanish;
    trim spaces and `█` at both ends; then per character: ASCII and Latin-1 stay; the ink
    toggles and `█` stay; status emoji become `[OK]`, `[FAIL]`, `[WARN]`, `[ALERT]`,
    `[INFO]`, … (`EMOJI_FOLD`); quotes, dashes, bullets, arrows, ellipses and check marks
    fold to ASCII (`CHAR_FOLD`); box drawing (U+2500–U+257F) becomes `|`, `-` or `+`;
    NFKD-decomposable characters fold to their ASCII skeleton; other pictographs are
    dropped, as are controls, combining marks and lone surrogates; anything else becomes
    `?`. Finally space runs collapse and the ends are trimmed again.

    A character with none of these folds that the release's renderer draws stays as it is
    (`_font.kept_code_points`): for `font="8x13"` what misc-fixed or the Silver fallback
    draws (Greek, Cyrillic, math symbols, CJK, …), for `font="silver"` what Silver draws.
    """
    # Regex passes scan in C; Python runs only per spacing run other than a lone space,
    # per run of characters outside the font, and once per distinct character folded.
    chars = _edges_stripped(_collapse_whitespace(_stranded_bom(strip_ansi(text))))
    folded = _UNPRINTED_RUN_RE.sub(lambda m: _fold_run(m, font), chars)
    # Folding can leave two spaces side by side (a dropped emoji between two words).
    if "  " in folded:
        folded = _EXTRA_SPACES_RE.sub(" ", folded)
    return folded.strip(_EDGES)

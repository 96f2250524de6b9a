"""The archive normaliser: text folded to what the frame font draws (Latin-1, ASCII folds for
punctuation and emoji, ANSI and format characters removed, whitespace runs collapsed).

Which characters are format characters, marks, controls or emoji, and how they decompose, is
read from the release runtime's own answers (`_unicode`), not from this Python's Unicode
database; ANSI sequences are removed as Bun removes them (`_ansi`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from ...compaction._serialize import JS_WHITESPACE
from ...context._summaries import NEWLINE_GLYPH
from ._ansi import ESC, strip_ansi
from ._font import kept_code_points
from ._unicode import code_points, nfkd

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


# One character the pixel font does not print as it is: not ASCII/Latin-1, the ink toggles
# or `█`.
_UNPRINTED_RE = re.compile(f"[^\\x20-\\x7e\\xa0-\\xff{DIM_ON}{DIM_OFF}{NEWLINE_GLYPH}]")


# Up to this many distinct characters outside the font are replaced one by one
# (`str.replace`, a C loop over the text each); more, in one `str.translate` pass.
_FEW_DISTINCT = 48


# Folds are cached per distinct character; bounded, so text cycling through all of Unicode
# cannot grow the cache without limit.
_FOLD_CACHE_SIZE = 1 << 16


DROPPED, GRAPHIC, FALLBACK = 0, 1, 2
"""How a character outside the font counts (`_fold_char`): dropped (no cell, not counted),
a graphic character, or a graphic character printed as the fallback `?`."""


def is_pictographic(ch: str) -> bool:
    """Whether a character is `Extended_Pictographic` (an emoji pictograph) as the release's
    runtime reads it (Unicode 17.0)."""
    return ord(ch) in code_points("pictographic")


def _ascii_or_latin1(cp: int) -> bool:
    return 0x20 <= cp < 0x7F or 0xA0 <= cp <= 0xFF


def _unrenderable(ch: str) -> bool:
    # Controls, non-spacing and enclosing marks, surrogates (`[\p{Cc}\p{Mn}\p{Me}\p{Cs}]`).
    return ord(ch) in code_points("unrenderable")


def fold_to_ascii(ch: str) -> str | None:
    """A one-character ASCII/Latin-1 fold by NFKD (fullwidth, ligatures, accents, …).

    Combining marks are dropped; residual punctuation goes through `CHAR_FOLD`. None when
    the character has no decomposition or still leaves an undrawable character. A mark on
    its own decomposes to nothing: it folds to "" (and still counts as a graphic character,
    as in the release).
    """
    marks = code_points("mark")
    decomposed = "".join(c for c in nfkd(ch) if ord(c) not in marks)
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
def _format_chars_res() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    # (a format (Cf) character of the BMP, one beyond it, runs of them to drop), built on
    # first use; the first two only find out quickly whether there is anything to drop (a
    # class of BMP characters alone compiles to a bitmap). The release runs on Bun, whose
    # regular expressions do not match U+FEFF in `[\s\p{Cf}]+` right after a character in
    # U+F800-U+FBFF (Alphabetic Presentation Forms such as the `ﬁ` ligature, and the
    # private-use characters before them): that BOM stays in the text, outside any run, and
    # is folded like any other character (it prints as `?`).
    codes = sorted(code_points("format"))
    others = [cp for cp in codes if cp != 0xFEFF]
    return (
        re.compile(f"[{_char_class(cp for cp in codes if cp <= 0xFFFF)}]"),
        re.compile(f"[{_char_class(cp for cp in codes if cp > 0xFFFF)}]"),
        re.compile(f"(?:[{_char_class(others)}]|(?<![\\uf800-\\ufbff])\\ufeff)+"),
    )


def _drop_format_chars(text: str) -> str:
    if text.isascii():  # every format character lies outside ASCII
        return text
    in_bmp, beyond, runs = _format_chars_res()
    if in_bmp.search(text) is None and beyond.search(text) is None:
        return text
    return runs.sub("", text)


def _spacing_run(match: re.Match[str]) -> str:
    return NEWLINE_GLYPH if _LINE_BREAK_RE.search(match.group()) else " "


def _collapse_whitespace(text: str) -> str:
    # A run of whitespace and format (Cf) characters with a line break becomes the newline
    # glyph, a run with real whitespace one space, a run of only format characters (zero-
    # width space, BOM, direction marks…) nothing. Dropping the format characters first
    # gives the same runs, since they never decide a run's kind.
    return _SPACING_RUN_RE.sub(_spacing_run, _drop_format_chars(text))


@lru_cache(maxsize=_FOLD_CACHE_SIZE)
def _fold_char(ch: str, font: str = "8x13") -> tuple[str, int]:
    # What one character outside the font prints as, and how it counts (DROPPED, GRAPHIC,
    # FALLBACK), in the release's order of rules.
    if ch in EMOJI_FOLD:
        return EMOJI_FOLD[ch], GRAPHIC
    if ch in CHAR_FOLD:
        return CHAR_FOLD[ch], GRAPHIC
    cp = ord(ch)
    if 0x2500 <= cp <= 0x257F:
        box = "|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+"
        return box, GRAPHIC
    folded = fold_to_ascii(ch)
    if folded is not None:
        return folded, GRAPHIC
    if is_pictographic(ch) or _unrenderable(ch):
        return "", DROPPED
    # A character with no fold that the release's renderer draws prints as itself.
    return (ch, GRAPHIC) if cp in kept_code_points(font) else ("?", FALLBACK)


def input_chars(text: str) -> str:
    """The text the per-character rules see: ANSI stripped (when it holds an ESC, as the
    release checks), whitespace and format runs collapsed, spaces and `█` trimmed."""
    stripped = strip_ansi(text) if ESC in text else text
    return _collapse_whitespace(stripped).strip(_EDGES)


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """Normalized text and the counts that decide whether its font is safe.

    Attributes:
        text: What the frames print (`normalize_archive_text`).
        graphics: Graphic characters before the last space collapse: each ASCII or Latin-1
            character (spaces included) and each folded or kept character counts one (a
            fold to `[OK]` too, and a mark folded to nothing); the ink toggles, `█` and
            dropped characters none.
        fallbacks: Of those, the characters printed as `?` because no rule folds them and
            the font does not draw them (a `?` of the input is no fallback).
    """

    text: str
    graphics: int
    fallbacks: int


def normalize_with_stats(text: str, *, font: str = "8x13") -> NormalizedText:
    """`normalize_archive_text` with its counts (oh-my-pi `normalizeWithStats`, whose ratio
    `scanRenderability` reports)."""
    # Regex passes and string methods run in C; Python runs once per distinct character
    # outside the font (and folds each once, cached).
    chars = input_chars(text)
    uncounted = chars.count(DIM_ON) + chars.count(DIM_OFF) + chars.count(NEWLINE_GLYPH)
    unprinted = _UNPRINTED_RE.findall(chars)
    if not unprinted:
        return NormalizedText(chars, len(chars) - uncounted, 0)
    times = Counter(unprinted)
    many = len(times) > _FEW_DISTINCT
    graphics, fallbacks = len(chars) - uncounted - len(unprinted), 0
    table: dict[int, str] = {}
    folded = chars
    for ch in times:
        printed, kind = _fold_char(ch, font)
        graphics += times[ch] if kind != DROPPED else 0
        fallbacks += times[ch] if kind == FALLBACK else 0
        if many:
            table[ord(ch)] = printed
        elif printed != ch:  # a fold never yields another character outside the font
            folded = folded.replace(ch, printed)
    if many:
        folded = chars.translate(table)
    # Folding can leave two spaces side by side (a dropped emoji between two words).
    if "  " in folded:
        folded = _EXTRA_SPACES_RE.sub(" ", folded)
    return NormalizedText(folded.strip(_EDGES), graphics, fallbacks)


def normalize_archive_text(text: str, *, font: str = "8x13") -> str:
    """Prepare archive text for snapcompact's pixel font (oh-my-pi `normalize`, spec §6.2).

    Steps: strip ANSI escapes (`_ansi.strip_ansi`, when the text holds an ESC); collapse
    every whitespace/format-character run — a run with a line break becomes one `█`
    (U+2588), other runs one space, pure format runs vanish; trim spaces and `█` at both
    ends; then per character: ASCII and Latin-1 stay; the ink toggles and `█` stay; status
    emoji become `[OK]`, `[FAIL]`, `[WARN]`, `[ALERT]`, `[INFO]`, … (`EMOJI_FOLD`); quotes,
    dashes, bullets, arrows, ellipses and check marks fold to ASCII (`CHAR_FOLD`); box
    drawing (U+2500–U+257F) becomes `|`, `-` or `+`; NFKD-decomposable characters fold to
    their ASCII skeleton (a lone mark to nothing); other pictographs are dropped, as are
    controls, combining marks and lone surrogates; anything else becomes `?`. Finally space
    runs collapse and the ends are trimmed again.

    A character with none of these folds that the release's renderer draws stays as it is
    (`_font.kept_code_points`): for `font="8x13"` what misc-fixed or the Silver fallback
    draws (Greek, Cyrillic, math symbols, CJK, …), for `font="silver"` what Silver draws.
    """
    return normalize_with_stats(text, font=font).text

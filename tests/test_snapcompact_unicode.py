"""Snapcompact's character facts and ANSI stripping, as oh-my-pi 18.2.3's runtime has them.

The expected values are what the release returned on Bun 1.3.14 for these inputs
(`Bun.stripANSI`, `normalize`, `scanRenderability`); `tests/conformance/test_unicode.py`
checks every code point against the running release, these few stay as plain examples that
need no reference install. Neither depends on the Python running the tests: the normalizer
reads no `unicodedata` (checked below), so Python 3.11 (Unicode 14.0) and 3.13 (15.1) agree.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from musepi_lab.compaction._serialize import JS_WHITESPACE
from musepi_lab.strategies.snapcompact._ansi import strip_ansi
from musepi_lab.strategies.snapcompact._normalize import normalize_with_stats
from musepi_lab.strategies.snapcompact._unicode import (
    PROPERTIES,
    code_points,
    nfkd,
    parse_character_table,
)

SNAPCOMPACT = Path(__file__).resolve().parents[1] / "musepi_lab" / "strategies" / "snapcompact"


@pytest.mark.parametrize(
    ("raw", "stripped", "normalized"),
    [
        # CSI takes everything up to a final byte: private and `:` sub-parameter forms too.
        ("a\x1b[>4;2mb", "ab", "ab"),
        ("a\x1b[38:5:245m\u258ab", "a\u258ab", "a\u258ab"),
        ("a\x1b[4:3mb", "ab", "ab"),
        ("a\x1b[<0;1;2Mb", "ab", "ab"),
        ("a\x1b[\x00b", "a", "a"),
        # APC and PM end at ESC \ (not at BEL); an open OSC takes the rest of the text.
        ("a\x1b_xx\x1b\\b", "ab", "ab"),
        ("a\x1b_bk;t=1\x07b", "a", "a"),
        ("a\x1b]0;\x00b", "a", "a"),
        # ESC and any one character go together: another ESC, a non-ASCII one, half an
        # astral one (its low surrogate stays, and the normalizer drops it).
        ("a\x1b\x1b[0mb", "a[0mb", "a[0mb"),
        ("a\x1b\u2028b", "ab", "ab"),
        ("a\x1b\U0001f600b", "a\ude00b", "ab"),
        ("a\x1b", "a", "a"),
        ("a\x1b(", "a", "a"),
        # C1 introducers count only where the text holds an ESC (the normalizer's check).
        ("a\x9b31mb", "ab", "a31mb"),
        ("a\x9cb\x1b[m", "a\x9cb", "ab"),
    ],
)
def test_ansi_is_stripped_as_bun_strips_it(raw: str, stripped: str, normalized: str) -> None:
    assert strip_ansi(raw) == stripped
    assert normalize_with_stats(raw).text == normalized


def test_a_stray_low_surrogate_still_splits_a_space_run() -> None:
    # "x \x1b😀 y": Bun leaves "x \ude00 y"; both spaces count (4 graphic characters).
    out = normalize_with_stats("x \x1b\U0001f600 y")
    assert (out.text, out.graphics, out.fallbacks) == ("x y", 4, 0)


@pytest.mark.parametrize(
    ("ch", "font", "text", "graphics", "fallbacks"),
    [
        ("\u0897", "8x13", "", 1, 0),  # a mark of Unicode 16: folds to nothing, counts
        ("\u0300", "silver", "", 1, 0),
        ("\U00013439", "8x13", "", 0, 0),  # an Egyptian format control (Unicode 15)
        ("\u2605", "8x13", "\u2605", 1, 0),  # no longer Extended_Pictographic (Unicode 17)
        ("\u2388", "8x13", "\u2388", 1, 0),
        ("\u2388", "silver", "?", 1, 1),
        ("\U0001fae9", "8x13", "", 0, 0),  # an emoji of Unicode 16: dropped
        ("\ufb13", "8x13", "\ufb13", 1, 0),  # misc-fixed draws the Armenian ligatures
        ("\ufb13", "silver", "?", 1, 1),
        ("\uff1f", "8x13", "?", 1, 0),  # a fold to `?` is no fallback
        ("\U0001e030", "8x13", "?", 1, 1),
        ("\u2594", "8x13", "\u2594", 1, 0),
        ("\u2594", "silver", "?", 1, 1),
    ],
)
def test_characters_fold_and_count_as_the_release_does(
    ch: str, font: str, text: str, graphics: int, fallbacks: int
) -> None:
    out = normalize_with_stats(ch, font=font)
    assert (out.text, out.graphics, out.fallbacks) == (text, graphics, fallbacks)


def test_javascript_whitespace_is_the_runtime_s() -> None:
    assert set(map(ord, JS_WHITESPACE)) == code_points("space")


def test_the_table_holds_every_property_and_the_decompositions() -> None:
    assert all(code_points(name) for name in PROPERTIES)
    assert set(range(0xD800, 0xE000)) <= code_points("unrenderable")  # lone surrogates
    assert nfkd("\ufb01") == "fi"
    assert nfkd("\uac00") == "\u1100\u1161"  # Hangul, decomposed by ICU's arithmetic
    assert nfkd("a") == "a"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("format 12G4", "bad line"),
        ("colour 0041", "unknown property"),
        ("nfkd 00A0", "at least one code point"),
        ("mark 0300-02FF", "bad code point run"),
    ],
)
def test_a_bad_table_line_is_named(line: str, why: str) -> None:
    with pytest.raises(ValueError, match=rf"table\.txt:2: .*{why}"):
        parse_character_table(f"space 0020\n{line}\n", source="table.txt")


def test_the_normalizer_reads_no_python_unicode_database() -> None:
    for name in ("_ansi.py", "_normalize.py", "_renderability.py", "_unicode.py"):
        tree = ast.parse((SNAPCOMPACT / name).read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "unicodedata" not in imported, name

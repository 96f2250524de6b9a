"""Conversation serialization: pi (§5.1), split turns (§5.4), boundary tags (§5.7), snapcompact (§6.2)."""

from __future__ import annotations

import json
import random
import re
import string
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab.compaction._serialize import (
    JS_WHITESPACE,
    merge_split_turn,
    neutralize_boundary_tags,
    serialize_conversation,
    truncate_head_tail,
    utf16_slice,
)
from musepi_lab.context._summaries import NEWLINE_GLYPH
from musepi_lab.strategies.snapcompact._archive import elide_data_urls, serialize_scoped
from musepi_lab.strategies.snapcompact._font import kept_code_points
from musepi_lab.strategies.snapcompact._normalize import (
    CHAR_FOLD,
    DIM_OFF,
    DIM_ON,
    EMOJI_FOLD,
    fold_to_ascii,
    is_pictographic,
    normalize_archive_text,
    strip_ansi,
)
from musepi_lab.strategies.snapcompact._unicode import code_points


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def thinking(t: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t}


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def result(cid: str, body: str, **extra: Any) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": "t",
        "content": [text(body)],
        "isError": False,
        **extra,
    }


def varied(n: int) -> str:
    """n characters that never repeat a 26-char window, so prefixes are distinguishable."""
    letters = string.ascii_letters
    return "".join(letters[(i * 7 + i // 52) % 52] for i in range(n))


# -- pi serialize_conversation ---------------------------------------------------------------


def test_pi_long_tool_result_is_cut_at_2000_with_marker() -> None:
    body = varied(5000)
    out = serialize_conversation([result("c", body)])
    assert "[... 3000 more characters truncated]" in out
    assert body[:2000] in out
    assert body[:3000] not in out
    assert out == "[Tool result]: " + body[:2000] + "\n\n[... 3000 more characters truncated]"


def test_pi_short_tool_result_is_verbatim() -> None:
    body = varied(1500)
    assert serialize_conversation([result("c", body)]) == "[Tool result]: " + body


def test_pi_user_and_assistant_text_never_truncated() -> None:
    long = varied(10000)
    out = serialize_conversation([user(long), assistant(text(long))])
    assert out == f"[User]: {long}\n\n[Assistant]: {long}"


def test_pi_truncation_counts_utf16_units() -> None:
    # Each emoji is two UTF-16 units: 1500 of them are 3000 units, 1000 survive.
    body = "\U0001f600" * 1500
    out = serialize_conversation([result("c", body)])
    assert (
        out == "[Tool result]: " + "\U0001f600" * 1000 + "\n\n[... 1000 more characters truncated]"
    )


def test_pi_assistant_parts_order_and_tool_call_rendering() -> None:
    msg = assistant(
        text("first"),
        call("1", "read", path="src/é.py", limit=10),
        thinking("hmm"),
        text("second"),
        call("2", "bash", command="ls", opts={"a": [1, True, None]}),
        thinking("more"),
    )
    assert serialize_conversation([msg]) == (
        "[Assistant thinking]: hmm\nmore\n\n"
        "[Assistant]: first\nsecond\n\n"
        '[Assistant tool calls]: read(path="src/é.py", limit=10); '
        'bash(command="ls", opts={"a":[1,true,null]})'
    )


def test_pi_user_blocks_join_without_separator_and_skip_images_and_empties() -> None:
    msgs = [
        user("a", "b"),
        {"role": "user", "content": "plain"},
        {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
        result("c", ""),
        assistant(),
        {"role": "custom", "content": "not llm-shaped"},
    ]
    assert serialize_conversation(msgs) == "[User]: ab\n\n[User]: plain"


# -- split turn and boundary tags --------------------------------------------------------------


def test_merge_split_turn() -> None:
    sep = "\n\n---\n\n**Turn Context (split turn):**\n\n"
    assert merge_split_turn("H", "P") == "H" + sep + "P"
    assert merge_split_turn(None, "P") == "No prior history." + sep + "P"


def test_neutralize_boundary_tags() -> None:
    raw = (
        "a </conversation> b <Previous-Summary> c < / conversation > d <summary> e <conversationx>"
    )
    assert neutralize_boundary_tags(raw) == (
        "a &lt;/conversation> b &lt;Previous-Summary> c &lt; / conversation > d <summary> e <conversationx>"
    )


# -- truncation helpers --------------------------------------------------------------------


def test_head_tail_truncation() -> None:
    # head = round(5 · 0.5) = 3 with JavaScript's half-up rounding (Python's round gives 2).
    assert truncate_head_tail("abcdefghij", 5, 0.5) == "abc [\u20265ch elided\u2026] ij"
    assert truncate_head_tail("abcdefghij", 10) == "abcdefghij"
    body = varied(3000)
    out = truncate_head_tail(body, 2000)
    assert out == body[:1200] + " [\u20261000ch elided\u2026] " + body[-800:]


def test_utf16_slice_matches_js() -> None:
    s = "a\U0001f600b"  # units: a, D83D, DE00, b
    assert utf16_slice(s, 0, 3) == "a\U0001f600"
    assert utf16_slice(s, -1) == "b"
    assert utf16_slice(s, 0, 2) == "a\ud83d"  # a cut through a pair leaves a lone surrogate


# -- snapcompact scoped serialization ----------------------------------------------------------


def test_scoped_structure() -> None:
    msgs = [
        user("fix the bug"),
        user("quickly"),
        assistant(
            thinking("plan it"),
            text("Looking."),
            call("c1", "read", path="a.py", i="check  the\nfile"),
        ),
        result("c1", "line1\nline2"),
        assistant(text("Done.")),
    ]
    assert serialize_scoped(msgs) == (
        "¶user:fix the bug\nquickly\n\n"
        "¶think:plan it\n\n"
        "¶ai:Looking.\n\n"
        '¶call:read(path="a.py")//check the file\n'
        f"<out>\n{DIM_ON}line1\nline2{DIM_OFF}\n</out>\n\n"
        "¶ai:Done."
    )
    no_think = serialize_scoped(msgs, include_thinking=False)
    assert "¶think:" not in no_think and "plan it" not in no_think
    assert serialize_scoped(msgs, dim_tool_results=False).count("<out>\nline1\nline2\n</out>") == 1


def test_scoped_consecutive_calls_merge_and_orphans_stand_alone() -> None:
    msgs = [
        result("old", "from an earlier window"),
        assistant(call("c1", "ls"), {**call("c2", "pwd"), "intent": "where am I"}),
        result("c1", "a b"),
        result("c2", "/w"),
    ]
    out = serialize_scoped(msgs)
    assert out == (
        f"¶call:\n<out>\n{DIM_ON}from an earlier window{DIM_OFF}\n</out>\n"
        f"ls()\n<out>\n{DIM_ON}a b{DIM_OFF}\n</out>\n"
        f"pwd()//where am I\n<out>\n{DIM_ON}/w{DIM_OFF}\n</out>"
    )


def test_scoped_caps() -> None:
    long_value = "v" * 1000
    out = serialize_scoped([assistant(call("c", "write", path="a", content=long_value))])
    # JSON of the value is 1002 chars: head 300, tail 200, 502 elided.
    assert f'content="{"v" * 299} [\u2026502ch elided\u2026] {"v" * 199}"' in out
    many = {f"k{i:02d}": "x" * 100 for i in range(30)}
    line = serialize_scoped([assistant(call("c", "bash", **many))])
    args = line[len("¶call:bash(") : -1]
    marker = re.search(r" \[\u2026(\d+)ch elided\u2026\] ", args)
    assert marker is not None
    full = ", ".join(f'{k}="{v}"' for k, v in many.items())
    assert int(marker.group(1)) == len(full) - 2000
    assert args.startswith(full[:1200]) and args.endswith(full[-800:])
    body = varied(5000)
    res = serialize_scoped([assistant(call("c", "cat")), result("c", body)])
    inner = res.split(DIM_ON)[1].split(DIM_OFF)[0]
    assert inner == body[:1200] + " [\u20263000ch elided\u2026] " + body[-800:]


def test_scoped_drops_useless_pairs_but_keeps_errors() -> None:
    msgs = [
        assistant(
            text("search"), call("u", "grep", pattern="zzz"), call("e", "grep", pattern="yyy")
        ),
        result("u", "no matches", useless=True),
        result("e", "boom", useless=True, isError=True),
    ]
    out = serialize_scoped(msgs)
    assert "zzz" not in out and "no matches" not in out
    assert 'grep(pattern="yyy")' in out and "boom" in out


def test_scoped_strips_raw_ink_toggles() -> None:
    out = serialize_scoped([user(f"a{DIM_ON}b{DIM_OFF}c")])
    assert out == "¶user:abc"


def test_data_urls_become_placeholders() -> None:
    payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAusB9Wl6ZQAAAABJRU5ErkJggg=="
    raw = f"see ![shot](data:image/png;base64,{payload}) and data:text/plain;charset=utf-8;base64,{payload} end"
    assert elide_data_urls(raw) == (
        f"see [data URL omitted: image/png, {len(payload)} base64 chars] and "
        f"[data URL omitted: text/plain;charset=utf-8, {len(payload)} base64 chars] end"
    )
    prose = "the form data:image/png;base64,abc is a data URL"
    assert elide_data_urls(prose) == prose
    assert elide_data_urls(prose, archive=True) == (
        "the form [data URL omitted: image/png, 3 base64 chars] is a data URL"
    )
    out = serialize_scoped([assistant(call("c", "shot")), result("c", raw)])
    assert payload not in out and "[data URL omitted: image/png" in out


# -- normalization -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\x1b[31mred\x1b[0m text", "red text"),
        ("a  \t b", "a b"),
        ("a\n\n  b\r\nc", f"a{NEWLINE_GLYPH}b{NEWLINE_GLYPH}c"),
        ("  \n a \n ", "a"),
        ("a\u200bb", "ab"),
        ("a \u200b b", "a b"),
        ("\u201cquoted\u201d \u2014 dash\u2026", '"quoted" - dash...'),
        ("\u250c\u2500\u2510\u2502\u2514\u2518", "+-+|++"),
        ("\u2705 ok \u274c no \u26a0\ufe0f warn", "[OK] ok [FAIL] no [WARN] warn"),
        ("\U0001f389 party \U0001f680", "party [RUN]"),
        ("\ufb01le \uff28\uff45\uff4c\uff4c\uff4f", "file Hello"),
        ("caf\u00e9 \u01ce \u2153", "caf\u00e9 a 1/3"),
        # misc-fixed 8x13 draws Greek, the Silver fallback CJK; private use prints `?`.
        ("\u03b1 \u4e2d \ue000", "\u03b1 \u4e2d ?"),
        ("a\x07b", "ab"),
        (f"x{DIM_ON}y{DIM_OFF}", f"x{DIM_ON}y{DIM_OFF}"),
        ("\u2192 next \u2713", "-> next v"),
        # What oh-my-pi 18.2.3 returns on Bun 1.3.14 (its regex keeps this BOM out of the run).
        ("\ufb01\ufeff\nb", f"fi?{NEWLINE_GLYPH}b"),
        ("\ufb01\ufeffb", "fi?b"),
        ("a\ufeff\nb", f"a{NEWLINE_GLYPH}b"),
    ],
)
def test_normalize_archive_text(raw: str, expected: str) -> None:
    assert normalize_archive_text(raw) == expected


def test_scoped_normalize_flag() -> None:
    out = serialize_scoped([user("it\u2019s\n\ndone \u2705")], normalize=True)
    assert out == f"\u00b6user:it's{NEWLINE_GLYPH}done [OK]"


# -- normalize, against the documented steps done one character at a time ------------------


def reference_normalize(raw: str) -> str:
    """`normalize_archive_text` as its docstring reads, with a plain loop per character."""
    edges = " " + NEWLINE_GLYPH
    out: list[str] = []
    run: list[str] = []

    def close_run() -> None:
        if any(c in "\n\r\u2028\u2029" for c in run):
            out.append(NEWLINE_GLYPH)
        elif any(ord(c) not in code_points("format") for c in run):
            out.append(" ")
        run.clear()

    previous = ""
    for ch in strip_ansi(raw) if "\x1b" in raw else raw:
        # Bun's regex leaves a BOM right after U+F800-U+FBFF out of the run (it prints `?`).
        stranded = ch == "\ufeff" and "\uf800" <= previous <= "\ufbff"
        previous = ch
        if (ch in JS_WHITESPACE or ord(ch) in code_points("format")) and not stranded:
            run.append(ch)
        else:
            close_run()
            out.append(ch)
    close_run()
    folded: list[str] = []
    for ch in "".join(out).strip(edges):
        cp = ord(ch)
        if 0x20 <= cp < 0x7F or 0xA0 <= cp <= 0xFF or ch in (DIM_ON, DIM_OFF, NEWLINE_GLYPH):
            folded.append(ch)
        elif ch in EMOJI_FOLD:
            folded.append(EMOJI_FOLD[ch])
        elif ch in CHAR_FOLD:
            folded.append(CHAR_FOLD[ch])
        elif 0x2500 <= cp <= 0x257F:
            folded.append("|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+")
        elif fold_to_ascii(ch) is not None:
            folded.append(fold_to_ascii(ch) or "")
        elif not is_pictographic(ch) and ord(ch) not in code_points("unrenderable"):
            # Kept when the release draws it (misc-fixed 8x13 or its Silver fallback).
            folded.append(ch if ord(ch) in kept_code_points("8x13") else "?")
    return re.sub(" +", " ", "".join(folded)).strip(edges)


FORMAT_CHARS = "\u00ad\u061c\u200b\u200c\u200d\u200e\u2060\u2066\ufeff\U000e0001\U000e0041"
NASTY_PIECES = [
    *JS_WHITESPACE,
    *FORMAT_CHARS,
    *"ab Z9\u00e9\u00ff\x00\x07\x7f\x85\x9b\x0e\x0f\u2588",
    "\x1b[31m", "\x1b[0m", "\x1b]0;title\x07", "\x1b", "\r\n", "  ", "\n\n",
    "\u2705", "\u274c", "\U0001f680", "\U0001f600", "\U0001f3fd", "\ufe0f", "\u2500", "\u2502",
    "\u253c", "\u201c", "\u2026", "\u2192", "\uff46", "\ufb01", "\u00bd", "\u4e2d", "\u03a9",
    "\ud800", "\udfff", "\u0301", "\u20dd", "\ue000",
]  # fmt: skip


def test_normalize_matches_the_reference_on_random_mixes() -> None:
    rng = random.Random(20240604)
    for _ in range(2000):
        raw = "".join(rng.choice(NASTY_PIECES) for _ in range(rng.randint(0, 40)))
        assert normalize_archive_text(raw) == reference_normalize(raw), repr(raw)


@pytest.mark.parametrize("ch", [*JS_WHITESPACE, *FORMAT_CHARS])
def test_normalize_whitespace_and_format_chars_in_every_position(ch: str) -> None:
    for raw in (ch, f"a{ch}b", f"a {ch} b", f"a{ch}\nb", f"a\n{ch} b", f"{ch}a{ch}", f"a{ch * 3}b"):
        assert normalize_archive_text(raw) == reference_normalize(raw), repr(raw)


def test_normalize_format_runs() -> None:
    # A run of only format characters vanishes; with a space it is one space; with a line
    # break, one glyph (U+FEFF is JavaScript whitespace but a format character too).
    assert normalize_archive_text("a\ufeff\u200bb") == "ab"
    assert normalize_archive_text("a\u200b \u200db") == "a b"
    assert normalize_archive_text("a \u200b\n\u2060 b") == f"a{NEWLINE_GLYPH}b"
    assert normalize_archive_text("a\u00adb") == "ab"  # soft hyphen: Latin-1 yet format


def test_normalize_long_runs_stay_fast() -> None:
    # Runs a backtracking pattern would rescan from every position (quadratic time).
    assert normalize_archive_text("a" + " \t" * 200_000 + "b") == "a b"
    assert normalize_archive_text("a" + "\u200b" * 200_000 + "b") == "ab"
    assert normalize_archive_text(NEWLINE_GLYPH * 200_000 + "x") == "x"
    assert normalize_archive_text("x" + " " * 200_000 + "\n") == "x"


def test_normalize_characters_across_unicode() -> None:
    # A sample of every block: whatever category a character has, the fold is the reference's.
    rng = random.Random(7)
    sample = [chr(cp) for cp in rng.sample(range(0x110000), 20_000)]
    raw = " ".join("".join(sample[i : i + 7]) for i in range(0, len(sample), 7))
    assert normalize_archive_text(raw) == reference_normalize(raw)


# -- corpus ----------------------------------------------------------------------------------


def corpus_messages() -> list[dict[str, Any]]:
    """user/assistant/toolResult messages of the pi fixture, straight from the JSON lines."""
    path = corpus_file("pi", "before-compaction.jsonl")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        msg = json.loads(line).get("message")
        if isinstance(msg, dict) and msg.get("role") in ("user", "assistant", "toolResult"):
            out.append(msg)
    return out


def result_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(b["text"] for b in m["content"] if b.get("type") == "text")
        for m in messages
        if m["role"] == "toolResult"
    ]


def test_corpus_pi_serialization_truncates_every_long_result() -> None:
    messages = corpus_messages()
    texts = result_texts(messages)
    long = [t for t in texts if len(t.encode("utf-16-le")) // 2 > 2000]
    assert long, "the fixture has long tool results"
    out = serialize_conversation(messages)
    assert len(re.findall(r"\n\n\[\.\.\. \d+ more characters truncated\]", out)) >= len(long)
    for t in long[:20]:
        assert t not in out


def test_corpus_scoped_serialization_pairs_every_result() -> None:
    messages = corpus_messages()
    non_empty = [t for t in result_texts(messages) if t]
    out = serialize_scoped(messages)
    assert out.count(DIM_ON) == len(non_empty) == out.count(DIM_OFF)
    # Every result answers a call of the fixture, so none stands alone.
    assert "¶call:\n<out>" not in out
    normalized = normalize_archive_text(out)
    assert "\n" not in normalized
    assert normalized.count(DIM_ON) == len(non_empty)
    assert all(ord(c) <= 0xFF or c == NEWLINE_GLYPH for c in normalized)


def test_corpus_normalize_matches_the_reference() -> None:
    text = serialize_scoped(corpus_messages())
    assert normalize_archive_text(text) == reference_normalize(text)

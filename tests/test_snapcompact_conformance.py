"""Snapcompact against oh-my-pi 18.2.3's own (`@oh-my-pi/snapcompact`), on the pi corpus.

The reference driver (run by `musepi_lab.conformance`, Bun) archives each file's preparation
for four readers (Claude Sonnet 4.5, Claude Opus 4.7, Gemini, GPT-5); `compare_snapcompact` rebuilds
the same archives here and compares plan, archive text, frame geometry, decoded frame pixels
and billing. Every measure must agree on every case.

The driver's JSON and frame PNGs are the conformance package's cached run
(`cached_reference(..., frames=True)`: keyed by the session file's digest, the pins, the
driver and the options), so a rerun costs only our side.
Missing node, npm or bun skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import random
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import pytest
from _corpus import corpus_file

from musepi_lab.conformance import ReferenceToolMissing
from musepi_lab.conformance._reference import cached_reference
from musepi_lab.conformance._snapcompact import MEASURES, archive_for_reference, compare_snapcompact
from musepi_lab.formats._registry import read_session

pytestmark = pytest.mark.corpus

TARGETS = {"anthropic", "anthropic-opus-4.7", "google", "openai"}
# 20,000 (the default keep) on every fixture; 1,000 on large-session, where the GPT and
# Sonnet readers hit the 17-frame cap and the archive is foveated and truncated.
CASES = [
    (("pi", "before-compaction.jsonl"), (20000,)),
    (("pi", "large-session.jsonl"), (1000, 20000)),
    (("pi", "oh-my-pi", "before-compaction.jsonl"), (20000,)),
    (("pi", "oh-my-pi", "large-session.jsonl"), (20000,)),
]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _missing(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"CI=true but the reference driver cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@cache
def reference(path: Path, budgets: tuple[int, ...]) -> dict[str, Any]:
    """The driver's JSON for one file, with its frame PNGs: the conformance package's cached
    run (keyed by the file, the pins, the driver and the options)."""
    try:
        return cached_reference(
            "musepi",
            path,
            budgets,
            snapcompact=True,
            snapcompact_budgets=budgets,
            texts="full",
            frames=True,
        )
    except ReferenceToolMissing as error:
        _missing(str(error))


def _check(ref: dict[str, Any], session_path: Path, budgets: tuple[int, ...]) -> None:
    """Every measure agrees on every budget x reader case and every frame."""
    assert ref["reference"]["packages"]["@oh-my-pi/snapcompact"] == "18.2.3"
    for budget in budgets:
        assert set(ref["budgets"][str(budget)]["snapcompact"]) == TARGETS
    rows = compare_snapcompact(ref, read_session(session_path), budgets)
    assert [r["measure"] for r in rows] == list(MEASURES)
    by_measure = {r["measure"]: r for r in rows}
    frames = sum(
        len(t["frames"]) for b in budgets for t in ref["budgets"][str(b)]["snapcompact"].values()
    )
    cases = len(budgets) * len(TARGETS)
    for row in rows:
        expected = frames if row["measure"].startswith("snapcompact/frame_") else cases
        assert (row["agreed"], row["total"]) == (expected, expected), row
        assert row["first_difference"] is None
    assert by_measure["snapcompact/frame_pixels"]["max_differing_pixel_share"] == 0.0


@pytest.mark.parametrize(("parts", "budgets"), CASES, ids=lambda v: "/".join(map(str, v)))
def test_snapcompact_matches_oh_my_pi(parts: tuple[str, ...], budgets: tuple[int, ...]) -> None:
    path = corpus_file(*parts)
    _check(reference(path, budgets), path, budgets)


# -- a generated session: the characters the corpus lacks -----------------------------------

_WORDS = "alpha beta gamma ledger refund invoice parse check retry cache batch the of and".split()
_PIECES = [
    "\u03bb", "\u03a9", "\u03b1\u03b2\u03b3", "\u041f\u0440\u0438\u0432\u0435\u0442",
    "\u2264", "\u2265", "\u2211", "\u221a", "\u221e", "\u2192", "\u21d2", "\u201cq\u201d",
    "\u2014", "\u2026", "\u2022", "\u2713", "\u2705", "\u274c", "\u26a0\ufe0f",
    "\U0001f389", "\U0001f680", "\u251c\u2500\u2500", "\u2502", "\u2514\u2500", "\ufb01",
    "\uff28\uff45\uff4c\uff4c\uff4f", "\u00e9", "\u00f1", "e\u0301", "\u200b", "\ufeff",
    "\t", "  ", "\x1b[31mred\x1b[0m", "\u00a0", "\u00bd", "\u00b2", "\u2122", "\u20ac",
    "\ue000", "\u216b", "\u01c5", "\u2135", "\u2200x\u2208S", "\u2318", "\u2665", "\u2603",
    "\u2388", "\ufb13", "\ufffd", "\u0897", "\U0001fae9", "\x1b[38:5:37m", "\x1b[>4;2m",
]  # fmt: skip
"""Greek, Cyrillic, math, arrows, quotes, emoji (folded and dropped), box drawing, a ligature,
fullwidth, combining marks, zero-width and BOM, tabs, ANSI, private use: no CJK (only the
release's Silver font draws it, which is not ported). And where Python's Unicode database
and the release's runtime disagree (issue 33): a symbol Unicode 17 no longer calls an emoji
(U+2388), a mark and an emoji of Unicode 16, misc-fixed's Armenian ligature and U+FFFD, and
CSI forms the `ansi-regex` pattern does not know."""


def generated_session(path: Path) -> Path:
    """A deterministic 280-entry session (user, assistant with thinking and a bash call with
    an intent, its result, assistant) of words and `_PIECES`, some results with data URLs."""
    rng = random.Random(11)

    def text(n: int) -> str:
        parts: list[str] = []
        while sum(map(len, parts)) < n:
            parts.append(rng.choice(_WORDS) if rng.random() < 0.6 else rng.choice(_PIECES))
            parts.append(rng.choice([" ", " ", " ", "\n", "\n\n", ""]))
        return "".join(parts)

    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage: dict[str, Any] = {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0}
    usage.update(totalTokens=150, cost=cost)
    meta = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "gen", "timestamp": "2025-01-01T00:00:00.000Z"}
    ]

    def add(message: dict[str, Any]) -> None:
        parent = lines[-1].get("id") if len(lines) > 1 else None
        entry_id = f"{len(lines):08x}"
        message["timestamp"] = 1_700_000_000_000 + len(lines)
        stamp = "2025-01-01T00:00:00.000Z"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": stamp,
                "message": message,
            }
        )

    for turn in range(70):
        add({"role": "user", "content": [{"type": "text", "text": text(300)}]})
        call = {"command": text(80), "i": "run " + text(20)}
        add(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": text(200)},
                    {"type": "text", "text": text(200)},
                    {"type": "toolCall", "id": f"call_{turn}", "name": "bash", "arguments": call},
                ],
                "usage": usage,
                "stopReason": "toolUse",
                **meta,
            }
        )
        body = text(rng.choice([100, 900, 3000]))
        if turn % 9 == 0:
            body += " ![img](data:image/png;base64," + "iVBORw0KGgo" * 20 + ") tail"
        result = {"type": "text", "text": body}
        add(
            {
                "role": "toolResult",
                "toolCallId": f"call_{turn}",
                "toolName": "bash",
                "content": [result],
                "isError": False,
            }
        )
        add(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": text(150)}],
                "usage": usage,
                "stopReason": "stop",
                **meta,
            }
        )
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def test_snapcompact_matches_oh_my_pi_on_a_generated_session(tmp_path: Path) -> None:
    # The session's bytes are the same every run, so the cached reference is found again.
    path = generated_session(tmp_path / "snapcompact-unicode.jsonl")
    budgets = (2000,)
    _check(reference(path, budgets), path, budgets)


# -- issue 33: a Claude Code session whose tool output holds block elements ------------------

# The characters issue 33 names (block elements ▔ ▁ ▊ ▎, ▼, ←, ✓ ✗ and ·), in lines as a
# coloured terminal program prints them into a Bash tool result: a test runner, bars and a
# sparkline, a tree, a hyperlink, a progress line that hides the cursor. The escape sequences
# are those terminals use: SGR with `;` and with `:` sub-parameters (256 colours, curly
# underline), private CSI modes (`?25l`, `>4;2m`), erase and move, OSC 8 links.
_TOOL_LINES = [
    "\x1b[32m \u2713\x1b[39m ledger \u203a posts a refund \x1b[2m(4 ms)\x1b[22m",
    "\x1b[31m \u2717\x1b[39m ledger \u203a rejects a negative amount",
    "\x1b[2m   \u00b7 skipped: retries the batch\x1b[22m",
    "cache  \x1b[38:5:37m\u258a\u258a\u258a\u258a\u258a\u258e\x1b[39m      41%",
    "\x1b[38;2;120;120;120m\u2581\u2581\u2582\u2581\u2594\u2594\u2581\u2581\x1b[0m  latency p50",
    "\x1b[4:3m" + "\u2594" * 12 + "\x1b[4:0m",
    "\x1b[1m\u25bc\x1b[22m src/ledger",
    "  \u2190 \x1b]8;;file:///home/dev/ledger/parse.ts\x1b\\parse.ts\x1b]8;;\x1b\\  (renamed)",
    "\x1b[?25l\x1b[2K\x1b[1G\u2713 12 passed \u00b7 \u2717 1 failed \u00b7 3 skipped\x1b[?25h",
    "\x1b[>4;2m  \u258e invoice.total \u2190 sum(lines)\x1b[>4m",
]


def claude_code_session(path: Path) -> Path:
    """A deterministic Claude Code 2.1.75 session: 120 turns of a prompt, an assistant Bash
    call, its tool result (8 to 40 lines of `_TOOL_LINES`) and an answer."""
    rng = random.Random(33)
    session = "33333333-0000-4000-8000-000000000033"
    lines: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(lines):012d}"
        stamp = f"2026-03-01T10:{len(lines) // 60:02d}:{len(lines) % 60:02d}.000Z"
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/ledger",
                "sessionId": session,
                "version": "2.1.75",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": stamp,
                **extra,
            }
        )
        parent = uuid

    usage = {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 0}
    for turn in range(120):
        words = " ".join(rng.choice(_WORDS) for _ in range(30))
        add("user", {"role": "user", "content": f"turn {turn}: {words}"})
        call = f"toolu_{turn:024d}"
        add(
            "assistant",
            {
                "model": "claude-sonnet-4-5",
                "id": f"msg_{turn:024d}a",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": "npm test"},
                    }
                ],
                "stop_reason": "tool_use",
                "usage": usage,
            },
            requestId=f"req_{turn:024d}a",
        )
        output = "\n".join(rng.choice(_TOOL_LINES) for _ in range(rng.randint(8, 40)))
        result = {"type": "tool_result", "tool_use_id": call, "content": output, "is_error": False}
        add("user", {"role": "user", "content": [result]}, toolUseResult={"stdout": output})
        add(
            "assistant",
            {
                "model": "claude-sonnet-4-5",
                "id": f"msg_{turn:024d}b",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": f"Turn {turn} done: {words[:80]}"}],
                "stop_reason": "end_turn",
                "usage": usage,
            },
            requestId=f"req_{turn:024d}b",
        )
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def test_block_elements_in_claude_code_tool_output_match_oh_my_pi(tmp_path: Path) -> None:
    # Issue 33: such a session's archive text came out 7 characters longer than the release's,
    # so every frame differed. Both sides read our conversion of the file (as the
    # `conformance` command does); the archive text, its length, the plan's totalChars and
    # every frame's pixels must be the release's.
    from musepi_lab.conformance._run import pi_jsonl

    source = claude_code_session(tmp_path / "block-elements.jsonl")
    budgets = (2000,)
    with pi_jsonl(source) as (jsonl, converted):
        assert converted
        ref = reference(jsonl, budgets)
        session = read_session(jsonl)
        for name, theirs in ref["budgets"]["2000"]["snapcompact"].items():
            built = archive_for_reference(
                session, ref["budgets"]["2000"]["prepare_compaction"], theirs["target"]
            )
            assert len(built.record["text"]) == len(theirs["archive"]["text"]), name
            assert built.record["totalChars"] == theirs["archive"]["totalChars"], name
        _check(ref, jsonl, budgets)

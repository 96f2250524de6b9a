"""One window rule for every view (issue 29 item 1): the window depends on the harness and the
model as the session records them, the session's own records are evidence, and each view
says where its window came from.

Claude Code runs Opus 4.6 at 200,000 tokens unless the session shows the 1M context (its
automatic compaction threshold is about 167,000 tokens for the 200,000 window: the corpus's
`compactMetadata.preTokens` are 167,094 and 167,117); pi compacts against pi-ai's model table,
which lists Opus 4.6 at 1,000,000. The files here are written in each harness's own format.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab import replay_session
from musepi_lab.analysis._live import live_summary
from musepi_lab.cli import main
from musepi_lab.formats import read_session
from musepi_lab.metrics import session_context_window
from musepi_lab.widgets import CutPointExplorer, SessionExplorer

SESSION = "11111111-2222-3333-4444-555555555555"


def _cc(uuid: str, parent: str | None, kind: str, second: int, **fields: Any) -> dict[str, Any]:
    return {
        "sessionId": SESSION,
        "cwd": "/w",
        "version": "2.1.39",
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "timestamp": f"2026-02-01T10:00:{second:02d}.000Z",
        **fields,
    }


def _reply(uuid: str, parent: str, second: int, cache_read: int, model: str) -> dict[str, Any]:
    message = {
        "id": f"msg_{uuid}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": f"reply {uuid} " + "word " * 200}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": 1000,
            "output_tokens": 50,
        },
    }
    return _cc(uuid, parent, "assistant", second, message=message, requestId=f"req_{uuid}")


def _user(uuid: str, parent: str | None, second: int, text: str, **extra: Any) -> dict[str, Any]:
    return _cc(uuid, parent, "user", second, message={"role": "user", "content": text}, **extra)


def claude_code_file(
    path: Path, *, cache_read: int = 150_000, model: str = "claude-opus-4-6"
) -> Path:
    rows = [
        _user("u1", None, 1, "first request " + "text " * 300),
        _reply("a1", "u1", 2, cache_read, model),
        _cc(
            "b1",
            None,
            "system",
            3,
            subtype="compact_boundary",
            logicalParentUuid="a1",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 170_251},
        ),
        _user("s1", "b1", 4, "Summary of the work so far.", isCompactSummary=True),
        _user("u2", "s1", 5, "go on " + "text " * 300),
        _reply("a2", "u2", 6, 20_000, model),
        _user("u3", "a2", 7, "and then " + "text " * 300),
        _reply("a3", "u3", 8, 30_000, model),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def pi_file(path: Path, model: str = "claude-opus-4-6") -> Path:
    usage = {"input": 10, "output": 50, "cacheRead": 150_000, "cacheWrite": 1000}
    rows = [
        {"type": "session", "version": 3, "id": "p1", "timestamp": "2026-02-01T10:00:00Z"},
        {
            "type": "message",
            "id": "e1",
            "parentId": None,
            "timestamp": "2026-02-01T10:00:01Z",
            "message": {"role": "user", "content": "hello " * 300, "timestamp": 1},
        },
        {
            "type": "message",
            "id": "e2",
            "parentId": "e1",
            "timestamp": "2026-02-01T10:00:02Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok " * 300}],
                "model": model,
                "provider": "anthropic",
                "usage": {**usage, "totalTokens": 151_060},
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def every_view(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[int, str]]:
    """`(window, where it came from)` as each view reports it for one file."""
    session = read_session(path)
    live = live_summary(session)
    replayed = replay_session(session, "none")
    cut = CutPointExplorer(session, plot=False)
    explorer = SessionExplorer(str(path), live=True)
    try:
        feed = explorer.live_summary
        assert feed is not None
        shown = html.unescape(explorer.live_view.value)  # what the view shows, in words
        in_explorer = (feed.window, shown if feed.window_reason in shown else "")
    finally:
        explorer.stop()
    capsys.readouterr()
    assert main(["watch", str(path), "--once"]) == 0
    out, err = capsys.readouterr()
    watched = err + out  # where the window came from (stderr), then the line (stdout)
    rule = session_context_window(session)
    return {
        "rule": (rule.tokens, rule.reason),
        "live_summary": (live.window, live.window_reason),
        "replay": (replayed.window, replayed.window_reason),
        "CutPointExplorer": (int(cut.window_slider.value), cut.context_window.reason),
        "SessionExplorer": in_explorer,
        "watch": (rule.tokens, watched) if f"/{rule.tokens:,} tok" in watched else (0, watched),
    }


def test_claude_code_runs_opus_4_6_at_200k_in_every_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    views = every_view(claude_code_file(tmp_path / f"{SESSION}.jsonl"), capsys)
    assert {name: tokens for name, (tokens, _) in views.items()} == dict.fromkeys(views, 200_000)
    for name, (_, said) in views.items():
        assert "Claude Code runs claude-opus-4-6 at 200,000" in said, name
        assert "auto-compacted at 170,251 tokens" in said, name
    session = read_session(tmp_path / f"{SESSION}.jsonl")
    assert session_context_window(session).source == "harness"
    # Not the 1M the old table gave: 684,873-style "to go" figures are gone.
    assert live_summary(session).threshold < 200_000


def test_a_recorded_prompt_above_200k_shows_the_1m_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claude_code_file(tmp_path / f"{SESSION}.jsonl", cache_read=250_000)
    views = every_view(path, capsys)
    assert {name: tokens for name, (tokens, _) in views.items()} == dict.fromkeys(views, 1_000_000)
    rule = session_context_window(read_session(path))
    assert rule.source == "evidence" and "251,010-token context" in rule.reason


def test_a_1m_model_id_is_the_1m_context(tmp_path: Path) -> None:
    path = claude_code_file(tmp_path / f"{SESSION}.jsonl", model="claude-opus-4-6[1m]")
    rule = session_context_window(read_session(path))
    assert (rule.tokens, rule.source) == (1_000_000, "evidence")


def test_pi_runs_opus_4_6_at_its_table_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    views = every_view(pi_file(tmp_path / "pi.jsonl"), capsys)
    assert {name: tokens for name, (tokens, _) in views.items()} == dict.fromkeys(views, 1_000_000)
    assert all("pi-ai's model table" in said for _, said in views.values())


def test_a_recorded_window_wins_and_a_given_one_is_said(tmp_path: Path) -> None:
    session = read_session(pi_file(tmp_path / "pi.jsonl"))
    recorded = session.copy_with(header={**session.header, "contextWindow": 272_000})
    assert session_context_window(recorded).tokens == 272_000
    assert session_context_window(recorded).source == "recorded"
    given = replay_session(session, "none", window=64_000)
    assert (given.window, given.window_source) == (64_000, "given")


def test_the_corpus_opus_4_6_session_is_200k_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    pre = [r["compactMetadata"]["preTokens"] for r in raw if r.get("subtype") == "compact_boundary"]
    views = every_view(path, capsys)
    assert {name: tokens for name, (tokens, _) in views.items()} == dict.fromkeys(views, 200_000)
    assert all(f"auto-compacted at {pre[0]:,} tokens" in said for _, said in views.values())

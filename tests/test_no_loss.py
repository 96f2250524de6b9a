"""Nothing lost: messages, tool calls and tool results, counted in each raw corpus file by
this test's own small parser per format, are all there after reading, after `convert` and
reading the output back, and after `Session.write` and reading that back.

The parsers below look at the raw JSON only (plain `json`, no reader code), following each
format's own definition of a message, a call and a result:

- pi: `message` lines by role; `toolCall` blocks of assistant messages.
- Claude Code: one assistant message per reply (`message.id`, per thread), one user message
  per user line holding anything besides tool results; `tool_use` and `tool_result` blocks.
  A Claude Code session's subagent files count with it (convert writes them too).
- Codex: `response_item` user messages, and one model turn per response (its run of
  reasoning, call and assistant-message items, `tests/_raw.py`); call items are calls,
  `*_output` items results.
- SWE-agent: `history` items by role; old-format actions are calls answered by the next
  user item, and the last action by the final `trajectory` observation.
- OpenHands: events by source and action; an observation is a result when it answers an
  open call (by tool-call id, else by `cause`); an unanswered error is fed back as user text.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, HAS_CORPUS
from _raw import codex_lines, codex_responses

from musepi_lab.cli import main
from musepi_lab.formats._registry import iter_sessions, read_session
from musepi_lab.session._session import Session

Counts = Counter  # keys: "messages", "calls", "results"


# -- counting a session (the model side) --------------------------------------------------------
def session_counts(sessions: Iterable[Session]) -> Counter:
    out: Counter = Counter()
    for session in sessions:
        for entry in session.entries:
            if entry.type != "message":
                continue
            role = entry.role
            if role in ("user", "assistant"):
                out["messages"] += 1
            if role == "toolResult":
                out["results"] += 1
            if role == "assistant":
                content = entry.message.get("content")
                blocks = content if isinstance(content, list) else []
                out["calls"] += sum(
                    1 for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"
                )
    return out


def with_linked(sessions: Iterable[Session]) -> list[Session]:
    out = []
    for session in sessions:
        out.append(session)
        out.extend(with_linked(session.linked))
    return out


# -- the raw parsers ---------------------------------------------------------------------------
def jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def count_pi(path: Path) -> Counter:
    out: Counter = Counter()
    for rec in jsonl(path):
        message = rec.get("message") if rec.get("type") == "message" else None
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("user", "assistant"):
            out["messages"] += 1
        if role == "toolResult":
            out["results"] += 1
        if role == "assistant" and isinstance(message.get("content"), list):
            out["calls"] += sum(1 for b in message["content"] if b.get("type") == "toolCall")
    return out


def _blocks(rec: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = rec["message"].get("content")
    return (
        [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        if isinstance(content, list)
        else []
    )


def count_claude_code_file(path: Path) -> Counter:
    out: Counter = Counter()
    replies = set()
    for rec in jsonl(path):
        if rec.get("type") not in ("user", "assistant") or not isinstance(rec.get("message"), dict):
            continue
        if rec["type"] == "assistant":
            replies.add((rec.get("isSidechain") is True, rec["message"].get("id") or rec["uuid"]))
            out["calls"] += len(_blocks(rec, "tool_use"))
            continue
        if rec.get("isCompactSummary") is True:
            continue  # the summary text of a compaction, not a message
        results = _blocks(rec, "tool_result")
        out["results"] += len(results)
        content = rec["message"].get("content")
        others = len(content) - len(results) if isinstance(content, list) else 1
        if others or not results:
            out["messages"] += 1
    out["messages"] += len(replies)
    return out


def count_claude_code(path: Path) -> Counter:
    out = count_claude_code_file(path)
    for agent in sorted((path.with_suffix("") / "subagents").glob("agent-*.jsonl")):
        out += count_claude_code_file(agent)
    return out


CODEX_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
CODEX_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def count_codex(path: Path) -> Counter:
    out: Counter = Counter()
    for rec in jsonl(path):
        if rec.get("type") != "response_item":
            continue
        item = rec["payload"]
        kind = item.get("type")
        if kind == "message" and item.get("role") == "user":
            out["messages"] += 1
        elif kind in CODEX_CALLS:
            out["calls"] += 1
        elif kind in CODEX_OUTPUTS:
            out["results"] += 1
    # The model's turns: one per response (its reasoning, calls and messages together).
    out["messages"] += len(codex_responses(codex_lines(path)))
    return out


def count_swe_agent(path: Path) -> Counter:
    doc = json.loads(path.read_text(encoding="utf-8"))
    history = doc["history"]
    out: Counter = Counter()
    awaiting = False  # old format: an action whose output is the next user item
    for item in history:
        role = item["role"]
        if role == "user" and awaiting:
            out["results"] += 1
        elif role == "user":
            out["messages"] += 1
        elif role == "assistant":
            out["messages"] += 1
            if isinstance(item.get("tool_calls"), list):
                out["calls"] += len(item["tool_calls"])
            elif item.get("action", "").strip():
                out["calls"] += 1
        elif role == "tool":
            out["results"] += len(item.get("tool_call_ids") or [item.get("tool_call_id")])
        awaiting = (
            role == "assistant"
            and "tool_calls" not in item
            and bool(item.get("action", "").strip())
        )
    last_step = (doc.get("trajectory") or [None])[-1]
    if (
        awaiting
        and last_step
        and last_step["action"].split()[0] == history[-1]["action"].split()[0]
    ):
        out["results"] += 1  # the final output, only in the trajectory
    return out


OPENHANDS_CONTROL = {
    "system",
    "recall",
    "change_agent_state",
    "null",
    "condensation",
    "condensation_request",
}


def count_openhands_events(events: list[dict[str, Any]]) -> Counter:
    out: Counter = Counter()
    open_by_call: dict[str, str] = {}
    open_by_event: dict[str, str] = {}
    for event in events:
        meta = event.get("tool_call_metadata") or {}
        if "action" in event:
            action, source = event["action"], event.get("source")
            if action == "message" and source == "user":
                out["messages"] += 1
            elif source != "agent" or action in OPENHANDS_CONTROL:
                pass
            elif action in ("message", "finish") or (action == "think" and not meta):
                out["messages"] += 1
            else:
                out["messages"] += 1
                out["calls"] += 1
                key = f"{event.get('id')}"
                call = meta.get("tool_call_id") or f"event_{key}"
                open_by_call[call] = key
                open_by_event[key] = call
        elif "observation" in event:
            call = meta.get("tool_call_id")
            key = open_by_call.pop(call, None) if call else None
            if key is None and event.get("cause") is not None:
                cause = str(event["cause"])
                if cause in open_by_event:
                    key = cause
                    open_by_call.pop(open_by_event[cause], None)
            if key is not None:
                open_by_event.pop(key, None)
                out["results"] += 1
            elif event["observation"] == "error":
                out["messages"] += 1
    return out


def count_openhands(path: Path) -> Counter:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return count_openhands_events(json.loads(text))
    out: Counter = Counter()
    for instance in jsonl(path):
        out += count_openhands_events(instance["history"])
    return out


COUNTERS = {
    "pi": count_pi,
    "claude-code": count_claude_code,
    "codex": count_codex,
    "swe-agent": count_swe_agent,
    "openhands": count_openhands,
}


def corpus_files() -> list[tuple[str, Path]]:
    if not HAS_CORPUS:
        return []
    out = []
    for fmt in COUNTERS:
        for path in sorted((CORPUS / fmt).rglob("*")):
            if path.suffix not in (".jsonl", ".json", ".traj") or "subagents" in path.parts:
                continue
            out.append((fmt, path))
    return out


FILES = corpus_files()


@pytest.mark.skipif(not HAS_CORPUS, reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize(("fmt", "path"), FILES, ids=[str(p.relative_to(CORPUS)) for _, p in FILES])
def test_counts_survive_read_convert_and_write(fmt: str, path: Path, tmp_path: Path) -> None:
    expected = COUNTERS[fmt](path)
    assert sum(expected.values()) > 0, "the raw parser found nothing: a parser bug"

    sessions = with_linked(iter_sessions(path))
    assert session_counts(sessions) == expected, "after read"

    out_dir = tmp_path / "converted"
    assert main(["convert", str(path), str(out_dir)]) == 0
    written = sorted(out_dir.rglob("*.jsonl")) if out_dir.is_dir() else [out_dir]
    assert len(written) == len(sessions)
    assert session_counts(read_session(p) for p in written) == expected, "after convert + read"

    rewritten = []
    for k, session in enumerate(sessions):
        out = session.write(tmp_path / "written" / f"{k}.jsonl")
        rewritten.append(read_session(out, strict=True))
    assert session_counts(rewritten) == expected, "after write + read"

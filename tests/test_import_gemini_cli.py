"""Gemini CLI reader: the fixtures (tests/data/gemini-cli, PROVENANCE.md) against counts and
usage taken from the raw JSON by this test's own parser, detection, bad input, convert.

The raw parser follows `loadConversationRecord` of `@google/gemini-cli-core` 0.61.0: a line
with an `id` is a message (a later line with the same id replaces it), `$rewindTo` cuts the
conversation at that message, `$set` updates metadata. Every message ever written is
counted (a rewound one stays, as a branch); the resumed conversation is checked apart.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.cli import main
from musepi_lab.formats._gemini_cli import read_gemini_cli
from musepi_lab.formats._registry import FORMATS, detect_format, iter_session_files, read_session
from musepi_lab.session._errors import SessionReadError

DATA = Path(__file__).parent / "data" / "gemini-cli"
JSONL = DATA / "chats" / "session-2026-12-03T10-00-7f3c2a10.jsonl"
LEGACY = DATA / "chats" / "session-2026-11-20T08-30-0a1b2c3d.json"
CHECKPOINT = DATA / "checkpoint-setup.json"
OLD_CHECKPOINT = DATA / "checkpoint-legacy.json"
LOGS = DATA / "logs.json"
ALL = [JSONL, LEGACY, CHECKPOINT, OLD_CHECKPOINT, LOGS]
# Written by Gemini CLI 0.61.0 itself, run against a loopback model (its PROVENANCE.md).
RUN = next((Path(__file__).parent / "data" / "gemini-cli-run" / "chats").glob("*.jsonl"))
RECORDINGS = pytest.mark.parametrize("path", [JSONL, LEGACY, RUN], ids=["jsonl", "legacy", "run"])


# -- the independent parser ------------------------------------------------------------------
def raw_recording(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(latest version of every message by id, the ids of the resumed conversation)."""
    if path.suffix == ".json":
        doc = json.loads(path.read_text(encoding="utf-8"))
        messages = {m["id"]: m for m in doc["messages"]}
        return messages, list(messages)
    latest: dict[str, dict[str, Any]] = {}
    active: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "$rewindTo" in rec:
            cut = rec["$rewindTo"]
            active = active[: active.index(cut)] if cut in active else []
        elif "messages" in rec.get("$set", {}):
            active = [m["id"] for m in rec["$set"]["messages"]]
            latest.update({m["id"]: m for m in rec["$set"]["messages"]})
        elif "id" in rec:
            if rec["id"] not in active:
                active.append(rec["id"])
            latest[rec["id"]] = rec
    return latest, active


def raw_counts(messages: dict[str, dict[str, Any]]) -> Counter:
    out: Counter = Counter()
    for m in messages.values():
        parts = m["content"] if isinstance(m["content"], list) else [m["content"]]
        if m["type"] == "gemini" or (
            # 0.61 also records the function responses it sends back as a user message;
            # they are the results of the calls, not a message of the user's.
            m["type"] == "user"
            and (
                not parts
                or any(not isinstance(p, dict) or "functionResponse" not in p for p in parts)
            )
        ):
            out["messages"] += 1
        for call in m.get("toolCalls") or []:
            out["calls"] += 1
            out["results"] += call["status"] in ("success", "error", "cancelled")
            out["errors"] += call["status"] in ("error", "cancelled")
        if m["type"] in ("info", "warning", "error"):
            out["notes"] += 1
    return out


def raw_usage(messages: dict[str, dict[str, Any]]) -> Counter:
    """Gemini's usageMetadata split as pi counts it: cached tokens are inside `input`."""
    out: Counter = Counter()
    for m in messages.values():
        t = m.get("tokens")
        if m["type"] != "gemini" or not t:
            continue
        out["input"] += t["input"] - t["cached"] + t.get("tool", 0)
        out["cacheRead"] += t["cached"]
        out["output"] += t["output"] + t.get("thoughts", 0)
        out["totalTokens"] += t["total"]
    return out


def raw_checkpoint(path: Path) -> Counter:
    doc = json.loads(path.read_text(encoding="utf-8"))
    history = doc["history"] if isinstance(doc, dict) else doc
    out: Counter = Counter()
    for content in history:
        parts = content["parts"]
        responses = sum(1 for p in parts if "functionResponse" in p)
        out["calls"] += sum(1 for p in parts if "functionCall" in p)
        out["results"] += responses
        if content["role"] == "model" or len(parts) > responses:
            out["messages"] += 1
    return out


# -- the session side ------------------------------------------------------------------------
def session_counts(session) -> Counter:
    out: Counter = Counter()
    for e in session.entries:
        if e.type == "custom":
            out["notes"] += 1
        if e.type != "message":
            continue
        if e.role in ("user", "assistant"):
            out["messages"] += 1
        if e.role == "toolResult":
            out["results"] += 1
            out["errors"] += e.message["isError"]
        if e.role == "assistant":
            out["calls"] += sum(1 for b in e.message["content"] if b["type"] == "toolCall")
    return out


def session_usage(session) -> Counter:
    out: Counter = Counter()
    for e in session.entries:
        if e.type == "message" and e.role == "assistant":
            for key in ("input", "output", "cacheRead", "totalTokens"):
                out[key] += e.message["usage"][key]
    return +out


# -- recordings ------------------------------------------------------------------------------
@RECORDINGS
def test_recording_counts_and_usage_match_the_raw_file(path: Path) -> None:
    messages, _ = raw_recording(path)
    session = read_session(path, strict=True)
    assert session.source_format == "gemini-cli"
    assert session.header["sourceFormat"] == "gemini-cli"
    expected = raw_counts(messages)
    assert sum(expected.values()) > 0
    assert session_counts(session) == expected
    assert session_usage(session) == +raw_usage(messages)


@pytest.mark.parametrize("path", [JSONL, RUN], ids=["jsonl", "run"])
def test_usage_input_plus_cache_read_is_the_prompt(path: Path) -> None:
    messages, _ = raw_recording(path)
    by_id = {e.id: e.message for e in read_session(path).entries if e.role == "assistant"}
    for mid, m in messages.items():
        if m["type"] == "gemini":
            u = by_id[mid]["usage"]
            t = m["tokens"]
            assert u["input"] + u["cacheRead"] == t["input"] + t["tool"]
            assert u["input"] + u["cacheRead"] + u["output"] == t["total"]
            assert by_id[mid]["model"] == m["model"]
            assert by_id[mid]["provider"] == "google"


@pytest.mark.parametrize("path", [JSONL, RUN], ids=["jsonl", "run"])
def test_tool_results_join_their_calls_by_id_with_the_recorded_output(path: Path) -> None:
    messages, _ = raw_recording(path)
    calls = {c["id"]: c for m in messages.values() for c in m.get("toolCalls") or []}
    session = read_session(path)
    results = [e.message for e in session.entries if e.role == "toolResult"]
    assert sorted(r["toolCallId"] for r in results) == sorted(calls)
    for r in results:
        response = calls[r["toolCallId"]]["result"][0]["functionResponse"]["response"]
        assert r["content"][0]["text"] == response.get("output", response.get("error"))
        assert r["isError"] == (calls[r["toolCallId"]]["status"] == "error")


def test_the_path_to_the_leaf_is_the_conversation_gemini_cli_resumes() -> None:
    _, active = raw_recording(JSONL)
    session = read_session(JSONL)
    on_path = [e.source_id for e in session.path() if e.role != "toolResult"]
    assert on_path == active
    # The rewound user message and its reply are kept, off the path.
    rewound = {e.source_id for e in session.entries} - {e.source_id for e in session.path()}
    assert len(rewound) == 2


def test_a_message_written_again_keeps_its_last_version() -> None:
    lines = [json.loads(x) for x in JSONL.read_text().splitlines()]
    ids = Counter(rec["id"] for rec in lines if "id" in rec)
    twice = [mid for mid, n in ids.items() if n > 1]
    assert len(twice) == 1  # PROVENANCE: c2d5… written again with its tokens
    entry = next(e for e in read_session(JSONL).entries if e.id == twice[0])
    assert entry.message["usage"]["totalTokens"] == next(
        rec["tokens"]["total"] for rec in reversed(lines) if rec.get("id") == twice[0]
    )


def test_a_rebuild_from_history_becomes_the_conversation(tmp_path: Path) -> None:
    # `updateMessagesFromHistory` (chat compression): `$set.messages` replaces the list.
    lines = JSONL.read_text().splitlines()
    latest, active = raw_recording(JSONL)
    summary = {"id": "sum-1", "timestamp": "2026-12-03T10:05:00Z", "type": "user",
               "content": [{"text": "<state_snapshot>inspected setup.py</state_snapshot>"}]}  # fmt: skip
    kept = [latest[mid] for mid in active[-2:]]
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([*lines, json.dumps({"$set": {"messages": [summary, *kept]}})]) + "\n"
    )
    latest, active = raw_recording(path)
    session = read_session(path, strict=True)
    assert [e.source_id for e in session.path() if e.role != "toolResult"] == active
    assert session_counts(session) == raw_counts(latest)


# -- checkpoints and the prompt log ----------------------------------------------------------
@pytest.mark.parametrize("path", [CHECKPOINT, OLD_CHECKPOINT], ids=["history", "bare-list"])
def test_checkpoint_counts_match_the_raw_file(path: Path) -> None:
    session = read_session(path, strict=True)
    assert session_counts(session) == raw_checkpoint(path)
    calls = [b for e in session.entries if e.role == "assistant" for b in e.message["content"]]
    call_ids = {b["id"] for b in calls if b["type"] == "toolCall"}
    assert {e.message["toolCallId"] for e in session.entries if e.role == "toolResult"} == call_ids


def test_prompt_log_is_every_user_prompt() -> None:
    raw = json.loads(LOGS.read_text())
    session = read_session(LOGS, strict=True)
    assert [e.message["content"][0]["text"] for e in session.entries] == [r["message"] for r in raw]
    assert [e.get("geminiSessionId") for e in session.entries] == [r["sessionId"] for r in raw]


# -- detection -------------------------------------------------------------------------------
def test_every_fixture_is_detected_and_found_in_a_folder_read() -> None:
    assert "gemini-cli" in FORMATS
    for path in ALL:
        assert detect_format(path) == "gemini-cli", path
    assert sorted(iter_session_files(DATA)) == sorted(ALL)


def test_real_run_usage_is_what_the_model_served() -> None:
    # The loopback model of the run (gemini-cli-run/PROVENANCE.md) served usageMetadata of
    # promptTokenCount 5200 and 5300 (cachedContentTokenCount 4000 and 5100),
    # candidatesTokenCount 20 and 12, thoughtsTokenCount 15 and 0.
    session = read_session(RUN, strict=True)
    usages = [e.message["usage"] for e in session.entries if e.role == "assistant"]
    assert [(u["input"], u["cacheRead"], u["output"]) for u in usages] == [
        (1200, 4000, 35),
        (200, 5100, 12),
    ]
    assert detect_format(RUN) == "gemini-cli"
    results = [e.message for e in session.entries if e.role == "toolResult"]
    assert [r["isError"] for r in results] == [False, True]  # the second call's args were bad


def test_one_line_recording_with_claude_like_keys_is_gemini(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = JSONL.read_text().splitlines()
    head = json.loads(lines[0])
    # Keys in another order: detection goes by the record, not by its first bytes.
    path.write_text(json.dumps({"projectHash": head["projectHash"], **head}) + "\n" + lines[1])
    assert detect_format(path) == "gemini-cli"


# -- bad input -------------------------------------------------------------------------------
def test_truncated_jsonl_keeps_every_whole_line(tmp_path: Path) -> None:
    data = JSONL.read_bytes()
    cut = data[: data.rindex(b"\n", 0, len(data) - 1) + 20]  # into the last line
    path = tmp_path / JSONL.name
    path.write_bytes(cut)
    session = read_session(path)
    n_lines = cut.count(b"\n") + 1
    assert [(p.kind, p.line) for p in session.errors] == [("truncated-line", n_lines)]
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(cut[: cut.rindex(b"\n") + 1])
    assert session_counts(session) == session_counts(read_session(whole, strict=True))
    with pytest.raises(SessionReadError, match=rf"{path.name}:{n_lines}"):
        read_session(path, strict=True)


def test_truncated_legacy_json_names_the_line(tmp_path: Path) -> None:
    data = LEGACY.read_bytes()
    path = tmp_path / LEGACY.name
    path.write_bytes(data[: len(data) // 2])
    session = read_gemini_cli(path)
    assert [p.kind for p in session.errors] == ["truncated-json"]
    assert session.errors[0].line == data[: len(data) // 2].count(b"\n") + 1
    with pytest.raises(SessionReadError, match=r"cut short"):
        read_session(path, strict=True)
    assert path.read_bytes() == data[: len(data) // 2]  # the input is left as it was


def test_unknown_message_type_and_part_are_kept_and_named(tmp_path: Path) -> None:
    lines = JSONL.read_text().splitlines()
    odd = {
        "id": "odd-1",
        "timestamp": "2026-12-03T10:03:00Z",
        "type": "compression",
        "content": "x",
    }
    part = {"id": "odd-2", "timestamp": "2026-12-03T10:03:01Z", "type": "user",
            "content": [{"text": "see"}, {"videoMetadata": {"fps": 2}}]}  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines, json.dumps(odd), json.dumps(part)]) + "\n")
    session = read_session(path)
    kinds = [(p.kind, p.line) for p in session.errors]
    assert kinds == [("unknown-message-type", len(lines) + 1), ("unknown-part", len(lines) + 2)]
    custom = next(e for e in session.entries if e.id == "odd-1")
    assert custom.type == "custom" and custom.record["data"] == odd
    user = next(e for e in session.entries if e.id == "odd-2")
    assert json.loads(user.message["content"][1]["text"]) == part["content"][1]
    with pytest.raises(SessionReadError):
        read_session(path, strict=True)


# -- convert and round trip ------------------------------------------------------------------
def _view(session) -> list[Any]:
    return [
        (e.role, e.message["content"], e.message.get("usage"), e.message.get("toolCallId"))
        for e in session.entries
        if e.type == "message"
    ]


@pytest.mark.parametrize("path", [*ALL, RUN], ids=[p.name for p in [*ALL, RUN]])
def test_convert_round_trip_keeps_messages_calls_and_usage(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(path), str(out)]) == 0
    back = read_session(out, strict=True)
    original = read_session(path)
    assert back.source_format == "pi"
    assert _view(back) == _view(original)
    assert [e.id for e in back.path()] == [e.id for e in original.path()]
    assert back.header["sourceFormat"] == "gemini-cli"

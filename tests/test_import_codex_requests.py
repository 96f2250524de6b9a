"""Codex model requests as the reader gives them: one assistant entry per request, carrying
its usage and every output item of the response (reasoning included); requests that left no
item still give a usage row; a prompt recorded only as a `user_message` event is a message.

Expected values come from plain-json counts of the raw rollout lines (a model request is a
`token_count` event whose cumulative totals moved and whose input or output is above zero;
a response is a run of output items with no other response item, prompt or new request
between them: `tests/_raw.py`), never from the reader's own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, HAS_CORPUS, corpus_file
from _raw import CODEX_CALL_TYPES as OUTPUT_CALLS
from _raw import codex_lines, codex_requests, codex_responses

from musepi_lab.analysis import problems_of
from musepi_lab.analysis._usage import usage_df
from musepi_lab.formats._codex import read_codex
from musepi_lab.replay import replay_session
from musepi_lab.replay._cache import (
    ENCRYPTED_CHARS_PER_REASONING_TOKEN,
    ENCRYPTED_REASONING_OVERHEAD,
    hidden_reasoning_tokens,
)
from musepi_lab.session._model import tool_calls

CODEX_FILES = sorted(p.name for p in (CORPUS / "codex").glob("*.jsonl")) if HAS_CORPUS else []


def raw(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return codex_lines(path)


def raw_responses(lines: list[tuple[int, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    return [[payload for _, payload in items] for items in codex_responses(lines)]


def assistants(session) -> list:
    return [e for e in session.entries if e.role == "assistant"]


# -- corpus ------------------------------------------------------------------------------------
@pytest.mark.skipif(not HAS_CORPUS, reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", CODEX_FILES)
def test_one_assistant_entry_per_request_carrying_its_usage(name: str) -> None:
    lines = raw(corpus_file("codex", name))
    requests = codex_requests(lines)
    responses = raw_responses(lines)
    assert requests, "the raw counter found no request: a counter bug"

    session = read_codex(corpus_file("codex", name))
    replies = assistants(session)

    # Every corpus request left output items; each response is one entry with usage.
    assert len(replies) == len(responses) == len(requests)
    assert all(e.message["usage"]["totalTokens"] > 0 for e in replies)
    assert sorted(e.message["usage"]["output"] for e in replies) == sorted(
        last["output_tokens"] for _, last in requests
    )
    for entry, items in zip(replies, responses, strict=True):
        kinds = [b["type"] for b in entry.message["content"]]
        assert kinds.count("thinking") == sum(1 for p in items if p["type"] == "reasoning")
        assert len(tool_calls(entry.message)) == sum(1 for p in items if p["type"] in OUTPUT_CALLS)
        want = "toolUse" if any(p["type"] in OUTPUT_CALLS for p in items) else "stop"
        assert entry.message["stopReason"] == want


@pytest.mark.skipif(not HAS_CORPUS, reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", CODEX_FILES)
def test_hidden_reasoning_stays_on_the_request_that_produced_it(name: str) -> None:
    responses = raw_responses(raw(corpus_file("codex", name)))
    session = read_codex(corpus_file("codex", name))
    for entry, items in zip(assistants(session), responses, strict=True):
        encrypted = [
            p["encrypted_content"]
            for p in items
            if p["type"] == "reasoning" and isinstance(p.get("encrypted_content"), str)
        ]
        signatures = [
            b["thinkingSignature"]
            for b in entry.message["content"]
            if b["type"] == "thinking" and "thinkingSignature" in b
        ]
        assert signatures == encrypted
        if not any("[REDACTED_" in e for e in encrypted):
            chars = sum(max(0, len(e) - ENCRYPTED_REASONING_OVERHEAD) for e in encrypted)
            expected = round(chars / ENCRYPTED_CHARS_PER_REASONING_TOKEN)
            assert hidden_reasoning_tokens(entry.message) == expected


@pytest.mark.skipif(not HAS_CORPUS, reason=f"corpus not found at {CORPUS}")
def test_replay_bills_one_row_per_recorded_request() -> None:
    name = "rollout-2025-09-26T17-01-04-019985ca-7ef7-7580-a921-c20ac619f40b.jsonl"
    requests = codex_requests(raw(corpus_file("codex", name)))
    timeline = replay_session(read_codex(corpus_file("codex", name)), "none", window=10**9).timeline
    assert len(timeline) == len(requests) == 27
    assert (timeline["output_tokens"] > 0).all()


# -- synthetic rollouts ------------------------------------------------------------------------
SESSION_UUID = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"


def rec(kind: str, payload: Any, ts: str = "2025-01-01T00:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta() -> dict[str, Any]:
    payload = {"id": SESSION_UUID, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    return rec("session_meta", {**payload, "model_provider": "openai", "cli_version": "0.99.0"})


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return rec("response_item", payload)


def user(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return item({"type": "message", "role": "user", "content": content})


def prompt_event(text: str) -> dict[str, Any]:
    return rec(
        "event_msg", {"type": "user_message", "message": text, "images": [], "kind": "plain"}
    )


def reasoning(text: str, encrypted: str = "gAAAA") -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": text}]
    return item({"type": "reasoning", "summary": summary, "encrypted_content": encrypted})


def call(call_id: str) -> dict[str, Any]:
    arguments = '{"command": ["ls"]}'
    return item(
        {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
    )


def output(call_id: str) -> dict[str, Any]:
    return item({"type": "function_call_output", "call_id": call_id, "output": "ok"})


def answer(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return item({"type": "message", "role": "assistant", "content": content})


def token_count(inp: int, out: int, cumulative: int) -> dict[str, Any]:
    last = {"input_tokens": inp, "cached_input_tokens": 0, "output_tokens": out}
    last |= {"reasoning_output_tokens": 0, "total_tokens": inp + out}
    total = dict(last, total_tokens=cumulative)
    info = {"total_token_usage": total, "last_token_usage": last}
    return rec("event_msg", {"type": "token_count", "info": info})


def write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"rollout-2025-01-01T00-00-00-{SESSION_UUID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_reasoning_joins_the_items_of_its_response(tmp_path: Path) -> None:
    # Codex 0.104 writes reasoning, an assistant message and two calls, then the request's
    # token_count; Codex 0.41 writes the token_count first. Either way: one request.
    for usage_first in (False, True):
        body = [reasoning("plan"), answer("looking"), call("c1"), call("c2")]
        usage = [token_count(900, 40, 940)]
        records = [
            meta(),
            user("hi"),
            *(usage + body if usage_first else body + usage),
            output("c1"),
            output("c2"),
        ]
        session = read_codex(write(tmp_path, records))
        [reply] = assistants(session)
        blocks = reply.message["content"]
        assert [b["type"] for b in blocks] == ["thinking", "text", "toolCall", "toolCall"]
        assert blocks[0]["thinkingSignature"] == "gAAAA"
        assert reply.message["usage"]["input"] == 900
        assert reply.message["stopReason"] == "toolUse"
        first = 4 if usage_first else 3
        assert reply.line == first
        assert [i["line"] for i in reply["sourceItems"]] == [first, first + 1, first + 2, first + 3]
        assert session.errors == ()


def test_a_new_request_between_output_items_starts_a_new_reply(tmp_path: Path) -> None:
    # Two requests with no other response item between them: the token_count splits them.
    records = [meta(), user("go"), reasoning("a"), token_count(100, 5, 105), answer("b")]
    records.append(token_count(200, 6, 311))
    session = read_codex(write(tmp_path, records))
    assert [e.message["usage"]["input"] for e in assistants(session)] == [100, 200]


def test_requests_without_a_reply_get_usage_rows_and_are_reported(tmp_path: Path) -> None:
    # An interrupted turn: Codex counted the request but recorded no output item.
    records = [meta(), user("hi"), token_count(1_000, 20, 1_020), user("again")]
    records += [reasoning("r"), answer("ok"), token_count(1_500, 30, 2_550)]
    path = write(tmp_path, records)
    session = read_codex(path)
    [orphan] = [e for e in session.entries if e.record.get("requestUsage")]
    assert orphan.line == 3 and orphan.get("customType") == "codex:token_count"

    frame = usage_df(path)
    problems = problems_of(frame)
    assert list(frame["line"]) == [3, 5]
    assert list(frame["input"]) == [1_000, 1_500]
    assert list(frame["output"]) == [20, 30]
    assert frame["entry_id"].iloc[0] == orphan.id
    [note] = [p for p in problems if p.kind == "usage-without-reply"]
    assert (note.path, note.line) == (str(path), 3)
    assert "1 of 2 Codex requests" in note.message
    assert len(usage_df(path, strict=True)) == 2  # carried, so strict does not refuse it


def test_a_prompt_recorded_only_as_an_event_is_a_user_message(tmp_path: Path) -> None:
    records = [meta(), prompt_event("list the files"), reasoning("r"), answer("two files")]
    records += [token_count(300, 9, 309), user("thanks"), prompt_event("thanks")]
    session = read_codex(write(tmp_path, records))
    users = [e for e in session.entries if e.role == "user"]
    assert [u.message["content"][0]["text"] for u in users] == ["list the files", "thanks"]
    assert users[0].line == 2 and users[0].get("sourceKind") is None
    # The event beside its response item stays an event: the prompt is not counted twice.
    events = [e for e in session.entries if e.get("customType") == "codex:user_message"]
    assert [e.line for e in events] == [7]
    assert session.errors == ()

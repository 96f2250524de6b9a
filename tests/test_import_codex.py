"""Codex rollout importer: corpus counts checked against plain-json counting, synthetic rules."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from _corpus import CORPUS, HAS_CORPUS, corpus_file, needs_corpus
from _raw import codex_responses
from hypothesis import given
from hypothesis import strategies as st

from musepi_lab.formats._codex import LineIds, may_be_json, read_codex
from musepi_lab.formats._records import IdAllocator
from musepi_lab.formats._registry import detect_format, read_session
from musepi_lab.session._errors import SessionReadError
from musepi_lab.session._model import tool_calls

READABLE = "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
SMALL_REDACTED = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
COMPACTED = "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
# Every rollout of the corpus (it grew: Codex CLI 0.41 and 0.58, the VS Code extension
# 0.40 and 0.42, Codex Desktop 0.104, agtrace's 0.66 sample).
ALL_FILES = tuple(sorted(p.name for p in (CORPUS / "codex").glob("*.jsonl"))) if HAS_CORPUS else ()

CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


# -- independent counting over the raw lines (plain json, no project code) ------------------
def raw_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for number, text in enumerate(fh, start=1):
            if text.strip():
                out.append((number, json.loads(text)))
    return out


def raw_items(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return [(n, r["payload"]) for n, r in raw_lines(path) if r["type"] == "response_item"]


def raw_events(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return [(n, r["payload"]) for n, r in raw_lines(path) if r["type"] == "event_msg"]


def load(name: str):
    return read_codex(corpus_file("codex", name))


def messages(session, role: str) -> list:
    return [e for e in session.entries if e.role == role]


def block_types(entry) -> set[str]:
    return {b.get("type") for b in entry.message["content"]}


# -- corpus ------------------------------------------------------------------------------------
@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_corpus_file_loads_without_errors(name: str) -> None:
    path = corpus_file("codex", name)
    lines = raw_lines(path)
    meta = next(r["payload"] for _, r in lines if r["type"] == "session_meta")
    first_model = next(r["payload"]["model"] for _, r in lines if r["type"] == "turn_context")

    session = read_codex(path, strict=True)

    assert session.errors == ()
    assert session.source_format == "codex"
    assert session.header["id"] == meta["id"]
    assert session.header["cwd"] == meta["cwd"]
    assert session.header["timestamp"] == meta["timestamp"]
    assert session.header["sourceFormat"] == "codex"
    assert session.header["cliVersion"] == meta["cli_version"]
    assert session.header.get("git") == meta.get("git")
    assert session.header["model"] == first_model


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_one_entry_per_line_in_a_linear_chain(name: str) -> None:
    path = corpus_file("codex", name)
    lines = raw_lines(path)
    # The output items of one response are one entry, at the line of the first of them.
    later_items = {n for items in codex_responses(lines) for n, _ in items[1:]}
    expected_lines = [n for n, r in lines if r["type"] != "session_meta" and n not in later_items]

    session = load(name)

    assert [e.line for e in session.entries] == expected_lines
    ids = [e.id for e in session.entries]
    assert len(set(ids)) == len(ids)
    assert session.entries[0].parent_id is None
    assert all(
        e.parent_id == prev.id
        for prev, e in zip(session.entries[:-1], session.entries[1:], strict=True)
    )
    assert len(session.path()) == len(session.entries)
    assert all(isinstance(e.source_id, str) and e.source_id for e in session.entries)


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_response_messages_by_role(name: str) -> None:
    path = corpus_file("codex", name)
    roles = Counter(p["role"] for _, p in raw_items(path) if p["type"] == "message")
    reasoning = sum(1 for _, p in raw_items(path) if p["type"] == "reasoning")

    texts = sum(
        1
        for _, p in raw_items(path)
        if p["type"] == "message" and p["role"] == "assistant"
        for part in p["content"]
        if part["type"] == "output_text"
    )

    session = load(name)

    assert len(messages(session, "user")) == roles["user"]
    assert len(messages(session, "developer")) == roles["developer"] + roles["system"]
    blocks = Counter(
        b["type"] for e in messages(session, "assistant") for b in e.message["content"]
    )
    assert blocks["text"] == texts
    assert blocks["thinking"] == reasoning


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_tool_calls_match_raw_calls(name: str) -> None:
    items = raw_items(corpus_file("codex", name))
    raw_calls = [p for _, p in items if p["type"] in CALL_TYPES]
    raw_names = Counter(p["name"] for p in raw_calls if "name" in p)
    raw_ids = {p["call_id"] for p in raw_calls if "call_id" in p}

    session = load(name)
    blocks = [b for e in messages(session, "assistant") for b in tool_calls(e.message)]

    assert len(blocks) == len(raw_calls)
    assert raw_ids <= {b["id"] for b in blocks}
    named = Counter(b["name"] for b in blocks if b["name"] not in ("web_search", "local_shell"))
    assert named == raw_names


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_tool_results_pair_with_calls(name: str) -> None:
    items = raw_items(corpus_file("codex", name))
    name_of = {p["call_id"]: p["name"] for _, p in items if "call_id" in p and "name" in p}
    outputs = [p for _, p in items if p["type"] in OUTPUT_TYPES]
    answered = {p["call_id"] for p in outputs}
    raw_without_output = sum(
        1 for _, p in items if p["type"] in CALL_TYPES and p.get("call_id") not in answered
    )

    session = load(name)
    results = messages(session, "toolResult")

    assert len(results) == len(outputs)
    assert [r.message["toolCallId"] for r in results] == [p["call_id"] for p in outputs]
    assert all(r.message["toolName"] == name_of[r.message["toolCallId"]] for r in results)
    result_ids = {r.message["toolCallId"] for r in results}
    blocks = [b for e in messages(session, "assistant") for b in tool_calls(e.message)]
    assert sum(1 for b in blocks if b["id"] not in result_ids) == raw_without_output


@needs_corpus
def test_calls_without_output_are_the_web_searches() -> None:
    # PROVENANCE.md: the compacted file has 7 web_search_call items; Codex records no output.
    session = load(COMPACTED)
    result_ids = {r.message["toolCallId"] for r in messages(session, "toolResult")}
    blocks = [b for e in messages(session, "assistant") for b in tool_calls(e.message)]
    unanswered = [b for b in blocks if b["id"] not in result_ids]
    assert len(unanswered) == 7
    assert {b["name"] for b in unanswered} == {"web_search"}


@needs_corpus
def test_is_error_follows_recorded_exit_codes() -> None:
    path = corpus_file("codex", READABLE)
    failing = set()
    for _, p in raw_items(path):
        if p["type"] == "function_call_output":
            try:
                meta = json.loads(p["output"])["metadata"]
            except (ValueError, KeyError, TypeError):
                continue
            if meta["exit_code"] != 0:
                failing.add(p["call_id"])
    assert failing  # the readable session does contain failing commands

    session = load(READABLE)
    flagged = {
        r.message["toolCallId"] for r in messages(session, "toolResult") if r.message["isError"]
    }
    assert flagged == failing


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_events_and_turn_contexts_are_custom_entries_never_messages(name: str) -> None:
    path = corpus_file("codex", name)
    lines = raw_lines(path)
    raw_custom = Counter(
        "codex:" + (r["payload"]["type"] if r["type"] == "event_msg" else r["type"])
        for _, r in lines
        if r["type"] in ("event_msg", "turn_context")
    )
    raw_custom.update(
        "codex:" + p["type"]
        for _, p in raw_items(path)
        if p["type"] not in ("message", "reasoning", *CALL_TYPES, *OUTPUT_TYPES)
    )
    conversation_items = sum(
        1
        for _, p in raw_items(path)
        if p["type"] in ("message", "reasoning", *CALL_TYPES, *OUTPUT_TYPES)
    )
    merged = sum(len(items) - 1 for items in codex_responses(lines))

    session = load(name)

    custom = Counter(e.get("customType") for e in session.entries if e.type == "custom")
    assert custom == raw_custom
    # user_message / agent_message events duplicate response items: counted once, as items;
    # the output items of one response are one message.
    assert sum(1 for e in session.entries if e.type == "message") == conversation_items - merged


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_injected_user_messages_are_marked(name: str) -> None:
    path = corpus_file("codex", name)
    env = sum(
        1
        for _, p in raw_items(path)
        if p["type"] == "message"
        and p["role"] == "user"
        and p["content"][0]["text"].lstrip().startswith("<environment_context>")
    )
    typed = sum(1 for _, p in raw_events(path) if p["type"] == "user_message")

    session = load(name)
    users = messages(session, "user")

    assert sum(1 for e in users if e.get("sourceKind") == "environment_context") == env
    # What the person typed is what Codex logged as user_message events; the rest is injected.
    assert sum(1 for e in users if e.get("sourceKind") is None) == typed


def is_assistant_item(payload: dict[str, Any]) -> bool:
    return payload["type"] in ("reasoning", *CALL_TYPES) or (
        payload["type"] == "message" and payload["role"] == "assistant"
    )


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_usage_comes_from_a_token_count_beside_the_response(name: str) -> None:
    path = corpus_file("codex", name)
    lines = raw_lines(path)
    boundaries = [
        n for n, r in lines if r["type"] == "response_item" and not is_assistant_item(r["payload"])
    ]
    token_counts = [
        (n, r["payload"]["info"])
        for n, r in lines
        if r["type"] == "event_msg"
        and r["payload"]["type"] == "token_count"
        and r["payload"]["info"]
    ]
    # One model request = one token_count whose cumulative totals moved and whose input is > 0.
    requests, previous = 0, None
    for _, info in token_counts:
        if info["total_token_usage"] != previous:
            previous = info["total_token_usage"]
            requests += info["last_token_usage"]["input_tokens"] > 0

    session = load(name)
    with_usage = [e for e in messages(session, "assistant") if e.message["usage"]["totalTokens"]]

    assert len(with_usage) == requests
    for entry in with_usage:
        low = max((n for n in boundaries if n < entry.line), default=0)
        high = min((n for n in boundaries if n > entry.line), default=len(lines) + 1)
        got = entry.message["usage"]
        candidates = [
            (
                last["input_tokens"] - last["cached_input_tokens"],
                last["cached_input_tokens"],
                last["output_tokens"],
                last["total_tokens"],
            )
            for n, info in token_counts
            if low < n < high
            for last in [info["last_token_usage"]]
        ]
        assert (got["input"], got["cacheRead"], got["output"], got["totalTokens"]) in candidates


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_compaction_entries_match_compacted_records(name: str) -> None:
    path = corpus_file("codex", name)
    compacted = [(n, r["payload"]) for n, r in raw_lines(path) if r["type"] == "compacted"]
    session = load(name)
    assert sum(1 for e in session.entries if e.type == "compaction") == len(compacted)


@needs_corpus
def test_native_codex_compaction() -> None:
    path = corpus_file("codex", COMPACTED)
    lines = raw_lines(path)
    [(line, payload)] = [(n, r["payload"]) for n, r in lines if r["type"] == "compacted"]
    requests = [
        r["payload"]["info"]["last_token_usage"]
        for n, r in lines
        if n < line
        and r["type"] == "event_msg"
        and r["payload"]["type"] == "token_count"
        and r["payload"].get("info")
        and r["payload"]["info"]["last_token_usage"]["input_tokens"] > 0
    ]

    session = load(COMPACTED)
    [entry] = [e for e in session.entries if e.type == "compaction"]

    assert entry.line == line == 1788  # PROVENANCE.md
    remote = entry["preserveData"]["openaiRemoteCompaction"]
    assert len(remote["replacementHistory"]) == 40  # PROVENANCE.md
    assert remote["replacementHistory"] == payload["replacement_history"]
    assert remote["provider"] == "openai"
    assert remote["compactionItem"]["type"] == "compaction"
    assert entry["method"] == "remote"
    assert entry["details"] == {"readFiles": [], "modifiedFiles": []}
    assert entry["tokensBefore"] == requests[-1]["total_tokens"]
    after = session.entries[session.entries.index(entry) + 1]
    assert entry["firstKeptEntryId"] == after.id
    # The sanitized message is the marker of an empty text: a placeholder summary instead.
    assert "len=0" in payload["message"]
    assert "preserved" in entry["summary"]
    assert session.entries[session.entries.index(entry) + 1].get("customType") == (
        "codex:context_compacted"
    )


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_detected_through_read_session(name: str) -> None:
    path = corpus_file("codex", name)
    assert detect_format(path) == "codex"
    session = read_session(path)
    assert session.source_format == "codex"
    lines = raw_lines(path)
    merged = sum(len(items) - 1 for items in codex_responses(lines))
    assert len(session.entries) == sum(1 for _, r in lines if r["type"] != "session_meta") - merged


@needs_corpus
def test_corpus_write_read_round_trip(tmp_path: Path) -> None:
    session = load(COMPACTED)
    out = session.write(tmp_path / "codex.jsonl")
    again = read_session(out)
    assert again.errors == ()
    assert again.source_format == "pi"
    assert again.header["sourceFormat"] == "codex"
    assert [orjson.dumps(dict(e.record)) for e in again.entries] == [
        orjson.dumps(dict(e.record)) for e in session.entries
    ]
    assert [e.source_id for e in again.entries] == [e.source_id for e in session.entries]


# -- synthetic rollouts ------------------------------------------------------------------------
SESSION_UUID = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"


def rec(kind: str, payload: Any, ts: str = "2025-01-01T00:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta() -> dict[str, Any]:
    return rec(
        "session_meta",
        {
            "id": SESSION_UUID,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/w",
            "cli_version": "0.99.0",
            "model_provider": "openai",
            "originator": "codex_cli_rs",
        },
    )


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return rec("response_item", payload)


def user(text: str) -> dict[str, Any]:
    return item(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )


def call(
    call_id: str, name: str = "shell", arguments: str = '{"command": ["ls"]}'
) -> dict[str, Any]:
    return item({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id})


def output(call_id: str, text: str) -> dict[str, Any]:
    return item({"type": "function_call_output", "call_id": call_id, "output": text})


def token_count(inp: int, cached: int, out: int, cumulative: int) -> dict[str, Any]:
    last = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }
    total = dict(last, total_tokens=cumulative)
    return rec(
        "event_msg",
        {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}},
    )


def write_rollout(tmp_path: Path, records: list[Any], name: str | None = None) -> Path:
    path = tmp_path / (name or f"rollout-2025-01-01T00-00-00-{SESSION_UUID}.jsonl")
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_call_without_output_gets_no_synthetic_result(tmp_path: Path) -> None:
    path = write_rollout(tmp_path, [meta(), user("hi"), call("c1"), call("c2"), output("c2", "ok")])
    session = read_codex(path)
    assert session.errors == ()
    results = messages(session, "toolResult")
    assert [r.message["toolCallId"] for r in results] == ["c2"]
    assert [b["id"] for e in messages(session, "assistant") for b in tool_calls(e.message)] == [
        "c1",
        "c2",
    ]
    [c1] = [e for e in session.entries if e.source_id == "c1" and e.role == "assistant"]
    assert c1.message["stopReason"] == "toolUse"
    assert tool_calls(c1.message)[0]["arguments"] == {"command": ["ls"]}


def test_output_for_unknown_call_is_recorded_and_kept(tmp_path: Path) -> None:
    records = [meta(), user("hi"), call("c1"), output("c1", "ok"), output("nope", "late")]
    path = write_rollout(tmp_path, records)
    session = read_codex(path)
    [problem] = session.errors
    assert problem.kind == "unpaired-tool-result"
    assert problem.line == 5
    assert problem.path == str(path)
    assert "nope" in problem.message
    orphan = messages(session, "toolResult")[-1]
    assert orphan.message["toolCallId"] == "nope"
    assert orphan.message["toolName"] == ""
    with pytest.raises(SessionReadError) as info:
        read_codex(path, strict=True)
    assert info.value.line == 5
    assert info.value.kind == "unpaired-tool-result"


def test_compaction_with_summary_usage_and_kept_entry(tmp_path: Path) -> None:
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "compaction", "encrypted_content": "opaque"},
    ]
    records = [
        meta(),
        user("hi"),
        call("c1"),
        token_count(1000, 200, 50, 1050),
        output("c1", "ok"),
        token_count(1000, 200, 50, 1050),  # a repeat: no new request
        rec("compacted", {"message": "What happened so far.", "replacement_history": history}),
        rec("event_msg", {"type": "context_compacted"}),
        user("next"),
    ]
    session = read_codex(write_rollout(tmp_path, records))
    assert session.errors == ()
    [entry] = [e for e in session.entries if e.type == "compaction"]
    assert entry["summary"] == "What happened so far."
    assert entry["tokensBefore"] == 1050
    assert entry["method"] == "remote"
    remote = entry["preserveData"]["openaiRemoteCompaction"]
    assert remote == {
        "provider": "openai",
        "replacementHistory": history,
        "compactionItem": history[1],
    }
    assert session.get(entry["firstKeptEntryId"]).get("customType") == "codex:context_compacted"
    [assistant] = messages(session, "assistant")
    assert assistant.message["usage"]["input"] == 800
    assert assistant.message["usage"]["cacheRead"] == 200
    assert assistant.message["usage"]["output"] == 50
    assert assistant.message["usage"]["totalTokens"] == 1050


def reasoning(text: str) -> dict[str, Any]:
    return item({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]})


@pytest.mark.parametrize("usage_first", [True, False], ids=["codex-0.58", "codex-0.104"])
def test_usage_lands_on_the_response_it_belongs_to(tmp_path: Path, usage_first: bool) -> None:
    first, second = token_count(100, 0, 10, 110), token_count(200, 50, 20, 330)
    if usage_first:  # token_count before the response items, repeated after the outputs
        records = [
            meta(),
            user("hi"),
            first,
            reasoning("r"),
            call("c1"),
            output("c1", "ok"),
            first,
            second,
            call("c2"),
            output("c2", "ok"),
        ]
    else:  # token_count after the response items
        records = [
            meta(),
            user("hi"),
            reasoning("r"),
            call("c1"),
            first,
            output("c1", "ok"),
            call("c2"),
            second,
            output("c2", "ok"),
        ]
    session = read_codex(write_rollout(tmp_path, records))
    got = {
        e.source_id: (
            e.message["usage"]["input"],
            e.message["usage"]["cacheRead"],
            e.message["usage"]["totalTokens"],
        )
        for e in messages(session, "assistant")
    }
    # The reasoning and the call it led to are one response: one entry, one request.
    assert got == {
        "line:4" if usage_first else "line:3": (100, 0, 110),
        "c2": (150, 50, 220),
    }


def test_compaction_without_text_or_usage_on_the_last_line(tmp_path: Path) -> None:
    records = [meta(), user("hi"), rec("compacted", {"message": "", "replacement_history": []})]
    session = read_codex(write_rollout(tmp_path, records))
    entry = session.entries[-1]
    assert entry.type == "compaction"
    assert entry["tokensBefore"] == 0
    assert entry["summary"].strip()
    assert entry["firstKeptEntryId"] == entry.id
    assert "compactionItem" not in entry["preserveData"]["openaiRemoteCompaction"]


def test_local_compaction_without_history_is_a_plain_summary(tmp_path: Path) -> None:
    records = [meta(), user("hi"), rec("compacted", {"message": "Summary text."}), user("go on")]
    entry = next(
        e for e in read_codex(write_rollout(tmp_path, records)).entries if e.type == "compaction"
    )
    assert entry["summary"] == "Summary text."
    assert "preserveData" not in entry.record
    assert "method" not in entry.record


def test_item_kinds_map_to_pi_shapes(tmp_path: Path) -> None:
    records = [
        meta(),
        rec("turn_context", {"model": "gpt-test", "effort": "high"}),
        item(
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "be brief"}],
            }
        ),
        item(
            {
                "type": "message",
                "role": "system",
                "content": [{"type": "input_text", "text": "sys"}],
            }
        ),
        user("<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
        user("# AGENTS.md instructions for /w\n\nrules"),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                ],
            }
        ),
        item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Plan**"}],
                "content": None,
                "encrypted_content": "gAAAA",
            }
        ),
        item(
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": "p1",
                "name": "apply_patch",
                "input": "*** Begin Patch",
            }
        ),
        item(
            {
                "type": "custom_tool_call_output",
                "call_id": "p1",
                "output": '{"output":"bad","metadata":{"exit_code":1}}',
            }
        ),
        item(
            {
                "type": "local_shell_call",
                "id": "ls1",
                "call_id": "s1",
                "status": "completed",
                "action": {"type": "exec", "command": ["false"]},
            }
        ),
        output("s1", "Exit code: 2\nWall time: 0.1 seconds\nOutput:\n"),
        item(
            {
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            }
        ),
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
                "phase": "final_answer",
            }
        ),
    ]
    session = read_codex(write_rollout(tmp_path, records))
    assert session.errors == ()
    devs = messages(session, "developer")
    assert [d.message["content"][0]["text"] for d in devs] == ["be brief", "sys"]
    assert devs[1].get("sourceRole") == "system"
    kinds = [u.get("sourceKind") for u in messages(session, "user")]
    assert kinds == ["environment_context", "user_instructions", None]
    image = messages(session, "user")[2].message["content"][1]
    assert image == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    assistants = messages(session, "assistant")
    # Reasoning and the patch call are one response; the shell call another; the web search
    # and the final answer a third (no other response item between them).
    assert len(assistants) == 3
    thinking, patch = assistants[0].message["content"]
    assert thinking == {"type": "thinking", "thinking": "**Plan**", "thinkingSignature": "gAAAA"}
    assert assistants[0].message["model"] == "gpt-test"
    assert (patch["name"], patch["arguments"]) == ("apply_patch", {"input": "*** Begin Patch"})
    items = assistants[0]["sourceItems"]
    assert [i["line"] for i in items] == [8, 9]
    assert items[1]["sourceFields"] == {"type": "custom_tool_call", "status": "completed"}
    shell = tool_calls(assistants[1].message)[0]
    assert (shell["id"], shell["name"]) == ("s1", "local_shell")
    assert tool_calls(assistants[2].message)[0]["name"] == "web_search"
    assert assistants[2].source_id == "line:13"
    assert [b["type"] for b in assistants[2].message["content"]] == ["toolCall", "text"]
    assert assistants[2]["sourceItems"][1]["sourceFields"] == {
        "type": "message",
        "phase": "final_answer",
    }
    results = messages(session, "toolResult")
    assert [(r.message["toolName"], r.message["isError"]) for r in results] == [
        ("apply_patch", True),
        ("local_shell", True),
    ]


def test_success_false_and_zero_exit_code(tmp_path: Path) -> None:
    records = [
        meta(),
        call("a"),
        call("b"),
        call("c"),
        item(
            {
                "type": "function_call_output",
                "call_id": "a",
                "output": {"content": "failed", "success": False},
            }
        ),
        output("b", "Process exited with code 0\nOutput:\nExit code: 3"),
        output("c", '{"output":"fine","metadata":{"exit_code":0}}'),
    ]
    results = messages(read_codex(write_rollout(tmp_path, records)), "toolResult")
    assert [r.message["isError"] for r in results] == [True, False, False]
    assert results[0].message["content"] == [{"type": "text", "text": "failed"}]


def test_bad_lines_are_recorded_and_the_rest_kept(tmp_path: Path) -> None:
    records = [meta(), user("a"), "{not json", "[1, 2]", rec("mystery", {"x": 1}), user("b")]
    path = write_rollout(tmp_path, records)
    before = path.read_bytes()
    session = read_codex(path)
    assert [(p.kind, p.line) for p in session.errors] == [
        ("malformed-json", 3),
        ("not-an-object", 4),
        ("unknown-entry-type", 5),
    ]
    assert [e.line for e in session.entries] == [2, 5, 6]
    assert path.read_bytes() == before
    with pytest.raises(SessionReadError) as info:
        read_codex(path, strict=True)
    assert (info.value.kind, info.value.line) == ("malformed-json", 3)


def test_missing_session_meta_and_empty_file(tmp_path: Path) -> None:
    session = read_codex(write_rollout(tmp_path, [user("hi")]))
    assert [p.kind for p in session.errors] == ["missing-header"]
    assert session.header["id"] == SESSION_UUID
    assert len(session.entries) == 1

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert [p.kind for p in read_codex(empty).errors] == ["empty-file"]
    with pytest.raises(SessionReadError):
        read_codex(empty, strict=True)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x00\x01\x02")
    assert [p.kind for p in read_codex(binary).errors] == ["binary-file"]
    with pytest.raises(SessionReadError):
        read_codex(tmp_path)


def test_synthetic_detection_and_round_trip(tmp_path: Path) -> None:
    records = [
        meta(),
        user("hi"),
        call("c1"),
        token_count(10, 0, 5, 15),
        output("c1", "ok"),
        rec("compacted", {"message": "", "replacement_history": []}),
        user("more"),
    ]
    path = write_rollout(tmp_path, records)
    assert detect_format(path) == "codex"
    session = read_session(path)
    assert session.source_format == "codex"

    again = read_session(session.write(tmp_path / "out" / "s.jsonl"))
    assert again.errors == ()
    assert again.header["id"] == SESSION_UUID
    assert [dict(e.record) for e in again.entries] == [dict(e.record) for e in session.entries]
    assert [e.source_id for e in again.entries] == [e.source_id for e in session.entries]


def test_strict_names_the_earliest_problem(tmp_path: Path) -> None:
    # The unpaired output (line 2) is found after the broken line (3) is parsed.
    path = write_rollout(tmp_path, [meta(), output("ghost", "x"), "{broken", user("hi")])
    assert [(p.kind, p.line) for p in read_codex(path).errors] == [
        ("unpaired-tool-result", 2),
        ("malformed-json", 3),
    ]
    with pytest.raises(SessionReadError) as info:
        read_codex(path, strict=True)
    assert (info.value.kind, info.value.line) == ("unpaired-tool-result", 2)


# -- shortcuts of the hot path: same results as the general code ------------------------------
@pytest.mark.parametrize("seed", ["019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "séance-\ud800"])
def test_line_ids_are_the_generic_allocators_ids(seed: str) -> None:
    lines = [1, 2, 3, 2, 2, 10**9, 3]  # a repeated line takes the salted path
    generic = IdAllocator(seed)
    fast = LineIds(seed)
    assert [fast.take(n) for n in lines] == [generic.take(None, n) for n in lines]


JSON_VALUES = st.recursive(
    # JSON has no NaN or Infinity (json.dumps would write them as bare words).
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.sampled_from(["", " ", "\n\t", "\r "]))
def test_may_be_json_accepts_every_json_text(value: Any, indent: int | None, space: str) -> None:
    assert may_be_json(space + json.dumps(value, indent=indent) + space)


@given(st.text(max_size=30))
def test_may_be_json_rejects_only_texts_that_do_not_parse(text: str) -> None:
    if not may_be_json(text):
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(text)

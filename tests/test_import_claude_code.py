"""The Claude Code importer: corpus files counted independently, and a hand-written file.

Expected numbers come from plain `json` parsing of the raw files inside the tests, from the
corpus PROVENANCE.md, or from the hand-written file below; never from the importer itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, corpus_file, needs_corpus

from musepi_lab.formats._claude_code import read_claude_code
from musepi_lab.formats._registry import detect_format, read_session
from musepi_lab.session._errors import SessionReadError
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

CC_DIR = CORPUS / "claude-code"

MAIN_FILES = (
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "6adcf0da-e8ac-4760-8026-66fb75b5ee45.jsonl",
    "agtrace_claude_session.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "spotter_short.jsonl",
    "spotter_subagent.jsonl",
    "spotter_tool_heavy.jsonl",
)
SUBAGENT_FILES = (
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
    # Its parent session is not in the corpus (over 4 MB upstream): read alone.
    "6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl",
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-aa84377.jsonl",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl",
)
ALL_FILES = MAIN_FILES + SUBAGENT_FILES

# Tool calls per file, from the "what it is" column of claude-code/PROVENANCE.md.
PROVENANCE_TOOL_CALLS = {
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": 242,
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl": 12,
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl": 0,
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": 186,
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl": 2,
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl": 0,
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl": 197,
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl": 25,
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-aa84377.jsonl": 21,
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl": 0,
    "spotter_subagent.jsonl": 16,
    "spotter_tool_heavy.jsonl": 6,
    "spotter_short.jsonl": 2,
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": 167,
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": 12,
    # Added 2026-12-04 (the "tool calls" column of the second table).
    "6adcf0da-e8ac-4760-8026-66fb75b5ee45.jsonl": 124,
    "6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl": 48,
    "agtrace_claude_session.jsonl": 4,
}


# -- independent view of the raw files (plain json) ---------------------------------------


def corpus_path(name: str) -> Path:
    return corpus_file("claude-code", *name.split("/"))


@cache
def raw_records(name: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    with open(corpus_path(name), encoding="utf-8") as fh:
        return tuple((n, json.loads(line)) for n, line in enumerate(fh, 1) if line.strip())


@cache
def session_of(name: str) -> Session:
    return read_claude_code(corpus_path(name))


def main_thread(records: tuple[tuple[int, dict[str, Any]], ...]) -> list[dict[str, Any]]:
    """Lines of the main thread; in a subagent file every line is a sidechain."""
    lines = [r for _, r in records if "uuid" in r]
    main = [r for r in lines if r.get("isSidechain") is not True]
    return main or lines


def blocks_of(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = record.get("message", {}).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def is_user_turn(record: dict[str, Any]) -> bool:
    """A user line that carries something besides tool results (and is not a summary)."""
    if record.get("type") != "user" or record.get("isCompactSummary"):
        return False
    content = record["message"]["content"]
    return isinstance(content, str) or any(b.get("type") != "tool_result" for b in content)


def steering_lines(records: tuple[tuple[int, dict[str, Any]], ...]) -> dict[int, dict[str, Any]]:
    """`queue-operation` lines whose text no user line holds (compaction summaries, which
    quote the person, aside): the queued texts handed to a running turn, the first of each."""
    texts = json.dumps(
        [r["message"] for _, r in records if r["type"] == "user" and not r.get("isCompactSummary")]
    )
    out: dict[int, dict[str, Any]] = {}
    for n, r in records:
        content = r.get("content")
        if r["type"] != "queue-operation" or not isinstance(content, str) or not content.strip():
            continue
        if json.dumps(content)[1:-1] not in texts and content not in [
            o["content"] for o in out.values()
        ]:
            out[n] = r
    return out


def messages(entries: Iterator[Entry] | tuple[Entry, ...], role: str) -> list[Entry]:
    return [e for e in entries if e.role == role]


def tool_call_blocks(entries: tuple[Entry, ...]) -> list[dict[str, Any]]:
    return [
        b
        for e in messages(entries, "assistant")
        for b in e.message["content"]
        if b.get("type") == "toolCall"
    ]


# -- corpus: every file ---------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_corpus_file_reads_without_problems_even_in_strict_mode(name: str) -> None:
    session = read_claude_code(corpus_path(name), strict=True)
    assert session.errors == ()
    assert session.source_format == "claude-code"
    first_session_id = next(r["sessionId"] for _, r in raw_records(name) if "sessionId" in r)
    header = session.header
    assert header["type"] == "session" and header["version"] == 3
    assert header["sourceFormat"] == "claude-code"
    if name in MAIN_FILES:
        assert header["id"] == first_session_id
    else:
        agent_id = next(r["agentId"] for _, r in raw_records(name) if "agentId" in r)
        assert header["id"] == f"{first_session_id}/agent-{agent_id}"
        kind = "compaction" if Path(name).name.startswith("agent-acompact-") else "subagent"
        assert header["subagentKind"] == kind


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_main_path_holds_every_main_thread_message_once(name: str) -> None:
    main = main_thread(raw_records(name))
    path = session_of(name).path()
    reply_ids = {r["message"]["id"] for r in main if r["type"] == "assistant"}
    tool_uses = [
        b["id"] for r in main if r["type"] == "assistant" for b in blocks_of(r, "tool_use")
    ]
    tool_results = [b for r in main if r["type"] == "user" for b in blocks_of(r, "tool_result")]
    user_turns = [r for r in main if is_user_turn(r)]
    boundaries = [r for r in main if r.get("subtype") == "compact_boundary"]

    assert len(messages(path, "assistant")) == len(reply_ids)
    assert [b["id"] for b in tool_call_blocks(path)] == tool_uses
    assert len(messages(path, "toolResult")) == len(tool_results)
    assert len(messages(path, "user")) == len(user_turns)
    assert len([e for e in path if e.type == "compaction"]) == len(boundaries)


@needs_corpus
@pytest.mark.parametrize("name", [n for n in ALL_FILES if PROVENANCE_TOOL_CALLS[n]])
def test_every_tool_result_on_the_path_follows_its_call(name: str) -> None:
    # pi's message order: an assistant turn, then the results of its calls, before the
    # next user or assistant message.
    open_calls: set[str] = set()
    results = 0
    for entry in session_of(name).path():
        if entry.role == "assistant":
            open_calls = {b["id"] for b in entry.message["content"] if b["type"] == "toolCall"}
        elif entry.role == "toolResult":
            assert entry.message["toolCallId"] in open_calls
            open_calls.discard(entry.message["toolCallId"])
            results += 1
        elif entry.type == "message":
            open_calls = set()
    assert results > 0


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_whole_file_counts_and_nothing_lost(name: str) -> None:
    records = raw_records(name)
    session = session_of(name)
    entries = session.entries
    assistant_lines = [r for _, r in records if r["type"] == "assistant"]
    replies = {(r.get("isSidechain") is True, r["message"]["id"]) for r in assistant_lines}
    tool_uses = sum(len(blocks_of(r, "tool_use")) for r in assistant_lines)
    tool_results = sum(len(blocks_of(r, "tool_result")) for _, r in records if r["type"] == "user")
    boundaries = [r for _, r in records if r.get("subtype") == "compact_boundary"]
    non_message = [
        r
        for _, r in records
        if "uuid" in r
        and r["type"] not in ("user", "assistant", "progress")
        and r.get("subtype") != "compact_boundary"
    ]
    progress = {n: r for n, r in records if "uuid" in r and r["type"] == "progress"}
    steering = steering_lines(records)
    no_uuid = [n for n, r in records if "uuid" not in r and n not in steering]

    assert len(messages(entries, "assistant")) == len(replies)
    assert len(tool_call_blocks(entries)) == tool_uses == PROVENANCE_TOOL_CALLS[name]
    assert len(messages(entries, "toolResult")) == tool_results
    assert len([e for e in entries if e.type == "compaction"]) == len(boundaries)
    customs = [e for e in entries if e.type == "custom"]
    assert len(customs) == len(non_message)
    assert {e["customType"] for e in customs} == {f"claude-code:{r['type']}" for r in non_message}
    # Progress lines: verbatim, once each, on an entry or in the header.
    kept = [p for e in entries for p in e.get("progress", ())]
    in_header = session.header.get("sourceRecords", [])
    kept += [r for r in in_header if r["line"] in progress]
    assert sorted(p["line"] for p in kept) == sorted(progress)
    assert all(p["record"] == progress[p["line"]] for p in kept)
    assert [r["line"] for r in in_header if r["line"] not in progress] == no_uuid
    # Steering texts are custom_message entries on the main path, the raw line kept.
    steered = [e for e in entries if e.type == "custom_message"]
    assert {e.line: e["data"] for e in steered} == steering
    assert all(e in session.path() for e in steered)

    # Every source uuid is an entry's sourceId, a merged line, or a compaction summary line.
    seen: set[str] = set()
    for entry in entries:
        if entry.source_id is not None:
            seen.add(entry.source_id)
        seen.update(entry.get("sourceIds", ()))
        if entry.get("summarySourceId"):
            seen.add(entry["summarySourceId"])
    seen.update(p["record"]["uuid"] for p in kept)
    assert seen == {r["uuid"] for _, r in records if "uuid" in r}


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_entry_ids_are_the_source_uuids_and_lines_point_at_them(name: str) -> None:
    by_line = dict(raw_records(name))
    session = session_of(name)
    ids = [e.id for e in session.entries]
    assert len(set(ids)) == len(ids)
    per_line: dict[int | None, list[Entry]] = {}
    for entry in session.entries:
        per_line.setdefault(entry.line, []).append(entry)
    steering = steering_lines(raw_records(name))
    for lineno, group in per_line.items():
        if lineno in steering:  # no uuid: a fresh id
            assert [e.type for e in group] == ["custom_message"]
            continue
        uuid = by_line[lineno]["uuid"]
        assert group[0].id == uuid
        assert all(e.source_id == uuid for e in group)


@needs_corpus
@pytest.mark.parametrize("name", MAIN_FILES)
def test_sidechain_lines_stay_off_the_main_path_and_leaf_is_main(name: str) -> None:
    records = raw_records(name)
    session = session_of(name)
    sidechain = {r["uuid"] for _, r in records if r.get("isSidechain") is True}
    on_path = {e.source_id for e in session.path()}
    assert not on_path & sidechain
    last_main_message = [
        r["uuid"]
        for _, r in records
        if r.get("type") in ("user", "assistant") and r.get("isSidechain") is not True
    ][-1]
    leaf = session.leaf
    assert leaf is not None
    assert last_main_message in (leaf.source_id, *leaf.get("sourceIds", ()))


@needs_corpus
def test_inline_sidechains_are_separate_branches() -> None:
    name = "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    records = raw_records(name)
    session = session_of(name)
    # PROVENANCE: 405 of the 438 lines are sidechain lines, from 5 sidechain roots.
    assert len(records) == 438
    assert sum(1 for _, r in records if r.get("isSidechain") is True) == 405
    flagged = [e for e in session.entries if e.get("isSidechain") is True]
    assert flagged and not set(flagged) & set(session.path())
    sidechain_roots = [e for e in session.roots if e.get("isSidechain") is True]
    assert len(sidechain_roots) == 5
    assert len(session.roots) == 6
    summary = next(r["summary"] for _, r in records if r["type"] == "summary")
    assert session.header["title"] == summary


@needs_corpus
@pytest.mark.parametrize("name", MAIN_FILES)
def test_subagent_files_become_linked_sessions(name: str) -> None:
    folder = CC_DIR / Path(name).stem / "subagents"
    files = sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []
    session = session_of(name)
    assert len(session.linked) == len(files)
    for linked, file in zip(session.linked, files, strict=True):
        assert linked.source_path == str(file)
        assert linked.header["parentSessionId"] == session.id
        agent_id = file.stem.removeprefix("agent-")
        assert linked.header["agentId"] == agent_id
        if agent_id.startswith("acompact-"):
            assert linked.header["subagentKind"] == "compaction"
            assert session.get(linked.header["compactionEntryId"]).type == "compaction"
        else:
            assert linked.header["subagentKind"] == "subagent"
            # The Task call whose tool result names this agent (counted from the raw file).
            call = next(
                b["tool_use_id"]
                for _, r in raw_records(name)
                if isinstance(r.get("toolUseResult"), dict)
                and r["toolUseResult"].get("agentId") == agent_id
                for b in blocks_of(r, "tool_result")
            )
            assert linked.header["parentToolCallId"] == call


@needs_corpus
@pytest.mark.parametrize(
    "name",
    [
        "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    ],
)
def test_compaction_entry_from_boundary_and_summary_lines(name: str) -> None:
    records = raw_records(name)
    boundary = next(r for _, r in records if r.get("subtype") == "compact_boundary")
    summary_line = next(r for _, r in records if r.get("isCompactSummary") is True)
    session = session_of(name)
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert compaction.id == compaction.source_id == boundary["uuid"]
    assert compaction["summarySourceId"] == summary_line["uuid"]
    assert compaction["summary"] == summary_line["message"]["content"]
    assert compaction["tokensBefore"] == boundary["compactMetadata"]["preTokens"]
    assert compaction["method"] == "claude-code"
    assert compaction["details"] == {"readFiles": [], "modifiedFiles": []}
    # The compaction hangs from the last message before the boundary (Claude Code writes the
    # boundary with a null parentUuid), so the session path runs through it.
    boundary_line = next(n for n, r in records if r.get("subtype") == "compact_boundary")
    last_before = [
        r["uuid"]
        for n, r in records
        if n < boundary_line and r["type"] in ("user", "assistant") and not r.get("isSidechain")
    ][-1]
    parent = session.get(compaction.parent_id)
    assert last_before in (parent.source_id, *parent.get("sourceIds", ()))
    path = session.path()
    assert compaction in path
    # Nothing before the boundary is kept: the first kept entry is the first message after.
    after = path[path.index(compaction) + 1 :]
    first_message = next(e for e in after if e.type == "message")
    assert compaction["firstKeptEntryId"] == first_message.id


@needs_corpus
def test_compaction_tokens_before_matches_provenance() -> None:
    session = session_of("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert (
        compaction["tokensBefore"] == 167117
    )  # PROVENANCE: "1 auto-compaction (preTokens 167117)"


@needs_corpus
def test_merged_reply_keeps_blocks_in_order_and_usage_of_last_line() -> None:
    name = "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
    lines: dict[str, list[dict[str, Any]]] = {}
    for _, r in raw_records(name):
        if r["type"] == "assistant" and r.get("isSidechain") is not True:
            lines.setdefault(r["message"]["id"], []).append(r)
    by_source = {e.source_id: e for e in session_of(name).entries if e.role == "assistant"}
    for reply in lines.values():
        entry = by_source[reply[0]["uuid"]]
        raw_kinds = [b["type"] for r in reply for b in r["message"]["content"]]
        pi_kinds = {"text": "text", "thinking": "thinking", "tool_use": "toolCall"}
        assert [b["type"] for b in entry.message["content"]] == [pi_kinds[k] for k in raw_kinds]
        assert entry.message["usage"]["output"] == reply[-1]["message"]["usage"]["output_tokens"]
        assert entry.message["model"] == reply[-1]["message"]["model"]
        assert entry.get("sourceIds", [entry.source_id]) == [r["uuid"] for r in reply]


@needs_corpus
def test_write_then_read_round_trips_a_corpus_session(tmp_path: Path) -> None:
    session = session_of("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    out = session.write(tmp_path / "converted.jsonl")
    again = read_session(out)
    assert again.source_format == "pi"
    assert again.errors == ()
    assert [(e.id, e.type, e.source_id) for e in again.entries] == [
        (e.id, e.type, e.source_id) for e in session.entries
    ]
    assert [e.id for e in again.path()] == [e.id for e in session.path()]


@needs_corpus
def test_read_session_detects_claude_code() -> None:
    path = corpus_path("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")  # starts with a summary line
    assert detect_format(path) == "claude-code"
    assert read_session(path).source_format == "claude-code"


@needs_corpus
def test_largest_file_reads_fast() -> None:
    path = corpus_path("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    assert path.stat().st_size > 3_000_000
    best = float("inf")
    for _ in range(5):
        # CPU time: the machine is shared, wall time would measure the neighbours.
        start = time.process_time()
        read_claude_code(path)
        best = min(best, time.process_time() - start)
    assert best < 0.2


# -- a hand-written file --------------------------------------------------------------------

SESSION_ID = "11111111-2222-3333-4444-555555555555"
BASE = {"sessionId": SESSION_ID, "cwd": "/work/demo", "version": "2.1.0", "gitBranch": "main"}


def line(uuid: str | None, parent: str | None, kind: str, ts: int, **fields: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        **BASE,
        "type": kind,
        "parentUuid": parent,
        "isSidechain": False,
        "timestamp": f"2026-01-01T00:00:{ts:02d}.000Z",
    }
    if uuid is not None:
        rec["uuid"] = uuid
    rec.update(fields)
    return rec


def assistant(
    uuid: str, parent: str | None, ts: int, mid: str, block: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    message = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": [block],
        "stop_reason": extra.pop("stop_reason", None),
        "usage": extra.pop("usage", {"input_tokens": 3, "output_tokens": 1}),
    }
    return line(uuid, parent, "assistant", ts, message=message, **extra)


def user(uuid: str, parent: str | None, ts: int, content: Any, **extra: Any) -> dict[str, Any]:
    return line(uuid, parent, "user", ts, message={"role": "user", "content": content}, **extra)


def tool_result(call_id: str, content: Any, *, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


PNG = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}

SYNTHETIC: list[dict[str, Any] | str] = [
    # 1: no uuid, kept in the header
    {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False},
    # 2: a hook progress line is the root, as in Claude Code 2.x
    line("p0", None, "progress", 1, data={"type": "hook_progress", "hookEvent": "SessionStart"}),
    # 3
    user("u1", "p0", 2, "hello"),
    # 4-6: one reply written as three lines (thinking, text, tool_use T1)
    assistant("a1", "u1", 3, "m1", {"type": "thinking", "thinking": "hmm", "signature": "sig"}),
    assistant("a2", "a1", 4, "m1", {"type": "text", "text": "I'll look"}),
    assistant(
        "a3", "a2", 5, "m1", {"type": "tool_use", "id": "T1", "name": "Read", "input": {"p": 1}}
    ),
    # 7: hook progress under the tool_use line
    line("p1", "a3", "progress", 6, data={"type": "hook_progress", "hookEvent": "PreToolUse"}),
    # 8: the reply's second tool_use hangs off the progress line
    assistant("a4", "p1", 7, "m1", {"type": "tool_use", "id": "T2", "name": "Bash", "input": "ls"}),
    # 9: result of T1 hangs off a3, i.e. beside a4 in Claude Code's own tree
    user(
        "r1",
        "a3",
        8,
        [
            tool_result(
                "T1", [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}, PNG]
            )
        ],
    ),
    # 10: result of T2 (an error) plus text typed by the user, in one line
    user(
        "r2",
        "a4",
        9,
        [tool_result("T2", "boom", is_error=True), {"type": "text", "text": "also check X"}],
        toolUseResult={"agentId": "abc", "status": "completed"},
    ),
    # 11-12: a reply of two lines, the last one with the final usage and a stop reason
    assistant("a5", "r2", 10, "m2", {"type": "text", "text": "part 1"}),
    assistant(
        "a6",
        "a5",
        11,
        "m2",
        {"type": "text", "text": "part 2"},
        stop_reason="max_tokens",
        usage={
            "input_tokens": 7,
            "output_tokens": 42,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 5,
        },
    ),
    # 13: a result whose call was never made
    user("r9", "a6", 12, [tool_result("T9", "orphan")]),
    # 14-15: compaction boundary and its summary line
    line(
        "b1",
        None,
        "system",
        13,
        subtype="compact_boundary",
        logicalParentUuid="r9",
        content="Conversation compacted",
        compactMetadata={"trigger": "manual", "preTokens": 1234},
    ),
    user("s1", "b1", 14, "Summary text", isCompactSummary=True, isVisibleInTranscriptOnly=True),
    # 16: the first message after the compaction
    assistant("a7", "s1", 15, "m3", {"type": "text", "text": "continuing"}, stop_reason="end_turn"),
    # 17: an inline sidechain line after the last main message
    {
        **assistant("x1", None, 16, "m4", {"type": "text", "text": "side"}),
        "isSidechain": True,
    },
    # 18: a system line after the last main message
    line("d1", "a7", "system", 17, subtype="turn_duration", durationMs=5),
    # 19: a broken line
    "{not json",
]


def write_jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    main = write_jsonl(tmp_path / f"{SESSION_ID}.jsonl", SYNTHETIC)
    subagents = tmp_path / SESSION_ID / "subagents"
    subagents.mkdir(parents=True)
    side = {"isSidechain": True, "agentId": "abc"}
    write_jsonl(
        subagents / "agent-abc.jsonl",
        [
            {**user("sa1", None, 20, "look around"), **side},
            {**assistant("sa2", "sa1", 21, "m9", {"type": "text", "text": "found"}), **side},
        ],
    )
    compact = {"isSidechain": True, "agentId": "acompact-1f"}
    write_jsonl(
        subagents / "agent-acompact-1f.jsonl",
        [
            {**user("c1", "r9", 22, "reminder", isMeta=True), **compact},
            {**user("c2", "r9", 23, "Summarize the conversation"), **compact},
            {**assistant("c3", "c2", 24, "m8", {"type": "text", "text": "the summary"}), **compact},
        ],
    )
    return main


def by_source(session: Session, uuid: str) -> list[Entry]:
    return [e for e in session.entries if e.source_id == uuid]


def test_synthetic_main_path_in_pi_shapes(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    kinds = [(e.type, e.role, e.source_id) for e in session.path()]
    assert kinds == [
        ("message", "user", "u1"),
        ("message", "assistant", "a1"),
        ("message", "toolResult", "r1"),
        ("message", "toolResult", "r2"),
        ("message", "user", "r2"),
        ("message", "assistant", "a5"),
        ("message", "toolResult", "r9"),
        ("compaction", None, "b1"),
        ("message", "assistant", "a7"),
    ]
    assert session.leaf_id == "a7"


def test_synthetic_reply_merged_with_tool_calls(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    (reply,) = by_source(session, "a1")
    assert reply.id == "a1"
    assert reply.line == 4
    assert reply["sourceIds"] == ["a1", "a2", "a3", "a4"]
    msg = reply.message
    assert msg["content"] == [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
        {"type": "text", "text": "I'll look"},
        {"type": "toolCall", "id": "T1", "name": "Read", "arguments": {"p": 1}},
        {"type": "toolCall", "id": "T2", "name": "Bash", "arguments": {"input": "ls"}},
    ]
    assert msg["stopReason"] == "toolUse"  # no stop_reason written, but tool calls
    assert msg["provider"] == "anthropic" and msg["model"] == "claude-test-1"
    # Lines merged into the reply are not entries of their own.
    assert all(not by_source(session, u) for u in ("a2", "a3", "a4", "a6"))

    (second,) = by_source(session, "a5")
    assert [b["text"] for b in second.message["content"]] == ["part 1", "part 2"]
    assert second.message["stopReason"] == "length"
    usage = second.message["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (
        7,
        42,
        100,
        5,
    )
    assert usage["totalTokens"] == 7 + 42 + 100 + 5
    (third,) = by_source(session, "a7")
    assert third.message["stopReason"] == "stop"


def test_synthetic_tool_results_and_mixed_line(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    (r1,) = by_source(session, "r1")
    assert r1.id == "r1"
    assert r1.parent_id == "a1"
    assert r1.message["toolCallId"] == "T1" and r1.message["toolName"] == "Read"
    assert r1.message["content"] == [
        {"type": "text", "text": "one\ntwo"},
        {"type": "image", "data": "iVBO", "mimeType": "image/png"},
    ]
    assert r1.message["isError"] is False

    result, text = by_source(session, "r2")
    assert result.id == "r2" and text.id != "r2"
    assert result.parent_id == "r1"  # chained after the first result, not beside it
    assert result.message["toolName"] == "Bash"
    assert result.message["content"] == [{"type": "text", "text": "boom"}]
    assert result.message["isError"] is True
    assert text.role == "user" and text.parent_id == "r2"
    assert text.message["content"] == [{"type": "text", "text": "also check X"}]
    # The next reply follows the text, the last thing that line produced.
    assert by_source(session, "a5")[0].parent_id == text.id


def test_synthetic_unpaired_result_is_kept_and_reported(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    (orphan,) = by_source(session, "r9")
    assert orphan.message["toolCallId"] == "T9"
    assert orphan.message["toolName"] == ""
    problems = {(p.kind, p.line) for p in session.errors}
    assert problems == {("unpaired-tool-result", 13), ("malformed-json", 19)}
    assert all(p.path == str(synthetic) for p in session.errors)


def test_synthetic_compaction(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert compaction.id == "b1" and compaction.line == 14
    assert compaction.parent_id == "r9"  # the logical parent, not the boundary's null
    assert compaction["summary"] == "Summary text"
    assert compaction["tokensBefore"] == 1234
    assert compaction["firstKeptEntryId"] == "a7"
    assert compaction["method"] == "claude-code"
    assert compaction["details"] == {"readFiles": [], "modifiedFiles": []}
    assert compaction["summarySourceId"] == "s1"
    assert not by_source(session, "s1")  # the summary line is inside the compaction entry


def test_synthetic_non_message_records_and_header(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    lines = synthetic.read_text(encoding="utf-8").splitlines()
    # Progress lines are no entries: the root one is kept in the header, the other on the
    # entry it hangs from (a3, merged into the reply a1), verbatim.
    assert not by_source(session, "p0") and not by_source(session, "p1")
    (reply,) = by_source(session, "a1")
    assert reply["progress"] == [{"line": 7, "record": json.loads(lines[6])}]
    assert by_source(session, "u1")[0].parent_id is None  # under the root progress line
    (duration,) = by_source(session, "d1")
    assert duration["customType"] == "claude-code:system"
    assert duration.parent_id == "a7"
    header = session.header
    assert header["id"] == SESSION_ID and header["cwd"] == "/work/demo"
    assert header["sourceVersion"] == "2.1.0" and header["gitBranch"] == "main"
    assert header["timestamp"] == "2026-01-01T00:00:01.000Z"
    assert [r["line"] for r in header["sourceRecords"]] == [1, 2]
    assert header["sourceRecords"][0]["record"]["type"] == "file-history-snapshot"
    assert header["sourceRecords"][1]["record"] == json.loads(lines[1])


def test_synthetic_sidechain_after_main_leaf(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    (side,) = by_source(session, "x1")
    assert side.get("isSidechain") is True
    assert side.parent_id is None
    assert side not in session.path()
    assert session.entries[-1].source_id == "a7"


def test_synthetic_linked_subagents(synthetic: Path) -> None:
    session = read_claude_code(synthetic)
    task, compact = session.linked  # sorted by file name: agent-abc, agent-acompact-1f
    assert task.header["id"] == f"{SESSION_ID}/agent-abc"
    assert task.header["subagentKind"] == "subagent"
    assert task.header["parentToolCallId"] == "T2"
    assert [e.role for e in task.path()] == ["user", "assistant"]
    assert compact.header["subagentKind"] == "compaction"
    assert compact.header["compactionEntryId"] == "b1"
    # Lines whose parent lives in the parent session are chained in file order.
    assert [e.source_id for e in compact.path()] == ["c1", "c2", "c3"]
    assert compact.path()[0]["sourceParentId"] == "r9"
    assert task.errors == () and compact.errors == ()


def test_synthetic_strict_mode_raises_with_file_and_line(synthetic: Path) -> None:
    # The broken line 19 is met while parsing, before the unpaired result of line 13 is;
    # both modes still put line 13 first.
    lenient = [(p.kind, p.line) for p in read_claude_code(synthetic).errors]
    assert lenient == [("unpaired-tool-result", 13), ("malformed-json", 19)]
    with pytest.raises(SessionReadError) as info:
        read_claude_code(synthetic, strict=True)
    assert info.value.path == str(synthetic)
    assert (info.value.kind, info.value.line) == ("unpaired-tool-result", 13)
    assert [(p.kind, p.line) for p in info.value.problems] == lenient


def test_synthetic_input_unchanged_and_detected(synthetic: Path) -> None:
    before = synthetic.read_bytes()
    session = read_session(synthetic)
    assert session.source_format == "claude-code"
    assert synthetic.read_bytes() == before


def test_synthetic_round_trip_through_pi_jsonl(synthetic: Path, tmp_path: Path) -> None:
    session = read_claude_code(synthetic)
    again = read_session(session.write(tmp_path / "out" / "pi.jsonl"))
    assert again.source_format == "pi"
    assert again.errors == ()
    assert [(e.id, e.type, e.source_id) for e in again.entries] == [
        (e.id, e.type, e.source_id) for e in session.entries
    ]
    assert again.leaf_id == "a7"


def test_api_error_and_redacted_thinking(tmp_path: Path) -> None:
    error = assistant("e1", "u1", 2, "m1", {"type": "text", "text": "API Error: overloaded"})
    error["isApiErrorMessage"] = True
    path = write_jsonl(
        tmp_path / "err.jsonl",
        [
            user("u1", None, 1, "hi"),
            error,
            assistant("e2", "e1", 3, "m2", {"type": "redacted_thinking", "data": "opaque"}),
            assistant("e3", "e2", 4, "m2", {"type": "text", "text": "ok"}, stop_reason="end_turn"),
        ],
    )
    session = read_claude_code(path)
    first, second = (e.message for e in messages(session.path(), "assistant"))
    assert first["stopReason"] == "error"
    assert first["errorMessage"] == "API Error: overloaded"
    assert second["content"][0] == {
        "type": "thinking",
        "thinking": "",
        "thinkingSignature": "opaque",
        "redacted": True,
    }
    assert second["stopReason"] == "stop"


def test_duplicate_uuid_and_dangling_parent_are_reported(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dup.jsonl",
        [
            user("u1", None, 1, "first"),
            user("u1", "u1", 2, "same uuid again"),
            user("u2", "nowhere", 3, "parent missing"),
            user(None, "u2", 4, "no uuid at all"),
        ],
    )
    session = read_claude_code(path)
    assert {(p.kind, p.line) for p in session.errors} == {
        ("duplicate-id", 2),
        ("dangling-parent", 3),
        ("missing-id", 4),
    }
    ids = [e.id for e in session.entries]
    assert len(set(ids)) == 4 and ids[0] == "u1"
    assert session.entries[3].parent_id == "u2" and session.entries[3].line == 4
    assert session.entries[1].source_id == "u1" and session.entries[1].parent_id == "u1"
    assert session.entries[2].parent_id is None


@pytest.mark.parametrize(
    ("data", "kind"),
    [(b"", "empty-file"), (b"\x00\x01binary", "binary-file"), (b"[1, 2]\n", "not-an-object")],
)
def test_unusable_files_become_problems(tmp_path: Path, data: bytes, kind: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    session = read_claude_code(path)
    assert [p.kind for p in session.errors] == [kind]
    assert session.entries == ()
    with pytest.raises(SessionReadError):
        read_claude_code(path, strict=True)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionReadError) as info:
        read_claude_code(tmp_path / "nope.jsonl")
    assert info.value.kind == "not-found"

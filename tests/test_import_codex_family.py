"""Codex spawned, review and forked agents, and legacy flat rollouts (tests/data/codex-family,
see its PROVENANCE.md for what each file reproduces and where its layout comes from).

Expected values come from plain-json reading of the files: which lines a child copied
(timestamped before its own start, or equal to a line of its parent's file), which token
counts are requests, which calls each file holds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _raw import codex_lines, codex_requests

from musepi_lab.analysis import problems_of
from musepi_lab.analysis._usage import usage_df
from musepi_lab.datasets._discover import discover_sessions
from musepi_lab.formats._codex import read_codex
from musepi_lab.formats._registry import detect_format, iter_session_files, iter_sessions
from musepi_lab.session._model import tool_calls
from musepi_lab.session._session import parse_timestamp_ms

DATA = Path(__file__).parent / "data" / "codex-family"
PARENT = "019b9000-0000-7000-8000-00000000000a"
FORKED = "019b9000-0000-7000-8000-00000000000c"
FRESH = "019b9000-0000-7000-8000-00000000000d"


def file_of(folder: str, session_id: str) -> Path:
    [path] = (DATA / folder).glob(f"rollout-*-{session_id}.jsonl")
    return path


# -- independent reading ----------------------------------------------------------------------
def own_meta(path: Path) -> dict[str, Any]:
    return codex_lines(path)[0][1]["payload"]


def copied_by_timestamp(path: Path) -> set[int]:
    """Lines after the first that another session's `session_meta` or a timestamp before
    the file's own start marks as copied (the leading run of them)."""
    lines = codex_lines(path)
    own = lines[0][1]["payload"]
    start = parse_timestamp_ms(own["timestamp"])
    out = set()
    for number, record in lines[1:]:
        other_meta = record["type"] == "session_meta" and record["payload"]["id"] != own["id"]
        if not other_meta and parse_timestamp_ms(record["timestamp"]) >= start:
            break
        out.add(number)
    return out


def copied_in_one_burst(path: Path) -> set[int]:
    """The leading run of lines stamped at the same instant as the copied `session_meta`
    (line 2): a copy written at the fork instant, as pingdotgg/t3code #5887 describes."""
    lines = codex_lines(path)
    instant = lines[1][1]["timestamp"]
    out = set()
    for number, record in lines[1:]:
        if record["timestamp"] != instant:
            break
        out.add(number)
    return out


def equal_to_a_parent_line(child: Path, parent: Path, lines: set[int]) -> bool:
    """Every one of these lines of the child equals (type, payload) a line of the parent."""
    key = lambda r: (r["type"], json.dumps(r["payload"], sort_keys=True))  # noqa: E731
    theirs = {key(r) for _, r in codex_lines(parent)}
    return all(key(r) in theirs for n, r in codex_lines(child) if n in lines)


def calls_named(path: Path, name: str, skip: set[int] = frozenset()) -> int:
    return sum(
        1
        for n, r in codex_lines(path)
        if n not in skip
        and r["type"] == "response_item"
        and r["payload"].get("type") == "function_call"
        and r["payload"].get("name") == name
    )


def inherited(session) -> set[int]:
    return {e.line for e in session.entries if e.get("customType") == "codex:inherited"}


# -- spawned agents ---------------------------------------------------------------------------
def test_spawned_children_are_linked_to_their_parent() -> None:
    parent = read_codex(file_of("spawn", PARENT), strict=True)
    assert parent.errors == ()
    children = {c.id: c for c in parent.linked}
    assert set(children) == {FORKED, FRESH}
    forked, fresh = children[FORKED], children[FRESH]
    assert forked.header["parentSessionId"] == PARENT
    assert forked.header["forkedFromId"] == own_meta(file_of("spawn", FORKED))["forked_from_id"]
    assert forked.header["subagentKind"] == "thread_spawn"
    # The call whose output names the child (`{"agent_id": …}` in the parent's file).
    assert forked.header["parentToolCallId"] == "call_spawn_1"
    assert fresh.header["parentToolCallId"] == "call_spawn_2"
    assert "forkedFromId" not in fresh.header and "inheritedRecords" not in fresh.header
    assert inherited(fresh) == set()


def test_a_forked_child_keeps_what_it_copied_apart_from_its_own() -> None:
    path = file_of("spawn", FORKED)
    expected = copied_by_timestamp(path)
    assert equal_to_a_parent_line(path, file_of("spawn", PARENT), expected)
    assert expected == set(range(2, 10))  # the parent's session_meta and its lines 2–8

    child = read_codex(path)
    assert child.errors == ()
    assert inherited(child) == expected
    assert child.header["inheritedRecords"] == len(expected)
    # The copied records are no messages of the child: the spawn_agent call appears once,
    # in the parent, with its result; the child's first user message is its own prompt.
    assert not any(e.type == "message" and e.line in expected for e in child.entries)
    calls = [
        b["name"] for e in child.entries if e.role == "assistant" for b in tool_calls(e.message)
    ]
    assert calls.count("spawn_agent") == 0 == calls_named(path, "spawn_agent", skip=expected)
    assert calls_named(path, "spawn_agent") == 1  # the copy the file holds
    first_user = next(e for e in child.entries if e.role == "user")
    assert first_user.message["content"][0]["text"] == "read src/parser.rs and report"
    # The header is the child's own, not the copied parent's session_meta.
    assert child.header["id"] == FORKED
    assert child.header["timestamp"] == own_meta(path)["timestamp"]


def test_usage_counts_each_request_once_across_parent_and_children() -> None:
    copied = copied_by_timestamp(file_of("spawn", FORKED))
    expected: dict[str, tuple[int, int, int]] = {}
    raw_requests = 0
    for sid in (PARENT, FORKED, FRESH):
        requests = codex_requests(codex_lines(file_of("spawn", sid)))
        raw_requests += len(requests)
        own = [last for n, last in requests if not (sid == FORKED and n in copied)]
        expected[sid] = (
            len(own),
            sum(last["input_tokens"] for last in own),
            sum(last["output_tokens"] for last in own),
        )
    assert raw_requests == sum(n for n, _, _ in expected.values()) + 1  # one copied request

    frame = usage_df(DATA / "spawn")
    problems = problems_of(frame)
    assert problems == []
    got = {
        sid: (len(rows), int((rows["input"] + rows["cache_read"]).sum()), int(rows["output"].sum()))
        for sid, rows in frame.groupby("session_id")
    }
    assert got == expected
    assert set(frame["root_session_id"]) == {PARENT}


def test_a_folder_read_gives_the_parent_with_its_children() -> None:
    assert [p.name for p in iter_session_files(DATA / "spawn")] == [file_of("spawn", PARENT).name]
    [parent] = list(iter_sessions(DATA / "spawn"))
    assert parent.id == PARENT and len(parent.linked) == 2
    # Read on its own, a child still names its parent.
    alone = read_codex(file_of("spawn", FRESH))
    assert alone.header["parentSessionId"] == PARENT and alone.linked == ()


def test_a_copy_written_at_the_fork_instant_is_told_apart_by_the_parents_file() -> None:
    path = file_of("restamped", "019b9100-0000-7000-8000-00000000000c")
    parent_path = file_of("restamped", "019b9100-0000-7000-8000-00000000000a")
    expected = copied_in_one_burst(path)
    assert equal_to_a_parent_line(path, parent_path, expected)
    assert copied_by_timestamp(path) == {2}  # only the copied session_meta is earlier
    assert expected == set(range(2, 8))  # the session_meta and 5 of lines 2–8: no reasoning, call

    child = read_codex(path)
    assert child.errors == ()
    assert inherited(child) == expected
    [parent] = list(iter_sessions(DATA / "restamped"))
    assert [c.id for c in parent.linked] == [child.id]
    assert inherited(parent.linked[0]) == expected


def test_children_whose_parent_is_elsewhere_are_sessions_of_their_own() -> None:
    sessions = {s.id: s for s in iter_sessions(DATA / "orphans")}
    assert set(sessions) == {FORKED, "019b9100-0000-7000-8000-00000000000c"}
    original = sessions[FORKED]
    assert original.header["parentSessionId"] == PARENT
    assert inherited(original) == copied_by_timestamp(file_of("orphans", FORKED))
    # Re-stamped and without its parent, the copy cannot be told apart: reported.
    restamped = sessions["019b9100-0000-7000-8000-00000000000c"]
    [problem] = restamped.errors
    assert (problem.kind, problem.line) == ("unseparated-fork-prefix", 2)
    assert inherited(restamped) == {2}


# -- review agents ----------------------------------------------------------------------------
REVIEW_PARENT = "019b88e0-0b0f-7bb0-a9ba-5cc2d8dffde9"
REVIEW_CHILD = "019b88e5-a2e4-7b90-8953-38fce393c653"
UNMATCHED = "019b88e6-0000-7000-8000-000000000001"


def test_a_review_agent_is_linked_through_the_parents_entered_review_mode() -> None:
    parent_path = file_of("review", REVIEW_PARENT)
    [event_line] = [
        n
        for n, r in codex_lines(parent_path)
        if r["type"] == "event_msg" and r["payload"]["type"] == "entered_review_mode"
    ]
    sessions = {s.id: s for s in iter_sessions(DATA / "review")}
    # agtrace's expectation: the review child links to the parent, the orphan to nothing.
    assert set(sessions) == {REVIEW_PARENT, UNMATCHED}
    parent = sessions[REVIEW_PARENT]
    [child] = parent.linked
    assert child.id == REVIEW_CHILD
    assert child.header["subagentKind"] == "review"
    assert child.header["parentSessionId"] == REVIEW_PARENT
    assert parent.get(child.header["parentEntryId"]).line == event_line
    assert "parentSessionId" not in sessions[UNMATCHED].header
    assert sessions[UNMATCHED].header["subagentKind"] == "review"


def test_prompts_recorded_only_as_events_are_user_messages_of_parent_and_review() -> None:
    parent = read_codex(file_of("review", REVIEW_PARENT))
    [child] = parent.linked
    for session, path in ((parent, file_of("review", REVIEW_PARENT)), (child, None)):
        path = path or file_of("review", REVIEW_CHILD)
        prompts = [
            r["payload"]["message"]
            for _, r in codex_lines(path)
            if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"
        ]
        users = [e.message["content"][0]["text"] for e in session.entries if e.role == "user"]
        assert users == prompts and prompts


# -- legacy flat rollouts ---------------------------------------------------------------------
LEGACY = DATA / "legacy" / "rollout-2025-07-20T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
HEADER_ONLY = (
    DATA / "legacy" / "rollout-2025-07-21T09-00-00-0e4c1b7a-2b1d-4e55-9c8e-0d4f3a2b1c00.jsonl"
)


def legacy_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]


@pytest.mark.parametrize("path", [LEGACY, HEADER_ONLY], ids=["rollout", "header-only"])
def test_a_legacy_flat_rollout_is_codex(path: Path) -> None:
    assert detect_format(path) == "codex"
    [session] = list(iter_sessions(path))
    header = legacy_records(path)[0]
    assert session.source_format == "codex"
    assert session.errors == ()
    assert session.header["id"] == header["id"]
    assert session.header["timestamp"] == header["timestamp"]
    assert session.header["rolloutLayout"] == "legacy"


def test_a_legacy_rollout_reads_its_messages_and_tool_calls() -> None:
    records = legacy_records(LEGACY)
    items = [r for r in records[1:] if "type" in r]
    users = [r for r in items if r["type"] == "message" and r["role"] == "user"]
    calls = [r for r in items if r["type"] == "function_call"]
    outputs = [r for r in items if r["type"] == "function_call_output"]
    markers = [r for r in records[1:] if "record_type" in r]

    session = read_codex(LEGACY, strict=True)
    assert session.header["git"] == records[0]["git"]
    assert [e.message["content"][0]["text"] for e in session.entries if e.role == "user"] == [
        u["content"][0]["text"] for u in users
    ]
    kinds = [e.get("sourceKind") for e in session.entries if e.role == "user"]
    assert kinds == ["environment_context", None, None]
    blocks = [b for e in session.entries if e.role == "assistant" for b in tool_calls(e.message)]
    assert [(b["id"], b["name"]) for b in blocks] == [(c["call_id"], c["name"]) for c in calls]
    results = [e for e in session.entries if e.role == "toolResult"]
    assert [r.message["toolCallId"] for r in results] == [o["call_id"] for o in outputs]
    assert [r.message["isError"] for r in results] == [False]
    assert sum(e.get("customType") == "codex:state" for e in session.entries) == len(markers)
    # The reasoning item and the call it led to are one reply; the answer another.
    replies = [e for e in session.entries if e.role == "assistant"]
    assert [[b["type"] for b in e.message["content"]] for e in replies] == [
        ["thinking", "toolCall"],
        ["text"],
    ]


def test_discovery_lists_the_parent_not_its_children(tmp_path: Path) -> None:
    day = tmp_path / ".codex" / "sessions" / "2026" / "01" / "04"
    day.mkdir(parents=True)
    for path in (DATA / "spawn").iterdir():
        shutil.copy(path, day / path.name)
    found = discover_sessions(tmp_path, environ={}, agents=("codex",))
    assert [f.path.name for f in found] == [file_of("spawn", PARENT).name]

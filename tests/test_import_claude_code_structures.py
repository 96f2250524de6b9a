"""Claude Code as it writes today (issue 32 items 1, 2, 3, 7, 8; issue 27 item 1; issue 29
item 7): preserved compaction segments, boundaries whose logical parent names no line,
Workflow subagents and the files beside them, uuid-less lines, steering and inline
sidechains, on the files in tests/data/claude-code (README there: the peer's test files
with their provenance, and hand-written ones).

Expected values come from the peer's stated expectation (claude-code-log's tests) or from
plain `json` reading of the same files here, never from the reader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, REPO_ROOT, needs_corpus
from _raw import jsonl_records

import musepi_lab as ml
from musepi_lab.analysis import messages_df, problems_of, usage_df
from musepi_lab.context import build_session_context
from musepi_lab.datasets._discover import discover_folder
from musepi_lab.formats import detect_format, iter_sessions, read_session
from musepi_lab.session import SessionReadError

DATA = REPO_ROOT / "tests" / "data" / "claude-code"
PEER = DATA / "peer"
HAND = DATA / "handwritten"
WORKFLOW = PEER / "workflow_scriptpath"
WORKFLOW_SESSION = "22220000-0000-4000-8000-000000000002"


def line_of(path: Path, uuid: str) -> int:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if json.loads(line).get("uuid") == uuid:
            return n
    raise AssertionError(uuid)


def usage_lines(path: Path) -> list[dict[str, Any]]:
    return [
        r for r in jsonl_records(path) if isinstance((r.get("message") or {}).get("usage"), dict)
    ]


def path_sources(session: ml.Session) -> list[str | None]:
    return [e.source_id for e in session.path()]


# -- item 1: a compaction that keeps a preserved segment ----------------------------------------

# claude-code-log test/test_dag_compact_after_rewind.py: the trunk ["u1", "a1"], then the live
# branch; `cs` (the summary line) is folded into the compaction entry of `cb` here.
PEER_LIVE = {
    "dag_compact_after_rewind": ["b2u", "b2a", "b2u2", "b2a2", "cb", "cs", "p1u", "p1a"],
    "dag_compact_after_rewind_preserved": ["b2u", "b2a", "b2u2", "cb", "cs", "b2a2", "p1u", "p1a"],
}


@pytest.mark.parametrize("name", sorted(PEER_LIVE))
def test_compaction_continues_the_live_branch_as_the_peer_threads_it(name: str) -> None:
    session = read_session(PEER / f"{name}.jsonl", strict=True)  # a valid file: no problem
    assert session.errors == ()
    expected = ["u1", "a1"] + [u for u in PEER_LIVE[name] if u != "cs"]
    assert path_sources(session) == expected
    assert len(session.roots) == 1
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert compaction["summarySourceId"] == "cs"


def test_preserved_messages_stay_in_the_context() -> None:
    path = PEER / "dag_compact_after_rewind_preserved.jsonl"
    boundary = next(r for r in jsonl_records(path) if r.get("subtype") == "compact_boundary")
    kept = boundary["compactMetadata"]["preservedMessages"]["uuids"]
    session = read_session(path, strict=True)
    context = build_session_context(session)
    by_id = {e.id: e for e in session.entries}
    sources = [by_id[i].source_id if i in by_id else None for i in context.entry_ids]
    assert context.messages[0]["role"] == "compactionSummary"
    # the preserved messages in their order, then what came after the compaction
    assert sources[1:] == [*kept, "p1u", "p1a"]
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert (
        by_id[compaction["firstKeptEntryId"]].source_id
        == boundary["compactMetadata"]["preservedSegment"]["headUuid"]
    )


def test_preserved_segment_whose_logical_parent_was_never_written() -> None:
    """The boundary names a uuid Claude Code listed but never wrote; its preserved tail is
    in the file: the compaction continues from the tail, no problem."""
    path = HAND / "preserved-tail-in-file.jsonl"
    boundary = next(r for r in jsonl_records(path) if r.get("subtype") == "compact_boundary")
    segment = boundary["compactMetadata"]["preservedSegment"]
    uuids = {r["uuid"] for r in jsonl_records(path)}
    assert boundary["logicalParentUuid"] not in uuids and segment["tailUuid"] in uuids
    session = read_session(path, strict=True)
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert session.get(compaction.parent_id).source_id == segment["tailUuid"]
    assert session.get(compaction["firstKeptEntryId"]).source_id == segment["headUuid"]
    context = build_session_context(session)
    sources = [session.get(i).source_id for i in context.entry_ids[1:]]
    assert sources == ["u2", "a2", "u3", "a3"]


def test_preserved_session_replays_and_bills_every_request() -> None:
    path = PEER / "dag_compact_after_rewind_preserved.jsonl"
    session = read_session(path, strict=True)
    on_branch = {"a1", *PEER_LIVE["dag_compact_after_rewind_preserved"]}
    replies = [r["uuid"] for r in usage_lines(path) if r["uuid"] in on_branch]
    result = ml.replay_session(session, "recorded", window=200_000)
    assert [session.get(i).source_id for i in result.timeline["entry_id"]] == replies
    frame = usage_df(session)
    problems = problems_of(frame)
    assert problems == [] and len(frame) == len(usage_lines(path))  # b1a too: it was billed


# -- item 2 / issue 27 item 1: a logical parent that names no line -----------------------------


def test_boundary_without_its_logical_parent_is_bridged_never_a_root() -> None:
    path = HAND / "bridged-boundary.jsonl"
    records = jsonl_records(path)
    uuids = {r["uuid"] for r in records}
    boundary_line = next(
        n for n, r in enumerate(records, 1) if r.get("subtype") == "compact_boundary"
    )
    assert records[boundary_line - 1]["logicalParentUuid"] not in uuids
    last_before = [
        r["uuid"] for r in records[: boundary_line - 1] if r["type"] in ("user", "assistant")
    ][-1]
    session = read_session(path)
    (problem,) = session.errors
    assert (problem.kind, problem.line) == ("bridged", boundary_line)
    assert len(session.roots) == 1
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert session.get(compaction.parent_id).source_id == last_before
    messages = [
        r["uuid"]
        for r in records
        if r["type"] in ("user", "assistant") and not r.get("isCompactSummary")
    ]
    assert [s for s in path_sources(session) if s != "cb"] == messages
    # replay, usage (and bench, which replays) see one conversation: every request
    replies = [r["uuid"] for r in usage_lines(path)]
    result = ml.replay_session(session, "recorded", window=200_000)
    assert [session.get(i).source_id for i in result.timeline["entry_id"]] == replies
    frame = usage_df(session)
    assert sorted(frame["line"]) == [line_of(path, u) for u in replies]


def test_strict_mode_raises_on_a_bridged_boundary() -> None:
    # README: every problem a reader reports is one strict=True raises on; a bridge is a
    # link the file does not hold, made by the reader.
    with pytest.raises(SessionReadError) as caught:
        read_session(HAND / "bridged-boundary.jsonl", strict=True)
    assert caught.value.kind == "bridged"


@needs_corpus
def test_corpus_boundaries_are_bridged_exactly_where_their_logical_parent_is_absent() -> None:
    for path in sorted((CORPUS / "claude-code").rglob("*.jsonl")):
        records = jsonl_records(path)
        uuids = {r.get("uuid") for r in records}
        absent = [
            n
            for n, r in enumerate(records, 1)
            if r.get("subtype") == "compact_boundary" and r.get("logicalParentUuid") not in uuids
        ]
        session = read_session(path)
        assert [p.line for p in session.errors if p.kind == "bridged"] == absent, path
        assert not [p for p in session.errors if p.kind == "dangling-parent"], path


# -- item 3 / issue 29 item 7: Workflow subagents and the files that are not sessions ---------


def test_workflow_agents_are_linked_to_their_workflow_call() -> None:
    main = WORKFLOW / f"{WORKFLOW_SESSION}.jsonl"
    runs = {
        r["toolUseResult"]["runId"]: r["message"]["content"][0]["tool_use_id"]
        for r in jsonl_records(main)
        if isinstance(r.get("toolUseResult"), dict) and "runId" in r["toolUseResult"]
    }
    agents = sorted((WORKFLOW / WORKFLOW_SESSION / "subagents").rglob("agent-*.jsonl"))
    session = read_session(main, strict=True)
    assert [Path(s.source_path or "") for s in session.linked] == agents
    (agent,) = session.linked
    agent_id = jsonl_records(agents[0])[0]["agentId"]
    meta = json.loads(agents[0].with_name(f"agent-{agent_id}.meta.json").read_text())
    assert agent.id == f"{WORKFLOW_SESSION}/agent-{agent_id}"  # not …#agent-X/agent-X
    assert agent.header["parentSessionId"] == WORKFLOW_SESSION
    assert agent.header["subagentKind"] == "workflow"
    assert agent.header["workflowRunId"] == agents[0].parent.name
    assert agent.header["parentToolCallId"] == runs[agents[0].parent.name]
    assert agent.header["agentType"] == meta["agentType"]
    alone = read_session(agents[0], strict=True)
    assert alone.id == agent.id


def test_a_folder_read_finds_one_session_where_there_is_one(tmp_path: Path) -> None:
    # Before: the journal read as pi, the .meta.json and workflows/<runId>.json as OpenHands.
    sessions = list(iter_sessions(WORKFLOW))
    assert [s.id for s in sessions] == [WORKFLOW_SESSION]
    assert [f.agent for f in discover_folder(WORKFLOW)] == ["claude-code"]


@pytest.mark.parametrize(
    "relative",
    [
        f"{WORKFLOW_SESSION}/subagents/workflows/wf_sp01/journal.jsonl",
        f"{WORKFLOW_SESSION}/subagents/workflows/wf_sp01/agent-agsp0001.meta.json",
        f"{WORKFLOW_SESSION}/workflows/wf_sp01.json",
        f"{WORKFLOW_SESSION}/workflows/wf_fail01.json",
    ],
)
def test_the_files_beside_a_workflow_are_not_sessions(relative: str) -> None:
    path = WORKFLOW / relative
    session = read_session(path)
    assert session.entries == ()
    assert [p.kind for p in session.errors] == ["not-a-session"]
    with pytest.raises(SessionReadError):
        read_session(path, strict=True)


def test_a_one_line_meta_file_passed_directly_is_not_a_pi_session() -> None:
    path = HAND / "agent-a1b2c3d.meta.json"
    assert len(path.read_text().splitlines()) == 1
    assert detect_format(path) == "claude-code"
    assert [p.kind for p in read_session(path).errors] == ["not-a-session"]


def test_subagent_linked_through_its_meta_file_and_side_questions_marked() -> None:
    main = HAND / "btw-session" / "b1d0e000-0000-4000-8000-000000000004.jsonl"
    folder = main.with_suffix("") / "subagents"
    meta = json.loads((folder / "agent-aexplore1.meta.json").read_text())
    session = read_session(main, strict=True)
    by_agent = {s.header["agentId"]: s for s in session.linked}
    explore = by_agent["aexplore1"]
    assert explore.header["parentToolCallId"] == meta["toolUseId"]
    assert (explore.header["agentType"], explore.header["agentDescription"]) == (
        meta["agentType"],
        meta["description"],
    )
    aside = next(s for a, s in by_agent.items() if a.startswith("aside_question-"))
    assert aside.header["subagentKind"] == "side-question"


def test_datasets_lists_no_json_document_of_another_kind(tmp_path: Path) -> None:
    """`datasets FOLDER` (discover_folder) once listed other tools' JSON outputs as OpenHands
    sessions (a pretty-printed object) or pi ones (one line): ccusage reports, conformance
    reference outputs, package manifests, judge labels."""
    shutil.copy(REPO_ROOT / "conformance" / "pins" / "ccusage" / "package.json", tmp_path)
    shutil.copy(REPO_ROOT / "tests" / "data" / "probe-judge-labels.json", tmp_path)
    report = {"daily": [{"date": "2026-02-10", "inputTokens": 3}], "totals": {"inputTokens": 3}}
    (tmp_path / "ccusage-daily.json").write_text(json.dumps(report, indent=2))
    (tmp_path / "ccusage-one-line.json").write_text(json.dumps(report))
    (tmp_path / "reference.json").write_text(json.dumps({"schema": "x/1", "session": {"id": 1}}))
    # kept: a real session, and a cut JSON file (its reader says what is wrong with it)
    shutil.copy(HAND / "bridged-boundary.jsonl", tmp_path)
    (tmp_path / "cut.json").write_text('{"history": [')
    found = sorted(f.path.name for f in discover_folder(tmp_path))
    assert found == ["bridged-boundary.jsonl", "cut.json"]


# -- item 7: lines without a uuid ---------------------------------------------------------------


def test_uuid_less_usage_lines_keep_their_usage_and_are_reported() -> None:
    path = HAND / "no-uuid.jsonl"
    records = jsonl_records(path)
    with_usage = [
        (n, r)
        for n, r in enumerate(records, 1)
        if isinstance((r.get("message") or {}).get("usage"), dict)
    ]
    boundary = [n for n, r in enumerate(records, 1) if r.get("subtype") == "compact_boundary"]
    assert all("uuid" not in r for _, r in with_usage) and boundary
    frame = usage_df(path)
    problems = problems_of(frame)
    assert sorted(frame["line"]) == [n for n, _ in with_usage]
    for n, r in with_usage:
        row = frame[frame["line"] == n].iloc[0]
        assert (row["input"], row["output"]) == (
            r["message"]["usage"]["input_tokens"],
            r["message"]["usage"]["output_tokens"],
        )
    missing = sorted(p.line for p in problems if p.kind == "missing-id")
    assert missing == sorted([n for n, _ in with_usage] + boundary)


def test_uuid_less_boundary_is_still_a_compaction() -> None:
    path = HAND / "no-uuid.jsonl"
    records = jsonl_records(path)
    boundary = next(r for r in records if r.get("subtype") == "compact_boundary")
    summary = next(r for r in records if r.get("isCompactSummary"))
    session = read_session(path)
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    assert compaction["tokensBefore"] == boundary["compactMetadata"]["preTokens"]
    assert compaction["summary"] == summary["message"]["content"]
    assert compaction in session.path()


# -- item 8: steering and inline sidechains ------------------------------------------------------


def test_steering_text_appears_in_the_messages_frame_where_it_was_written() -> None:
    path = PEER / "session_id_steering_order.jsonl"
    records = jsonl_records(path)
    steering = next(r for r in records if r["type"] == "queue-operation")
    session = read_session(path, strict=True)
    frame = messages_df(session)
    row = frame[frame["text"] == steering["content"]]
    assert len(row) == 1 and bool(row["on_path"].iloc[0])
    order = [r.get("uuid", "STEER") for r in records]  # the file's order
    assert [e.source_id or "STEER" for e in session.path()] == order


def test_inline_sidechain_is_named_by_the_task_call_of_its_agent() -> None:
    """Claude Code 2.0: the Task call's result line and the sidechain's lines carry the same
    agentId."""
    path = PEER / "sidechain_integrated.jsonl"
    records = jsonl_records(path)
    agent_calls = {
        r["agentId"]: r["message"]["content"][0]["tool_use_id"]
        for r in records
        if not r["isSidechain"] and r.get("agentId") and r["type"] == "user"
    }
    session = read_session(path)
    for root in session.roots:
        raw = next(r for r in records if r["uuid"] == root.source_id)
        if raw["isSidechain"] and raw.get("agentId") in agent_calls:
            assert root["parentToolCallId"] == agent_calls[raw["agentId"]]
    assert any(r.get("parentToolCallId") for r in session.roots)


@needs_corpus
def test_inline_sidechains_of_claude_code_1_are_named_by_their_prompt() -> None:
    """fe5e1c67…: 5 Task calls, 5 sidechain roots whose first prompt is a call's prompt."""
    path = CORPUS / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    records = jsonl_records(path)
    prompts = {
        b["input"]["prompt"]: b["id"]
        for r in records
        if r["type"] == "assistant" and not r.get("isSidechain")
        for b in r["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use" and b["name"] == "Task"
    }

    def text(content: Any) -> str:
        return content if isinstance(content, str) else content[0]["text"]

    expected = {
        r["uuid"]: prompts[text(r["message"]["content"])]
        for r in records
        if r.get("isSidechain") and r.get("parentUuid") is None
    }
    assert len(expected) == 5
    session = read_session(path)
    got = {e.source_id: e["parentToolCallId"] for e in session.roots if e.get("parentToolCallId")}
    assert got == expected


# -- usage: a request recorded twice is billed once (item 3 of issue 32) ------------------------


def test_a_resumed_file_repeating_an_earlier_ones_requests_is_billed_once() -> None:
    files = sorted((HAND / "resumed").glob("*.jsonl"))
    pairs: dict[tuple[str, str], tuple[str, int]] = {}
    for file in files:
        for r in usage_lines(file):
            pairs.setdefault(
                (r["message"]["id"], r["requestId"]),
                (str(file), r["message"]["usage"]["input_tokens"]),
            )
    frame = usage_df(HAND / "resumed")
    assert len(frame) == len(pairs)
    assert int(frame["input"].sum()) == sum(i for _, i in pairs.values())
    duplicates = frame.attrs["duplicate_requests"]
    repeats = sum(len(usage_lines(f)) for f in files) - len(pairs)
    assert [d["reason"] for d in duplicates] == ["repeated-request"] * repeats


def test_a_side_question_replaying_a_parent_reply_bills_only_its_own_answer() -> None:
    main = HAND / "btw-session" / "b1d0e000-0000-4000-8000-000000000004.jsonl"
    files = [main, *sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))]
    lines = [r for f in files for r in usage_lines(f)]
    main_ids = {
        (r["message"]["id"], r["requestId"]) for r in usage_lines(main) if not r["isSidechain"]
    }
    replays = [
        r
        for r in lines
        if r["isSidechain"]
        and any(mid == r["message"]["id"] and rid != r["requestId"] for mid, rid in main_ids)
    ]
    assert len(replays) == 2  # inline (/btw in the main file) and the aside_question file
    frame = usage_df(main)
    assert len(frame) == len(lines) - len(replays)
    billed_read = sum(r["message"]["usage"]["cache_read_input_tokens"] for r in lines) - sum(
        r["message"]["usage"]["cache_read_input_tokens"] for r in replays
    )
    assert int(frame["cache_read"].sum()) == billed_read
    assert (
        sorted(d["reason"] for d in frame.attrs["duplicate_requests"]) == ["sidechain-replay"] * 2
    )

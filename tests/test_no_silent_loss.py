"""Reproducers of issue 13 ("Nothing lost, nothing leaked"), reader side: one test per failure.

Each test builds the input the attack used, by hand, and checks the promise the issue names:
lenient reading never raises and records what it could not map (file, line, field); what the
reader accepts can be written and read back; nothing is dropped without a problem.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from _corpus import CORPUS, HAS_CORPUS, corpus_file, needs_corpus

from musepi_lab.formats._registry import detect_format, read_session, read_sessions
from musepi_lab.session._errors import SessionReadError
from musepi_lab.session._session import Session


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def nested(depth: int) -> str:
    """A JSON list nested `depth` deep (as text: Python's json cannot build it)."""
    return "[" * depth + "]" * depth


PI_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}


def pi_line(entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        **fields,
    }


def write_back(session: Session, tmp_path: Path) -> Session:
    """Write the session as JSONL and read it back strictly through detection."""
    out = session.write(tmp_path / "written.jsonl")
    return read_session(out)


# -- item 1: nesting depth -------------------------------------------------------------------


def test_openhands_array_nested_1000_deep_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    user = {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}
    path.write_text(f"[{dumps(user)},\n{nested(1000)}]")
    session = read_session(path)  # lenient: must not raise RecursionError
    kinds = [p.kind for p in session.errors]
    assert "nested-too-deeply" in kinds, session.errors
    assert [e.get("message", {}).get("role") for e in session.entries][:1] == ["user"]
    problem = next(p for p in session.errors if p.kind == "nested-too-deeply")
    assert problem.line == 2 and problem.path == str(path)
    with pytest.raises(SessionReadError):
        read_session(path, strict=True)


def test_value_nested_deeper_than_writing_allows_is_cut_and_named(tmp_path: Path) -> None:
    # 300 deep loads with orjson (limit 1024) but cannot be written back (limit 255).
    path = tmp_path / "deep.jsonl"
    deep = nested(300)
    path.write_text(
        dumps(PI_HEADER)
        + "\n"
        + dumps(pi_line("a", None, message={"role": "user", "content": "x"}))[:-1]
        + f',"extra":{{"v":{deep}}}}}\n'
    )
    session = read_session(path)
    problem = next(p for p in session.errors if p.kind == "nested-too-deeply")
    assert problem.line == 2 and "extra.v" in problem.message
    assert len(session.entries) == 1
    back = write_back(session, tmp_path)
    assert [e.id for e in back.entries] == ["a"]


def test_deep_value_inside_a_swe_agent_document(tmp_path: Path) -> None:
    path = tmp_path / "deep.traj"
    history = [{"role": "user", "content": "hi"}]
    path.write_text(
        '{"history":' + dumps(history) + ',"trajectory":[],"info":{"x":' + nested(600) + "}}"
    )
    session = read_session(path)
    assert "nested-too-deeply" in [p.kind for p in session.errors]
    assert len(session.entries) == 1
    write_back(session, tmp_path)


# -- item 2: a first line longer than the sniff -----------------------------------------------


def test_long_first_line_is_detected_by_its_content(tmp_path: Path) -> None:
    big = "x" * 100_000
    claude = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "abc",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": big},
    }
    reply = {
        "type": "assistant",
        "uuid": "u2",
        "parentUuid": "u1",
        "sessionId": "abc",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    }
    path = tmp_path / "long.jsonl"
    path.write_text(dumps(claude) + "\n" + dumps(reply) + "\n")
    assert detect_format(path) == "claude-code"
    session = read_session(path)
    assert [e.role for e in session.path()] == ["user", "assistant"]
    assert not session.errors

    codex = {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "c1", "instructions": big},
    }
    path = tmp_path / "rollout.jsonl"
    path.write_text(dumps(codex) + "\n")
    assert detect_format(path) == "codex"


# -- item 10: values the reader accepts must not crash later steps -----------------------------


def test_number_beyond_double_range_is_kept_as_text_and_named(tmp_path: Path) -> None:
    path = tmp_path / "inf.jsonl"
    line = dumps(pi_line("a", None, message={"role": "user", "content": "x"}))
    path.write_text(dumps(PI_HEADER) + "\n" + line[:-1] + ',"score":1e999}\n')
    session = read_session(path)
    problem = next(p for p in session.errors if p.kind == "number-out-of-range")
    assert problem.line == 2 and "1e999" in problem.message
    (entry,) = session.entries
    assert entry.get("score") == "1e999"  # not Infinity, not null
    back = write_back(session, tmp_path)
    assert back.entries[0].get("score") == "1e999"
    for value in orjson.loads(session.to_jsonl().splitlines()[1]).values():
        assert not (isinstance(value, float) and not math.isfinite(value))


def test_usage_count_past_int64_is_a_problem_and_zero(tmp_path: Path) -> None:
    usage = {"input": 2**63, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2**64 - 1}
    msg = {"role": "assistant", "content": [], "usage": usage, "stopReason": "stop"}
    path = tmp_path / "usage.jsonl"
    path.write_text(dumps(PI_HEADER) + "\n" + dumps(pi_line("a", None, message=msg)) + "\n")
    session = read_session(path)
    bad = [p for p in session.errors if p.kind == "bad-usage"]
    assert bad and bad[0].line == 2 and "input" in bad[0].message
    kept = session.entries[0].message["usage"]
    assert kept["input"] == 0 and kept["output"] == 5 and kept["totalTokens"] == 0
    assert session.entries[0].get("sourceUsage") == usage  # the original stays on the entry


def test_list_valued_first_kept_entry_id_is_moved_aside(tmp_path: Path) -> None:
    comp = {
        "type": "compaction",
        "id": "c",
        "parentId": "a",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "summary": "s",
        "firstKeptEntryId": ["a"],
        "tokensBefore": 10,
    }
    path = tmp_path / "fk.jsonl"
    lines = [PI_HEADER, pi_line("a", None, message={"role": "user", "content": "x"}), comp]
    path.write_text("\n".join(dumps(x) for x in lines) + "\n")
    session = read_session(path)
    assert ("bad-first-kept", 3) in [(p.kind, p.line) for p in session.errors]
    entry = session.get("c")
    assert entry is not None and entry.get("firstKeptEntryId") is None
    assert entry.get("sourceFirstKeptEntryId") == ["a"]
    # What the tree layout does with it: a set of kept ids.
    assert {e.get("firstKeptEntryId") for e in session.entries} == {None}


# -- item 12: a folder read leniently keeps the good files -------------------------------------


def test_read_sessions_lenient_keeps_good_files_past_a_bad_one(tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text(
        dumps(PI_HEADER)
        + "\n"
        + dumps(pi_line("a", None, message={"role": "user", "content": "x"}))
    )
    bad = tmp_path / "b.json"
    bad.write_text(f"[{nested(5000)}]")  # once a RecursionError out of the folder read
    gone = tmp_path / "c.jsonl"
    sessions = read_sessions([tmp_path, gone])
    by_source = {s.source_path: s for s in sessions}
    assert len(by_source[str(good)].entries) == 1
    assert by_source[str(bad)].errors
    assert [p.kind for p in by_source[str(gone)].errors] == ["not-found"]
    with pytest.raises(SessionReadError):
        read_sessions([tmp_path, gone], strict=True)


# -- item 11: OpenHands resolver output, older serialization (no `source`) --------------------


def _resolver_instance(number: int) -> dict[str, Any]:
    """One resolver output line as `dataclasses.asdict(event)` wrote its history: flat
    events, no `id`, `timestamp`, `source` or `args`."""
    history = [
        {
            "content": f"Fix issue {number}",
            "images_urls": None,
            "wait_for_response": False,
            "action": "message",
            "security_risk": None,
        },
        {
            "command": "ls",
            "thought": "Look around.",
            "blocking": False,
            "keep_prompt": True,
            "hidden": False,
            "action": "run",
            "is_confirmed": "confirmed",
            "security_risk": None,
        },
        {
            "content": "a.py\nb.py",
            "command_id": -1,
            "command": "ls",
            "exit_code": 0,
            "hidden": False,
            "interpreter_details": "",
            "observation": "run",
        },
        {
            "path": "/workspace/a.py",
            "start": 0,
            "end": -1,
            "thought": "",
            "action": "read",
            "security_risk": None,
        },
        {"content": "print(1)", "path": "/workspace/a.py", "observation": "read"},
        {
            "content": "Done?",
            "images_urls": None,
            "wait_for_response": True,
            "action": "message",
            "security_risk": None,
        },
        {
            "content": "Please continue.",
            "images_urls": None,
            "wait_for_response": False,
            "action": "message",
            "security_risk": None,
        },
        {"outputs": {}, "thought": "All fixed.", "action": "finish"},
    ]
    return {
        "issue": {"owner": "acme", "repo": "widgets", "number": number, "title": "t", "body": "b"},
        "issue_type": "issue",
        "instruction": f"Fix issue {number}",
        "base_commit": "abc",
        "git_patch": "",
        "history": history,
        "metrics": None,
        "success": True,
        "comment_success": None,
        "result_explanation": "",
        "error": None,
    }


def test_resolver_output_without_source_keeps_its_messages(tmp_path: Path) -> None:
    from musepi_lab.context import build_session_context
    from musepi_lab.formats._registry import iter_sessions

    path = tmp_path / "output.jsonl"
    path.write_text(dumps(_resolver_instance(7)) + "\n" + dumps(_resolver_instance(8)) + "\n")
    assert detect_format(path) == "openhands"
    sessions = list(iter_sessions(path))
    assert len(sessions) == 2
    assert len({s.id for s in sessions}) == 2  # the id joins need distinct ids
    first = sessions[0]
    roles = [e.role for e in first.path() if e.type == "message"]
    # Counted by hand from the history above: 2 user messages (the task, "Please
    # continue."), the agent's "Done?" and finish, 2 calls, 2 results.
    assert roles == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    results = [e.message for e in first.entries if e.role == "toolResult"]
    assert [r["toolName"] for r in results] == ["run", "read"]
    assert len(build_session_context(first).messages) == 8
    # The inference is said, once per session, naming the line.
    inferred = [p for p in first.errors if p.kind == "inferred-source"]
    assert len(inferred) == 1 and inferred[0].line == 1


# -- SWE-agent: the final observation lives in `trajectory` only -------------------------------


def test_swe_agent_final_submit_observation_is_the_last_tool_result(tmp_path: Path) -> None:
    history = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix it."},
        {
            "role": "assistant",
            "content": "Look.\n```\nls\n```",
            "thought": "Look.",
            "action": "ls\n",
        },
        {"role": "user", "content": "a.py"},
        {
            "role": "assistant",
            "content": "Done.\n```\nsubmit\n```",
            "thought": "Done.",
            "action": "submit\n",
        },
    ]
    trajectory = [
        {
            "action": "ls\n",
            "observation": "a.py",
            "response": "",
            "thought": "Look.",
            "state": "{}",
        },
        {
            "action": "submit\n",
            "observation": "diff --git a/a.py b/a.py",
            "response": "",
            "thought": "Done.",
            "state": "{}",
        },
    ]
    path = tmp_path / "t.traj"
    path.write_text(dumps({"history": history, "trajectory": trajectory, "info": {}}))
    session = read_session(path)
    results = [e for e in session.path() if e.role == "toolResult"]
    assert len(results) == 2
    last = results[-1]
    assert last.message["content"][0]["text"] == "diff --git a/a.py b/a.py"
    assert last.message["toolName"] == "submit"
    assert last.get("sourceId") == "trajectory:1"
    assert session.path()[-1] is last


# -- Claude Code structure ---------------------------------------------------------------------


def _cc(kind: str, uuid: str, parent: str | None, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "S",
        "isSidechain": False,
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
        **extra,
    }


def _cc_user(uuid: str, parent: str | None, n: int, text: str) -> dict[str, Any]:
    return _cc("user", uuid, parent, n, message={"role": "user", "content": text})


def _cc_reply(uuid: str, parent: str | None, n: int, mid: str, text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return _cc(
        "assistant", uuid, parent, n, message={"id": mid, "role": "assistant", "content": content}
    )


def _cc_progress(uuid: str, parent: str | None, n: int) -> dict[str, Any]:
    return _cc("progress", uuid, parent, n, data={"type": "hook_progress", "hookEvent": "Stop"})


def _boundary(uuid: str, logical: str, n: int) -> dict[str, Any]:
    return _cc(
        "system",
        uuid,
        None,
        n,
        subtype="compact_boundary",
        logicalParentUuid=logical,
        compactMetadata={"trigger": "auto", "preTokens": 100},
    )


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(dumps(r) for r in rows) + "\n")
    return path


def test_compaction_bridged_through_a_logical_parent_written_later(tmp_path: Path) -> None:
    # Claude Code writes lines as they settle: here the boundary comes before the line its
    # logicalParentUuid names.
    rows = [
        _cc_user("u1", None, 1, "hi"),
        _boundary("b1", "a1", 4),
        _cc(
            "user",
            "s1",
            "b1",
            5,
            isCompactSummary=True,
            message={"role": "user", "content": "summary"},
        ),
        _cc_reply("a1", "u1", 2, "m1", "hello"),
        _cc_user("u2", "s1", 6, "more"),
        _cc_reply("a2", "u2", 7, "m2", "ok"),
    ]
    session = read_session(_write_lines(tmp_path / "S.jsonl", rows))
    assert [e.id for e in session.path()] == ["u1", "a1", "b1", "u2", "a2"]
    assert len(session.roots) == 1
    assert not session.errors


def test_unresolvable_logical_parent_is_named_as_such(tmp_path: Path) -> None:
    # Issue 27 item 1: bridged to the last main-chain entry before it, never a second root.
    rows = [_cc_user("u1", None, 1, "hi"), _boundary("b1", "gone", 2), _cc_user("u2", "b1", 3, "x")]
    session = read_session(_write_lines(tmp_path / "S.jsonl", rows))
    (problem,) = session.errors
    assert problem.kind == "bridged" and problem.line == 2
    assert "logicalParentUuid 'gone' names no line" in problem.message
    assert [e.id for e in session.path()] == ["u1", "b1", "u2"]
    assert len(session.roots) == 1


def test_progress_lines_are_metadata_on_the_path_not_branches(tmp_path: Path) -> None:
    rows = [
        _cc_progress("p0", None, 0),
        _cc_user("u1", "p0", 1, "hi"),
        _cc_progress("p1", "u1", 2),
        _cc_progress("p2", "u1", 2),
        _cc_reply("a1", "p1", 3, "m1", "hello"),
        _cc_progress("p3", "a1", 4),
        _cc_user("u2", "a1", 5, "more"),
        _cc_progress("p4", "u2", 6),
        _cc_reply("a2", "u2", 7, "m2", "ok"),
        _cc_progress("p5", "a2", 8),
    ]
    session = read_session(_write_lines(tmp_path / "S.jsonl", rows))
    assert not session.errors
    assert [e.id for e in session.entries] == ["u1", "a1", "u2", "a2"]
    assert session.branches == 1
    assert [e.id for e in session.path()] == ["u1", "a1", "u2", "a2"]
    # Every progress line is kept, verbatim, on the entry it hangs from (or the header).
    on = {e.id: [p["record"]["uuid"] for p in e.get("progress", ())] for e in session.entries}
    assert on == {"u1": ["p1", "p2"], "a1": ["p3"], "u2": ["p4"], "a2": ["p5"]}
    assert [r["record"]["uuid"] for r in session.header["sourceRecords"]] == ["p0"]
    back = write_back(session, tmp_path)
    assert [e.get("progress") for e in back.entries] == [e.get("progress") for e in session.entries]


def test_branches_counts_real_forks_only(tmp_path: Path) -> None:
    rows = [
        _cc_user("u1", None, 1, "hi"),
        _cc_reply("a1", "u1", 2, "m1", "first answer"),
        _cc_user("u2", "u1", 3, "hi again (edited)"),  # a rewind: a real second branch
        _cc("system", "d1", "a1", 4, subtype="turn_duration", durationMs=5),
        _cc_reply("a2", "u2", 5, "m2", "second answer"),
        _cc("system", "d2", "a2", 6, subtype="turn_duration", durationMs=5),
    ]
    session = read_session(_write_lines(tmp_path / "S.jsonl", rows))
    assert len(session.leaves) == 2  # d1 and d2: tips of the tree
    assert session.branches == 2  # a1 and a2: the two conversations


def test_subagent_file_read_alone_has_its_own_id(tmp_path: Path) -> None:
    from musepi_lab.cli import main

    side = {"isSidechain": True}
    rows = [
        {**_cc_user("x1", None, 1, "look around"), **side},
        {**_cc_reply("x2", "x1", 2, "m1", "found"), **side},
    ]
    folder = tmp_path / "S" / "subagents"
    folder.mkdir(parents=True)
    alone = read_session(_write_lines(folder / "agent-a1b2.jsonl", rows))
    assert alone.id != "S" and alone.id.startswith("S/")
    with_id = [{**r, "agentId": "a1b2c3"} for r in rows]
    named = read_session(_write_lines(folder / "agent-a1b2c3.jsonl", with_id))
    assert named.id == "S/agent-a1b2c3"
    long = [{**r, "sessionId": "258c7280-ae70-4798-800f-63464d01a85d"} for r in with_id]
    path = _write_lines(folder / "agent-long.jsonl", long)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["inspect", str(path)])
    assert "258c7280-ae70-4798-800f-63464d01a85d/agent-a1b2c3" in out.getvalue()


@needs_corpus
@pytest.mark.parametrize(
    "name", sorted(p.name for p in (CORPUS / "claude-code").glob("*.jsonl")) if HAS_CORPUS else []
)
def test_corpus_claude_code_branches_are_the_main_thread_and_its_sidechains(name: str) -> None:
    # Counted from the raw lines: the main thread is one conversation, and each inline
    # sidechain (Claude Code 1.x: isSidechain with a null parentUuid) is one more.
    path = corpus_file("claude-code", name)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    sidechain_roots = [
        r for r in rows if r.get("isSidechain") is True and "uuid" in r and not r["parentUuid"]
    ]
    session = read_session(path)
    assert session.branches == 1 + len(sidechain_roots)


def test_values_the_reader_accepts_do_not_crash_later_steps(tmp_path: Path) -> None:
    # The item 10 end to end: usage >= 2**63 broke messages_df, 1e400 broke
    # replay, a list-valued firstKeptEntryId broke the tree layout.
    from musepi_lab.analysis import compactions_df, entries_df, messages_df, sessions_df
    from musepi_lab.plot._layout import tree_layout
    from musepi_lab.replay import replay_session

    lines = [dumps(PI_HEADER)]
    parent = None
    for i in range(30):
        if i % 2 == 0:
            text = f"hello {i} " + "x" * 400
            message = '{"role":"user","content":"' + text + '","timestamp":1e400}'
        else:
            message = (
                '{"role":"assistant","content":[{"type":"text","text":"ok ' + "y" * 400 + '"}],'
                '"usage":{"input":1e400,"output":18446744073709551615,"cacheRead":0,'
                '"cacheWrite":0,"totalTokens":9223372036854775808},"stopReason":"stop",'
                '"timestamp":1e999}'
            )
        parent_text = "null" if parent is None else f'"{parent}"'
        lines.append(
            f'{{"type":"message","id":"e{i}","parentId":{parent_text},'
            f'"timestamp":"2026-01-01T00:00:{i:02d}.000Z","message":{message}}}'
        )
        parent = f"e{i}"
    lines.append(
        '{"type":"compaction","id":"c","parentId":"e29","timestamp":"2026-01-01T00:01:00.000Z",'
        '"summary":"s","firstKeptEntryId":["e3"],"tokensBefore":1e400}'
    )
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = read_session(path)
    assert {p.kind for p in session.errors} == {
        "bad-usage",
        "bad-first-kept",
        "number-out-of-range",
    }
    assert len(messages_df([session])) == 31  # 30 messages, the compaction summary
    assert len(entries_df([session])) == 31
    assert len(compactions_df([session])) == 1
    assert sessions_df([session])["branches"].tolist() == [1]
    tree_layout(session)
    replay_session(session, "truncate", window=2000)
    assert len(write_back(session, tmp_path).entries) == 31


def test_another_format_read_as_pi_says_so(tmp_path: Path) -> None:
    # Forced (or once misdetected): the problems must say "wrong format", not only list
    # every line as a record without an id.
    rows = [_cc_user("u1", None, 1, "hi"), _cc_reply("a1", "u1", 2, "m1", "hello")]
    path = _write_lines(tmp_path / "S.jsonl", rows)
    session = read_session(path, format="pi")
    wrong = [p for p in session.errors if p.kind == "wrong-format"]
    assert len(wrong) == 1 and "claude-code" in wrong[0].message
    assert wrong[0].line is None


def test_folder_read_records_a_reader_crash_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever a reader raises on one file (a bug not yet found), a lenient folder read
    # keeps the other files and says which file failed and how.
    from musepi_lab.formats import _swe_agent

    good = tmp_path / "a.jsonl"
    good.write_text(
        dumps(PI_HEADER)
        + "\n"
        + dumps(pi_line("a", None, message={"role": "user", "content": "x"}))
    )
    bad = tmp_path / "b.traj"
    bad.write_text(dumps({"history": [], "trajectory": []}))

    def broken(*_: Any, **__: Any) -> Session:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(_swe_agent, "read_swe_agent", broken)
    sessions = {s.source_path: s for s in read_sessions(tmp_path)}
    assert len(sessions[str(good)].entries) == 1
    (problem,) = sessions[str(bad)].errors
    assert problem.kind == "reader-error" and "RecursionError" in problem.message
    with pytest.raises(RecursionError):
        read_sessions(tmp_path, strict=True)


def test_line_under_a_progress_line_whose_parent_comes_later_is_linked(tmp_path: Path) -> None:
    rows = [
        _cc_user("u1", None, 1, "hi"),
        _cc_progress("p1", "a1", 3),  # written before the reply it hangs from
        _cc_reply("a1", "u1", 2, "m1", "hello"),
        _cc_user("u2", "p1", 4, "more"),
    ]
    session = read_session(_write_lines(tmp_path / "S.jsonl", rows))
    assert [e.id for e in session.path()] == ["u1", "a1", "u2"]
    assert not session.errors

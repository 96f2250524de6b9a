"""OpenHands importer: corpus files against counts taken from the raw JSON, bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, corpus_file, needs_corpus

from musepi_lab.formats._openhands import iter_openhands, read_openhands
from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.formats._registry import detect_format, iter_sessions, read_session
from musepi_lab.session._errors import SessionReadError

EVAL = "multi_swe_bench_examples_output.jsonl"
GUI = "runtime_trajs_basic_gui_mode.json"


def raw_instances() -> list[dict[str, Any]]:
    text = corpus_file("openhands", EVAL).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def raw_gui() -> list[dict[str, Any]]:
    return json.loads(corpus_file("openhands", GUI).read_text(encoding="utf-8"))


def blocks(session, role: str, kind: str) -> list[dict[str, Any]]:
    return [
        b
        for e in session.entries
        if e.role == role
        for b in e.message["content"]
        if b["type"] == kind
    ]


def results(session) -> list[dict[str, Any]]:
    return [e.message for e in session.entries if e.role == "toolResult"]


def tool_actions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agent actions the model issued as tool calls and that expect an observation."""
    return [
        e
        for e in events
        if "action" in e and e.get("tool_call_metadata") and e["action"] != "finish"
    ]


# -- evaluation output ----------------------------------------------------------------------
@needs_corpus
def test_eval_output_yields_one_session_per_instance() -> None:
    instances = raw_instances()
    sessions = list(iter_openhands(corpus_file("openhands", EVAL), strict=True))
    assert len(sessions) == len(instances) == 3  # PROVENANCE: 3 instances
    assert [s.id for s in sessions] == [i["instance_id"] for i in instances]
    for session in sessions:
        assert session.errors == ()
        assert session.source_format == "openhands"
        assert session.header["sourceFormat"] == "openhands"


@needs_corpus
def test_eval_instances_keep_every_event_in_order_with_their_line() -> None:
    instances = raw_instances()
    sessions = list(iter_openhands(corpus_file("openhands", EVAL)))
    # PROVENANCE: history event streams of 49, 70 and 103 events.
    assert [len(i["history"]) for i in instances] == [49, 70, 103]
    for line, (instance, session) in enumerate(zip(instances, sessions, strict=True), start=1):
        assert [e.source_id for e in session.entries] == [str(e["id"]) for e in instance["history"]]
        assert {e.line for e in session.entries} == {line}
        assert session.entries[0].parent_id is None
        for prev, entry in zip(session.entries, session.entries[1:], strict=False):
            assert entry.parent_id == prev.id


@needs_corpus
def test_eval_tool_actions_and_observations_match_the_raw_counts() -> None:
    sessions = list(iter_openhands(corpus_file("openhands", EVAL)))
    run_read_edit = []
    for instance, session in zip(raw_instances(), sessions, strict=True):
        events = instance["history"]
        actions = tool_actions(events)
        action_ids = {e["id"] for e in actions}
        answers = [e for e in events if "observation" in e and e.get("cause") in action_ids]
        calls = blocks(session, "assistant", "toolCall")
        assert [c["name"] for c in calls] == [a["action"] for a in actions]
        assert [c["id"] for c in calls] == [
            a["tool_call_metadata"]["tool_call_id"] for a in actions
        ]
        assert len(results(session)) == len(answers)
        assert [r["toolCallId"] for r in results(session)] == [
            a["tool_call_metadata"]["tool_call_id"] for a in answers
        ]
        assert [r["content"][0]["text"] for r in results(session)] == [
            a["content"] for a in answers
        ]
        counts = Counter(c["name"] for c in calls)
        run_read_edit.append(counts["run"] + counts["read"] + counts["edit"])
    # PROVENANCE: 21, 32 and 48 tool actions (run, read, edit).
    assert run_read_edit == [21, 32, 48]


@needs_corpus
def test_eval_call_arguments_are_what_the_model_wrote() -> None:
    instance = raw_instances()[1]
    session = list(iter_openhands(corpus_file("openhands", EVAL)))[1]
    written = []
    for action in tool_actions(instance["history"]):
        meta = action["tool_call_metadata"]
        (call,) = [
            c
            for c in meta["model_response"]["choices"][0]["message"]["tool_calls"]
            if c["id"] == meta["tool_call_id"]
        ]
        written.append(json.loads(call["function"]["arguments"]))
    assert [c["arguments"] for c in blocks(session, "assistant", "toolCall")] == written
    edit_paths = {a["args"]["path"] for a in instance["history"] if a.get("action") == "edit"}
    called_paths = {
        c["arguments"]["path"]
        for c in blocks(session, "assistant", "toolCall")
        if c["name"] == "edit"
    }
    assert called_paths == edit_paths


@needs_corpus
def test_eval_usage_comes_from_each_model_response() -> None:
    instance = raw_instances()[0]
    session = next(iter_openhands(corpus_file("openhands", EVAL)))
    by_source = {e.source_id: e for e in session.entries}
    for action in tool_actions(instance["history"]):
        raw_usage = action["tool_call_metadata"]["model_response"]["usage"]
        msg = by_source[str(action["id"])].message
        assert msg["usage"]["input"] + msg["usage"]["cacheRead"] == raw_usage["prompt_tokens"]
        assert msg["usage"]["output"] == raw_usage["completion_tokens"]
        assert msg["stopReason"] == "toolUse"


@needs_corpus
def test_eval_header_carries_metadata_and_metrics() -> None:
    for instance, session in zip(
        raw_instances(), iter_openhands(corpus_file("openhands", EVAL)), strict=True
    ):
        header = session.header
        assert header["instanceId"] == instance["instance_id"]
        assert header["model"] == instance["metadata"]["llm_config"]["model"]
        metrics = instance["metrics"]
        assert header["metrics"]["accumulated_cost"] == metrics["accumulated_cost"]
        assert header["metrics"]["accumulated_token_usage"] == metrics["accumulated_token_usage"]
        # Naive event timestamps are UTC, written the pi way (ms and Z).
        first = instance["history"][0]["timestamp"]
        assert header["timestamp"] == first[:23] + "Z"


@needs_corpus
def test_eval_environment_events_are_custom_entries_out_of_context() -> None:
    for instance, session in zip(
        raw_instances(), iter_openhands(corpus_file("openhands", EVAL)), strict=True
    ):
        by_source = {e.source_id: e for e in session.entries}
        env = [
            e
            for e in instance["history"]
            if e.get("action") in ("system", "recall") or e.get("observation") == "recall"
        ]
        assert env
        for event in env:
            entry = by_source[str(event["id"])]
            kind = event.get("action") or event.get("observation")
            assert entry.type == "custom"
            assert entry.get("customType") == f"openhands:{kind}"
            assert entry.get("data") == event


@needs_corpus
def test_eval_unanswered_error_observation_is_fed_back_as_user_text() -> None:
    instance = raw_instances()[1]
    session = list(iter_openhands(corpus_file("openhands", EVAL)))[1]
    errors = [
        e for e in instance["history"] if e.get("observation") == "error" and "cause" not in e
    ]
    assert len(errors) == 1
    entry = {e.source_id: e for e in session.entries}[str(errors[0]["id"])]
    assert entry.role == "user"
    assert entry.message["content"][0]["text"] == errors[0]["content"]


@needs_corpus
def test_read_openhands_gives_the_first_instance_and_says_there_are_more() -> None:
    path = corpus_file("openhands", EVAL)
    first = raw_instances()[0]
    session = read_openhands(path)
    assert session.id == first["instance_id"]
    assert len(session.entries) == len(first["history"])
    (problem,) = session.errors
    assert problem.kind == "multiple-sessions"
    assert "3" in problem.message and "iter_sessions" in problem.message
    with pytest.raises(SessionReadError) as info:
        read_openhands(path, strict=True)
    assert info.value.kind == "multiple-sessions"


# -- saved event stream ---------------------------------------------------------------------
@needs_corpus
def test_gui_event_stream_loads_with_every_event() -> None:
    events = raw_gui()
    session = read_openhands(corpus_file("openhands", GUI), strict=True)
    assert len(events) == 18  # PROVENANCE: 18 events
    assert session.errors == ()
    assert session.id == Path(GUI).stem
    assert [e.source_id for e in session.entries] == [str(e["id"]) for e in events]


@needs_corpus
def test_gui_run_and_edit_events_map_to_calls_and_results() -> None:
    events = raw_gui()
    session = read_openhands(corpus_file("openhands", GUI))
    calls = Counter(c["name"] for c in blocks(session, "assistant", "toolCall"))
    answers = Counter(r["toolName"] for r in results(session))
    raw_counts = Counter(e.get("action") or e.get("observation") for e in events)
    # PROVENANCE: 4 run and 4 edit events (actions and observations together).
    assert raw_counts["run"] == raw_counts["edit"] == 4
    assert calls["run"] + answers["run"] == raw_counts["run"]
    assert calls["edit"] + answers["edit"] == raw_counts["edit"]
    # The edit's file text is only in the model response (the event's args hold "").
    for event in (e for e in events if e.get("action") == "edit"):
        meta = event["tool_call_metadata"]
        (raw_call,) = meta["model_response"]["choices"][0]["message"]["tool_calls"]
        entry = {e.source_id: e for e in session.entries}[str(event["id"])]
        (call,) = [b for b in entry.message["content"] if b["type"] == "toolCall"]
        assert call["arguments"] == json.loads(raw_call["function"]["arguments"])
        assert call["arguments"]["file_text"]


@needs_corpus
def test_gui_environment_events_are_custom() -> None:
    events = raw_gui()
    session = read_openhands(corpus_file("openhands", GUI))
    env_kinds = {"agent_state_changed", "change_agent_state", "null"}
    env = [e for e in events if (e.get("action") or e.get("observation")) in env_kinds]
    customs = [e for e in session.entries if e.type == "custom"]
    assert [c.get("data") for c in customs] == env
    assert [c.get("customType") for c in customs] == [
        "openhands:" + (e.get("action") or e.get("observation")) for e in env
    ]
    user = [e for e in events if e.get("source") == "user" and e.get("action") == "message"]
    assert [e.message["content"][0]["text"] for e in session.entries if e.role == "user"] == [
        u["args"]["content"] for u in user
    ]


@needs_corpus
def test_gui_entries_carry_the_line_their_event_starts_on() -> None:
    path = corpus_file("openhands", GUI)
    lines = path.read_text(encoding="utf-8").splitlines()
    session = read_openhands(path)
    for entry in session.entries:
        assert lines[entry.line - 1].strip() == "{"
        assert lines[entry.line].strip() == f'"id": {entry.source_id},'


# -- detection and round trip ---------------------------------------------------------------
@needs_corpus
def test_event_stream_detection_through_read_session() -> None:
    path = corpus_file("openhands", GUI)
    assert detect_format(path) == "openhands"
    session = read_session(path)
    assert session.source_format == "openhands"
    assert len(session.entries) == len(raw_gui())


@needs_corpus
def test_eval_output_read_through_read_session_with_format_given() -> None:
    path = corpus_file("openhands", EVAL)
    session = read_session(path, format="openhands")
    assert session.id == raw_instances()[0]["instance_id"]


@needs_corpus
def test_eval_output_is_detected_and_iterated() -> None:
    assert detect_format(corpus_file("openhands", EVAL)) == "openhands"
    sessions = list(iter_sessions(CORPUS / "openhands"))
    ids = {i["instance_id"] for i in raw_instances()} | {Path(GUI).stem}
    assert {s.id for s in sessions} == ids


@needs_corpus
@pytest.mark.parametrize("name", [EVAL, GUI])
def test_round_trip_through_pi_jsonl(name: str, tmp_path: Path) -> None:
    for k, session in enumerate(iter_openhands(corpus_file("openhands", name))):
        out = session.write(tmp_path / f"{k}.jsonl")
        again = read_pi_jsonl(out, strict=True)
        assert [dict(e.record) for e in again.entries] == [dict(e.record) for e in session.entries]
        assert [e.source_id for e in again.entries] == [e.source_id for e in session.entries]
        assert again.header["sourceFormat"] == "openhands"
        assert again.id == session.id


# -- synthetic input ------------------------------------------------------------------------
def event(eid: int, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": f"2025-01-01T00:00:{eid:02d}.000000", **fields}


def run_action(eid: int, call_id: str | None = None, response: str = "r") -> dict[str, Any]:
    fields: dict[str, Any] = {
        "source": "agent",
        "action": "run",
        "args": {"command": f"echo {eid}", "thought": f"step {eid}"},
    }
    if call_id is not None:
        fields["tool_call_metadata"] = {
            "tool_call_id": call_id,
            "model_response": {"id": response, "model": "m", "usage": {"prompt_tokens": 10}},
        }
    return event(eid, **fields)


def run_obs(eid: int, cause: int, content: str = "out", **extra: Any) -> dict[str, Any]:
    return event(eid, source="agent", observation="run", cause=cause, content=content, **extra)


def user_msg(eid: int, text: str = "task") -> dict[str, Any]:
    return event(eid, source="user", action="message", args={"content": text})


STREAM = [user_msg(0), run_action(1), run_obs(2, 1), run_action(3), run_obs(4, 3, success=False)]


def write_array(tmp_path: Path, events: list[Any], name: str = "events.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events, indent=2), encoding="utf-8")
    return path


def test_calls_without_tool_metadata_pair_by_cause(tmp_path: Path) -> None:
    session = read_openhands(write_array(tmp_path, STREAM), strict=True)
    roles = [e.role for e in session.entries]
    assert roles == ["user", "assistant", "toolResult", "assistant", "toolResult"]
    calls = blocks(session, "assistant", "toolCall")
    assert [c["id"] for c in calls] == ["event_1", "event_3"]
    assert calls[0]["arguments"] == {"command": "echo 1"}  # the thought became the text
    assert blocks(session, "assistant", "text")[0]["text"] == "step 1"
    assert [(r["toolCallId"], r["isError"]) for r in results(session)] == [
        ("event_1", False),
        ("event_3", True),
    ]


def test_truncated_array_keeps_the_complete_events(tmp_path: Path) -> None:
    text = json.dumps(STREAM, indent=2)
    cut = text[: text.index('"id": 3')]  # stops inside the fourth event
    path = tmp_path / "cut.json"
    path.write_text(cut, encoding="utf-8")
    session = read_openhands(path)
    assert [e.source_id for e in session.entries] == ["0", "1", "2"]
    (problem,) = session.errors
    assert problem.kind == "truncated-json"
    assert problem.line == cut.count("\n") + 1
    with pytest.raises(SessionReadError) as info:
        read_openhands(path, strict=True)
    assert (info.value.kind, info.value.line) == ("truncated-json", cut.count("\n") + 1)


def test_truncated_single_document_strict_raises_and_lenient_is_empty(tmp_path: Path) -> None:
    text = json.dumps({"instance_id": "x", "history": STREAM}, indent=2)
    path = tmp_path / "one.json"
    path.write_text(text[:-20], encoding="utf-8")
    with pytest.raises(SessionReadError) as info:
        read_openhands(path, strict=True)
    assert info.value.line == text[:-20].count("\n") + 1
    session = read_openhands(path)
    assert session.entries == ()
    assert [p.kind for p in session.errors] == ["truncated-json"]


def test_event_that_is_not_an_object_is_recorded_and_the_rest_kept(tmp_path: Path) -> None:
    events = [STREAM[0], "junk", STREAM[1], STREAM[2]]
    path = write_array(tmp_path, events)
    session = read_openhands(path)
    (problem,) = session.errors
    assert problem.kind == "not-an-object"
    junk_line = path.read_text().splitlines().index('  "junk",') + 1
    assert problem.line == junk_line
    assert [e.source_id for e in session.entries] == ["0", "1", "2"]
    with pytest.raises(SessionReadError):
        read_openhands(path, strict=True)


def test_eval_jsonl_with_bad_lines(tmp_path: Path) -> None:
    good = {"instance_id": "a", "history": STREAM}
    lines = [json.dumps(good), "[1, 2]", json.dumps({"instance_id": "b", "history": STREAM})]
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(lines) + '\n{"instance_id": "c", "hist', encoding="utf-8")
    sessions = list(iter_openhands(path))
    assert [s.id for s in sessions] == ["a", "b"]
    # In file order, though the cut-short last line was found first (while parsing).
    assert [(p.kind, p.line) for p in sessions[0].errors] == [
        ("not-an-object", 2),
        ("truncated-line", 4),
    ]
    assert sessions[1].errors == ()
    assert {e.line for e in sessions[1].entries} == {3}
    with pytest.raises(SessionReadError) as info:
        list(iter_openhands(path, strict=True))
    assert (info.value.kind, info.value.line) == ("not-an-object", 2)


def test_events_as_jsonl_are_one_session(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in STREAM) + "\n", encoding="utf-8")
    (session,) = list(iter_openhands(path, strict=True))
    assert [e.line for e in session.entries] == [1, 2, 3, 4, 5]
    assert session.id == "events"


def test_one_usage_per_model_response_and_reused_call_ids(tmp_path: Path) -> None:
    events = [
        user_msg(0),
        run_action(1, "c1", response="resp-A"),
        run_obs(2, 1),
        run_action(3, "c1", response="resp-A"),
        run_obs(4, 3),
    ]
    session = read_openhands(write_array(tmp_path, events), strict=True)
    usages = [e.message["usage"]["input"] for e in session.entries if e.role == "assistant"]
    assert usages == [10, 0]
    assert [c["id"] for c in blocks(session, "assistant", "toolCall")] == ["c1", "c1-2"]
    assert [r["toolCallId"] for r in results(session)] == ["c1", "c1-2"]


def test_observation_of_nothing_and_odd_events_are_custom(tmp_path: Path) -> None:
    events = [
        user_msg(0),
        run_obs(1, 99),  # answers no action
        event(2, source="agent", note="neither action nor observation"),
        event(3, source="agent", action="finish", args={"final_thought": "done", "thought": "ok"}),
    ]
    session = read_openhands(write_array(tmp_path, events))
    assert [e.type for e in session.entries] == ["message", "custom", "custom", "message"]
    assert [p.kind for p in session.errors] == ["unknown-event"]
    texts = [b["text"] for b in session.entries[3].message["content"]]
    assert texts == ["ok", "done"]


@pytest.mark.parametrize(
    ("content", "kind"),
    [(b"", "empty-file"), (b"\x00\x00", "binary-file"), (b'"just a string"', "not-an-object")],
)
def test_unusable_files(tmp_path: Path, content: bytes, kind: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    (session,) = list(iter_openhands(path))
    assert session.entries == ()
    assert [p.kind for p in session.errors] == [kind]
    with pytest.raises(SessionReadError):
        read_openhands(path, strict=True)


def test_input_file_is_not_modified(tmp_path: Path) -> None:
    path = write_array(tmp_path, STREAM)
    before = path.read_bytes()
    session = read_openhands(path)
    session.write(tmp_path / "copy.jsonl")
    assert path.read_bytes() == before


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_byte_order_mark_is_skipped(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bom{suffix}"
    body = (
        json.dumps(STREAM)
        if suffix == ".json"
        else json.dumps({"instance_id": "i", "history": STREAM})
    )
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    session = read_openhands(path, strict=True)
    assert [e.source_id for e in session.entries] == [str(e["id"]) for e in STREAM]

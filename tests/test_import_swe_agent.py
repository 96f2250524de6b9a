"""SWE-agent `.traj` importer: corpus files against counts taken from the raw JSON, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, corpus_file, needs_corpus

from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.formats._registry import detect_format, iter_sessions, read_session
from musepi_lab.formats._swe_agent import read_swe_agent
from musepi_lab.session._errors import SessionReadError

OLD_FORMAT = ("gpt4__pydicom__pydicom-1458.traj", "ctf_crypto_katy.traj")
NEW_FORMAT = (
    "replay_function_calling_replace_from_source__marshmallow-code__marshmallow-1867.traj",
)
ALL_FILES = OLD_FORMAT + NEW_FORMAT


def raw(name: str) -> dict[str, Any]:
    return json.loads(corpus_file("swe-agent", name).read_text(encoding="utf-8"))


def load(name: str, **kwargs: Any):
    return read_swe_agent(corpus_file("swe-agent", name), **kwargs)


def messages(session, role: str) -> list[dict[str, Any]]:
    return [e.message for e in session.entries if e.role == role]


def call_blocks(session) -> list[dict[str, Any]]:
    return [
        b for m in messages(session, "assistant") for b in m["content"] if b["type"] == "toolCall"
    ]


def observation_indexes(history: list[dict[str, Any]]) -> set[int]:
    """Old format: user items right after an assistant item that issued a text command."""
    return {
        i
        for i in range(1, len(history))
        if history[i]["role"] == "user"
        and history[i - 1]["role"] == "assistant"
        and "tool_calls" not in history[i - 1]
        and history[i - 1].get("action", "").strip()
    }


def final_observation(doc: dict[str, Any]) -> list[str]:
    """The last trajectory step's output when `history` ends on its action (old format:
    the `submit` diff is never appended to `history`), as a list of zero or one texts."""
    history, steps = doc["history"], doc.get("trajectory") or []
    last = history[-1] if history else {}
    if not steps or last.get("role") != "assistant" or not last.get("action", "").strip():
        return []
    step = steps[-1]
    if step["action"].split()[0] != last["action"].split()[0]:
        return []
    return [step["observation"]]


def source_ids(doc: dict[str, Any]) -> list[str]:
    ids = [f"history:{i}" for i in range(len(doc["history"]))]
    return ids + [f"trajectory:{len(doc['trajectory']) - 1}"] * len(final_observation(doc))


# -- corpus ---------------------------------------------------------------------------------
@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_corpus_file_loads_strictly_without_problems(name: str) -> None:
    session = load(name, strict=True)
    assert session.errors == ()
    assert session.source_format == "swe-agent"
    assert session.header["sourceFormat"] == "swe-agent"
    assert session.id == Path(name).stem


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_every_history_item_becomes_one_entry_in_a_linear_chain(name: str) -> None:
    doc = raw(name)
    session = load(name)
    assert [e.source_id for e in session.entries] == source_ids(doc)
    assert [e.get("sourceId") for e in session.entries] == [e.source_id for e in session.entries]
    assert session.entries[0].parent_id is None
    for prev, entry in zip(session.entries, session.entries[1:], strict=False):
        assert entry.parent_id == prev.id
    assert len(session.path()) == len(source_ids(doc))
    assert all(e.line is None for e in session.entries)


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_roles_match_the_raw_history(name: str) -> None:
    history = raw(name)["history"]
    session = load(name)
    system = [h for h in history if h["role"] == "system"]
    assistants = [h for h in history if h["role"] == "assistant"]
    tools = [h for h in history if h["role"] == "tool"]
    observations = observation_indexes(history)
    users = [i for i, h in enumerate(history) if h["role"] == "user" and i not in observations]

    customs = [e for e in session.entries if e.type == "custom_message"]
    assert len(customs) == len(system)
    assert all(e.get("customType") == "swe-agent:system" for e in customs)
    assert [e.get("content") for e in customs] == [h["content"] for h in system]
    assert len(messages(session, "assistant")) == len(assistants)
    assert len(messages(session, "user")) == len(users)
    finals = final_observation(raw(name))
    assert len(messages(session, "toolResult")) == len(tools) + len(observations) + len(finals)


@needs_corpus
@pytest.mark.parametrize("name", OLD_FORMAT)
def test_old_format_actions_become_synthetic_calls_answered_by_the_next_user_item(
    name: str,
) -> None:
    history = raw(name)["history"]
    session = load(name)
    actions = [h["action"] for h in history if h["role"] == "assistant" and h["action"].strip()]
    calls = call_blocks(session)
    assert [c["arguments"] for c in calls] == [{"command": a} for a in actions]
    assert [c["name"] for c in calls] == [a.split()[0] for a in actions]
    results = messages(session, "toolResult")
    expected = [history[i]["content"] for i in sorted(observation_indexes(history))]
    assert [r["content"][0]["text"] for r in results] == expected + final_observation(raw(name))
    # The text of the turn is the thought; the command lives in the call only.
    texts = [
        b["text"]
        for m in messages(session, "assistant")
        for b in m["content"]
        if b["type"] == "text"
    ]
    thoughts = [h["thought"] for h in history if h["role"] == "assistant" and h["thought"].strip()]
    assert texts == thoughts


@needs_corpus
def test_pydicom_figures_from_provenance() -> None:
    # PROVENANCE.md: 12 steps/actions, 122,612 tokens sent for $1.27, a demonstration message.
    session = load("gpt4__pydicom__pydicom-1458.traj")
    assert len(call_blocks(session)) == 12
    assert session.header["modelStats"]["tokens_sent"] == 122612
    assert round(session.header["modelStats"]["total_cost"], 2) == 1.27
    assert session.header["exitStatus"] == "submitted"
    assert session.cwd == "/pydicom__pydicom"


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_demo_messages_are_marked_and_kept(name: str) -> None:
    history = raw(name)["history"]
    session = load(name)
    demo_sources = {f"history:{i}" for i, h in enumerate(history) if h.get("is_demo")}
    marked = {e.source_id for e in session.entries if e.get("demo") is True}
    assert marked == demo_sources
    if name.startswith("gpt4"):
        assert len(demo_sources) == 1  # the provenance names one large demonstration
        (demo,) = [e for e in session.entries if e.get("demo")]
        (raw_demo,) = [h for h in history if h.get("is_demo")]
        assert demo.role == "user"
        assert demo.message["content"][0]["text"] == raw_demo["content"]


@needs_corpus
def test_new_format_tool_calls_and_results() -> None:
    (name,) = NEW_FORMAT
    history = raw(name)["history"]
    session = load(name)
    raw_calls = [c for h in history if h["role"] == "assistant" for c in h.get("tool_calls") or ()]
    calls = call_blocks(session)
    assert len(calls) == len(raw_calls)
    assert [c["name"] for c in calls] == [c["function"]["name"] for c in raw_calls]
    assert [c["arguments"] for c in calls] == [
        json.loads(c["function"]["arguments"]) for c in raw_calls
    ]
    # The replay reuses call ids; they must be unique after import.
    raw_ids = [c["id"] for c in raw_calls]
    assert len(set(raw_ids)) < len(raw_ids)
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == len(ids)
    assert all(new.startswith(old) for new, old in zip(ids, raw_ids, strict=True))
    tools = [h for h in history if h["role"] == "tool"]
    results = messages(session, "toolResult")
    assert [r["content"][0]["text"] for r in results] == [h["content"] for h in tools]


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_every_result_answers_a_call_of_the_assistant_turn_before_it(name: str) -> None:
    session = load(name)
    open_calls: dict[str, str] = {}
    answered = 0
    for entry in session.entries:
        if entry.role == "assistant":
            open_calls = {
                b["id"]: b["name"] for b in entry.message["content"] if b["type"] == "toolCall"
            }
        elif entry.role == "toolResult":
            msg = entry.message
            assert open_calls.pop(msg["toolCallId"]) == msg["toolName"]
            answered += 1
    assert answered == len(messages(session, "toolResult"))


@needs_corpus
def test_detection_and_iteration_through_read_session() -> None:
    folder = CORPUS / "swe-agent"
    for name in ALL_FILES:
        path = corpus_file("swe-agent", name)
        assert detect_format(path) == "swe-agent"
        session = read_session(path)
        assert session.source_format == "swe-agent"
        assert len(session.entries) == len(source_ids(raw(name)))
    sessions = list(iter_sessions(folder))
    assert sorted(s.id for s in sessions) == sorted(Path(n).stem for n in ALL_FILES)


@needs_corpus
@pytest.mark.parametrize("name", ALL_FILES)
def test_round_trip_through_pi_jsonl(name: str, tmp_path: Path) -> None:
    session = load(name)
    out = session.write(tmp_path / "out.jsonl")
    again = read_pi_jsonl(out, strict=True)
    assert [dict(e.record) for e in again.entries] == [dict(e.record) for e in session.entries]
    assert [e.source_id for e in again.entries] == [e.source_id for e in session.entries]
    assert again.header["sourceFormat"] == "swe-agent"
    assert again.header["id"] == session.id


# -- synthetic input ------------------------------------------------------------------------
def write_traj(tmp_path: Path, doc: Any, name: str = "task.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def new_format_doc(history: list[Any]) -> dict[str, Any]:
    return {"trajectory": [], "history": history, "info": {"exit_status": "submitted"}}


def test_truncated_document_strict_raises_with_line(tmp_path: Path) -> None:
    text = json.dumps(new_format_doc([{"role": "user", "content": "hi"}]), indent=2)
    cut = text[: len(text) // 2]
    path = tmp_path / "cut.traj"
    path.write_text(cut, encoding="utf-8")
    with pytest.raises(SessionReadError) as info:
        read_swe_agent(path, strict=True)
    assert info.value.kind == "truncated-json"
    assert info.value.path == str(path)
    assert info.value.line == cut.count("\n") + 1  # the data stops on its last line


def test_strict_names_the_earliest_problem(tmp_path: Path) -> None:
    # The bad byte on line 5 is found (decoding) before the syntax error on line 3 (parsing).
    path = tmp_path / "two.traj"
    path.write_bytes(b'{\n "history": [],\n "trajectory": [,],\n "x": 1,\n "y": "\xff"\n}\n')
    lenient = [(p.kind, p.line) for p in read_swe_agent(path).errors]
    assert lenient == [("malformed-json", 3), ("invalid-utf8", 5)]
    with pytest.raises(SessionReadError) as info:
        read_swe_agent(path, strict=True)
    assert (info.value.kind, info.value.line) == ("malformed-json", 3)


def test_truncated_document_lenient_gives_empty_session_with_problem(tmp_path: Path) -> None:
    text = json.dumps(new_format_doc([{"role": "user", "content": "hi"}]), indent=2)
    path = tmp_path / "cut.traj"
    path.write_text(text[:-10], encoding="utf-8")
    before = path.read_bytes()
    session = read_swe_agent(path)
    assert session.entries == ()
    (problem,) = session.errors
    assert problem.kind == "truncated-json"
    assert problem.path == str(path)
    assert problem.line == text[:-10].count("\n") + 1
    assert path.read_bytes() == before


def test_malformed_document_reports_the_line_of_the_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.traj"
    path.write_text('{\n  "history": [\n    {"role": "user",, "content": "x"}\n  ]\n}\n')
    session = read_swe_agent(path)
    (problem,) = session.errors
    assert (problem.kind, problem.line) == ("malformed-json", 3)
    with pytest.raises(SessionReadError) as info:
        read_swe_agent(path, strict=True)
    assert info.value.line == 3


@pytest.mark.parametrize(
    ("content", "kind"),
    [(b"", "empty-file"), (b"\x00\x01binary", "binary-file"), (b"[1, 2]", "not-an-object")],
)
def test_unusable_documents(tmp_path: Path, content: bytes, kind: str) -> None:
    path = tmp_path / "x.traj"
    path.write_bytes(content)
    session = read_swe_agent(path)
    assert session.entries == ()
    assert [p.kind for p in session.errors] == [kind]
    with pytest.raises(SessionReadError):
        read_swe_agent(path, strict=True)


def test_missing_history_is_recorded(tmp_path: Path) -> None:
    path = write_traj(tmp_path, {"trajectory": [], "info": {}})
    session = read_swe_agent(path)
    assert session.entries == ()
    assert [p.kind for p in session.errors] == ["missing-history"]


def test_history_item_that_is_not_an_object_is_recorded_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    history = [
        {"role": "system", "content": "sys"},
        "not a message",
        {"role": "user", "content": "task"},
        42,
        {"role": "assistant", "content": "done", "thought": "done", "action": ""},
    ]
    path = write_traj(tmp_path, new_format_doc(history))
    session = read_swe_agent(path)
    assert [p.kind for p in session.errors] == ["not-an-object", "not-an-object"]
    assert all(p.path == str(path) for p in session.errors)
    assert "history[1]" in session.errors[0].message
    assert [e.source_id for e in session.entries] == ["history:0", "history:2", "history:4"]
    assert session.entries[2].parent_id == session.entries[1].id
    with pytest.raises(SessionReadError) as info:
        read_swe_agent(path, strict=True)
    assert info.value.kind == "not-an-object"


def test_invalid_utf8_is_recorded_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "u.traj"
    path.write_bytes(b'{"history": [\n{"role": "user", "content": "caf\xe9"}\n]}')
    session = read_swe_agent(path)
    assert [(p.kind, p.line) for p in session.errors] == [("invalid-utf8", 2)]
    assert session.entries[0].message["content"][0]["text"] == "caf\ufffd"


def test_tool_output_for_an_unknown_call_is_recorded_and_kept_as_user(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "task"},
        {"role": "tool", "content": "orphan output", "tool_call_ids": ["call_nowhere"]},
    ]
    session = read_swe_agent(write_traj(tmp_path, new_format_doc(history)))
    assert [p.kind for p in session.errors] == ["unpaired-tool-result"]
    assert [e.role for e in session.entries] == ["user", "user"]
    assert session.entries[1].message["content"][0]["text"] == "orphan output"


def test_unknown_role_is_recorded_and_kept_out_of_the_context(tmp_path: Path) -> None:
    history = [{"role": "critic", "content": "meh"}, {"role": "user", "content": "task"}]
    session = read_swe_agent(write_traj(tmp_path, new_format_doc(history)))
    assert [p.kind for p in session.errors] == ["unknown-role"]
    first = session.entries[0]
    assert (first.type, first.get("customType")) == ("custom", "swe-agent:critic")
    assert first.get("data") == history[0]


def test_reused_call_ids_pair_each_result_with_the_newest_call(tmp_path: Path) -> None:
    def call(args: str) -> dict[str, Any]:
        return {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args}}

    history = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "a", "tool_calls": [call('{"command": "ls"}')]},
        {"role": "tool", "content": "out1", "tool_call_ids": ["c1"]},
        {"role": "assistant", "content": "b", "tool_calls": [call("not json")]},
        {"role": "tool", "content": "out2", "tool_call_ids": ["c1"]},
    ]
    session = read_swe_agent(write_traj(tmp_path, new_format_doc(history)), strict=True)
    calls = call_blocks(session)
    assert [c["id"] for c in calls] == ["c1", "c1-2"]
    assert calls[0]["arguments"] == {"command": "ls"}
    assert calls[1]["arguments"] == {"input": "not json"}  # kept, not dropped
    results = messages(session, "toolResult")
    assert [(r["toolCallId"], r["content"][0]["text"]) for r in results] == [
        ("c1", "out1"),
        ("c1-2", "out2"),
    ]


def test_trailing_action_without_output_stays_an_open_call(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "t\n```\nsubmit\n```",
            "thought": "t",
            "action": "submit\n",
        },
    ]
    session = read_swe_agent(write_traj(tmp_path, new_format_doc(history)), strict=True)
    assert [e.role for e in session.entries] == ["user", "assistant"]
    (call,) = call_blocks(session)
    assert (call["name"], call["arguments"]) == ("submit", {"command": "submit\n"})
    assert session.entries[1].message["stopReason"] == "toolUse"


def test_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionReadError) as info:
        read_swe_agent(tmp_path)
    assert info.value.kind == "is-a-directory"


def test_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.traj"
    doc = new_format_doc([{"role": "user", "content": "task"}])
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    session = read_swe_agent(path, strict=True)
    assert [e.role for e in session.entries] == ["user"]

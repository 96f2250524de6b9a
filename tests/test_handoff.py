"""`handoff()` as the seed describes it: a new session holding the document as a visible
`custom_message` with `customType: "handoff"`, the parent untouched, and the request (live
history, tools, the handoff prompt, `tool_choice: "none"`, `auto` when refused) asserted
against a loopback server. Expected bodies are written out by hand; prompt texts are read
from the `prompts/` folder.
"""

from __future__ import annotations

from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, words

from musepi_lab.context._build import build_session_context
from musepi_lab.formats._registry import read_session
from musepi_lab.llm._summarizer import ModelCallError, OpenAICompatibleSummarizer, SummarizerError
from musepi_lab.strategies._handoff import handoff
from musepi_lab.testing import StubOpenAIServer

DOCUMENT = "## Goal\nShip the parser.\n\n## Next Steps\n1. Run pytest."
TOOLS = (
    {
        "type": "function",
        "function": {"name": "read", "parameters": {"type": "object", "properties": {}}},
    },
)


def document(body: dict[str, Any]) -> str:
    return DOCUMENT


shared_server, server = stub_server_fixtures(document)


def summarizer(server: StubOpenAIServer) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, sleep=lambda s: None)


def small_session() -> Any:
    c = Chain("parent")
    c.user("Fix the parser")
    c.assistant("Fixed.")
    return c.session()


# Written by hand from small_session: the live history, then the handoff prompt.
EXPECTED_MESSAGES = [
    {"role": "system", "content": "SYSTEM"},
    {"role": "user", "content": "Fix the parser"},
    {"role": "assistant", "content": "Fixed."},
    {"role": "user", "content": None},  # filled in with the prompt file below
]


def expected_body(tool_choice: str) -> dict[str, Any]:
    messages = [dict(m) for m in EXPECTED_MESSAGES]
    messages[-1]["content"] = prompt("handoff-document")
    return {
        "model": "m1",
        "messages": messages,
        "max_tokens": 13107,  # floor(0.8 · reserve 16384), spec §5.7
        "tools": [dict(t) for t in TOOLS],
        "tool_choice": tool_choice,
    }


def test_request_body_exact(server):
    handoff(small_session(), summarizer(server), system_prompt="SYSTEM", tools=TOOLS)
    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body == expected_body("none")


def test_refused_none_is_retried_with_auto(server):
    server.refused_tool_choices = frozenset({"none"})
    try:
        done = handoff(small_session(), summarizer(server), system_prompt="SYSTEM", tools=TOOLS)
    finally:
        server.refused_tool_choices = frozenset()
    assert [b for _, b in server.requests] == [expected_body("none"), expected_body("auto")]
    assert done.document == DOCUMENT


def test_other_client_errors_are_not_retried(server):
    server.refused_tool_choices = frozenset({"none", "auto"})
    try:
        with pytest.raises(ModelCallError, match="HTTP 400"):
            handoff(small_session(), summarizer(server), system_prompt="SYSTEM", tools=TOOLS)
    finally:
        server.refused_tool_choices = frozenset()
    assert len(server.requests) == 2  # none, then auto once; never a loop


def test_without_tools_no_tool_choice_is_sent(server):
    handoff(small_session(), summarizer(server))
    ((_, body),) = server.requests
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"][0] == {"role": "system", "content": prompt("summarization-system")}


def test_new_session_file(server, tmp_path):
    parent_file = tmp_path / "parent.jsonl"
    small_session().write(parent_file)
    before = parent_file.read_bytes()
    parent = read_session(parent_file)
    done = handoff(parent, summarizer(server), timestamp="2026-01-02T03:04:05.000Z")
    out = done.session.write(tmp_path / "child.jsonl")
    assert parent_file.read_bytes() == before
    child = read_session(out)
    assert child.errors == ()
    assert child.header["parentSession"] == str(parent_file)
    assert child.header["id"] != parent.id
    (message,) = build_session_context(child).messages
    assert message["role"] == "custom" and message["customType"] == "handoff"
    assert message["content"] == prompt("handoff-context").replace("{{document}}", DOCUMENT)
    record = dict(child.entries[0].record)
    assert record["type"] == "custom_message" and record["parentId"] is None
    assert record["display"] is True and record["attribution"] == "agent"
    assert done.message.id == child.entries[0].id


def test_nothing_to_hand_off(server):
    c = Chain("tiny")
    c.user("hello")
    with pytest.raises(ValueError, match="Nothing to hand off"):
        handoff(c.session(), summarizer(server))
    assert server.requests == []


def test_blank_document_is_an_error(server):
    server.responder = lambda body: "  "
    with pytest.raises(SummarizerError):
        handoff(small_session(), summarizer(server))


def test_request_repeats_the_live_prefix(server):
    done = handoff(small_session(), summarizer(server))
    # Nothing trimmed: the whole live context is the cacheable prefix.
    assert done.request.history_dropped == 0 and done.request.cache_prefix_tokens > 0


# -- the strategy in a replay ----------------------------------------------------------------
def test_replay_continues_in_the_new_session(server):
    from _builders import words

    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.replay import replay_session

    c = Chain("long")
    for i in range(4):
        c.user(words(400, "abcd"[i]))
        c.assistant(f"answer {i}")
    session = c.session()
    ids = [e.id for e in session.entries]
    # A manual handoff after the second answer (entry 4 of 8).
    result = replay_session(
        session,
        "handoff",
        window=10**6,
        settings=CompactionSettings.musepi(keep_recent_tokens=100),
        summarizer=summarizer(server),
        triggers=("manual",),
        manual_at=(ids[3],),
    )
    (event,) = result.events
    assert event.method == "handoff"
    types = [e.type for e in result.session.entries]
    assert "compaction" not in types
    # It fires before the next request (the third answer), after the third user message
    # was appended: u0 a0 u1 a1 u2, then the handoff message, then a2 u3 a3.
    assert types.index("custom_message") == 5
    assert [e.get("customType") for e in result.session.entries[5:6]] == ["handoff"]
    rows = result.timeline
    assert rows["compaction"].tolist() == ["", "", "handoff", ""]
    assert rows["context_tokens"].iloc[2] < rows["context_tokens"].iloc[1]
    assert event.tokens_after < event.tokens_before


def test_the_replayed_prefix_is_billed_as_cache_reads(server):
    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.metrics._metrics import DEFAULT_PRICES, summarizer_cost
    from musepi_lab.strategies._base import compact

    # 1000 input tokens of which 600 cached, 100 output, at $3 / $0.30 / $15 per million.
    assert summarizer_cost(1000, 100, DEFAULT_PRICES, cached_input_tokens=600) == pytest.approx(
        (400 * 3.0 + 600 * 0.30 + 100 * 15.0) / 1e6
    )
    c = Chain("cost")
    c.user(words(300, "a"))
    c.assistant("one")
    c.user(words(300, "b"))
    c.assistant("two")
    result = compact(
        c.session(),
        "handoff",
        settings=CompactionSettings.musepi(keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    # Part of the input, never all of it: the system prompt and the handoff request are new.
    assert 0 < result.summarizer_cached_input_tokens < result.summarizer_input_tokens


def test_strategy_comparer_measures_handoff(server):
    pytest.importorskip("ipywidgets")
    from musepi_lab.metrics._metrics import DEFAULT_PRICES
    from musepi_lab.widgets import StrategyComparer

    c = Chain("compare")
    for letter in "abc":
        c.user(words(300, letter))
        c.assistant(f"reply {letter}")
    session = c.session()
    view = StrategyComparer(
        session, strategies=["handoff"], budgets=[100], summarizer=summarizer(server)
    )
    (row,) = view.run().to_dict("records")
    result = view.results[("handoff", 100)]
    assert row["error"] is None and row["compacted"]
    # The context after is the new session's: one handoff message.
    assert row["tokens_after"] < row["tokens_before"]
    cached = result.summarizer_cached_input_tokens
    expected = (
        (result.summarizer_input_tokens - cached) * DEFAULT_PRICES["input"]
        + cached * DEFAULT_PRICES["cache_read"]
        + result.summarizer_output_tokens * DEFAULT_PRICES["output"]
    ) / 1e6
    assert cached > 0 and row["summarizer_cost_usd"] == pytest.approx(expected)


def test_handoff_options_as_a_value_send_the_same_request(server):
    from musepi_lab.strategies import HandoffOptions

    options = HandoffOptions(system_prompt="SYSTEM", tools=TOOLS)
    handoff(small_session(), summarizer(server), options=options)
    ((_, body),) = server.requests
    assert body == expected_body("none")  # written by hand above
    with pytest.raises(TypeError, match="handoff"):
        handoff(small_session(), summarizer(server), system=1)

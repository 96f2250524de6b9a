"""`handoff` (spec §6.4) and the Chat Completions converter, against a loopback server.

Expected Chat Completions messages are written out by hand from the session built in each
test; prompt texts are read straight from the `prompts/` folder.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, valid_pairing, words
from _corpus import PI_FIXTURES, SAMPLES, corpus_file

from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.formats._registry import read_session
from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer, SummarizerError
from musepi_lab.session._session import Session
from musepi_lab.strategies._base import compact, get
from musepi_lab.strategies._chat_format import to_chat_messages
from musepi_lab.strategies._handoff import Handoff, history_start
from musepi_lab.testing import Failure, StubOpenAIServer
from musepi_lab.tokens._counter import TokenCounter

SECRET = "sk-test-SECRET-handoff-0123456789"
SESSION_ID = "ho"
DOCUMENT = "## Goal\nFinish the parser.\n\n## Next Steps\n1. Run the tests."


def parser_session(thinking_level: str | None = None) -> Session:
    c = Chain(SESSION_ID)
    if thinking_level is not None:
        c.add("thinking_level_change", thinkingLevel=thinking_level)
    c.user("Fix the parser")
    c.assistant("Reading it.", calls=(("c1", "read", {"path": "src/parse.py"}),))
    c.result("c1", "def parse(): pass")
    c.assistant("Done.")
    c.user(words(300, "k"))
    c.assistant("Sure.")
    return c.session()


# The live history of parser_session as Chat Completions messages, by hand.
PARSER_HISTORY = [
    {"role": "user", "content": "Fix the parser"},
    {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"src/parse.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "def parse(): pass"},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": words(300, "k")},
    {"role": "assistant", "content": "Sure."},
]


def document(body: dict[str, Any]) -> str:
    return DOCUMENT


shared_server, server = stub_server_fixtures(document)


def summarizer(server: StubOpenAIServer, **kw: Any) -> OpenAICompatibleSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET, **kw)


def settings(profile: str = "musepi", **kw: Any) -> CompactionSettings:
    kw.setdefault("keep_recent_tokens", 100)
    return CompactionSettings.for_profile(profile, **kw)


# -- the request ---------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["musepi", "pi"])
def test_request_carries_history_and_handoff_prompt(server, profile):
    compact(parser_session(), "handoff", settings=settings(profile), summarizer=summarizer(server))
    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body["messages"] == [
        {"role": "system", "content": prompt("summarization-system")},
        *PARSER_HISTORY,
        {"role": "user", "content": prompt("handoff-document")},
    ]
    # The summary cap of the settings: floor(0.8 · 16384) = 13107.
    assert body["max_tokens"] == 13107


def test_focus_block(server):
    compact(
        parser_session(),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server),
        custom_instructions="the failing test",
    )
    compact(
        parser_session(), "handoff", settings=settings(), summarizer=summarizer(server), auto=True
    )
    compact(
        parser_session(),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server),
        auto=True,
        custom_instructions="mine wins",
    )
    finals = [b["messages"][-1]["content"] for _, b in server.requests]
    base = prompt("handoff-document")
    assert finals == [
        base + "\n\nAdditional focus: the failing test",
        base + "\n\nAdditional focus: " + prompt("auto-handoff-threshold-focus"),
        base + "\n\nAdditional focus: mine wins",
    ]


@pytest.mark.parametrize(("level", "expected"), [("high", "high"), ("off", None), (None, "high")])
def test_reasoning_effort(server, level, expected):
    compact(
        parser_session(level),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server, supports_reasoning=True),
    )
    ((_, body),) = server.requests
    assert body.get("reasoning_effort") == expected


# -- the result and the rebuilt context ----------------------------------------------------
def test_result_is_a_handoff_compaction(server):
    session = parser_session()
    result = compact(session, "handoff", settings=settings(), summarizer=summarizer(server))
    assert result.method == "handoff"
    assert result.summary == DOCUMENT
    assert dict(result.details) == {"readFiles": ["src/parse.py"], "modifiedFiles": []}
    record = result.to_entry_record("e05", entry_id="h1", timestamp="t")
    assert record["method"] == "handoff" and record["summary"] == DOCUMENT


def test_context_renders_the_handoff_template(server):
    session = parser_session()
    result = compact(session, "handoff", settings=settings(), summarizer=summarizer(server))
    context = build_session_context(result.apply(session))
    first = convert_to_llm(context.messages)[0]
    expected = prompt("handoff-summary-context").replace("{{summary}}", DOCUMENT)
    assert first["role"] == "user"
    assert first["content"][0]["text"] == expected
    # The kept region follows the document. MusePi (oh-my-pi 18.2.3) keeps the newest group
    # that fits keep 100: the answer e05 (2 tokens); the long user message e04 does not fit.
    assert context.entry_ids[1:] == ("e05",)


def test_key_never_written(server, tmp_path):
    session = parser_session()
    result = compact(
        session,
        "handoff",
        settings=settings(),
        summarizer=summarizer(server, cache_dir=tmp_path / "cache"),
    )
    assert SECRET not in repr(result)
    out = tmp_path / "s.jsonl"
    result.apply(session).write(out)
    assert SECRET not in out.read_text(encoding="utf-8")
    assert all(
        SECRET.encode() not in p.read_bytes()
        for p in (tmp_path / "cache").rglob("*")
        if p.is_file()
    )


def test_cache_hit_with_history(server, tmp_path):
    first = compact(
        parser_session(),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server, cache_dir=tmp_path),
    )
    again = compact(
        parser_session(),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server, cache_dir=tmp_path),
    )
    assert len(server.requests) == 1
    assert again.summary == first.summary


def test_errors(server):
    server.fail_next(Failure(400))
    with pytest.raises(SummarizerError, match="HTTP 400"):
        compact(parser_session(), "handoff", settings=settings(), summarizer=summarizer(server))
    # A blank answer is refused by the model seam itself (issue 13), before handoff sees it.
    server.responder = lambda body: "   "
    with pytest.raises(SummarizerError, match="chat/completions failed: answered with no text"):
        compact(parser_session(), "handoff", settings=settings(), summarizer=summarizer(server))


def test_retries_on_429_and_500(server):
    delays: list[float] = []
    server.fail_next(Failure(429), Failure(500))
    result = compact(
        parser_session(),
        "handoff",
        settings=settings(),
        summarizer=summarizer(server, sleep=delays.append, backoff_s=0.1),
    )
    assert len(server.requests) == 3 and delays == [0.1, 0.2]
    assert result.summary == DOCUMENT


# -- trimming the replayed history --------------------------------------------------------------
def test_history_trimmed_to_the_window(server):
    c = Chain(SESSION_ID)
    for i in range(6):
        c.user(words(300, "abcdef"[i]))
        c.assistant(f"step {i}", calls=((f"c{i}", "read", {"path": f"f{i}.py"}),))
        c.result(f"c{i}", words(100, "r"))
        c.assistant("ok")
    session = c.session()
    # W = 20000: min(16384, max(1024, 2500)) = 2500, as 0.8·W − 13107 − 16384 < 0 (§5.7);
    # less the handoff prompt's own tokens. A turn counts 300 (user) + 7 (step text, tool
    # name, arguments) + 100 (result) + 1 ("ok") = 408 tokens: six turns (2448) do not
    # fit, five (2040) do, so the oldest turn is dropped.
    budget = 2500 - TokenCounter("musepi").count_text(prompt("handoff-document"))
    assert 5 * 408 <= budget < 6 * 408
    result = compact(
        session, "handoff", settings=settings(), summarizer=summarizer(server, context_window=20000)
    )
    ((_, body),) = server.requests
    history = body["messages"][1:-1]
    assert len(history) == 5 * 4
    assert history[0] == {"role": "user", "content": words(300, "b")}
    assert result.params["handoff_history_dropped"] == 4
    assert result.params["handoff_history_messages"] == 20
    for index, msg in enumerate(history):
        if msg["role"] == "tool":
            assert history[index - 1]["tool_calls"][0]["id"] == msg["tool_call_id"]


def test_history_start_keeps_everything_that_fits():
    counter = TokenCounter("musepi")
    msgs = [{"role": "user", "content": words(10)}, {"role": "assistant", "content": []}]
    assert history_start(msgs, counter, 100) == 0
    # Nothing fits: start at the last user message anyway.
    assert history_start(msgs, counter, 5) == 0
    msgs = [*msgs, {"role": "user", "content": words(10)}]
    assert history_start(msgs, counter, 15) == 2


# -- the Chat Completions converter --------------------------------------------------------------
def test_chat_pairing_repair():
    llm = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "toolCall", "id": "a", "name": "ls", "arguments": {}},
                {"type": "toolCall", "id": "b", "name": "ls", "arguments": {"d": 1}},
            ],
        },
        {"role": "toolResult", "toolCallId": "a", "content": [{"type": "text", "text": "x"}]},
        {"role": "toolResult", "toolCallId": "zz", "content": [{"type": "text", "text": "late"}]},
        {"role": "developer", "content": [{"type": "text", "text": "note"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "only thinking"}]},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}],
        },
    ]
    assert to_chat_messages(llm) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "ls", "arguments": '{"d":1}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "user", "content": "[Tool result]: late"},
        {"role": "tool", "tool_call_id": "b", "content": "No result provided"},
        {"role": "user", "content": "note"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "No result provided"},
    ]


def test_chat_images():
    llm = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "data": "QUJD", "mimeType": "image/png"},
            ],
        }
    ]
    assert to_chat_messages(llm) == [{"role": "user", "content": "see\n[image omitted]"}]
    assert to_chat_messages(llm, images=True) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
            ],
        }
    ]


def test_registry_value():
    assert get("handoff", auto=True) == Handoff(auto=True)
    assert get("handoff").needs_summarizer


# -- shared acceptance ------------------------------------------------------------------------------
def chat_pairing_valid(messages) -> bool:
    """Every tool message answers a call of the nearest assistant turn before it."""
    open_ids: set[str] = set()
    for msg in messages:
        if msg["role"] == "assistant":
            open_ids = {c["id"] for c in msg.get("tool_calls", [])}
        elif msg["role"] == "tool":
            if msg["tool_call_id"] not in open_ids:
                return False
            open_ids.discard(msg["tool_call_id"])
        else:
            if open_ids:
                return False
            open_ids = set()
    return not open_ids


def check_acceptance(session: Session, result, profile: str) -> None:
    counter = TokenCounter(profile)
    before = counter.count_messages(build_session_context(session, profile=profile).messages)
    context = build_session_context(result.apply(session), profile=profile)
    assert context.messages[0]["role"] == "compactionSummary"
    assert valid_pairing(context.messages)
    assert counter.count_messages(context.messages) < before


@pytest.mark.corpus
@pytest.mark.parametrize("parts", PI_FIXTURES, ids=lambda p: "/".join(p[1:]))
@pytest.mark.parametrize("profile", ["musepi", "pi"])
def test_acceptance_on_pi_corpus(server, parts, profile):
    session = read_session(corpus_file(*parts))
    result = compact(
        session,
        "handoff",
        settings=CompactionSettings.for_profile(profile),
        summarizer=summarizer(server),
    )
    assert result is not None and result.method == "handoff"
    check_acceptance(session, result, profile)
    ((_, body),) = server.requests
    assert chat_pairing_valid(body["messages"][1:-1])
    assert json.dumps(body).count(SECRET) == 0


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_acceptance_on_bundled_sample(server, path):
    session = read_session(path)
    result = compact(session, "handoff", summarizer=summarizer(server))
    assert result is not None
    check_acceptance(session, result, "musepi")

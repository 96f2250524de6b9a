"""`remote` (spec §5.7, §2.3): the OpenAI Responses compact lane and a custom remote
endpoint, against a real HTTP server on loopback.

Expected input items are written out by hand; the replacement history expected back is the
stub server's documented answer (the input's user items, then one compaction item whose
`encrypted_content` is the sha256 of the JSON input), computed here from the request body.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, valid_pairing, words
from _corpus import PI_FIXTURES, SAMPLES, corpus_file

from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.formats._registry import read_session
from musepi_lab.llm._summarizer import (
    OpenAICompatibleSummarizer,
    SummarizerError,
    SummarizerNotConfigured,
)
from musepi_lab.session._session import Session
from musepi_lab.strategies._base import StrategyUnavailable, compact, get, strategy_type
from musepi_lab.strategies._chat_format import to_responses_input
from musepi_lab.strategies._remote import (
    Remote,
    RemoteEndpointSummarizer,
    compaction_item,
)
from musepi_lab.testing import Failure, StubOpenAIServer
from musepi_lab.tokens._counter import TokenCounter
from musepi_lab.widgets._comparer import usable_strategies

SECRET = "sk-test-SECRET-remote-0123456789"
ENDPOINT_SECRET = "remote-key-SECRET-9876543210"
SESSION_ID = "rm"


def parser_chain() -> Chain:
    c = Chain(SESSION_ID)
    c.user("Fix the parser")
    c.assistant("Reading it.", calls=(("c1", "read", {"path": "src/parse.py"}),))
    c.result("c1", "def parse(): pass")
    c.assistant("Done.")
    # Ends on the long user message, so both profiles cut there (MusePi keeps the newest
    # group whole, as oh-my-pi 18.2.3): no split turn, one request.
    c.user(words(300, "k"))
    return c


# parser_chain's live context as Responses input items, by hand.
PARSER_ITEMS = [
    {"role": "user", "content": [{"type": "input_text", "text": "Fix the parser"}]},
    {"role": "assistant", "content": "Reading it."},
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "read",
        "arguments": '{"path":"src/parse.py"}',
    },
    {"type": "function_call_output", "call_id": "c1", "output": "def parse(): pass"},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": [{"type": "input_text", "text": words(300, "k")}]},
]


def stub_history(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the stub answers to /responses/compact (see musepi_lab/testing.py)."""
    digest = hashlib.sha256(json.dumps(items).encode()).hexdigest()
    return [
        *[i for i in items if i.get("role") == "user"],
        {"type": "compaction", "encrypted_content": digest},
    ]


def remote_summary(body: dict[str, Any]) -> str:
    return "REMOTE SUMMARY"


shared_server, server = stub_server_fixtures(remote_summary)


def summarizer(server: StubOpenAIServer, **kw: Any) -> OpenAICompatibleSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET, **kw)


def endpoint_summarizer(server: StubOpenAIServer, **kw: Any) -> RemoteEndpointSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return RemoteEndpointSummarizer(f"{server.root_url}/compact", **kw)


def settings(profile: str = "musepi", **kw: Any) -> CompactionSettings:
    kw.setdefault("keep_recent_tokens", 100)
    return CompactionSettings.for_profile(profile, **kw)


# -- OpenAI Responses compact ----------------------------------------------------------------
def test_openai_lane_request_and_preserved_history(server):
    session = parser_chain().session()
    result = compact(session, "remote", settings=settings(), summarizer=summarizer(server))
    ((path, body),) = server.requests
    assert path == "/v1/responses/compact"
    assert body == {"model": "m1", "input": PARSER_ITEMS}
    history = stub_history(PARSER_ITEMS)
    assert dict(result.preserve_data) == {
        "openaiRemoteCompaction": {
            "provider": "openai",
            "replacementHistory": history,
            "compactionItem": history[-1],
        }
    }
    assert result.method == "remote"
    assert result.short_summary == "Remote compaction"
    billed = len(json.dumps(PARSER_ITEMS)) // 4  # the stub's usage.input_tokens
    assert result.summarizer_input_tokens == billed
    assert "\n" not in result.summary and f"{billed:,} input tokens" in result.summary
    record = result.to_entry_record("e05", entry_id="r1", timestamp="t")
    assert record["preserveData"]["openaiRemoteCompaction"]["replacementHistory"] == history


def test_context_rebuilds_from_preserved_history(server):
    chain = parser_chain()
    session = chain.session()
    result = compact(session, "remote", settings=settings(), summarizer=summarizer(server))
    compacted = result.apply(session, entry_id="rc")
    context = build_session_context(compacted)
    history = stub_history(PARSER_ITEMS)
    # Spec §2.3: the payload holds the kept turns, so nothing before the compaction is
    # re-emitted.
    assert len(context.messages) == 1
    assert context.messages[0]["providerPayload"] == {
        "type": "openaiResponsesHistory",
        "provider": "openai",
        "items": history,
    }
    assert convert_to_llm(context.messages)[0]["providerPayload"]["items"] == history

    # New turns after the compaction follow the payload, and a second remote compaction
    # sends the preserved history first, then the new turns.
    more = Chain(SESSION_ID, [*chain.records, dict(compacted.get("rc").record)])
    more.user("Next step")
    more.assistant("ok")
    more.user(words(300, "n"))
    more.assistant("fine")
    grown = more.session()
    assert [m.get("role") for m in build_session_context(grown).messages] == [
        "compactionSummary",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    server.requests.clear()
    compact(grown, "remote", settings=settings(), summarizer=summarizer(server))
    ((_, body),) = server.requests
    assert body["input"] == [
        *history,
        {"role": "user", "content": [{"type": "input_text", "text": "Next step"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "input_text", "text": words(300, "n")}]},
        {"role": "assistant", "content": "fine"},
    ]


def test_next_preparation_starts_after_a_remote_compaction(server):
    chain = parser_chain()
    session = chain.session()
    result = compact(session, "remote", settings=settings(), summarizer=summarizer(server))
    compacted = result.apply(session, entry_id="rc")
    more = Chain(SESSION_ID, [*chain.records, dict(compacted.get("rc").record)])
    more.user("Next step")
    more.assistant("ok")
    more.user(words(300, "n"))
    more.assistant("fine")
    prep = prepare_compaction(more.session(), settings())
    # Only the turns after the remote compaction are summarized (spec §4.5): "Next step"
    # and "ok" (e06, e07; the chain's own entries are e00–e04, the compaction comes next).
    assert prep.summarize_entry_ids == ("e06", "e07")


def test_openai_lane_needs_musepi_profile(server):
    with pytest.raises(StrategyUnavailable, match="musepi profile"):
        compact(
            parser_chain().session(),
            "remote",
            settings=settings("pi"),
            summarizer=summarizer(server),
        )
    assert server.requests == []


def test_openai_lane_retries_and_client_errors(server):
    delays: list[float] = []
    server.fail_next(Failure(500), Failure(429, retry_after="2"))
    result = compact(
        parser_chain().session(),
        "remote",
        settings=settings(),
        summarizer=summarizer(server, sleep=delays.append, backoff_s=0.25),
    )
    assert len(server.requests) == 3 and delays == [0.25, 2.0]
    assert result.method == "remote"
    server.fail_next(Failure(400))
    with pytest.raises(SummarizerError, match="HTTP 400"):
        compact(
            parser_chain().session(), "remote", settings=settings(), summarizer=summarizer(server)
        )


def test_openai_lane_timeout(server):
    server.fail_next(Failure(status=200, delay_s=1.0))
    with pytest.raises(SummarizerError, match="after 1 attempts: timeout"):
        compact(
            parser_chain().session(),
            "remote",
            settings=settings(),
            summarizer=summarizer(server, timeout_s=0.2, max_retries=0),
        )


def test_openai_lane_from_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    configured = OpenAICompatibleSummarizer(sleep=lambda _: None)
    result = compact(parser_chain().session(), "remote", settings=settings(), summarizer=configured)
    assert result.method == "remote" and len(server.requests) == 1


def test_remote_requires_configuration_like_the_other_model_strategies(server, monkeypatch):
    # Before: `needs_summarizer = False`, so the comparer offered `remote` with nothing
    # configured and the lane fell back to the environment at run time.
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    assert strategy_type("remote").needs_summarizer
    assert "remote" not in usable_strategies(with_summarizer=False)
    assert "remote" in usable_strategies(with_summarizer=True)
    with pytest.raises(StrategyUnavailable, match="remote"):
        compact(parser_chain().session(), "remote", settings=settings())

    class NotAnEndpoint:  # a summarizer with no connection settings for the Responses lane
        model, context_window = "fake", 1000

        def summarize(self, request):
            raise AssertionError("not called")

    with pytest.raises(SummarizerNotConfigured, match="remote"):
        compact(parser_chain().session(), "remote", settings=settings(), summarizer=NotAnEndpoint())
    assert server.requests == []
    # `endpoint=` is itself the configuration.
    assert not get("remote", endpoint="http://x/compact").requires_summarizer()


def test_openai_lane_from_duck_typed_connection_settings(server, tmp_path):
    class Settings:  # a summarizer of another kind that carries OpenAI connection settings
        model, base_url, api_key, context_window = "m2", server.base_url, SECRET, 1000
        cache_dir = tmp_path

        def summarize(self, request):
            raise AssertionError("not called")

    session = parser_chain().session()
    for _ in range(2):
        result = compact(session, "remote", settings=settings(), summarizer=Settings())
    ((path, body),) = server.requests  # the second run came from the seam's disk cache
    assert path == "/v1/responses/compact" and body == {"model": "m2", "input": PARSER_ITEMS}
    assert server.request_headers[-1]["authorization"] == f"Bearer {SECRET}"
    assert result.params["summarizer_model"] == "m2"


def test_compaction_item_required():
    assert compaction_item([{"role": "user"}, {"type": "compaction", "x": 1}]) == {
        "type": "compaction",
        "x": 1,
    }
    with pytest.raises(SummarizerError, match="no compaction item"):
        compaction_item([{"role": "user"}])


def test_responses_input_pairing_and_payload():
    llm = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}],
            "providerPayload": {"items": [{"type": "compaction", "encrypted_content": "z"}]},
        },
        {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t"},
                {"type": "toolCall", "id": "x", "name": "ls", "arguments": {}},
                {"type": "toolCall", "id": "y", "name": "ls", "arguments": {}},
            ],
        },
        {"role": "toolResult", "toolCallId": "y", "content": [{"type": "text", "text": "Y"}]},
        {"role": "toolResult", "toolCallId": "q", "content": [{"type": "text", "text": "Q"}]},
    ]
    assert to_responses_input(llm) == [
        {"type": "compaction", "encrypted_content": "z"},
        {"role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
        {"type": "function_call", "call_id": "x", "name": "ls", "arguments": "{}"},
        {"type": "function_call", "call_id": "y", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "y", "output": "Y"},
        {"role": "user", "content": [{"type": "input_text", "text": "[Tool result]: Q"}]},
        {"type": "function_call_output", "call_id": "x", "output": "No result provided"},
    ]


# -- custom remote endpoint ------------------------------------------------------------------------
PARSER_PROMPT = (
    "<conversation>\n[User]: Fix the parser\n\n[Assistant]: Reading it.\n\n"
    '[Assistant tool calls]: read(path="src/parse.py")\n\n[Tool result]: def parse(): pass\n\n'
    "[Assistant]: Done.\n</conversation>\n\n" + prompt("compaction-summary")
)
# MusePi: the release's dialect for the model that summarizes; the endpoint names none and the
# session none either, so oh-my-pi 18.2.3's `xml` fallback (written out by hand from it).
PARSER_PROMPT_XML = (
    "<conversation>\n\n\nHuman: Fix the parser\n\nAssistant: Reading it."
    '<invoke name="read"><parameter name="path">"src/parse.py"</parameter></invoke>'
    "\n\nHuman: <tool_response>\ndef parse(): pass\n</tool_response>"
    "\n\nAssistant: Done.\n</conversation>\n\n" + prompt("compaction-summary")
)


@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_custom_endpoint_request_shape(server, profile):
    result = compact(
        parser_chain().session(),
        "remote",
        settings=settings(profile),
        endpoint=f"{server.root_url}/compact",
    )
    ((path, body),) = server.requests
    assert path == "/compact"
    assert body == {
        "systemPrompt": prompt("summarization-system"),
        "prompt": PARSER_PROMPT if profile == "pi" else PARSER_PROMPT_XML,
        "maxTokens": 13107,
    }
    assert result.method == "remote"
    assert result.summary.startswith("REMOTE SUMMARY\n\n")
    assert dict(result.details) == {"readFiles": ["src/parse.py"], "modifiedFiles": []}
    assert result.preserve_data is None
    # A textual summary: the context shows it and re-emits the kept region.
    context = build_session_context(result.apply(parser_chain().session()), profile=profile)
    assert context.messages[0]["summary"] == result.summary
    assert len(context.messages) == 2  # the summary, then the kept long user message


def test_custom_endpoint_as_summarizer(server):
    result = compact(
        parser_chain().session(),
        "remote",
        settings=settings(),
        summarizer=endpoint_summarizer(server),
    )
    assert [p for p, _ in server.requests] == ["/compact"]
    assert result.method == "remote"


def test_custom_endpoint_retries_errors_timeouts(server):
    delays: list[float] = []
    server.fail_next(Failure(503), Failure(429, retry_after="3"))
    compact(
        parser_chain().session(),
        "remote",
        settings=settings(),
        summarizer=endpoint_summarizer(server, sleep=delays.append, backoff_s=0.5),
    )
    assert len(server.requests) == 3 and delays == [0.5, 3.0]
    server.fail_next(Failure(400))
    with pytest.raises(SummarizerError, match="HTTP 400"):
        compact(
            parser_chain().session(),
            "remote",
            settings=settings(),
            summarizer=endpoint_summarizer(server),
        )
    server.fail_next(Failure(status=200, delay_s=1.0))
    with pytest.raises(SummarizerError, match="after 1 attempts: timeout"):
        compact(
            parser_chain().session(),
            "remote",
            settings=settings(),
            summarizer=endpoint_summarizer(server, timeout_s=0.2, max_retries=0),
        )
    server.responder = lambda body: ""
    with pytest.raises(SummarizerError, match="without a summary"):
        compact(
            parser_chain().session(),
            "remote",
            settings=settings(),
            summarizer=endpoint_summarizer(server),
        )


def test_custom_endpoint_cache_and_keys(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MUSEPI_LAB_REMOTE_API_KEY", ENDPOINT_SECRET)
    session = parser_chain().session()
    first = compact(
        session,
        "remote",
        settings=settings(),
        summarizer=endpoint_summarizer(server, cache_dir=tmp_path / "cache"),
    )
    again = compact(
        session,
        "remote",
        settings=settings(),
        summarizer=endpoint_summarizer(server, cache_dir=tmp_path / "cache"),
    )
    assert len(server.requests) == 1 and again.summary == first.summary
    assert ENDPOINT_SECRET not in repr(endpoint_summarizer(server))
    out = tmp_path / "s.jsonl"
    first.apply(session).write(out)
    for path in [out, *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            assert ENDPOINT_SECRET.encode() not in path.read_bytes()
    assert ENDPOINT_SECRET not in repr(first)


def test_openai_key_not_in_results(server, tmp_path):
    session = parser_chain().session()
    result = compact(session, "remote", settings=settings(), summarizer=summarizer(server))
    out = tmp_path / "s.jsonl"
    result.apply(session).write(out)
    assert SECRET not in out.read_text(encoding="utf-8")
    assert SECRET not in repr(result)


def test_registry_value():
    assert get("remote", endpoint="http://x/compact") == Remote(endpoint="http://x/compact")
    assert get("remote").requires_summarizer()


# -- shared acceptance ------------------------------------------------------------------------------
def context_size(session: Session, profile: str) -> int:
    """Messages counted by the profile's counter, plus replayed provider history as JSON."""
    counter = TokenCounter(profile)
    messages = build_session_context(session, profile=profile).messages
    size = counter.count_messages(messages)
    for msg in messages:
        payload = msg.get("providerPayload")
        if payload:
            size += counter.count_text(json.dumps(payload["items"]))
    return size


@pytest.mark.corpus
@pytest.mark.parametrize("parts", PI_FIXTURES, ids=lambda p: "/".join(p[1:]))
def test_acceptance_openai_lane_on_pi_corpus(server, parts):
    session = read_session(corpus_file(*parts))
    result = compact(session, "remote", summarizer=summarizer(server))
    assert result is not None
    after = result.apply(session)
    context = build_session_context(after)
    assert len(context.messages) == 1 and context.messages[0]["providerPayload"]
    assert valid_pairing(context.messages)
    assert context_size(after, "musepi") < context_size(session, "musepi")
    ((_, body),) = server.requests
    history = result.preserve_data["openaiRemoteCompaction"]["replacementHistory"]
    assert history == stub_history(body["input"])


@pytest.mark.corpus
@pytest.mark.parametrize("parts", PI_FIXTURES, ids=lambda p: "/".join(p[1:]))
def test_acceptance_custom_endpoint_pi_profile_on_pi_corpus(server, parts):
    session = read_session(corpus_file(*parts))
    result = compact(
        session,
        "remote",
        settings=CompactionSettings.pi(),
        endpoint=f"{server.root_url}/compact",
    )
    assert result is not None and result.method == "remote"
    after = result.apply(session)
    assert valid_pairing(build_session_context(after, profile="pi").messages)
    assert context_size(after, "pi") < context_size(session, "pi")
    assert {p for p, _ in server.requests} == {"/compact"}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_acceptance_on_bundled_sample(server, path):
    session = read_session(path)
    result = compact(session, "remote", summarizer=summarizer(server))
    assert result is not None
    after = result.apply(session)
    assert valid_pairing(build_session_context(after).messages)
    assert context_size(after, "musepi") < context_size(session, "musepi")

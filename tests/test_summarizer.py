"""The OpenAI-compatible summarizer against a real HTTP server on loopback."""

from __future__ import annotations

import pytest

from musepi_lab.llm import (
    OpenAICompatibleSummarizer,
    SummarizerError,
    SummarizerNotConfigured,
    SummaryRequest,
)
from musepi_lab.testing import Failure, StubOpenAIServer

REQUEST = SummaryRequest(
    system_prompt="SYS", prompt="<conversation>\nhi\n</conversation>", max_tokens=13107
)


@pytest.fixture
def server():
    with StubOpenAIServer() as srv:
        yield srv


def make(server, tmp_path=None, **kw):
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatibleSummarizer(
        model="m1", base_url=server.base_url, api_key="sk-test-not-real", **kw
    )


def test_request_shape(server):
    out = make(server).summarize(REQUEST)
    assert out.text.startswith("## Goal\nStub summary ")
    assert out.model == "m1" and out.stop_reason == "stop" and not out.cached
    assert out.input_tokens > 0 and out.output_tokens > 0
    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "m1"
    assert body["max_tokens"] == 13107
    assert body["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "<conversation>\nhi\n</conversation>"},
    ]
    assert "reasoning_effort" not in body


def test_reasoning_effort_only_for_reasoning_models(server):
    req = SummaryRequest("S", "P", 100, reasoning_effort="high")
    make(server).summarize(req)
    make(server, supports_reasoning=True).summarize(req)
    assert "reasoning_effort" not in server.requests[0][1]
    assert server.requests[1][1]["reasoning_effort"] == "high"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_on_429_and_5xx(server, status):
    delays = []
    server.fail_next(Failure(status), Failure(status))
    s = make(server, sleep=delays.append, backoff_s=0.25)
    out = s.summarize(REQUEST)
    assert out.text.startswith("## Goal")
    assert len(server.requests) == 3
    assert delays == [0.25, 0.5]


def test_retry_after_header_wins(server):
    delays = []
    server.fail_next(Failure(429, retry_after="2"))
    make(server, sleep=delays.append).summarize(REQUEST)
    assert delays == [2.0]


def test_gives_up_after_max_retries(server):
    server.fail_next(*[Failure(500)] * 3)
    with pytest.raises(SummarizerError, match="after 3 attempts"):
        make(server, max_retries=2).summarize(REQUEST)
    assert len(server.requests) == 3


def test_client_error_is_not_retried(server):
    server.fail_next(Failure(400))
    with pytest.raises(SummarizerError, match="HTTP 400"):
        make(server).summarize(REQUEST)
    assert len(server.requests) == 1


def test_timeout_is_retried(server):
    server.fail_next(Failure(status=200, delay_s=1.0))
    s = make(server, timeout_s=0.2)
    out = s.summarize(REQUEST)
    assert out.text.startswith("## Goal")
    assert s.requests_sent == 2


def test_disk_cache_second_run_sends_nothing(server, tmp_path):
    first = make(server, cache_dir=tmp_path).summarize(REQUEST)
    again = make(server, cache_dir=tmp_path).summarize(REQUEST)
    assert len(server.requests) == 1
    assert again.cached and again.text == first.text
    other = SummaryRequest("SYS", "different", 13107)
    make(server, cache_dir=tmp_path).summarize(other)
    assert len(server.requests) == 2


def test_key_never_in_cache_or_repr(server, tmp_path):
    s = make(server, cache_dir=tmp_path)
    s.summarize(REQUEST)
    assert "sk-test-not-real" not in repr(s)
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert b"sk-test-not-real" not in f.read_bytes()


def test_not_configured(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SummarizerNotConfigured, match="OPENAI_BASE_URL"):
        OpenAICompatibleSummarizer()


def test_endpoint_from_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MUSEPI_LAB_MODEL", "env-model")
    s = OpenAICompatibleSummarizer(sleep=lambda _: None)
    s.summarize(REQUEST)
    assert server.requests[0][1]["model"] == "env-model"

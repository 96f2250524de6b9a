"""The model-call seam under faults (issue 13 items 3, 4, 6, 7, 8), over real HTTP on
127.0.0.1: every lane (chat summaries, the custom endpoint, the Responses compact lane)
goes through one client, one error type, one redaction, one disk cache.

Each fault below is served by `StubOpenAIServer`; what counts as a failure comes from the
issue (an answer with no text is not a summary, a key must not reach a message) and from
the Chat Completions / Responses wire formats, not from our own code's output.
"""

from __future__ import annotations

import io
import math
import pickle
import re
import time
import traceback
import types
from typing import Any

import pytest
from _builders import Chain, stub_server_fixtures, words

from musepi_lab.bench._run import run_benchmark
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.llm import (
    ModelCallError,
    OpenAICompatibleSummarizer,
    SummarizerError,
    SummaryRequest,
)
from musepi_lab.llm._cache import DiskCache
from musepi_lab.llm._client import parse_retry_after
from musepi_lab.llm._errors import redact
from musepi_lab.llm._types import request_key
from musepi_lab.strategies import compact
from musepi_lab.strategies._remote import RemoteEndpointSummarizer
from musepi_lab.testing import Failure, StubOpenAIServer, chat_completion

SECRET = "sk-seam-SECRET-0123456789abcdef"
REQUEST = SummaryRequest("SYS", "<conversation>\nhi\n</conversation>", 1000)


def summary_text(body: dict[str, Any]) -> str:
    return "## Goal\nSEAM SUMMARY"


shared_server, server = stub_server_fixtures(summary_text)


def chat(server: StubOpenAIServer, **kw: Any) -> OpenAICompatibleSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET, **kw)


def endpoint(server: StubOpenAIServer, **kw: Any) -> RemoteEndpointSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return RemoteEndpointSummarizer(f"{server.root_url}/compact", **kw)


def chain() -> Chain:
    c = Chain("seam")
    c.user("Fix the parser")
    c.assistant("Reading it.", calls=(("c1", "read", {"path": "src/parse.py"}),))
    c.result("c1", "def parse(): pass")
    c.assistant("Done.")
    c.user(words(300, "k"))
    c.assistant("Sure.")
    return c


def musepi(**kw: Any) -> CompactionSettings:
    kw.setdefault("keep_recent_tokens", 100)
    return CompactionSettings.for_profile("musepi", **kw)


def files_in(folder) -> list:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


# -- answers with no usable text (issue 13 item 3) ------------------------------------------------
UNUSABLE_CHAT_ANSWERS = {
    "empty choices": {**chat_completion("x"), "choices": []},
    "null content": chat_completion(None),
    "empty content": chat_completion(""),
    "refusal": chat_completion(None, refusal="I can't help with that."),
    "content filter": chat_completion("partial", finish_reason="content_filter"),
    "error body": {"error": {"message": "upstream exploded", "type": "server_error"}},
}


@pytest.mark.parametrize("body", UNUSABLE_CHAT_ANSWERS.values(), ids=UNUSABLE_CHAT_ANSWERS.keys())
def test_unusable_chat_answer_is_an_error_never_cached(server, tmp_path, body):
    server.fail_next(Failure(200, body=body))
    s = chat(server, cache_dir=tmp_path / "cache")
    with pytest.raises(SummarizerError) as caught:
        s.summarize(REQUEST)
    assert f"{server.base_url}/chat/completions" in str(caught.value)
    assert len(server.requests) == 1  # a 200 does not allow a retry
    assert files_in(tmp_path / "cache") == []
    # The next run asks again and gets a real summary.
    assert s.summarize(REQUEST).text == "## Goal\nSEAM SUMMARY"
    assert len(server.requests) == 2


@pytest.mark.parametrize("body", UNUSABLE_CHAT_ANSWERS.values(), ids=UNUSABLE_CHAT_ANSWERS.keys())
def test_unusable_answer_is_never_applied_as_a_summary(server, body):
    server.fail_next(Failure(200, body=body))
    with pytest.raises(SummarizerError):
        compact(chain().session(), "llm-summary", settings=musepi(), summarizer=chat(server))


@pytest.mark.parametrize("code", [503, "429"])
def test_error_body_with_a_retryable_status_is_retried(server, code):
    server.fail_next(Failure(200, body={"error": {"message": "busy", "code": code}}))
    delays: list[float] = []
    out = chat(server, sleep=delays.append, backoff_s=0.25).summarize(REQUEST)
    assert out.text == "## Goal\nSEAM SUMMARY"
    assert len(server.requests) == 2 and delays == [0.25]


def test_error_body_with_a_client_status_is_not_retried(server):
    server.fail_next(Failure(200, body={"error": {"message": "bad model", "code": 400}}))
    with pytest.raises(SummarizerError, match="error body: bad model"):
        chat(server).summarize(REQUEST)
    assert len(server.requests) == 1


def test_custom_endpoint_error_body_and_empty_summary(server, tmp_path):
    for body in ({"error": "quota exceeded"}, {"summary": None}, {"summary": "  "}):
        server.fail_next(Failure(200, body=body))
        with pytest.raises(SummarizerError, match=re.escape(f"{server.root_url}/compact")):
            endpoint(server, cache_dir=tmp_path).summarize(REQUEST)
    assert files_in(tmp_path) == []


def test_responses_compact_without_compaction_item_is_not_cached(server, tmp_path):
    server.fail_next(Failure(200, body={"output": [{"role": "user", "content": "hi"}]}))
    s = chat(server, cache_dir=tmp_path)
    with pytest.raises(SummarizerError, match=r"responses/compact failed: .*no compaction item"):
        compact(chain().session(), "remote", settings=musepi(), summarizer=s)
    assert files_in(tmp_path) == []


# -- the Responses compact lane goes through the cache (issue 9) ----------------------------------
def test_responses_compact_rerun_never_pays_twice(server, tmp_path):
    session = chain().session()
    first = compact(
        session, "remote", settings=musepi(), summarizer=chat(server, cache_dir=tmp_path)
    )
    again = compact(
        session, "remote", settings=musepi(), summarizer=chat(server, cache_dir=tmp_path)
    )
    assert [p for p, _ in server.requests] == ["/v1/responses/compact"]
    assert again.preserve_data == first.preserve_data
    assert again.params["summarizer_requests"] == 0 and again.params["summarizer_cached"] == 1
    for path in files_in(tmp_path):
        assert SECRET.encode() not in path.read_bytes()


# -- Retry-After values (issue 13 item 6) ---------------------------------------------------------
@pytest.mark.parametrize("value", ["-5", "nan", "garbage", "inf", "-inf", "1e400", ""])
def test_odd_retry_after_never_raises_with_the_real_sleep(server, value):
    # Before: `time.sleep(-5)` / `time.sleep(nan)` raised a raw ValueError.
    server.fail_next(Failure(429, retry_after=value))
    started = time.perf_counter()
    s = OpenAICompatibleSummarizer(
        model="m1", base_url=server.base_url, api_key=SECRET, backoff_s=0.01
    )
    assert s.summarize(REQUEST).text == "## Goal\nSEAM SUMMARY"
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        ("-5", 0.0),
        ("120", 60.0),
        ("nan", None),
        ("inf", None),
        ("1e400", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),
    ],
)
def test_parse_retry_after(value, expected):
    now = 1445412480.0  # 2015-10-21 07:28:00 UTC
    assert parse_retry_after(value, now=now) == expected


def test_retry_after_clamp_reaches_the_sleep(server):
    server.fail_next(Failure(503, retry_after="-5"), Failure(429, retry_after="nan"))
    delays: list[float] = []
    chat(server, sleep=delays.append, backoff_s=0.25).summarize(REQUEST)
    assert delays == [0.0, 0.5]  # clamped to 0; NaN ignored: the second backoff step
    assert all(math.isfinite(d) and d >= 0 for d in delays)


# -- bodies that are not JSON objects (issue 13 item 7) -------------------------------------------
NOT_JSON = {
    "malformed json": Failure(200, raw=b'{"choices": [', content_type="application/json"),
    "html": Failure(200, raw=b"<html><body>Gateway login</body></html>", content_type="text/html"),
    "json list": Failure(200, body=[1, 2, 3]),
    "empty body": Failure(200, raw=b""),
}


@pytest.mark.parametrize("failure", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_non_json_answer_is_wrapped_and_names_the_url(server, failure):
    for make, route in ((chat, "/v1/chat/completions"), (endpoint, "/compact")):
        server.requests.clear()
        server.fail_next(failure)
        with pytest.raises(ModelCallError) as caught:
            make(server).summarize(REQUEST)
        assert f"{server.root_url}{route}" in str(caught.value)
        assert caught.value.status == 200
        # Not retried: a 200 that is not JSON comes from a misconfigured URL or proxy,
        # which another attempt does not fix.
        assert len(server.requests) == 1


def test_connection_refused_is_the_one_error_type():
    with StubOpenAIServer() as gone:
        url = gone.base_url
    s = OpenAICompatibleSummarizer(
        model="m1", base_url=url, api_key=SECRET, max_retries=1, sleep=lambda _: None
    )
    with pytest.raises(ModelCallError, match="after 2 attempts: connection failed"):
        s.summarize(REQUEST)


# -- keys never in messages (issue 13 item 4) -----------------------------------------------------
def error_text(exc: BaseException) -> str:
    """Everything a traceback of `exc` would print, chained causes included."""
    return "".join(traceback.format_exception(exc))


def test_key_echoed_in_a_401_body_is_redacted_chat_lane(server):
    server.fail_next(Failure(401, echo_auth=True))
    with pytest.raises(SummarizerError) as caught:
        chat(server).summarize(REQUEST)
    assert server.request_headers[-1]["authorization"] == f"Bearer {SECRET}"  # the echo is real
    assert "HTTP 401" in str(caught.value) and "Incorrect API key" in str(caught.value)
    assert SECRET not in str(caught.value) and SECRET not in error_text(caught.value)


def test_key_echoed_in_a_401_body_is_redacted_other_lanes(server, monkeypatch):
    monkeypatch.setenv("MUSEPI_LAB_REMOTE_API_KEY", SECRET)
    server.fail_next(Failure(401, echo_auth=True))
    with pytest.raises(SummarizerError) as caught:
        endpoint(server).summarize(REQUEST)
    assert SECRET not in error_text(caught.value)
    server.fail_next(Failure(401, echo_auth=True))
    with pytest.raises(SummarizerError) as caught:
        compact(chain().session(), "remote", settings=musepi(), summarizer=chat(server))
    assert "HTTP 401" in str(caught.value) and SECRET not in error_text(caught.value)


def test_key_in_an_error_body_of_a_200_is_redacted(server):
    server.fail_next(Failure(200, body={"error": {"message": f"key {SECRET} has no quota"}}))
    with pytest.raises(SummarizerError) as caught:
        chat(server).summarize(REQUEST)
    assert SECRET not in error_text(caught.value) and "[REDACTED]" in str(caught.value)


def test_errors_survive_pickling_redacted(server):
    server.fail_next(Failure(401, echo_auth=True))
    with pytest.raises(ModelCallError) as caught:
        chat(server).summarize(REQUEST)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is ModelCallError and str(copy) == str(caught.value)
    assert copy.status == 401 and copy.endpoint == f"{server.base_url}/chat/completions"


def test_errors_carry_no_client_exception_even_where_pickling_keeps_chains(server):
    # dask's workers pickle exceptions with their chains (tblib): the client's exception,
    # whose body here echoes the key, must not be in the chain to be carried (nor to fail
    # unpickling, as openai's errors do).
    pickling_support = pytest.importorskip("tblib.pickling_support")
    server.fail_next(Failure(401, echo_auth=True))
    with pytest.raises(ModelCallError) as caught:
        chat(server).summarize(REQUEST)
    error = caught.value
    assert error.__cause__ is None and error.__context__ is None
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = {
        ModelCallError: pickling_support.pickle_exception,
        types.TracebackType: pickling_support.pickle_traceback,
    }
    pickler.dump(error)
    assert SECRET.encode() not in buffer.getvalue()
    copy = pickle.loads(buffer.getvalue())
    assert type(copy) is ModelCallError and str(copy) == str(error) and copy.status == 401


def test_custom_endpoint_gets_no_key_it_was_not_given(server, monkeypatch):
    # The openai client would read OPENAI_API_KEY itself; a third-party endpoint must not.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("MUSEPI_LAB_REMOTE_API_KEY", raising=False)
    endpoint(server).summarize(REQUEST)
    assert "authorization" not in server.request_headers[-1]


def test_redact_shapes():
    assert redact("key abc123secret!", ["abc123secret"]) == "key [REDACTED]!"
    assert redact("Authorization: Bearer tok.en-1") == "Authorization: Bearer [REDACTED]"
    assert redact("bad sk-proj-ABCDEFGH12345678 here") == "bad [REDACTED] here"
    assert redact("http://h/v1?api_key=zzz&x=1") == "http://h/v1?api_key=[REDACTED]&x=1"
    assert redact("nothing secret") == "nothing secret"


# -- summarizers carry configuration, not connections (issue 13 item 8) ---------------------------
def test_summarizers_pickle_after_a_request(server, tmp_path):
    for s in (
        OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET),
        RemoteEndpointSummarizer(f"{server.root_url}/compact", cache_dir=tmp_path),
    ):
        s.summarize(REQUEST)  # opens the connection
        copy = pickle.loads(pickle.dumps(s))
        assert copy.summarize(REQUEST).text == "## Goal\nSEAM SUMMARY"
        assert copy.identity == s.identity


# -- the disk cache ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [
        b"[1, 2, 3]",
        b'"just a string"',
        b"{}",
        b'{"input_tokens": 3}',
        b'{"text": 42}',
        b'{"text": "", "stop_reason": "stop"}',
        b'{"text": "ok", "input_tokens": "many"}',
        b'{"text": "ok", "stop_reason": "error"}',
        b"{not json",
    ],
)
def test_wrong_shaped_cache_file_is_a_miss(server, tmp_path, content):
    s = chat(server, cache_dir=tmp_path)
    key = request_key(s.identity, REQUEST)
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    out = s.summarize(REQUEST)  # before: TypeError from SummaryResponse(**data)
    assert not out.cached and len(server.requests) == 1
    assert DiskCache(tmp_path).get(key).text == "## Goal\nSEAM SUMMARY"  # repaired


def test_responses_cache_file_of_wrong_shape_is_a_miss(server, tmp_path):
    session = chain().session()
    compact(session, "remote", settings=musepi(), summarizer=chat(server, cache_dir=tmp_path))
    (stored,) = files_in(tmp_path)
    stored.write_bytes(b'{"output": "not a list"}')
    again = compact(
        session, "remote", settings=musepi(), summarizer=chat(server, cache_dir=tmp_path)
    )
    assert len(server.requests) == 2 and again.params["summarizer_cached"] == 0


# -- through run_benchmark -----------------------------------------------------------------------
def session_file(tmp_path):
    path = tmp_path / "seam.jsonl"
    chain().session().write(path)
    return path


def test_run_benchmark_default_process_pool_with_an_llm_strategy(server, tmp_path):
    # Before: the summarizer held an open client after its first request, and the default
    # process pool never finished (killed after 120 s here; the issue saw a TypeError).
    s = OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET)
    s.summarize(REQUEST)
    pickle.loads(pickle.dumps(s))  # a regression fails here rather than hanging the pool
    # Two cells: with one, run_benchmark runs inline and nothing is pickled.
    df = run_benchmark(
        [session_file(tmp_path)], ["llm-summary"], [100, 120], summarizer=s, progress=False
    )
    assert len(df) == 2 and df["error"].isna().all(), df["error"].tolist()
    assert (df["summarizer_input_tokens"] > 0).all()
    assert sum(p.endswith("/chat/completions") for p, _ in server.requests) >= 2


def test_run_benchmark_error_column_never_holds_the_key(server, tmp_path):
    server.fail_next(*[Failure(401, echo_auth=True)] * 4)
    s = OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET)
    df = run_benchmark(
        [session_file(tmp_path)],
        ["llm-summary", "remote"],
        [100],
        summarizer=s,
        executor="serial",
        progress=False,
        cache_dir=tmp_path / "cells",
    )
    errors = df["error"].dropna().tolist()
    assert len(errors) == 2 and all("HTTP 401" in e for e in errors)
    assert not any(SECRET in e for e in errors)
    for path in files_in(tmp_path / "cells"):
        assert SECRET.encode() not in path.read_bytes()


def test_one_error_type_under_both_names():
    import musepi_lab.llm as llm

    assert SummarizerError is ModelCallError is llm.SummarizerError
    assert issubclass(ModelCallError, RuntimeError)


def test_max_output_tokens_caps_each_request_and_is_part_of_the_identity() -> None:
    from musepi_lab.llm import OpenAICompatibleSummarizer, SummaryRequest

    with StubOpenAIServer() as stub:
        capped = OpenAICompatibleSummarizer(base_url=stub.base_url, max_output_tokens=48)
        plain = OpenAICompatibleSummarizer(base_url=stub.base_url)
        for model in (capped, plain):
            for asked in (16, 800):
                model.summarize(SummaryRequest(system_prompt="s", prompt="p", max_tokens=asked))
        assert [b["max_tokens"] for _, b in stub.requests] == [16, 48, 16, 800]
    assert capped.identity["max_output_tokens"] == 48
    assert "max_output_tokens" not in plain.identity  # caches made before the cap still hit

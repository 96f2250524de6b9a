"""API keys echoed by an endpoint never reach a file (issue 26, item 7), against a real
OpenAI-compatible HTTP server on loopback.

An endpoint that echoes the key across character 300 of its error body must not leave any
piece of it in the bench `error` column of `results.parquet` and `results.csv` (the body is
redacted before it is cut); a key echoed inside a successful answer must not reach the
summarizer's disk cache. The key is not shaped like one (no `sk-`), so only the configured
key's own text can find it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musepi_lab.bench import run_benchmark, write_benchmark
from musepi_lab.llm import OpenAICompatibleSummarizer, SummaryRequest
from musepi_lab.testing import Failure, StubOpenAIServer, chat_completion

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "datasets" / "sample" / "sample-0001.jsonl"
KEY = "musepi-lab-test-key-9f3c1a7be2d84c06b5e1f0a3d9c7e2b4"


def pieces(key: str, size: int = 8) -> list[str]:
    return [key[i : i + size] for i in range(len(key) - size + 1)]


def leaked(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    return [p for p in pieces(KEY) if p in text]


def echoing_body(status: int) -> Failure:
    """An error body whose text holds the key across its character 300."""
    padding = "x" * (300 - len('{"error": {"message": "') - 20)
    message = f"{padding} key {KEY} is not valid"
    raw = json.dumps({"error": {"message": message}}).encode()
    assert raw.decode().index(KEY) < 300 < raw.decode().index(KEY) + len(KEY)
    return Failure(status, raw=raw)


@pytest.mark.parametrize("status", [401, 200], ids=["http-401", "error-body-200"])
def test_a_key_echoed_across_the_cut_of_an_error_body_stays_out_of_the_results(
    tmp_path: Path, status: int
) -> None:
    with StubOpenAIServer() as server:
        server.fail_next(*[echoing_body(status)] * 10)
        summarizer = OpenAICompatibleSummarizer(
            model="m1", base_url=server.base_url, api_key=KEY, max_retries=0
        )
        df = run_benchmark(
            [SESSION],
            ["llm-summary"],
            [4000],
            summarizer=summarizer,
            executor="serial",
            progress=False,
        )
    (error,) = df["error"].tolist()
    assert "is not valid" in error or "xxxx" in error  # the body's text is there, cut
    out = write_benchmark(df, tmp_path / "run")
    for name in ("results.parquet", "results.csv", "config.json"):
        assert leaked((out / name).read_bytes()) == [], name


def test_a_key_echoed_in_a_successful_answer_is_not_cached(tmp_path: Path) -> None:
    cache = tmp_path / "summaries"
    with StubOpenAIServer(responder=lambda body: f"## Goal\nThe key is {KEY}.") as server:
        summarizer = OpenAICompatibleSummarizer(
            model="m1", base_url=server.base_url, api_key=KEY, cache_dir=cache
        )
        answer = summarizer.summarize(SummaryRequest("SYS", "<conversation>hi</conversation>", 99))
        again = summarizer.summarize(SummaryRequest("SYS", "<conversation>hi</conversation>", 99))
        # The Responses compact lane caches the raw answer: the same rule.
        item = {"type": "compaction", "encrypted_content": KEY}
        server.fail_next(Failure(200, body={**chat_completion("x"), "output": [item]}))
        summarizer.responses_compact([{"role": "user", "content": "hi"}])
    files = [f for f in cache.rglob("*") if f.is_file()]
    assert len(files) == 2
    for f in files:
        assert leaked(f.read_bytes()) == [], f
    assert KEY not in answer.text and again.cached and again.text == answer.text
    assert answer.text.startswith("## Goal\nThe key is ")

"""`compact()` measures every strategy on equal terms (issue 4: same inputs, same fields)."""

from __future__ import annotations

import base64
import dataclasses
import io
import math
from pathlib import Path
from typing import Any

import pytest
from _builders import Chain, stub_server_fixtures
from _corpus import PI_FILES, corpus_file
from PIL import Image

import musepi_lab as ml
from musepi_lab.compaction import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.strategies import available
from musepi_lab.strategies._base import strategy_type
from musepi_lab.tokens import TokenCounter
from musepi_lab.tokens._estimate import js_stringify

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0002.jsonl"
MODEL_FREE = ("none", "truncate", "observation-masking", "extractive", "snapcompact", "hybrid")


@pytest.fixture(scope="module")
def session():
    return ml.read_session(SAMPLE)


@pytest.mark.parametrize("name", MODEL_FREE)
def test_same_fields_for_every_strategy(session, name):
    counter = TokenCounter("musepi")
    params = {"summary": "extractive", "target_tokens": 5000} if name == "hybrid" else {}
    result = ml.compact(session, name, counter=counter, **params)
    # The context before is the rebuilt context at the leaf, counted with the same counter.
    expected_before = counter.count_messages(build_session_context(session).messages)
    assert result.context_tokens_before == expected_before
    assert result.tokens_after is not None and result.tokens_after <= expected_before
    assert result.strategy == name and result.params["prompts"].startswith("default@")
    assert result.latency_s >= 0
    records_before = [dict(e.record) for e in session.entries]
    result.apply(session)
    assert [dict(e.record) for e in session.entries] == records_before  # input untouched
    if name == "none":
        assert result.tokens_after == expected_before
    else:
        assert result.tokens_after < expected_before


# -- one measurement for every strategy (issue 10 item 1) ----------------------------------
# `tokens_after` is recomputed here without `strategies/_context_size`: the compacted session
# is rebuilt, its text counted with the run's counter, provider-native history as its JSON
# text, and every image billed by the spec's per-family rule (§6.2) on the pixel size PIL
# reads from the image itself.


def _billed(model_id: str, side: int) -> int:
    if any(k in model_id for k in ("gpt", "codex", "openai", "o3", "o4")):
        return math.ceil(min(math.ceil(side / 32) ** 2, 10000) * 1.2)
    if "gemini" in model_id:
        return 1120
    return math.ceil(min(math.ceil(side / 28) ** 2, 4784) * 1.05)


def _independent_tokens(session, leaf_id, counter: TokenCounter) -> int:
    context = build_session_context(session, leaf_id) if leaf_id else build_session_context(session)
    model_id = (context.model or {}).get("modelId", "")
    total = 0
    for message in context.messages:
        text_only = dict(message)
        for key in ("content", "blocks"):
            blocks = message.get(key)
            if not isinstance(blocks, list):
                continue
            text_only[key] = [b for b in blocks if b.get("type") != "image"]
            for block in blocks:
                if block.get("type") == "image":
                    with Image.open(io.BytesIO(base64.b64decode(block["data"]))) as image:
                        total += _billed(model_id, max(image.size))
        total += counter.count_message(text_only)
        payload = message.get("providerPayload")
        if isinstance(payload, dict) and isinstance(payload.get("items"), list):
            total += counter.count_text(js_stringify(payload["items"]))
    return total


def _summary_reply(body: dict[str, Any]) -> str:
    return "## Goal\nContinue the work.\n## Progress\nSummarized by the stub."


shared_server, server = stub_server_fixtures(_summary_reply)

MEASURED_SESSIONS = [
    pytest.param(lambda parts=parts: corpus_file(*parts), id="/".join(parts)) for parts in PI_FILES
] + [pytest.param(lambda: SAMPLE, id="sample")]


@pytest.fixture(scope="module")
def measured_counter() -> TokenCounter:
    return TokenCounter("musepi")


# Every built-in strategy (other test modules register strategies of their own).
BUILT_IN = [n for n in available() if strategy_type(n).__module__.startswith("musepi_lab.")]


@pytest.mark.parametrize("source", MEASURED_SESSIONS)
@pytest.mark.parametrize("name", BUILT_IN)
def test_tokens_after_is_the_rebuilt_context_for_every_strategy(
    name, source, server, measured_counter
):
    session = _read_cached(source())
    summarizer = OpenAICompatibleSummarizer(base_url=server.base_url, model="gpt-4o")
    settings = CompactionSettings.musepi()
    settings = dataclasses.replace(settings, keep_recent_tokens=4000)
    try:
        result = ml.compact(session, name, settings=settings, summarizer=summarizer)
    except ml.strategies.StrategyUnavailable as err:
        pytest.skip(f"{name} cannot run here: {err}")
    if result is None:
        pytest.skip(f"{name} has nothing to do on this session")
    after = result.apply(session)
    leaf = None if result.append_entry else result.leaf_id
    assert result.tokens_after == _independent_tokens(after, leaf, measured_counter)
    assert result.context_tokens_before == _independent_tokens(
        session, result.leaf_id, measured_counter
    )


_SESSIONS: dict[Path, Any] = {}


def _read_cached(path: Path):
    if path not in _SESSIONS:
        _SESSIONS[path] = ml.read_session(path)
    return _SESSIONS[path]


def _png_b64(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("1", (width, height), 1).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize(
    ("model", "data", "expected_image_tokens"),
    [
        # Anthropic: ceil(min(ceil(320 / 28)^2, 4784) * 1.05) = ceil(144 * 1.05) = 152.
        ("claude-sonnet-4-5", _png_b64(320, 100), 152),
        # OpenAI: ceil(min(ceil(320 / 32)^2, 10000) * 1.2) = ceil(100 * 1.2) = 120.
        ("gpt-4o", _png_b64(320, 100), 120),
        # Not a PNG: the size is unknown, so the declared per-image estimate, 1200.
        ("claude-sonnet-4-5", base64.b64encode(b"\xff\xd8\xff\xe0 jpeg").decode(), 1200),
    ],
)
def test_a_pasted_image_is_billed_by_the_models_family(model, data, expected_image_tokens):
    chain = Chain("img", assistant_fields={"provider": "x", "model": model})
    chain.user("look at this")
    chain.assistant("ok")
    chain.msg(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "the screenshot"},
                {"type": "image", "data": data, "mimeType": "image/png"},
            ],
        }
    )
    chain.assistant("seen")
    session = chain.session()
    counter = TokenCounter("musepi")
    result = ml.compact(session, "none", counter=counter)
    messages = build_session_context(session).messages
    text_only = [
        {**m, "content": [b for b in m["content"] if b.get("type") != "image"]}
        if isinstance(m.get("content"), list)
        else m
        for m in messages
    ]
    expected = counter.count_messages(text_only) + expected_image_tokens
    assert result.context_tokens_before == result.tokens_after == expected

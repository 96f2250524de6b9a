"""`compact()` measures every strategy on equal terms (issue 4: same inputs, same fields)."""

from __future__ import annotations

import base64
import dataclasses
import io
import math
from pathlib import Path
from typing import Any

import pytest
from _builders import Chain, stub_server_fixtures, words
from _corpus import PI_FILES, corpus_file
from PIL import Image

import musepi_lab as ml
from musepi_lab.compaction import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.session import Session
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


def oversized_output_session() -> Session:
    """A session every built-in strategy has work on: fourteen read steps after a recorded
    compaction, then one build log of about 118k tokens (musepi estimate) as the newest tool
    result: above half of the request room of a 200k window, where `oversized-output` cuts
    (none of the corpus sessions holds such an output)."""
    chain = Chain(
        "oversized-output", assistant_fields={"provider": "anthropic", "model": "claude-sonnet-4-5"}
    )
    chain.user("Find why the build fails.")
    for i in range(14):
        chain.assistant(f"Reading part {i}.", calls=((f"c{i}", "read", {"path": f"src/m{i}.py"}),))
        lines = (f"def f{i}_{j}(): return {j}  # " + words(12) for j in range(90))
        chain.result(f"c{i}", "\n".join(lines))
        step = chain.user(f"Go on with step {i}.")
        if i == 1:
            summary = "## Goal\nFind why the build fails.\n## Progress\nRead two modules."
            chain.add("compaction", summary=summary, firstKeptEntryId=step, tokensBefore=6000)
    chain.assistant("Reading the build log.", calls=(("log", "bash", {"command": "make"}),))
    log = (f"[{j:06d}] cc -c src/x{j}.c -o x{j}.o " + words(20, "b") for j in range(4000))
    chain.result("log", "\n".join(log), name="bash")
    chain.assistant("The log is long; the error is at the end.")
    chain.user("Summarize what failed.")
    return chain.session()


MEASURED_SESSIONS = [
    pytest.param(lambda parts=parts: corpus_file(*parts), id="/".join(parts)) for parts in PI_FILES
] + [
    pytest.param(lambda: SAMPLE, id="sample"),
    pytest.param(oversized_output_session, id="synthetic-oversized-output"),
]


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
    result = _measured_compact(session, name, server)
    if isinstance(result, str):
        pytest.skip(result)
    after = result.apply(session)
    leaf = None if result.append_entry else result.leaf_id
    assert result.tokens_after == _independent_tokens(after, leaf, measured_counter)
    assert result.context_tokens_before == _independent_tokens(
        session, result.leaf_id, measured_counter
    )


def _measured_compact(session: Session, name: str, server: Any) -> Any:
    """The strategy's result under the measured settings, or why it did not run (a str)."""
    summarizer = OpenAICompatibleSummarizer(base_url=server.base_url, model="gpt-4o")
    settings = CompactionSettings.musepi()
    settings = dataclasses.replace(settings, keep_recent_tokens=4000)
    try:
        result = ml.compact(session, name, settings=settings, summarizer=summarizer)
    except ml.strategies.StrategyUnavailable as err:
        return f"{name} cannot run here: {err}"
    return f"{name} has nothing to do on this session" if result is None else result


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_strategy_is_measured_on_some_session(name, server):
    """The measure above skips a strategy on a session where it has nothing to do; a strategy
    skipped on every session would pass unmeasured. So each must run on at least one of the
    sessions that are always there (the sample, the synthetic one), whatever the corpus."""
    why = []
    for source in (lambda: SAMPLE, oversized_output_session):
        outcome = _measured_compact(_read_cached(source()), name, server)
        if not isinstance(outcome, str):
            return
        why.append(outcome)
    pytest.fail(f"{name} is measured on no session: {why}")


_SESSIONS: dict[Any, Any] = {}


def _read_cached(source: Path | Session):
    if isinstance(source, Session):
        return source
    if source not in _SESSIONS:
        _SESSIONS[source] = ml.read_session(source)
    return _SESSIONS[source]


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

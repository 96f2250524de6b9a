"""`compact()` measures every strategy on equal terms (issue 4: same inputs, same fields)."""

from __future__ import annotations

from pathlib import Path

import pytest

import musepi_lab as ml
from musepi_lab.context._build import build_session_context
from musepi_lab.tokens import TokenCounter

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

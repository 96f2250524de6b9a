"""Metrics on hand-built inputs whose answers are known."""

from __future__ import annotations

import pytest

from musepi_lab.metrics import (
    Fact,
    context_text,
    extract_facts,
    fact_retention,
    instruction_survival,
    token_reduction,
    tool_pairing_valid,
)
from musepi_lab.metrics._metrics import (
    cache_prefix_kept,
    cache_prefix_tokens,
    decay_curve,
    retention_by_kind,
    summarizer_cost,
    tool_pairing_problems,
)
from musepi_lab.tokens import TokenCounter


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def call(cid, name, **args):
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
    }


def result(cid, text, is_error=False):
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }


def test_token_reduction():
    assert token_reduction(1000, 250) == 0.75
    assert token_reduction(0, 10) == 0.0
    assert token_reduction(100, 120) == pytest.approx(-0.2)


def test_fact_retention_counts_exact_substrings():
    facts = [
        Fact("src/a/b.py", "path"),
        Fact("compute_tax_rate", "identifier"),
        Fact("ValueError: x", "error"),
        Fact("pytest -k t", "command"),
    ]
    ctx = "we edited src/a/b.py and compute_tax_rate\nran pytest -k t"
    assert fact_retention(facts, ctx) == 0.75
    assert fact_retention([], ctx) == 1.0
    assert retention_by_kind(facts, ctx) == {
        "command": 1.0,
        "error": 0.0,
        "identifier": 1.0,
        "path": 1.0,
    }


def test_extract_facts_kinds():
    msgs = [
        user("Always run ruff before committing.\nFix src/billing/invoice_7f3a.py please"),
        call("c1", "bash", command="pytest tests/test_x.py -k refund -x\necho done"),
        result(
            "c1",
            "collected 3 items\nValueError: negative quantity in compute_invoice_total\nFAILED tests/test_x.py::t",
            True,
        ),
    ]
    facts = {(f.kind, f.text) for f in extract_facts(msgs)}
    assert ("instruction", "Always run ruff before committing.") in facts
    assert ("path", "src/billing/invoice_7f3a.py") in facts
    assert ("command", "pytest tests/test_x.py -k refund -x") in facts
    assert ("error", "ValueError: negative quantity in compute_invoice_total") in facts
    assert ("identifier", "compute_invoice_total") in facts
    assert ("path", "tests/test_x.py") in facts
    # Deduplicated, first appearance wins.
    texts = [f.text for f in extract_facts(msgs + msgs)]
    assert len(texts) == len(set(texts))


def test_context_text_sees_calls_summaries_thinking_and_snapcompact_text_blocks():
    msgs = [
        {
            "role": "compactionSummary",
            "summary": "S1",
            "blocks": [
                {"type": "text", "text": "HEAD"},
                {"type": "image", "data": "PNG1", "mimeType": "image/png"},
            ],
        },
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "THOUGHT"}]},
        call("c", "read", path="x/y.py"),
    ]
    text = context_text(msgs)
    assert "S1" in text and '"path":"x/y.py"' in text
    assert "HEAD" in text and "THOUGHT" in text
    assert "PNG1" not in text  # image bytes are not text


def test_tool_pairing():
    ok = [user("u"), call("a", "bash", command="ls"), result("a", "x")]
    assert tool_pairing_valid(ok)
    assert tool_pairing_valid([user("u"), call("a", "bash", command="ls")])  # unanswered is fine
    orphan = [user("u"), result("zz", "x")]
    assert tool_pairing_problems(orphan) == ["message 1: result for unknown call 'zz'"]
    twice = [*ok, result("a", "y")]
    assert not tool_pairing_valid(twice)


def test_cache_prefix():
    c = TokenCounter("pi")
    a, b, d = user("x" * 400), user("y" * 400), user("z" * 40)
    assert cache_prefix_tokens([a, b], [a, d], c) == 100
    assert cache_prefix_kept([a, b], [a, d], c) == 0.5
    assert cache_prefix_tokens([a, b], [d, b], c) == 0


def test_instruction_survival_and_decay_and_cost():
    assert instruction_survival(["Always use tabs.", "Ship it"], "Always use tabs. more") == 0.5
    assert decay_curve([0.9, 0.7, 0.5]) == {
        "after_1": 0.9,
        "after_2": 0.7,
        "after_3": 0.5,
        "slope": pytest.approx(-0.2),
    }
    assert decay_curve([0.8])["slope"] == 0.0
    assert summarizer_cost(2_000_000, 500_000, {"input": 3.0, "output": 15.0}) == pytest.approx(
        13.5
    )

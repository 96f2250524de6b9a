"""The model-id lookup of the price and window tables (issue 26 item 3): only a table key,
a known alias of one, or a dated snapshot of one matches; anything else is unpriced (and has
no table window), never the price of a shorter id it happens to start with.

Expected figures are the providers' list prices as pi-ai 0.58.3's model table and the
LiteLLM table bundled in ccusage 18.0.11 give them (restated here, not read from our table).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_usage import _pi_file

from musepi_lab.analysis import usage_df
from musepi_lab.analysis._live import live_summary
from musepi_lab.formats import read_session
from musepi_lab.metrics import known_prices, usage_cost
from musepi_lab.metrics._windows import context_window_for

# USD for 1M input + 1M output tokens, by the providers' list prices.
MILLION_IN_AND_OUT = {
    "claude-sonnet-4-5-20250929": 3.0 + 15.0,  # a dated snapshot of claude-sonnet-4-5
    "claude-sonnet-4-20250514": 3.0 + 15.0,
    "claude-opus-4-0": 15.0 + 75.0,  # Anthropic's alias of claude-opus-4-20250514
    "claude-sonnet-4-0": 3.0 + 15.0,
    "claude-3-7-sonnet-latest": 3.0 + 15.0,
    "claude-3-5-haiku-latest": 0.8 + 4.0,
    "claude-haiku-4-5-20251001": 1.0 + 5.0,
    "gpt-5-2025-08-07": 1.25 + 10.0,  # OpenAI's dated snapshot form
    "openai/gpt-5": 1.25 + 10.0,  # a provider prefix
    "gpt-5.1-codex-max": 1.25 + 10.0,  # its own list price (pi-ai, LiteLLM)
    "gpt-5.1-codex-mini": 0.25 + 2.0,
    "anthropic.claude-sonnet-4-5-20250929-v1:0": 3.0 + 15.0,  # Bedrock's form
    "claude-sonnet-4-5@20250929": 3.0 + 15.0,  # Vertex AI's form
}

UNPRICED = (
    "gpt-5-pro",  # $15/$120: the old lookup priced it as gpt-5 ($11.25 for 1M + 1M)
    "gpt-5-codex-mini",
    "claude-sonnet-4-5-anything",
    "gpt-5.5",  # not gpt-5
    "gpt-4o-mini",  # $0.15/$0.60, not gpt-4o's $2.50/$10
    "gemini-2.5-flash-preview-04-17",  # a preview at its own price, not a snapshot
    "claude-opus-4-6-20990101x",
    "gpt-5-",
)


@pytest.mark.parametrize(("model", "dollars"), sorted(MILLION_IN_AND_OUT.items()))
def test_aliases_and_dated_snapshots_are_priced(model: str, dollars: float) -> None:
    prices = known_prices(model)
    assert prices is not None, model
    cost = usage_cost(prices, input=1_000_000, output=1_000_000, cache_read=0, cache_write_5m=0)
    assert cost == pytest.approx(dollars)


@pytest.mark.parametrize("model", UNPRICED)
def test_other_ids_are_unpriced(model: str) -> None:
    assert known_prices(model) is None


@pytest.mark.parametrize(
    ("model", "window"),
    [
        # pi-ai 0.58.3's contextWindow for each id (or, dated, for the id it snapshots)
        ("gpt-5.1-codex", 400_000),
        ("gpt-5.1-codex-mini", 400_000),
        ("gpt-5-pro", 400_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-5-chat-latest", 128_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-opus-4-0", 200_000),
        ("gemini-2.5-flash-lite", 1_048_576),
        ("o3", 200_000),
    ],
)
def test_windows_follow_the_same_rule(model: str, window: int) -> None:
    assert context_window_for(model) == window


@pytest.mark.parametrize("model", ["claude-sonnet-4-5-anything", "gpt-5.5", "gpt-4o-mini-x"])
def test_other_ids_have_no_table_window(model: str) -> None:
    assert context_window_for(model) is None


def test_a_usage_report_flags_a_model_it_used_to_price_by_prefix(tmp_path: Path) -> None:
    path = _pi_file(
        tmp_path / "s.jsonl",
        [
            ("2026-01-01T10:00:00.000Z", "gpt-5", {"input": 1_000_000, "output": 1_000_000}),
            ("2026-01-01T10:01:00.000Z", "gpt-5-pro", {"input": 1_000_000, "output": 1_000_000}),
        ],
    )
    frame = usage_df(path, strict=True)
    assert frame["cost_source"].tolist() == ["priced", "unpriced"]
    assert frame["cost"].iloc[0] == pytest.approx(11.25)
    assert frame.attrs["unpriced_models"] == ["gpt-5-pro"]
    summary = live_summary(read_session(path))
    assert summary.unpriced_models == ("gpt-5-pro",)

"""`compare_strategies` and its `Comparison`, without a widget or a kernel.

Expected values come from the spec's meaning of the strategies (`none` changes nothing,
issue 5: it keeps every fact), from the raw facts file beside the sample (read with plain
`json`), from prices given here, and from `run_benchmark` over the same file (the grid the
comparison must agree with, cell for cell).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from musepi_lab.bench import Comparison, compare_strategies, run_benchmark
from musepi_lab.bench._compare import COMPARISON_COLUMNS
from musepi_lab.bench._score import COLUMNS
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.formats._registry import read_session
from musepi_lab.strategies import _base

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"


@dataclass(frozen=True)
class Billed(_base.Strategy):
    """Test strategy: cuts where the engine cuts and reports a summarizer bill."""

    name: ClassVar[str] = "test-billed"

    def run(self, ctx: _base.CompactionContext) -> CompactionResult | None:
        prep = ctx.preparation
        assert prep is not None
        return CompactionResult.from_preparation(
            prep,
            "billed summary",
            method="billed",
            summarizer_input_tokens=2_000_000,
            summarizer_output_tokens=500_000,
            summarizer_cached_input_tokens=1_000_000,
        )


@dataclass(frozen=True)
class Broken(_base.Strategy):
    name: ClassVar[str] = "test-broken-compare"

    def run(self, ctx: _base.CompactionContext) -> CompactionResult | None:
        raise RuntimeError("deliberately broken")


@pytest.fixture
def test_strategies(monkeypatch):
    for cls in (Billed, Broken):
        monkeypatch.setitem(_base._REGISTRY, cls.name, cls)


@pytest.fixture(scope="module")
def sample2():
    return read_session(SAMPLE / "sample-0002.jsonl")


def test_rows_in_strategy_then_budget_order_with_every_column(sample2):
    seen = []
    comparison = compare_strategies(
        sample2, ["truncate", "none"], [30_000, 8_000, 8_000], on_cell=seen.append
    )
    assert comparison.strategies == ("truncate", "none")
    assert comparison.budgets == (8_000, 30_000)
    keys = [(r["strategy"], r["budget"]) for r in comparison.rows]
    assert keys == [("truncate", 8_000), ("truncate", 30_000), ("none", 8_000), ("none", 30_000)]
    assert len(seen) == 4  # one call per cell
    frame = comparison.frame()
    assert list(frame.columns) == list(COMPARISON_COLUMNS)
    assert set(COMPARISON_COLUMNS) <= set(COLUMNS)  # the benchmark's names, so plots read both
    assert frame["error"].isna().all()
    assert set(frame["session_id"]) == {sample2.id}


def test_none_keeps_everything_and_truncate_loses_facts(sample2):
    comparison = compare_strategies(sample2, ["none", "truncate"], [8_000])
    none, truncate = comparison.row("none", 8_000), comparison.row("truncate", 8_000)
    assert none["tokens_after"] == none["tokens_before"]
    assert none["fact_retention"] == 1.0
    assert truncate["tokens_after"] < truncate["tokens_before"]
    assert truncate["fact_retention"] < 1.0
    planted = json.loads((SAMPLE / "sample-0002.facts.json").read_text(encoding="utf-8"))
    assert 0 < none["facts"] <= len(planted)
    # Model-free strategies cost nothing.
    assert none["summarizer_cost_usd"] == truncate["summarizer_cost_usd"] == 0.0


def test_the_summarizer_bill_is_priced_with_the_prices_given(test_strategies, sample2):
    prices = {"input": 3.0, "cache_read": 0.5, "output": 10.0}
    comparison = compare_strategies(sample2, ["test-billed"], [8_000], prices=prices)
    row = comparison.row("test-billed", 8_000)
    # 1M uncached input at 3, 1M cached at 0.5, 0.5M output at 10 (USD per million).
    assert row["summarizer_cost_usd"] == pytest.approx(3.0 + 0.5 + 5.0)
    assert comparison.prices["input"] == 3.0
    result = comparison.results[("test-billed", 8_000)]
    assert isinstance(result, CompactionResult) and result.summary == "billed summary"


def test_a_failing_strategy_is_a_row_with_its_error(test_strategies, sample2):
    comparison = compare_strategies(sample2, ["test-broken-compare", "none"], [8_000])
    assert comparison.results[("test-broken-compare", 8_000)] is None
    assert "deliberately broken" in comparison.errors[("test-broken-compare", 8_000)]
    assert "deliberately broken" in comparison.row("test-broken-compare", 8_000)["error"]
    assert comparison.row("none", 8_000)["error"] is None
    assert ("none", 8_000) not in comparison.errors


def test_a_comparison_is_a_frozen_value(sample2):
    comparison = compare_strategies(sample2, ["none"], [8_000])
    with pytest.raises(dataclasses.FrozenInstanceError):
        comparison.budgets = (1,)  # type: ignore[misc]
    with pytest.raises(TypeError):
        comparison.rows[0]["budget"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        comparison.results[("x", 1)] = None  # type: ignore[index]
    smaller = comparison.copy_with(strategies=())
    assert isinstance(smaller, Comparison) and comparison.strategies == ("none",)
    with pytest.raises(KeyError):
        comparison.row("none", 1)


def test_facts_must_be_named_or_given(sample2):
    with pytest.raises(ValueError, match="facts must be"):
        compare_strategies(sample2, ["none"], [8_000], facts="planted-please")
    extracted = compare_strategies(sample2, ["none"], [8_000], facts="extracted")
    planted = compare_strategies(sample2, ["none"], [8_000])
    # The sample plants its facts; the extracted ones are another set.
    assert extracted.row("none", 8_000)["facts"] != planted.row("none", 8_000)["facts"]


def test_the_comparison_agrees_with_the_benchmark_cell_for_cell(sample2):
    strategies, budgets = ["truncate", "none", "observation-masking"], [8_000, 30_000]
    expected = run_benchmark(
        [sample2.source_path], strategies, budgets, executor="serial", progress=False
    ).set_index(["strategy", "budget"])
    got = compare_strategies(sample2, strategies, budgets).frame().set_index(["strategy", "budget"])
    shared = ["method", "tokens_before", "tokens_after", "summary_tokens", "facts", "facts_kept"]
    assert (
        got[shared].astype(str).to_dict() == expected.loc[got.index, shared].astype(str).to_dict()
    )

"""Options as values (issue 31): the frozen option objects and the keywords beside them.

Each function taking `options=` also takes every option as a keyword (the calls written
before the options were values keep working); a keyword replaces the option in the value.
Expected pruning follows the spec's rule (§6.3) on a hand-built session, counted by hand.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from musepi_lab.bench import BenchmarkOptions, run_benchmark
from musepi_lab.compaction import PruneOptions
from musepi_lab.compaction._pruning import prune_superseded_tool_results, prune_tool_outputs
from musepi_lab.formats._registry import read_session
from musepi_lab.plot import TreeOptions, plot_tree
from musepi_lab.replay import ReplayOptions, ReplayResult, replay_session
from musepi_lab.session import Entry, Session
from musepi_lab.strategies import get
from musepi_lab.tokens import TokenCounter

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
NOW = 1_800_000_000_000
RESULTS = 5
CHARS = 4000  # with the pi counter, ceil(4000 / 4) = 1000 tokens a result


def tool_session() -> tuple[Session, list[str]]:
    """A user message, then five bash calls whose results are 1000 tokens each."""
    records = [
        {
            "type": "message",
            "id": "u",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "go"}]},
        }
    ]
    results = []
    for i in range(RESULTS):
        call = {"type": "toolCall", "id": f"c{i}", "name": "bash", "arguments": {"command": f"{i}"}}
        records.append(
            {
                "type": "message",
                "id": f"a{i}",
                "parentId": records[-1]["id"],
                "timestamp": f"2026-01-01T00:00:{2 * i + 1:02d}.000Z",
                "message": {"role": "assistant", "content": [call]},
            }
        )
        result = {
            "role": "toolResult",
            "toolCallId": f"c{i}",
            "toolName": "bash",
            "content": [{"type": "text", "text": "x" * CHARS}],
            "isError": False,
        }
        records.append(
            {
                "type": "message",
                "id": f"r{i}",
                "parentId": f"a{i}",
                "timestamp": f"2026-01-01T00:00:{2 * i + 2:02d}.000Z",
                "message": result,
            }
        )
        results.append(f"r{i}")
    header = {"type": "session", "version": 3, "id": "t", "cwd": "/w"}
    return Session(header, [Entry.from_record(r) for r in records]), results


# -- the base ---------------------------------------------------------------------------------
def test_options_are_frozen_and_copy_with_names_the_options():
    options = PruneOptions(protect_tokens=1000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.protect_tokens = 1  # type: ignore[misc]
    changed = options.copy_with(minimum_savings=0)
    assert (changed.protect_tokens, changed.minimum_savings) == (1000, 0)
    assert options.minimum_savings is None  # the original is unchanged
    with pytest.raises(TypeError, match=r"no option 'protect'.*protect_tokens"):
        options.copy_with(protect=1)


def test_given_merges_the_keywords_over_the_value():
    base = TreeOptions(title="a", max_lanes=3)
    merged = TreeOptions.given(base, {"title": "b"}, "plot_tree")
    assert (merged.title, merged.max_lanes) == ("b", 3)
    assert TreeOptions.given(None, {}, "plot_tree") == TreeOptions()
    with pytest.raises(TypeError, match="plot_tree"):
        TreeOptions.given(PruneOptions(), {}, "plot_tree")  # type: ignore[arg-type]


# -- pruning ----------------------------------------------------------------------------------
def test_prune_options_and_keywords_are_the_same_call():
    session, results = tool_session()
    counter = TokenCounter("pi")
    by_keywords = prune_tool_outputs(
        session, counter, protect_tokens=1000, minimum_savings=0, now_ms=NOW
    )
    options = PruneOptions(protect_tokens=1000, minimum_savings=0)
    by_value = prune_tool_outputs(session, counter, options=options, now_ms=NOW)
    # The newest result fills the 1000-token window; the four older ones are pruned.
    assert by_keywords.pruned_ids == by_value.pruned_ids == tuple(results[:-1])
    # A keyword beside the value replaces its option: a window holding all five results.
    wide = prune_tool_outputs(
        session, counter, options=options, protect_tokens=RESULTS * 1000, now_ms=NOW
    )
    assert wide.pruned_ids == ()


def test_an_unknown_pruning_keyword_is_a_type_error():
    session, _ = tool_session()
    with pytest.raises(TypeError, match=r"prune_tool_outputs.*protect_tokens"):
        prune_tool_outputs(session, TokenCounter("pi"), protect=1)
    with pytest.raises(TypeError, match="prune_superseded_tool_results"):
        prune_superseded_tool_results(session, TokenCounter("pi"), limit=1)


# -- the tree plot ----------------------------------------------------------------------------
def test_tree_options_and_keywords_draw_the_same():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    _, ax1 = plt.subplots()
    _, ax2 = plt.subplots()
    plot_tree(session, ax=ax1, collapse=None, title="by keyword")
    plot_tree(session, ax=ax2, options=TreeOptions(collapse=None, title="by value"))
    assert ax1.get_title() == "by keyword" and ax2.get_title() == "by value"
    assert len(ax1.collections) == len(ax2.collections)
    assert [len(c.get_offsets()) for c in ax1.collections] == [
        len(c.get_offsets()) for c in ax2.collections
    ]
    _, ax3 = plt.subplots()
    plot_tree(session, ax=ax3, options=TreeOptions(title="by value"), title="keyword wins")
    assert ax3.get_title() == "keyword wins"
    plt.close("all")


# -- the benchmark ----------------------------------------------------------------------------
def test_benchmark_options_and_keywords_give_the_same_frame():
    files = [SAMPLE / "sample-0004.jsonl"]
    by_keywords = run_benchmark(files, ["truncate"], [8000], executor="serial", progress=False)
    options = BenchmarkOptions(executor="serial", progress=False)
    by_value = run_benchmark(files, ["truncate"], [8000], options=options)
    shown = ["session_id", "strategy", "budget", "tokens_before", "tokens_after", "facts_kept"]
    assert by_keywords[shown].to_dict("records") == by_value[shown].to_dict("records")
    assert by_value.attrs["config"]["mode"] == "compact"


def test_benchmark_options_that_do_not_go_together():
    with pytest.raises(ValueError, match="executor='dask'"):
        BenchmarkOptions(out="results").check()
    with pytest.raises(ValueError, match="out=DIR"):
        BenchmarkOptions(executor="dask").check()
    with pytest.raises(TypeError, match=r"run_benchmark.*executor"):
        run_benchmark([SAMPLE / "sample-0004.jsonl"], ["truncate"], [8000], executer="serial")


# -- replay -----------------------------------------------------------------------------------
def _same_replay(a: ReplayResult, b: ReplayResult) -> None:
    assert a.timeline.equals(b.timeline)
    assert (a.window, a.strategy, a.cost, a.cost_interval) == (
        b.window,
        b.strategy,
        b.cost,
        b.cost_interval,
    )
    assert [(e.request, e.trigger) for e in a.events] == [(e.request, e.trigger) for e in b.events]


def test_replay_options_are_frozen_and_copy_with_names_the_options():
    options = ReplayOptions(window=8000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.window = 1  # type: ignore[misc]
    changed = options.copy_with(ratio="family", triggers=("overflow",))
    assert (changed.window, changed.ratio, tuple(changed.triggers)) == (
        8000,
        "family",
        ("overflow",),
    )
    assert (options.ratio, options.window) == ("session", 8000)  # the original is unchanged
    with pytest.raises(TypeError, match=r"no option 'windw'.*window"):
        options.copy_with(windw=1)
    with pytest.raises(TypeError, match="replay_session"):
        replay_session(read_session(SAMPLE / "sample-0004.jsonl"), "none", options=PruneOptions())  # type: ignore[arg-type]


def test_replay_options_and_keywords_give_the_same_replay():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    keywords = {"window": 8000, "triggers": ("overflow", "threshold"), "ratio": "family"}
    by_keywords = replay_session(session, "truncate", **keywords)
    by_value = replay_session(session, "truncate", options=ReplayOptions(**keywords))
    _same_replay(by_keywords, by_value)
    assert by_keywords.window == 8000 and by_keywords.events  # the window was applied
    # A keyword beside the value replaces its option.
    beside = replay_session(session, "truncate", options=ReplayOptions(**keywords), window=12_000)
    _same_replay(beside, replay_session(session, "truncate", **{**keywords, "window": 12_000}))
    assert beside.window == 12_000


def test_replay_keywords_that_are_not_options_are_strategy_parameters():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    value = replay_session(session, get("prune", protect_tokens=500), window=8000)
    by_keyword = replay_session(session, "prune", window=8000, protect_tokens=500)
    by_params = replay_session(
        session, "prune", options=ReplayOptions(window=8000, params={"protect_tokens": 500})
    )
    _same_replay(value, by_keyword)
    _same_replay(value, by_params)
    assert by_keyword.strategy == get("prune", protect_tokens=500).label != get("prune").label
    with pytest.raises(TypeError, match="protect_tokenz"):
        replay_session(session, "prune", window=8000, protect_tokenz=500)


def test_replay_options_that_are_unknown_values():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    for bad, match in (
        ({"ratio": "weekly"}, "unknown ratio"),
        ({"cache": "lru"}, "unknown cache model"),
        ({"triggers": ("sometimes",)}, "unknown triggers"),
    ):
        with pytest.raises(ValueError, match=match):
            replay_session(session, "none", options=ReplayOptions(**bad))


def test_configure_takes_the_options_or_the_keywords_written_before_them():
    from musepi_lab.replay._state import configure

    counter = TokenCounter("pi")
    keywords = {"counter": counter, "triggers": ("overflow",), "prices": {"input": 1.0}}
    by_keywords = configure("prune", window=9000, protect_tokens=500, **keywords)
    options = ReplayOptions(params={"protect_tokens": 500}, **keywords)  # type: ignore[arg-type]
    assert configure("prune", options, window=9000) == by_keywords
    assert by_keywords.strategy == get("prune", protect_tokens=500)
    assert (by_keywords.window, by_keywords.triggers) == (9000, frozenset({"overflow"}))

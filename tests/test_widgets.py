"""Widgets, tested without a browser: set child widgets' values, read the state.

Expected entries, paths and leaves are read from the raw JSONL with plain `json`; budgets
and thresholds come from the spec's numbers (§3.3, §3.5).
"""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from _raw import raw_leaves, raw_path
from PIL import Image

from musepi_lab.compaction._result import CompactionResult
from musepi_lab.formats._registry import read_session
from musepi_lab.session import Entry, Session
from musepi_lab.strategies import _base
from musepi_lab.widgets._comparer import ROW_COLUMNS, StrategyComparer, usable_strategies
from musepi_lab.widgets._cut import CutPointExplorer
from musepi_lab.widgets._explorer import SessionExplorer

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"


# -- raw reading, independent of the code under test ----------------------------------------
def raw(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return records[0], records[1:]


def first_text(record: dict[str, Any]) -> str:
    content = record["message"]["content"]
    if isinstance(content, str):
        return content
    return next(b["text"] for b in content if b.get("type") == "text")


# -- SessionExplorer -------------------------------------------------------------------------
def test_explorer_over_a_folder_lists_its_session_files():
    explorer = SessionExplorer(SAMPLE)
    expected = sorted(p.name for p in SAMPLE.iterdir() if p.name.endswith(".jsonl"))
    assert [label for label, _ in explorer.file_picker.options] == expected
    header, _ = raw(SAMPLE / expected[0])
    assert explorer.session.id == header["id"]

    explorer.file_picker.value = str(SAMPLE / expected[2])
    header, records = raw(SAMPLE / expected[2])
    assert explorer.session.id == header["id"]
    assert [e.id for e in explorer.path] == raw_path(records, records[-1]["id"])


MESSAGE_TYPES = ("message", "compaction", "branch_summary", "custom_message")


def test_explorer_starts_at_the_session_leaf_with_every_branch_offered():
    path = SAMPLE / "sample-0001.jsonl"
    _, records = raw(path)
    explorer = SessionExplorer(path)
    # The session leaf (last in file order), and every other leaf that is a message: the
    # sample's metadata trails its last message, so its last entry is the only meta leaf.
    by_id = {r["id"]: r for r in records}
    message_leaves = {i for i in raw_leaves(records) if by_id[i]["type"] in MESSAGE_TYPES}
    expected = message_leaves | {records[-1]["id"]}
    options = [value for _, value in explorer.leaf_picker.options]
    assert set(options) == expected and len(options) == len(expected)
    assert options[0] == records[-1]["id"]
    # pi's leaf is the last entry in file order.
    assert explorer.leaf_id == records[-1]["id"]
    assert [e.id for e in explorer.path] == raw_path(records, records[-1]["id"])
    assert explorer.selected_entry.id == records[-1]["id"]
    assert explorer.entry_slider.max == len(explorer.path) - 1


def test_moving_the_slider_selects_the_entry_and_shows_its_content():
    path = SAMPLE / "sample-0001.jsonl"
    _, records = raw(path)
    ids = raw_path(records, records[-1]["id"])
    by_id = {r["id"]: r for r in records}
    index = next(
        i
        for i, eid in enumerate(ids)
        if by_id[eid]["type"] == "message" and i > 20
        if by_id[eid]["message"]["role"] == "user"
    )
    explorer = SessionExplorer(path)
    explorer.entry_slider.value = index

    assert explorer.selected_entry.id == ids[index]
    assert explorer.entry_list.value == index  # the list follows the slider
    assert ids[index] in explorer.entry_view.value
    assert html.escape(first_text(by_id[ids[index]])[:60]) in explorer.entry_view.value
    # What the LLM sees ends with the user message selected.
    assert explorer.context.entry_ids[-1] == ids[index]
    assert ids[index] in explorer.context_view.value
    assert explorer.context_tokens > 0


def progress_session():
    """u → a → t, where a and t each carry a progress side leaf, plus a real branch x."""

    def rec(i, parent, n, role=None):
        base = {"id": i, "parentId": parent, "timestamp": f"2026-01-01T00:00:{n:02d}.000Z"}
        if role is None:
            return {**base, "type": "custom", "customType": "claude-code:progress", "data": {}}
        content = [{"type": "text", "text": f"text of {i}"}]
        return {**base, "type": "message", "message": {"role": role, "content": content}}

    records = [
        rec("u", None, 1, "user"),
        rec("a", "u", 2, "assistant"),
        rec("pa", "a", 3),
        rec("x", "a", 4, "user"),
        rec("t", "a", 5, "toolResult"),
        rec("pt", "t", 6),
        rec("pt2", "pt", 7),
    ]
    return Session({"type": "session", "id": "p"}, [Entry.from_record(r) for r in records])


def test_branch_picker_lists_real_branches_only_and_filters():
    session = progress_session()
    assert len(session.leaves) == 3  # pa, x, pt2: three raw leaves
    explorer = SessionExplorer(session)
    options = [value for _, value in explorer.leaf_picker.options]
    assert options == ["pt2", "x"]  # the session leaf, then the one real branch
    explorer.branch_filter.value = "text of x"
    assert explorer.leaf_id == "pt2"  # filtering never moves the selection
    assert [value for _, value in explorer.leaf_picker.options] == ["pt2", "x"]
    explorer.branch_filter.value = "X · 3 entries"
    assert [value for _, value in explorer.leaf_picker.options] == ["pt2", "x"]
    explorer.leaf_picker.value = "x"
    explorer.branch_filter.value = "session leaf"
    assert [value for _, value in explorer.leaf_picker.options] == ["x", "pt2"]
    assert [e.id for e in explorer.path] == ["u", "a", "x"]
    explorer.branch_filter.value = "no such branch"
    assert [value for _, value in explorer.leaf_picker.options] == ["x"]


def test_choosing_in_the_list_moves_the_slider():
    explorer = SessionExplorer(SAMPLE / "sample-0002.jsonl")
    explorer.entry_list.value = 7
    assert explorer.entry_slider.value == 7
    assert explorer.selected_index == 7
    assert explorer.selected_entry.id == explorer.path[7].id


def test_picking_another_branch_walks_its_path():
    path = SAMPLE / "sample-0001.jsonl"
    _, records = raw(path)
    other = next(leaf for leaf in raw_leaves(records) if leaf != records[-1]["id"])
    explorer = SessionExplorer(path)
    explorer.leaf_picker.value = other
    assert [e.id for e in explorer.path] == raw_path(records, other)
    assert explorer.selected_entry.id == other


def test_select_by_id_switches_to_a_branch_holding_it():
    path = SAMPLE / "sample-0001.jsonl"
    _, records = raw(path)
    main = set(raw_path(records, records[-1]["id"]))
    other = next(leaf for leaf in raw_leaves(records) if leaf != records[-1]["id"])
    only_there = next(e for e in raw_path(records, other) if e not in main)
    explorer = SessionExplorer(path)
    explorer.select(only_there)
    assert explorer.leaf_id == other
    assert explorer.selected_entry.id == only_there
    with pytest.raises(KeyError):
        explorer.select("no-such-id")


def test_explorer_of_a_session_object_hides_the_file_picker():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    explorer = SessionExplorer(session)
    assert explorer.session is session
    assert explorer.file_picker.layout.display == "none"


def test_explorer_of_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        SessionExplorer(tmp_path / "nope.jsonl")


def test_explorer_shows_the_problems_of_a_bad_file(tmp_path):
    good = tmp_path / "a.jsonl"
    good.write_bytes((SAMPLE / "sample-0004.jsonl").read_bytes())
    bad = tmp_path / "b.jsonl"
    bad.write_text("this is not json\n", encoding="utf-8")
    explorer = SessionExplorer(good)
    explorer.file_picker.value = str(bad)
    # Lenient reading: an empty session whose problem names the file and line.
    assert [(p.path, p.line) for p in explorer.session.errors] == [(str(bad), 1)]
    assert explorer.path == ()
    assert explorer.selected_entry is None
    assert "1 problem(s)" in explorer.message.value
    assert "empty session" in explorer.entry_view.value


# -- CutPointExplorer ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample2():
    return read_session(SAMPLE / "sample-0002.jsonl")


def test_cut_moves_later_when_the_keep_budget_shrinks(sample2):
    explorer = CutPointExplorer(sample2)
    explorer.keep_slider.value = 30_000
    before = explorer.preparation
    png_before = explorer.png
    explorer.keep_slider.value = 8_000
    after = explorer.preparation
    assert after.first_kept_entry_id != before.first_kept_entry_id
    assert after.cut_index > before.cut_index
    assert explorer.settings.keep_recent_tokens == 8_000
    # The tree was redrawn into the Output widget.
    shown = base64.b64decode(explorer.plot_output.outputs[0]["data"]["image/png"])
    assert shown == explorer.png != png_before
    assert shown.startswith(b"\x89PNG")


def test_split_turn_is_labelled_exactly_when_the_cut_is_inside_a_turn(sample2):
    _, records = raw(SAMPLE / "sample-0002.jsonl")
    role = {r["id"]: r["message"]["role"] for r in records if r["type"] == "message"}
    explorer = CutPointExplorer(sample2, plot=False)
    seen = set()
    for budget in range(1_000, 60_001, 250):
        explorer.keep_slider.value = budget
        prep = explorer.preparation
        if prep is None or prep.first_kept_entry_id not in role:
            continue
        first_kept_role = role[prep.first_kept_entry_id]
        # An assistant reply never starts a turn; a user message always does.
        split = first_kept_role == "assistant"
        assert first_kept_role in ("user", "assistant")
        assert prep.is_split_turn == split
        assert ("split turn" in explorer.cut_view.value) == split
        seen.add(split)
    assert seen == {True, False}


def test_nothing_to_cut_is_shown_as_no_cut():
    session = read_session(SAMPLE / "sample-0004.jsonl")
    explorer = CutPointExplorer(session, plot=False)
    explorer.keep_slider.value = explorer.keep_slider.max  # keep everything
    assert explorer.preparation is None
    assert "No cut" in explorer.cut_view.value


def test_window_and_reserve_set_the_threshold_by_the_spec(sample2):
    explorer = CutPointExplorer(sample2, plot=False)
    # MusePi, reserve unset: window − max(16384, floor(0.15 · window)) (spec §3.5).
    explorer.window_slider.value = 98_304
    assert explorer.threshold == 98_304 - 16_384
    explorer.window_slider.value = 200_704
    assert explorer.threshold == 200_704 - (200_704 * 15 // 100)
    # pi: window − reserveTokens (spec §3.3), reserve from the slider.
    explorer.profile_picker.value = "pi"
    assert explorer.preparation.profile == "pi"
    assert explorer.threshold == 200_704 - 16_384
    explorer.reserve_slider.value = 32_768
    assert explorer.threshold == 200_704 - 32_768
    assert "threshold 167,936" in explorer.bar_view.value


def test_window_change_does_not_redraw_the_tree(sample2):
    explorer = CutPointExplorer(sample2)
    png = explorer.png
    explorer.window_slider.value = 65_536
    assert explorer.png is png
    explorer.keep_slider.value = 2_000
    assert explorer.png is not png


def test_token_method_picker_switches_the_counter(sample2):
    explorer = CutPointExplorer(sample2, plot=False)
    explorer.method_picker.value = "o200k_base"
    assert explorer.counter.method == "o200k_base"
    assert explorer.preparation is not None
    assert sum(explorer.regions.values()) > 0


# -- StrategyComparer ------------------------------------------------------------------------
@dataclass(frozen=True)
class Marker(_base.Strategy):
    """Test strategy: cuts where the engine cuts, summary names the messages dropped."""

    name: ClassVar[str] = "test-marker"

    def run(self, ctx: _base.CompactionContext) -> CompactionResult | None:
        prep = ctx.preparation
        assert prep is not None
        return CompactionResult.from_preparation(
            prep, f"MARKER dropped {len(prep.messages_to_summarize)} messages", method="marker"
        )


@dataclass(frozen=True)
class NeedsModel(_base.Strategy):
    name: ClassVar[str] = "test-needs-model"
    needs_summarizer: ClassVar[bool] = True

    def run(self, ctx: _base.CompactionContext) -> CompactionResult | None:
        raise AssertionError("never run in these tests")


@dataclass(frozen=True)
class Broken(_base.Strategy):
    name: ClassVar[str] = "test-broken"

    def run(self, ctx: _base.CompactionContext) -> CompactionResult | None:
        raise RuntimeError("deliberately broken")


@pytest.fixture
def test_strategies(monkeypatch):
    for cls in (Marker, NeedsModel, Broken):
        monkeypatch.setitem(_base._REGISTRY, cls.name, cls)


def test_strategies_calling_a_model_are_offered_only_with_a_summarizer(test_strategies):
    assert "test-needs-model" not in usable_strategies(with_summarizer=False)
    assert "test-needs-model" in usable_strategies(with_summarizer=True)
    comparer = StrategyComparer(
        read_session(SAMPLE / "sample-0004.jsonl"), strategies=["test-marker"]
    )
    assert "test-needs-model" not in comparer.strategy_picker.options
    with pytest.raises(ValueError, match="summarizer"):
        StrategyComparer(
            read_session(SAMPLE / "sample-0004.jsonl"), strategies=["test-needs-model"]
        )


def test_run_gives_a_result_for_every_strategy_and_budget(test_strategies, sample2):
    comparer = StrategyComparer(sample2, strategies=["test-marker"], budgets=[8_000, 30_000])
    frame = comparer.run()
    assert set(comparer.results) == {("test-marker", 8_000), ("test-marker", 30_000)}
    for (_, budget), result in comparer.results.items():
        assert isinstance(result, CompactionResult)
        assert result.summary.startswith("MARKER dropped")
        assert result.strategy == "test-marker"
        row = frame[frame["budget"] == budget].iloc[0]
        assert row["compacted"]
        assert row["tokens_after"] < row["tokens_before"]
    # Progress bar full, table and summaries shown, comparison plot drawn.
    assert comparer.progress.value == comparer.progress.max == 2
    assert "test-marker" in comparer.table_view.value
    assert "overflow-x:auto" in comparer.table_view.value  # a wide table scrolls
    assert len(comparer.summary_view.children) == 1
    assert "MARKER dropped" in comparer.summary_view.children[0].value
    assert comparer.plot_output.outputs[0]["data"]["image/png"]


def test_the_run_button_runs(test_strategies, sample2):
    comparer = StrategyComparer(sample2, strategies=["test-marker"], budgets=[8_000])
    comparer.run_button.click()
    assert set(comparer.results) == {("test-marker", 8_000)}


def test_a_failing_strategy_is_reported_beside_the_others(test_strategies, sample2):
    comparer = StrategyComparer(sample2, strategies=["test-marker", "test-broken"], budgets=[8_000])
    frame = comparer.run()
    assert comparer.results[("test-broken", 8_000)] is None
    assert "deliberately broken" in comparer.errors[("test-broken", 8_000)]
    errors = dict(zip(frame["strategy"], frame["error"], strict=True))
    assert pd.isna(errors["test-marker"])
    assert "deliberately broken" in errors["test-broken"]
    assert isinstance(comparer.results[("test-marker", 8_000)], CompactionResult)


def test_planted_facts_scored_and_none_keeps_them_all(sample2):
    pytest.importorskip("musepi_lab.strategies._none")  # registers `none`
    pytest.importorskip("musepi_lab.strategies._truncate")  # registers `truncate`
    comparer = StrategyComparer(sample2, strategies=["none", "truncate"], budgets=[8_000])
    frame = comparer.run().set_index("strategy")
    assert comparer.planted is not None  # the sample has its facts.json beside it
    # `none` changes nothing: same context, every fact kept (issue 5: it scores 1.0).
    assert frame.loc["none", "tokens_after"] == frame.loc["none", "tokens_before"]
    assert frame.loc["none", "fact_retention"] == 1.0
    assert frame.loc["truncate", "tokens_after"] < frame.loc["truncate", "tokens_before"]
    assert frame.loc["truncate", "fact_retention"] < 1.0
    # Planted facts of the summarized part, counted from the raw facts file.
    planted = json.loads((SAMPLE / "sample-0002.facts.json").read_text(encoding="utf-8"))
    assert 0 < frame.loc["none", "facts"] <= len(planted)


def test_choosing_nothing_runs_nothing(test_strategies, sample2):
    comparer = StrategyComparer(sample2, strategies=["test-marker"], budgets=[8_000])
    comparer.strategy_picker.value = ()
    frame = comparer.run()
    assert frame.empty
    assert comparer.results == {}
    assert "Choose at least one" in comparer.status.value


def test_comparer_rows_agree_with_the_benchmark(sample2):
    from musepi_lab.bench import run_benchmark
    from musepi_lab.bench._score import COLUMNS

    assert set(ROW_COLUMNS) <= set(COLUMNS)  # same names, so plots read both
    strategies, budgets = ["truncate", "none", "observation-masking"], [8_000, 30_000]
    expected = run_benchmark(
        [sample2.source_path], strategies, budgets, executor="serial", progress=False
    )
    got = StrategyComparer(sample2).run(strategies, budgets)
    columns = ["strategy", "budget", "tokens_before", "tokens_after", "facts", "facts_kept"]
    key = ["strategy", "budget"]
    left = expected[columns].sort_values(key).reset_index(drop=True)
    right = got[columns].sort_values(key).reset_index(drop=True)
    assert left.astype(str).to_dict("records") == right.astype(str).to_dict("records")
    assert got["fact_retention"].tolist() == pytest.approx(
        expected.set_index(key)
        .loc[list(zip(got["strategy"], got["budget"], strict=True)), "fact_retention"]
        .tolist()
    )


def test_moving_the_cut_reshades_the_same_tree_and_zoom_redraws_it(sample2):
    explorer = CutPointExplorer(sample2)
    figure = explorer._drawing._tree[0]
    explorer.keep_slider.value = 2_000
    assert explorer._drawing._tree[0] is figure  # the tree was not drawn again, only reshaded
    path = sample2.path()
    explorer.zoom_slider.value = (10, 60)
    assert explorer._drawing._tree[0] is not figure
    layout = explorer._drawing._tree[2]
    assert layout.path_range == (10, 60)
    shown = {i for n in layout.nodes if n.on_path for i in n.entry_ids}
    assert {e.id for e in path[10:60]} <= shown
    assert not shown & {e.id for e in path[60:]}


def test_entry_list_of_a_long_branch_is_a_window_that_follows_the_slider():
    from musepi_lab.datasets._generator import GeneratorConfig, generate_session
    from musepi_lab.widgets._explorer import ENTRY_WINDOW

    session, _ = generate_session(GeneratorConfig(seed=3, tasks=120))
    length = len(session.path())
    assert length > 2 * ENTRY_WINDOW
    explorer = SessionExplorer(session)
    values = [v for _, v in explorer.entry_list.options]
    assert len(values) == ENTRY_WINDOW and values[-1] == length - 1
    explorer.entry_slider.value = 5
    values = [v for _, v in explorer.entry_list.options]
    assert values[0] == 0 and 5 in values and len(values) == ENTRY_WINDOW
    assert explorer.entry_list.value == 5
    assert explorer.selected_entry.id == session.path()[5].id


def test_widgets_on_the_largest_claude_code_session():
    from _corpus import CORPUS

    files = sorted((CORPUS / "claude-code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not files:
        pytest.skip(f"no Claude Code sessions under {CORPUS}")
    session = read_session(files[-1])
    # Message tips, counted here: messages that are no message's nearest message ancestor.
    messages = {e.id for e in session.entries if e.type != "custom"}
    by_id = session.by_id
    hosts = set()
    for entry_id in messages:
        up = by_id.get(by_id[entry_id].parent_id)
        while up is not None and up.id not in messages:
            up = by_id.get(up.parent_id)
        if up is not None:
            hosts.add(up.id)
    tips = messages - hosts
    assert len(session.leaves) >= len(tips)  # metadata side leaves are no branches
    explorer = SessionExplorer(session)
    assert len(explorer.leaf_picker.options) == len(tips)
    assert explorer.leaf_picker.options[0][1] == session.leaf_id

    cut = CutPointExplorer(session)
    first = cut.png
    width, height = Image.open(io.BytesIO(first)).size
    assert width <= 1600 and height <= 900
    cut.keep_slider.value = max(500, cut.keep_slider.value // 4)
    assert cut.png != first

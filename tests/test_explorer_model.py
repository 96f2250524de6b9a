"""The `SessionExplorer`'s model, tested as a plain value: no widget is built here.

Expected paths, leaves and entries are read from the raw JSONL with plain `json`; the
entry-list window is worked out by hand from `ENTRY_WINDOW`.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from _raw import raw_leaves, raw_path

from musepi_lab.datasets._generator import GeneratorConfig, generate_session
from musepi_lab.formats._registry import read_session
from musepi_lab.session import Entry, Session
from musepi_lab.widgets import _explorer_model
from musepi_lab.widgets._explorer_model import ENTRY_WINDOW, ExplorerModel, entry_window

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
SAMPLE1 = SAMPLE / "sample-0001.jsonl"


def raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def small_tree(session_id: str = "p") -> Session:
    """u → a → t with a progress side leaf under t, plus a real branch x under a."""

    def rec(i: str, parent: str | None, n: int, role: str | None = None) -> dict[str, Any]:
        base = {"id": i, "parentId": parent, "timestamp": f"2026-01-01T00:00:{n:02d}.000Z"}
        if role is None:
            return {**base, "type": "custom", "customType": "claude-code:progress", "data": {}}
        content = [{"type": "text", "text": f"text of {i}"}]
        return {**base, "type": "message", "message": {"role": role, "content": content}}

    records = [
        rec("u", None, 1, "user"),
        rec("a", "u", 2, "assistant"),
        rec("x", "a", 3, "user"),
        rec("t", "a", 4, "toolResult"),
        rec("pt", "t", 5),
    ]
    return Session({"type": "session", "id": session_id}, [Entry.from_record(r) for r in records])


@pytest.fixture(scope="module")
def sample1() -> Session:
    return read_session(SAMPLE1)


def test_the_model_module_imports_no_widget_package():
    tree = ast.parse(Path(_explorer_model.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m.startswith(("ipywidgets", "IPython", "matplotlib"))}


def test_open_starts_at_the_session_leaf_with_its_last_entry_selected(sample1):
    records = raw(SAMPLE1)
    model = ExplorerModel.open(sample1)
    leaf = records[-1]["id"]
    assert model.leaf_id == leaf and model.leaf_ids[0] == leaf
    assert [e.id for e in model.path] == raw_path(records, leaf)
    assert model.selected_index == len(model.path) - 1
    assert model.selected_entry is not None and model.selected_entry.id == leaf
    assert len(model.tokens) == len(model.path) and all(t >= 0 for t in model.tokens)
    assert model.preparation is not None  # the cut at the leaf, computed with the branch
    assert model.context is not None and model.context.entry_ids[-1] in set(raw_path(records, leaf))
    assert model.context_tokens == sum(model.message_tokens) > 0
    assert len(model.message_tokens) == len(model.context.messages)


def test_moves_return_new_models_and_leave_the_old_one_as_it_was(sample1):
    model = ExplorerModel.open(sample1)
    moved = model.with_selection(3)
    assert moved is not model
    assert model.selected_index == len(model.path) - 1 and moved.selected_index == 3
    assert moved.context is not None and moved.context.entry_ids[-1] == model.path[3].id
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.selected_index = 0  # type: ignore[misc]
    with pytest.raises(IndexError):
        model.with_selection(len(model.path))


def test_another_branch_walks_its_path(sample1):
    records = raw(SAMPLE1)
    other = next(leaf for leaf in raw_leaves(records) if leaf != records[-1]["id"])
    model = ExplorerModel.open(sample1).with_leaf(other)
    assert [e.id for e in model.path] == raw_path(records, other)
    assert model.selected_entry is not None and model.selected_entry.id == other


def test_select_by_id_switches_to_a_branch_holding_it(sample1):
    records = raw(SAMPLE1)
    main = set(raw_path(records, records[-1]["id"]))
    other = next(leaf for leaf in raw_leaves(records) if leaf != records[-1]["id"])
    only_there = next(e for e in raw_path(records, other) if e not in main)
    model = ExplorerModel.open(sample1).select(only_there)
    assert model.leaf_id == other
    assert model.selected_entry is not None and model.selected_entry.id == only_there
    with pytest.raises(KeyError):
        model.select("no-such-id")


def test_branches_are_the_real_ones_and_the_filter_keeps_the_current_one():
    model = ExplorerModel.open(small_tree())
    assert model.leaf_ids == ("pt", "x")  # the session leaf, then the one real branch
    # Only x's label holds the text; the branch looked at (pt) stays offered, first.
    assert [v for _, v in model.with_query("text of x").shown_branches] == ["pt", "x"]
    assert [v for _, v in model.with_query("TEXT OF X").shown_branches] == ["pt", "x"]
    on_x = model.with_leaf("x")
    assert [v for _, v in on_x.with_query("session leaf").shown_branches] == ["x", "pt"]
    assert [v for _, v in on_x.with_query("no such branch").shown_branches] == ["x"]
    assert on_x.with_query("no such branch").leaf_id == "x"  # filtering never moves it
    assert [e.id for e in on_x.path] == ["u", "a", "x"]


def test_subagents_are_offered_and_explored():
    sub = small_tree("sub")
    root = small_tree("root").copy_with(linked=(sub,))
    model = ExplorerModel.open(root)
    assert [index for _, index in model.subagent_options] == [-1, 0]
    inside = model.with_query("x").show_subagent(0)
    assert inside.session is sub and inside.root is root and inside.subagent == 0
    assert inside.query == ""  # the filter is cleared for the other session
    back = inside.show_subagent(-1)
    assert back.session is root and back.leaf_id == "pt"


def test_the_entry_window_follows_the_selection():
    session, _ = generate_session(GeneratorConfig(seed=3, tasks=120))
    model = ExplorerModel.open(session)
    length = len(model.path)
    assert length > 2 * ENTRY_WINDOW
    # At the last entry: the last ENTRY_WINDOW entries.
    assert model.window == (length - ENTRY_WINDOW, length)
    assert [i for _, i in model.entry_options()] == list(range(length - ENTRY_WINDOW, length))
    # Inside the window nothing moves; outside it centres on the selection.
    assert model.with_selection(length - 10).window == model.window
    assert model.with_selection(1_000).window == (
        1_000 - ENTRY_WINDOW // 2,
        1_000 + ENTRY_WINDOW // 2,
    )
    assert model.with_selection(0).window == (0, ENTRY_WINDOW)


def test_entry_window_by_hand():
    assert entry_window(5, 10) == (0, 10)  # a short branch is listed whole
    assert entry_window(700, 1_000) == (700 - ENTRY_WINDOW // 2, 700 + ENTRY_WINDOW // 2)
    assert entry_window(950, 1_000) == (1_000 - ENTRY_WINDOW, 1_000)  # held at the end
    assert entry_window(450, 1_000, (400, 800)) == (400, 800)  # already shown
    assert entry_window(300, 1_000, (400, 800)) == (
        300 - ENTRY_WINDOW // 2,
        300 + ENTRY_WINDOW // 2,
    )


def test_an_empty_session_shows_nothing():
    model = ExplorerModel.open(Session({"type": "session", "id": "e"}, ()))
    assert model.leaf_id is None and model.path == () and model.branches == ()
    assert model.selected_entry is None and model.context is None
    assert model.context_tokens == 0 and model.entry_options() == []
    assert model.navigate() is None


def test_navigating_explores_the_navigated_session(sample1):
    records = raw(SAMPLE1)
    leaf = records[-1]["id"]
    ids = raw_path(records, leaf)
    by_id = {r["id"]: r for r in records}
    # An assistant message well before the leaf: the new leaf is that entry itself.
    target = next(
        i
        for i, eid in enumerate(ids[:-5])
        if by_id[eid]["type"] == "message" and by_id[eid]["message"]["role"] == "assistant"
    )
    model = ExplorerModel.open(sample1).with_selection(target)
    result = model.navigate()
    assert result is not None and result.target_id == ids[target]
    after = model.after_navigation(result)
    assert after.root is result.session and after.session is result.session
    assert after.selected_entry is not None and after.selected_entry.id == result.new_leaf_id
    assert model.session is sample1  # the model navigated from is unchanged

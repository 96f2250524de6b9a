"""The tree layout is a pure function: positions, lanes, folding, runs, links and zoom.

No matplotlib here. Expected values are counted from the entries the tests build, never
read back from the layout.
"""

from __future__ import annotations

import pytest

from musepi_lab.datasets._generator import GeneratorConfig, generate_session
from musepi_lab.plot._layout import fold_tree, node_kind, path_bounds, tree_layout
from musepi_lab.plot._runs import group_chain, place_labels
from musepi_lab.session import Entry, Session

TS = "2026-01-01T00:{:02d}:{:02d}.000Z"


def stamp(n):
    return TS.format(n // 60, n % 60)


def msg(i, parent, role, n=0, **extra):
    rec = {
        "type": "message",
        "id": i,
        "parentId": parent,
        "timestamp": stamp(n),
        "message": {"role": role, "content": [{"type": "text", "text": i}]},
    }
    rec.update(extra)
    return Entry.from_record(rec)


def meta(i, parent, n=0, kind="custom"):
    return Entry.from_record(
        {
            "type": kind,
            "id": i,
            "parentId": parent,
            "timestamp": stamp(n),
            "customType": "claude-code:progress",
            "data": {"type": "progress"},
        }
    )


def linear(n, start=0, parent=None, prefix="e"):
    out = []
    for k in range(start, start + n):
        role = "user" if k % 4 == 0 else ("assistant" if k % 4 in (1, 3) else "toolResult")
        out.append(msg(f"{prefix}{k}", parent, role, k))
        parent = f"{prefix}{k}"
    return out


def test_linear_session_is_one_lane_in_order():
    s = Session({"id": "s"}, linear(6))
    layout = tree_layout(s)
    assert layout.lanes == 1
    assert [(n.key, n.x, n.y) for n in layout.nodes] == [(f"e{k}", k, 0) for k in range(6)]
    assert layout.edges == tuple((f"e{k}", f"e{k + 1}") for k in range(5))
    assert all(n.on_path for n in layout.nodes)
    assert [n.path_index for n in layout.nodes] == list(range(6))


def test_branch_gets_its_own_lane_forking_at_the_parent():
    base = linear(4)
    side = [msg("b1", "e1", "user", 30), msg("b2", "b1", "assistant", 31)]
    # File order: the side branch comes first, so the main line's tail is the leaf.
    entries = base[:2] + side + base[2:]
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s)
    by = layout.by_key
    assert s.leaf_id == "e3"
    assert by["e3"].y == 0 and by["e3"].on_path
    assert by["b1"].y == 1 and not by["b1"].on_path
    assert by["b1"].x == by["e1"].x + 1  # forks right after its parent
    assert ("e1", "b1") in layout.edges and ("e1", "e2") in layout.edges


# -- folding ---------------------------------------------------------------------------------
def claude_code_like():
    """u → p1 → a → p2 → t, with p3 a progress side leaf of p2 and p4 one of a."""
    return [
        meta("h0", None, 0, kind="model_change"),
        msg("u", "h0", "user", 1),
        meta("p1", "u", 2),
        msg("a", "p1", "assistant", 3),
        meta("p2", "a", 4),
        meta("p3", "p2", 5),
        meta("p4", "a", 6),
        msg("t", "p2", "toolResult", 7),
        meta("p5", "t", 8),
    ]


def test_metadata_folds_into_the_message_above_it_and_opens_with_the_first():
    entries = claude_code_like()
    s = Session({"id": "s"}, entries)
    assert len(s.leaves) == 3  # p3, p4 and p5: three leaves in the raw tree
    layout = tree_layout(s)
    assert [n.key for n in layout.nodes] == ["u", "a", "t"]
    assert layout.lanes == 1  # metadata side leaves are no branches
    assert {e: layout.index[e] for e in ("h0", "p1", "p2", "p3", "p4", "p5")} == {
        "h0": "u",
        "p1": "u",
        "p2": "a",
        "p3": "a",
        "p4": "a",
        "p5": "t",
    }
    by = layout.by_key
    assert (by["u"].folded, by["a"].folded, by["t"].folded) == (2, 3, 1)
    # Every entry is shown by exactly one node.
    assert sorted(i for n in layout.nodes for i in n.entry_ids) == sorted(e.id for e in entries)
    assert not any(n.kind == "meta" for n in layout.nodes)


def test_a_fork_is_a_branch_only_when_both_sides_hold_a_message():
    entries = [
        *linear(4),
        meta("m1", "e1", 20),
        meta("m2", "m1", 21),  # metadata-only side: folded into e1
        meta("m3", "e2", 22),
        msg("x", "m3", "user", 23),  # a message under metadata: a real branch from e2
    ]
    s = Session({"id": "s"}, [*entries[:4], *entries[4:]])
    folded = fold_tree(s)
    assert [folded.heads[u].id for u in folded.forks] == ["e2"]
    layout = tree_layout(s, leaf_id="e3")
    assert layout.lanes == 2
    assert layout.by_key["x"].y == 1
    assert layout.index["m3"] == "e2" and layout.index["m2"] == "e1"


def test_a_session_of_metadata_only_is_one_meta_node():
    s = Session({"id": "s"}, [meta("a", None, 0), meta("b", "a", 1), meta("c", "b", 2)])
    layout = tree_layout(s)
    assert [(n.kind, n.entry_ids) for n in layout.nodes] == [("meta", ("a", "b", "c"))]


def test_node_kinds():
    assert node_kind(msg("a", None, "user")) == "user"
    assert node_kind(msg("a", None, "developer")) == "custom"
    assert node_kind(Entry.from_record({"type": "model_change", "id": "m"})) == "meta"
    assert node_kind(Entry.from_record({"type": "branch_summary", "id": "b"})) == "branch_summary"


# -- runs ------------------------------------------------------------------------------------
def test_long_runs_collapse_but_special_entries_stay():
    entries = linear(40)
    comp = Entry.from_record(
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "e39",
            "timestamp": stamp(59),
            "summary": "S",
            "firstKeptEntryId": "e30",
            "tokensBefore": 1,
        }
    )
    s = Session({"id": "s"}, [*entries, comp])
    layout = tree_layout(s, collapse=5)
    # User messages (every 4th entry) stay alone: the 3 entries between two of them are
    # shorter than a run of 5, so nothing collapses here.
    assert all(len(n.entry_ids) == 1 for n in layout.nodes)
    assert layout.node("c1").kind == "compaction"
    assert layout.node("e30").key == "e30"  # the first kept entry is pinned
    assert layout.links == (("c1", "e30"),)


def test_runs_between_user_messages():
    # One user message followed by a long tool loop: the loop collapses into one run node.
    entries = [msg("u", None, "user", 0)]
    parent = "u"
    for k in range(20):
        role = "assistant" if k % 2 == 0 else "toolResult"
        entries.append(msg(f"t{k}", parent, role, k + 1))
        parent = f"t{k}"
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, collapse=8, tokens=lambda e: 10)
    keys = [n.key for n in layout.nodes]
    assert keys == ["u", "run:t0", "t19"]  # the leaf stays visible
    run = layout.by_key["run:t0"]
    assert len(run.entry_ids) == 19 and run.tokens == 190 and run.messages == 19
    # Inside a run, a span covers the run's share: t3..t5 are its 4th to 6th of 19.
    assert layout.x_span(["t3", "t5"]) == pytest.approx((0.5 + 3 / 19, 0.5 + 6 / 19))
    assert layout.x_span(["u"]) == (-0.5, 0.5)


def test_group_chain_fits_the_budget_keeping_important_nodes_alone():
    priority = [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    for budget in (20, 12, 8, 5, 4, 3, 1):
        spans = group_chain(priority, budget)
        assert len(spans) <= budget
        # The spans cover the chain in order, with no gap and no overlap.
        assert [i for a, b in spans for i in range(a, b)] == list(range(len(priority)))
        if budget >= 3:
            assert (8, 9) in spans  # the compaction (priority 2) stays alone
        if budget >= 6:  # 3 kept nodes and 3 stretches between them
            assert (0, 1) in spans and (17, 18) in spans  # so do the user messages
    assert group_chain(priority, None) == [(i, i + 1) for i in range(20)]


def test_runs_use_the_budget_rather_than_collapsing_everything():
    # 100 ordinary nodes between two user messages, budget 30: the stretch is cut into
    # runs of equal length, as many as fit (28 = 30 - the two users).
    priority = [1, *([0] * 100), 1]
    spans = group_chain(priority, 30)
    runs = [b - a for a, b in spans if b - a > 1]
    assert len(spans) == 30 and len(runs) == 28
    assert max(runs) - min(runs) <= 1


def test_ten_thousand_entries_fit_the_column_budget():
    session, _ = generate_session(GeneratorConfig(seed=7, tasks=820))
    assert len(session.entries) > 9500
    layout = tree_layout(session, max_columns=100)
    assert layout.width <= 100 and layout.lanes <= 24
    # Every entry is shown by exactly one node, and runs count the messages they hold.
    shown = [i for n in layout.nodes for i in n.entry_ids]
    assert sorted(shown) == sorted(e.id for e in session.entries if e.id)
    messages = sum(
        1 for e in session.entries if e.type in ("message", "compaction", "branch_summary")
    )
    assert sum(n.messages for n in layout.nodes) == messages
    compactions = [e.id for e in session.entries if e.type == "compaction"]
    assert all(layout.node(c).kind == "compaction" for c in compactions)


# -- lanes -----------------------------------------------------------------------------------
def test_branches_past_the_lane_limit_fold_into_their_fork():
    entries = linear(6)
    for b in range(5):  # five branches from e2, overlapping: each needs its own lane
        entries += linear(3, parent="e2", prefix=f"b{b}_", start=10 + b * 3)
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, leaf_id="e5", max_lanes=3)
    assert layout.lanes == 3
    assert layout.hidden_branches == 5 - 2
    assert layout.by_key["e2"].hidden_branches == 3
    hidden = [n.key for n in layout.nodes if n.key.startswith("b")]
    assert len({k.split("_")[0] for k in hidden}) == 2
    folded_away = [e.id for e in entries if e.id.split("_")[0] not in {"e0"} and e.id not in hidden]
    assert all(layout.index[i] in layout.by_key for i in folded_away)


def test_branches_that_do_not_overlap_share_a_lane():
    entries = linear(40)
    entries += linear(2, parent="e3", prefix="a", start=100)
    entries += linear(2, parent="e30", prefix="b", start=200)
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, leaf_id="e39")
    assert layout.lanes == 2
    assert layout.by_key["a100"].y == layout.by_key["b200"].y == 1


# -- zoom ------------------------------------------------------------------------------------
def test_zoom_by_indices_and_by_ids():
    s = Session({"id": "s"}, linear(30))
    by_index = tree_layout(s, start=10, end=15)
    assert [n.key for n in by_index.nodes] == [f"e{k}" for k in range(10, 15)]
    assert by_index.path_range == (10, 15)
    by_id = tree_layout(s, start="e10", end="e14")  # an id end is included
    assert [n.key for n in by_id.nodes] == [n.key for n in by_index.nodes]
    assert [n.key for n in tree_layout(s, start=-3).nodes] == ["e27", "e28", "e29"]
    assert [n.key for n in tree_layout(s, path_range=(0, 2)).nodes] == ["e0", "e1"]
    with pytest.raises(KeyError):
        tree_layout(s, start="nope")


def test_zoom_keeps_branches_forking_inside_the_range_only():
    entries = [*linear(30), *linear(2, parent="e12", prefix="in", start=50)]
    entries += linear(2, parent="e25", prefix="out", start=60)
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, leaf_id="e29", start=10, end=20)
    keys = {n.key for n in layout.nodes}
    assert {"in50", "in51"} <= keys
    assert not keys & {"out60", "out61", "e20", "e25"}
    assert "e25" not in layout.index  # entries past the range are not drawn anywhere


def test_path_bounds():
    path = linear(10)
    assert path_bounds(path, None, None) == (0, 10)
    assert path_bounds(path, 2, -2) == (2, 8)
    assert path_bounds(path, "e4", "e4") == (4, 5)
    assert path_bounds(path, 8, 3) == (8, 8)


def test_layout_is_pure():
    s = Session({"id": "s"}, linear(50))
    assert tree_layout(s, max_columns=10) == tree_layout(s, max_columns=10)


# -- labels ----------------------------------------------------------------------------------
def test_place_labels_takes_the_first_free_position_or_none():
    a = (0, 0, 10, 5)
    b = (5, 0, 15, 5)  # overlaps a
    b_low = (5, -10, 15, -5)  # its second position, clear of a
    c = (2, 1, 4, 3)  # overlaps a in both positions
    assert place_labels([[a], [b, b_low], [c, c]]) == [0, 1, None]
    assert place_labels([[a]], blocked=[(9, 4, 20, 20)]) == [None]


def test_branches_are_drawn_at_the_active_paths_scale():
    # 1,000 entries in 100 columns: 10 entries a column; a branch of 40 gets 4 columns,
    # not the rest of the width, so two branches far apart share one lane.
    entries = linear(1000)
    entries += linear(40, parent="e100", prefix="a", start=2000)
    entries += linear(40, parent="e600", prefix="b", start=3000)
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, leaf_id="e999", max_columns=100)
    for prefix in ("a", "b"):
        columns = {n.x for n in layout.nodes if n.key.removeprefix("run:").startswith(prefix)}
        assert len(columns) == 4
    assert layout.lanes == 2

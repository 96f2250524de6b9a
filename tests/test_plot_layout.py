"""The tree layout is a pure function: positions, lanes, runs, links and zoom."""

from __future__ import annotations

from musepi_lab.plot import node_kind, tree_layout
from musepi_lab.session import Entry, Session

TS = "2026-01-01T00:00:{:02d}.000Z"


def msg(i, parent, role, n=0, **extra):
    rec = {
        "type": "message",
        "id": i,
        "parentId": parent,
        "timestamp": TS.format(n),
        "message": {"role": role, "content": [{"type": "text", "text": i}]},
    }
    rec.update(extra)
    return Entry.from_record(rec)


def linear(n, start=0):
    out, parent = [], None
    for k in range(start, start + n):
        role = "user" if k % 4 == 0 else ("assistant" if k % 4 in (1, 3) else "toolResult")
        out.append(msg(f"e{k}", parent, role, k % 60))
        parent = f"e{k}"
    return out


def test_linear_session_is_one_lane_in_order():
    s = Session({"id": "s"}, linear(6))
    layout = tree_layout(s, collapse=None)
    assert layout.lanes == 1
    assert [(n.key, n.x, n.y) for n in layout.nodes] == [(f"e{k}", k, 0) for k in range(6)]
    assert layout.edges == tuple((f"e{k}", f"e{k + 1}") for k in range(5))
    assert all(n.on_path for n in layout.nodes)


def test_branch_gets_its_own_lane_forking_at_the_parent():
    base = linear(4)
    side = [msg("b1", "e1", "user", 30), msg("b2", "b1", "assistant", 31)]
    # File order: the side branch comes first, so the main line's tail is the leaf.
    entries = base[:2] + side + base[2:]
    s = Session({"id": "s"}, entries)
    layout = tree_layout(s, collapse=None)
    by = layout.by_key
    assert s.leaf_id == "e3"
    assert by["e3"].y == 0 and by["e3"].on_path
    assert by["b1"].y == 1 and not by["b1"].on_path
    assert by["b1"].x == by["e1"].x + 1  # forks right after its parent
    assert ("e1", "b1") in layout.edges and ("e1", "e2") in layout.edges


def test_long_runs_collapse_but_special_entries_stay():
    entries = linear(40)
    comp = Entry.from_record(
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "e39",
            "timestamp": TS.format(59),
            "summary": "S",
            "firstKeptEntryId": "e30",
            "tokensBefore": 1,
        }
    )
    s = Session({"id": "s"}, [*entries, comp])
    layout = tree_layout(s, collapse=5)
    # User messages (every 4th entry) never collapse: the 3 entries between two of them
    # are shorter than a run of 5, so nothing collapses here.
    assert all(len(n.entry_ids) == 1 for n in layout.nodes)
    assert layout.node("c1").kind == "compaction"
    assert layout.node("e30").key == "e30"  # the first kept entry is pinned
    assert layout.links == (("c1", "e30"),)
    # Every entry is shown by exactly one node.
    shown = [i for n in layout.nodes for i in n.entry_ids]
    assert sorted(shown) == sorted(e.id for e in s.entries)


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
    assert len(run.entry_ids) == 19 and run.tokens == 190
    assert layout.x_span(["t3", "t5"]) == (0.5, 1.5)


def test_zoom_to_range():
    s = Session({"id": "s"}, linear(30))
    layout = tree_layout(s, collapse=None, path_range=(10, 15))
    assert [n.key for n in layout.nodes] == [f"e{k}" for k in range(10, 15)]


def test_node_kinds():
    assert node_kind(msg("a", None, "user")) == "user"
    assert node_kind(msg("a", None, "developer")) == "custom"
    assert node_kind(Entry.from_record({"type": "model_change", "id": "m"})) == "meta"
    assert node_kind(Entry.from_record({"type": "branch_summary", "id": "b"})) == "branch_summary"


def test_layout_is_pure():
    s = Session({"id": "s"}, linear(50))
    assert tree_layout(s) == tree_layout(s)

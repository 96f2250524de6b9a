"""Branch summarization preparation and the branch_summary entry (spec §7.1–7.2, §1.10)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.compaction._branch import (
    BranchPreparation,
    branch_summary_budget,
    branch_with_summary,
    collect_entries_for_branch_summary,
    navigation_leaf,
    prepare_branch_entries,
)
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.tokens import TokenCounter

SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seed" / "000_b8b2501f6ea5290b.txt"


def rec(eid: str, parent: str | None, kind: str = "message", **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        **fields,
    }


def user(eid: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    return rec(
        eid,
        parent,
        message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    )


def assistant(eid: str, parent: str | None, *blocks: dict[str, Any]) -> dict[str, Any]:
    return rec(eid, parent, message={"role": "assistant", "content": list(blocks), "timestamp": 1})


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def result(eid: str, parent: str | None, cid: str, body: str, **extra: Any) -> dict[str, Any]:
    msg = {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": "read",
        "content": [text(body)],
        "isError": False,
        "timestamp": 1,
        **extra,
    }
    return rec(eid, parent, message=msg)


def session_of(*records: dict[str, Any]) -> Session:
    return Session(
        {"type": "session", "version": 3, "id": "s", "cwd": "/w"},
        [Entry.from_record(r) for r in records],
    )


def seed_tree() -> Session:
    """The seed's "Branch switch shape": A → B → C → D (old leaf) and A → E → F (target)."""
    return session_of(
        user("A", None, "start"),
        user("E", "A", "another idea"),
        assistant("F", "E", text("on it")),
        assistant("B", "A", call("c1", "read", path="src/a.py")),
        result("C", "B", "c1", "print(1)"),
        assistant("D", "C", text("done reading"), call("c2", "edit", path="src/a.py")),
    )


def ids(entries: Any) -> list[str]:
    return [e.id for e in entries]


# -- collecting ----------------------------------------------------------------------------


def test_collect_matches_the_seed_picture() -> None:
    s = seed_tree()
    assert s.leaf_id == "D"
    entries, common = collect_entries_for_branch_summary(s, "D", "F")
    if SEED.exists():
        seed = SEED.read_text(encoding="utf-8")
        assert re.search(r"Common ancestor: (\w+)", seed).group(1) == common  # type: ignore[union-attr]
        listed = re.search(r"Entries to summarize: ([\w, ]+)", seed).group(1)  # type: ignore[union-attr]
        assert [x.strip() for x in listed.split(",")] == ids(entries)
    assert (ids(entries), common) == (["B", "C", "D"], "A")


def test_collect_edge_cases() -> None:
    s = seed_tree()
    assert collect_entries_for_branch_summary(s, None, "F") == ((), None)
    # Target on the old leaf's own path: only what lies below it is abandoned.
    entries, common = collect_entries_for_branch_summary(s, "D", "B")
    assert (ids(entries), common) == (["C", "D"], "B")
    # Unknown target: no common ancestor, everything up to the root.
    entries, common = collect_entries_for_branch_summary(s, "D", "nope")
    assert (ids(entries), common) == (["A", "B", "C", "D"], None)


def test_collect_includes_compactions_and_stops_at_missing_parent() -> None:
    s = session_of(
        user("A", None),
        user("B", "A"),
        rec("K", "B", "compaction", summary="old", firstKeptEntryId="B", tokensBefore=9),
        user("X", "A"),
        user("O", "ghost"),
        user("P", "O"),
    )
    entries, common = collect_entries_for_branch_summary(s, "K", "X")
    assert (ids(entries), common) == (["B", "K"], "A")
    entries, common = collect_entries_for_branch_summary(s, "P", "X")
    assert (ids(entries), common) == (["O", "P"], None)


# -- navigation ----------------------------------------------------------------------------


def test_navigation_leaf_rule() -> None:
    s = session_of(
        user("A", None),
        assistant("B", "A", text("x")),
        rec("M", "B", "custom_message", customType="note", content="hi", display=True),
        user("U", "M"),
        rec("T", "U", "thinking_level_change", thinkingLevel="high"),
    )
    assert navigation_leaf(s, "U") == "M"  # a user message: its parent
    assert navigation_leaf(s, "M") == "B"  # a custom_message: its parent
    assert navigation_leaf(s, "B") == "B"  # anything else: itself
    assert navigation_leaf(s, "T") == "T"
    assert navigation_leaf(s, "A") is None  # the root user message: before the first entry
    with pytest.raises(ValueError, match="Entry nope not found"):
        navigation_leaf(s, "nope")


# -- the summary entry ---------------------------------------------------------------------


def test_branch_with_summary_attaches_at_the_target_with_from_id_quirk() -> None:
    s = seed_tree()
    details = {"readFiles": [], "modifiedFiles": ["src/a.py"]}
    after = branch_with_summary(
        s, navigation_leaf(s, "F"), "summary of B,C,D", details, entry_id="5e5e5e5e"
    )
    assert len(s.entries) == 6, "the input session is unchanged"
    summary = after.get("5e5e5e5e")
    assert summary is not None
    assert summary.type == "branch_summary"
    assert summary.parent_id == "F"
    assert summary["fromId"] == "F"  # the attachment point, not the old leaf D
    assert summary["summary"] == "summary of B,C,D"
    assert summary["details"] == details
    assert "fromExtension" not in summary.record and "fromHook" not in summary.record
    # After: A → E → F → summary is the current path; B, C, D stay as they were.
    assert after.leaf_id == "5e5e5e5e"
    assert ids(after.path()) == ["A", "E", "F", "5e5e5e5e"]
    assert ids(after.children("A")) == ["E", "B"]
    assert after.children("D") == ()
    for eid in "ABCDEF":
        assert after.get(eid) is s.get(eid)


def test_branch_with_summary_at_root_and_flags() -> None:
    s = seed_tree()
    after = branch_with_summary(
        s, None, "sum", from_extension=True, timestamp="2026-02-02T00:00:00.000Z"
    )
    leaf = after.leaf
    assert leaf is not None
    assert leaf.parent_id is None and leaf["fromId"] == "root"
    assert leaf["fromExtension"] is True and "details" not in leaf.record
    assert leaf.timestamp == "2026-02-02T00:00:00.000Z"
    assert re.fullmatch(r"[0-9a-f]{8}", leaf.id or "")
    assert leaf in after.roots
    pi = branch_with_summary(s, "B", "sum", from_extension=True, profile="pi").leaf
    assert pi is not None and pi["fromHook"] is True and "fromExtension" not in pi.record
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", pi.timestamp or "")
    with pytest.raises(ValueError, match="Entry nope not found"):
        branch_with_summary(s, "nope", "sum")


def test_navigate_from_old_leaf_to_user_target_end_to_end() -> None:
    s = seed_tree()
    # Navigating to user message E puts E's text back in the editor: the leaf becomes A.
    entries, _ = collect_entries_for_branch_summary(s, "D", "E")
    prep = prepare_branch_entries(entries, branch_summary_budget(None), profile="pi")
    after = branch_with_summary(
        s, navigation_leaf(s, "E"), "sum", {"readFiles": [], "modifiedFiles": []}
    )
    assert ids(entries) == ["B", "C", "D"]
    assert prep.entry_ids == ("B", "D")  # pi leaves tool results out
    assert ids(after.path())[:-1] == ["A"]
    assert after.leaf is not None and after.leaf["fromId"] == "A"


# -- budget and preparation ----------------------------------------------------------------


def test_budget() -> None:
    assert branch_summary_budget(None) == 128000 - 16384
    assert branch_summary_budget(0) == 128000 - 16384
    assert branch_summary_budget(200000) == 200000 - 16384
    assert branch_summary_budget(200000, reserve=50000) == 150000


def test_pi_skips_tool_results_and_seeds_file_ops() -> None:
    s = session_of(
        assistant("B", None, call("c1", "read", path="src/a.py")),
        result("C", "B", "c1", "x" * 400),
        rec(
            "S",
            "C",
            "branch_summary",
            fromId="C",
            summary="old",
            details={"readFiles": ["r.md:1-5"], "modifiedFiles": ["m.md"]},
        ),
        rec(
            "H",
            "S",
            "branch_summary",
            fromId="S",
            summary="hook",
            fromHook=True,
            details={"readFiles": ["hook.md"], "modifiedFiles": []},
        ),
        assistant("D", "H", call("c2", "write", path="src/b.py", content="y")),
    )
    prep = prepare_branch_entries(s.entries, 0, profile="pi")
    assert isinstance(prep, BranchPreparation)
    assert prep.entry_ids == ("B", "S", "H", "D")
    assert prep.file_ops.read == {"src/a.py", "r.md:1-5"}
    assert prep.file_ops.edited == {"m.md"}
    assert prep.file_ops.written == {"src/b.py"}
    musepi = prepare_branch_entries(s.entries, 0, profile="musepi")
    assert musepi.entry_ids == ("B", "C", "S", "H", "D")
    # musepi strips selectors of seeded reads; `fromHook` marks an extension summary too.
    assert musepi.file_ops.read == {"src/a.py", "r.md"}


def test_musepi_tool_results_use_truncated_text_and_skip_useless() -> None:
    big = "y" * 10000
    s = session_of(
        assistant("B", None, call("c1", "read", path="a")),
        result("C", "B", "c1", big),
        result("U", "C", "c1", "z" * 800, useless=True),
        result("V", "U", "c1", "w" * 800, useless=True, isError=True),
        result("Z", "V", "c1", ""),
    )
    prep = prepare_branch_entries(s.entries, 0, counter=TokenCounter("musepi"), profile="musepi")
    assert prep.entry_ids == ("B", "C", "V", "Z")
    # As the summarizer sees it: 2000 chars, then pi's marker (spec §5.1), UTF-8 bytes / 4
    # rounded up per fragment (spec §3.4). An empty result counts 0.
    shown = 2000 + len("\n\n[... 8000 more characters truncated]")
    call_tokens = (len("read") + 3) // 4 + (len('{"path":"a"}') + 3) // 4
    assert prep.total_tokens == call_tokens + (shown + 3) // 4 + (800 + 3) // 4


def test_budget_walk_keeps_newest_and_summary_slack() -> None:
    # pi counter: 400 ASCII chars = 100 tokens.
    def build(summary_chars: int) -> Session:
        return session_of(
            assistant("O", None, call("c0", "read", path="old.py")),
            user("P", "O", "p" * 400),
            rec(
                "K",
                "P",
                "compaction",
                summary="k" * summary_chars,
                firstKeptEntryId="P",
                tokensBefore=1,
            ),
            assistant("Q", "K", text("q" * 396), call("c1", "edit", path="q.py")),
            user("R", "Q", "r" * 400),
        )

    # Budget 300: R (100) and Q (100 + call) fit; K (100) would exceed, but the total so
    # far is below 270, so it is taken anyway, and the walk stops before P.
    s = build(400)
    prep = prepare_branch_entries(s.entries, 300, profile="pi")
    q_tokens = -(-(396 + len("edit") + len('{"path":"q.py"}')) // 4)
    assert prep.entry_ids == ("K", "Q", "R")
    assert prep.total_tokens == 100 + q_tokens + 100
    assert [m["role"] for m in prep.messages] == ["compactionSummary", "assistant", "user"]
    assert prep.file_ops.edited == {"q.py"} and prep.file_ops.read == frozenset()
    # Budget 230: R + Q = 204 < 207 = 0.9 · 230, so K still fits the slack.
    assert prepare_branch_entries(s.entries, 230, profile="pi").entry_ids == ("K", "Q", "R")
    # Budget 220: 204 ≥ 198 = 0.9 · 220, so the compaction is dropped.
    assert prepare_branch_entries(s.entries, 220, profile="pi").entry_ids == ("Q", "R")
    # A plain message over budget is never taken, but its file ops still count: the walk
    # extracts them before the budget check, and stops there.
    prep = prepare_branch_entries(s.entries, 150, profile="pi")
    assert prep.entry_ids == ("R",)
    assert prep.file_ops.edited == {"q.py"}
    # No budget: everything.
    assert prepare_branch_entries(s.entries, 0, profile="pi").entry_ids == ("O", "P", "K", "Q", "R")

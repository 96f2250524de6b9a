"""pi's session-manager tests (spec §8.1), ported to our immutable `Session` and reader.

Sources: pi-mono `packages/coding-agent/test/session-manager/build-context.test.ts`,
`tree-traversal.test.ts`, `labels.test.ts`, `migration.test.ts`, `file-operations.test.ts`.
pi's mutable SessionManager (`branch()`, `appendLabelChange()`, ...) has no counterpart: a
`Session` is immutable, so those cases become explicit `parentId`s and appended records.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.context._build import build_session_context, entry_path
from musepi_lab.formats._pi import migrate_records, read_pi_jsonl, records_to_session
from musepi_lab.session._errors import SessionReadError
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

TS = "2025-01-01T00:00:00Z"
HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": TS, "cwd": "/tmp"}


# -- builders (pi's build-context.test.ts helpers) --------------------------------------
def msg(entry_id: str, parent: str | None, role: str, text: str, ts: str = TS) -> dict[str, Any]:
    base = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts}
    if role == "user":
        return {**base, "message": {"role": "user", "content": text, "timestamp": 1}}
    return {
        **base,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-test",
            "usage": {
                "input": 1,
                "output": 1,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": "stop",
            "timestamp": 1,
        },
    }


def compaction(entry_id: str, parent: str | None, summary: str, first_kept: str) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "summary": summary,
        "firstKeptEntryId": first_kept,
        "tokensBefore": 1000,
    }


def branch_summary(entry_id: str, parent: str | None, summary: str, from_id: str) -> dict:
    return {
        "type": "branch_summary",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "summary": summary,
        "fromId": from_id,
    }


def thinking(entry_id: str, parent: str | None, level: str) -> dict[str, Any]:
    return {
        "type": "thinking_level_change",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "thinkingLevel": level,
    }


def model_change(entry_id: str, parent: str | None, provider: str, model_id: str) -> dict:
    return {
        "type": "model_change",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "provider": provider,
        "modelId": model_id,
    }


def label(entry_id: str, parent: str | None, target: str, text: str | None) -> dict[str, Any]:
    rec = {"type": "label", "id": entry_id, "parentId": parent, "timestamp": TS, "targetId": target}
    if text is not None:
        rec["label"] = text
    return rec


def session_of(*records: dict[str, Any]) -> Session:
    return Session(HEADER, [Entry.from_record(r) for r in records])


def text_of(message: Any) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def ids(entries: Any) -> list[str | None]:
    return [e.id for e in entries]


# =======================================================================================
# build-context.test.ts (pi profile, entries given as a bare list as in pi's tests)
# =======================================================================================
class TestBuildContextTrivial:
    def test_empty_entries_returns_empty_context(self) -> None:
        ctx = build_session_context([], profile="pi")
        assert ctx.messages == ()
        assert ctx.thinking_level == "off"
        assert ctx.model is None

    def test_single_user_message(self) -> None:
        ctx = build_session_context([msg("1", None, "user", "hello")], profile="pi")
        assert [m["role"] for m in ctx.messages] == ["user"]

    def test_simple_conversation(self) -> None:
        entries = [
            msg("1", None, "user", "hello"),
            msg("2", "1", "assistant", "hi there"),
            msg("3", "2", "user", "how are you"),
            msg("4", "3", "assistant", "great"),
        ]
        ctx = build_session_context(entries, profile="pi")
        assert [m["role"] for m in ctx.messages] == ["user", "assistant", "user", "assistant"]
        assert ctx.entry_ids == ("1", "2", "3", "4")

    def test_tracks_thinking_level_changes(self) -> None:
        entries = [
            msg("1", None, "user", "hello"),
            thinking("2", "1", "high"),
            msg("3", "2", "assistant", "thinking hard"),
        ]
        ctx = build_session_context(entries, profile="pi")
        assert ctx.thinking_level == "high"
        assert len(ctx.messages) == 2

    def test_tracks_model_from_assistant_message(self) -> None:
        entries = [msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")]
        ctx = build_session_context(entries, profile="pi")
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-test"}

    def test_assistant_message_overrides_earlier_model_change(self) -> None:
        entries = [
            msg("1", None, "user", "hello"),
            model_change("2", "1", "openai", "gpt-4"),
            msg("3", "2", "assistant", "hi"),
        ]
        ctx = build_session_context(entries, profile="pi")
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-test"}

    def test_musepi_keeps_the_explicit_model_change(self) -> None:
        # The one trivial case where the profiles differ (spec §2.3).
        entries = [
            msg("1", None, "user", "hello"),
            model_change("2", "1", "openai", "gpt-4"),
            msg("3", "2", "assistant", "hi"),
        ]
        ctx = build_session_context(entries, profile="musepi")
        assert ctx.model == {"provider": "openai", "modelId": "gpt-4"}
        assert ctx.models == {"default": "openai/gpt-4"}


@pytest.mark.parametrize("profile", ["pi", "musepi"])
class TestBuildContextCompaction:
    def test_includes_summary_before_kept_messages(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "first"),
            msg("2", "1", "assistant", "response1"),
            msg("3", "2", "user", "second"),
            msg("4", "3", "assistant", "response2"),
            compaction("5", "4", "Summary of first two turns", "3"),
            msg("6", "5", "user", "third"),
            msg("7", "6", "assistant", "response3"),
        ]
        ctx = build_session_context(entries, profile=profile)
        assert len(ctx.messages) == 5
        assert "Summary of first two turns" in ctx.messages[0]["summary"]
        assert ctx.messages[1]["content"] == "second"
        assert ctx.messages[2]["content"][0]["text"] == "response2"
        assert ctx.messages[3]["content"] == "third"
        assert ctx.messages[4]["content"][0]["text"] == "response3"
        assert ctx.entry_ids == ("5", "3", "4", "6", "7")
        assert ctx.compaction_id == "5"

    def test_compaction_keeping_from_first_message(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "first"),
            msg("2", "1", "assistant", "response"),
            compaction("3", "2", "Empty summary", "1"),
            msg("4", "3", "user", "second"),
        ]
        ctx = build_session_context(entries, profile=profile)
        assert len(ctx.messages) == 4
        assert "Empty summary" in ctx.messages[0]["summary"]

    def test_multiple_compactions_uses_latest(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "a"),
            msg("2", "1", "assistant", "b"),
            compaction("3", "2", "First summary", "1"),
            msg("4", "3", "user", "c"),
            msg("5", "4", "assistant", "d"),
            compaction("6", "5", "Second summary", "4"),
            msg("7", "6", "user", "e"),
        ]
        ctx = build_session_context(entries, profile=profile)
        assert len(ctx.messages) == 4
        assert "Second summary" in ctx.messages[0]["summary"]
        assert ctx.compaction_id == "6"

    def test_unknown_first_kept_id_keeps_nothing_before_the_compaction(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "a"),
            msg("2", "1", "assistant", "b"),
            compaction("3", "2", "S", "gone"),
            msg("4", "3", "user", "c"),
        ]
        ctx = build_session_context(entries, profile=profile)
        assert ctx.entry_ids == ("3", "4")


@pytest.mark.parametrize("profile", ["pi", "musepi"])
class TestBuildContextBranches:
    def test_follows_path_to_specified_leaf(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "start"),
            msg("2", "1", "assistant", "response"),
            msg("3", "2", "user", "branch A"),
            msg("4", "2", "user", "branch B"),
        ]
        ctx_a = build_session_context(entries, "3", profile=profile)
        assert len(ctx_a.messages) == 3
        assert ctx_a.messages[2]["content"] == "branch A"
        ctx_b = build_session_context(entries, "4", profile=profile)
        assert len(ctx_b.messages) == 3
        assert ctx_b.messages[2]["content"] == "branch B"

    def test_includes_branch_summary_in_path(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "start"),
            msg("2", "1", "assistant", "response"),
            msg("3", "2", "user", "abandoned path"),
            branch_summary("4", "2", "Summary of abandoned work", "3"),
            msg("5", "4", "user", "new direction"),
        ]
        ctx = build_session_context(entries, "5", profile=profile)
        assert len(ctx.messages) == 4
        assert ctx.messages[2]["role"] == "branchSummary"
        assert "Summary of abandoned work" in ctx.messages[2]["summary"]
        assert ctx.messages[3]["content"] == "new direction"

    def test_empty_branch_summary_adds_no_message(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "start"),
            branch_summary("2", "1", "", "1"),
            msg("3", "2", "user", "next"),
        ]
        ctx = build_session_context(entries, profile=profile)
        assert ctx.entry_ids == ("1", "3")

    def test_complex_tree_with_branches_and_compaction(self, profile: str) -> None:
        entries = [
            msg("1", None, "user", "start"),
            msg("2", "1", "assistant", "r1"),
            msg("3", "2", "user", "q2"),
            msg("4", "3", "assistant", "r2"),
            compaction("5", "4", "Compacted history", "3"),
            msg("6", "5", "user", "q3"),
            msg("7", "6", "assistant", "r3"),
            msg("8", "3", "user", "wrong path"),
            msg("9", "8", "assistant", "wrong response"),
            branch_summary("10", "3", "Tried wrong approach", "9"),
            msg("11", "10", "user", "better approach"),
        ]
        main = build_session_context(entries, "7", profile=profile)
        assert len(main.messages) == 5
        assert "Compacted history" in main.messages[0]["summary"]
        assert [text_of(m) for m in main.messages[1:]] == ["q2", "r2", "q3", "r3"]

        side = build_session_context(entries, "11", profile=profile)
        assert len(side.messages) == 5
        assert [text_of(m) for m in side.messages[:3]] == ["start", "r1", "q2"]
        assert "Tried wrong approach" in side.messages[3]["summary"]
        assert side.messages[4]["content"] == "better approach"


@pytest.mark.parametrize("profile", ["pi", "musepi"])
class TestBuildContextEdgeCases:
    def test_uses_last_entry_when_leaf_id_not_found(self, profile: str) -> None:
        entries = [msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")]
        ctx = build_session_context(entries, "nonexistent", profile=profile)
        assert len(ctx.messages) == 2

    def test_orphaned_entry_yields_only_itself(self, profile: str) -> None:
        entries = [msg("1", None, "user", "hello"), msg("2", "missing", "assistant", "orphan")]
        ctx = build_session_context(entries, "2", profile=profile)
        assert ctx.entry_ids == ("2",)

    def test_null_leaf_gives_empty_context(self, profile: str) -> None:
        entries = [msg("1", None, "user", "hello"), thinking("2", "1", "high")]
        ctx = build_session_context(entries, None, profile=profile)
        assert (ctx.messages, ctx.thinking_level, ctx.model) == ((), "off", None)

    def test_terminates_on_two_node_parent_cycle(self, profile: str) -> None:
        entries = [msg("a", "b", "user", "from-a"), msg("b", "a", "assistant", "from-b")]
        ctx = build_session_context(entries, "b", profile=profile)
        assert [m["role"] for m in ctx.messages] == ["user", "assistant"]

    def test_terminates_on_longer_parent_cycle(self, profile: str) -> None:
        entries = [
            msg("a", "c", "user", "cycle-a"),
            msg("b", "a", "assistant", "cycle-b"),
            msg("c", "b", "user", "cycle-c"),
        ]
        ctx = build_session_context(entries, "c", profile=profile)
        assert [m["role"] for m in ctx.messages] == ["user", "assistant", "user"]

    def test_session_and_entry_list_agree(self, profile: str) -> None:
        records = [
            msg("1", None, "user", "start"),
            msg("2", "1", "assistant", "response"),
            msg("3", "2", "user", "branch A"),
            msg("4", "2", "user", "branch B"),
        ]
        for leaf in ("3", "4", "zzz"):
            from_list = build_session_context(records, leaf, profile=profile)
            from_session = build_session_context(session_of(*records), leaf, profile=profile)
            assert from_list == from_session


def test_unknown_profile_is_rejected() -> None:
    with pytest.raises(ValueError, match="profile"):
        build_session_context([], profile="claude")


def test_entry_path_over_a_bare_list() -> None:
    entries = [
        Entry.from_record(r) for r in (msg("1", None, "user", "a"), msg("2", "1", "user", "b"))
    ]
    assert ids(entry_path(entries)) == ["1", "2"]
    assert ids(entry_path(entries, "1")) == ["1"]
    assert entry_path([]) == ()


# =======================================================================================
# tree-traversal.test.ts
# =======================================================================================
def empty_session() -> Session:
    return Session(HEADER, [])


class TestAppend:
    def test_append_chains_parent_ids(self) -> None:
        s = empty_session()
        for entry_id, role in (("u1", "user"), ("a1", "assistant"), ("u2", "user")):
            rec = msg(entry_id, None, role, entry_id)
            del rec["parentId"]
            s = s.append(rec)
        assert [e.parent_id for e in s.entries] == [None, "u1", "a1"]
        assert [e.type for e in s.entries] == ["message"] * 3

    @pytest.mark.parametrize(
        "record",
        [
            {"type": "thinking_level_change", "thinkingLevel": "high"},
            {"type": "model_change", "provider": "openai", "modelId": "gpt-4"},
            {
                "type": "compaction",
                "summary": "summary",
                "firstKeptEntryId": "m1",
                "tokensBefore": 1000,
            },
            {"type": "custom", "customType": "my_data", "data": {"key": "value"}},
        ],
        ids=["thinking", "model", "compaction", "custom"],
    )
    def test_every_entry_kind_integrates_into_tree(self, record: dict[str, Any]) -> None:
        s = empty_session().append({"type": "message", "id": "m1", "timestamp": TS, "message": {}})
        s = s.append({**record, "id": "x1", "timestamp": TS})
        s = s.append({"type": "message", "id": "m2", "timestamp": TS, "message": {}})
        assert s.get("x1").parent_id == "m1"
        assert s.get("m2").parent_id == "x1"
        assert {k: s.get("x1").get(k) for k in record} == record

    def test_leaf_advances_after_each_append(self) -> None:
        s = empty_session()
        assert s.leaf_id is None
        for entry_id in ("1", "2", "3"):
            s = s.append({"type": "message", "id": entry_id, "timestamp": TS, "message": {}})
            assert s.leaf_id == entry_id

    def test_append_does_not_change_the_original(self) -> None:
        s = session_of(msg("1", None, "user", "a"))
        s2 = s.append(msg("2", "1", "user", "b"))
        assert ids(s.entries) == ["1"]
        assert ids(s2.entries) == ["1", "2"]

    def test_append_with_explicit_parent_branches(self) -> None:
        # pi's branch(id1) + appendMessage: the new entry is a sibling of id2.
        s = session_of(msg("1", None, "user", "1"), msg("2", "1", "assistant", "2"))
        s = s.append(msg("3", "1", "user", "branched"))
        assert s.get("3").parent_id == "1"
        assert s.leaf_id == "3"


class TestPath:
    def test_empty_session_has_empty_path(self) -> None:
        assert empty_session().path() == ()

    def test_single_entry_path(self) -> None:
        assert ids(session_of(msg("1", None, "user", "hello")).path()) == ["1"]

    def test_full_path_from_root_to_leaf(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"),
            msg("2", "1", "assistant", "2"),
            thinking("3", "2", "high"),
            msg("4", "3", "user", "3"),
        )
        assert ids(s.path()) == ["1", "2", "3", "4"]

    def test_path_to_specified_entry(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"),
            msg("2", "1", "assistant", "2"),
            msg("3", "2", "user", "3"),
            msg("4", "3", "assistant", "4"),
        )
        assert ids(s.path("2")) == ["1", "2"]

    def test_path_terminates_on_parent_cycle_read_from_file(self, tmp_path: Path) -> None:
        file = tmp_path / "cycle-branch.jsonl"
        lines = [
            {**HEADER, "id": "session-cycle"},
            {"type": "custom", "customType": "marker", "id": "cycle-a", "parentId": "cycle-b",
             "timestamp": "2026-02-27T11:00:01.000Z"},
            {"type": "custom", "customType": "marker", "id": "cycle-b", "parentId": "cycle-a",
             "timestamp": "2026-02-27T11:00:02.000Z"},
        ]  # fmt: skip
        file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        s = read_pi_jsonl(file)
        assert ids(s.path("cycle-b")) == ["cycle-a", "cycle-b"]
        assert any(p.kind == "parent-cycle" and p.path == str(file) for p in s.errors)

    def test_leaf_is_last_in_file_order_not_deepest(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"),
            msg("2", "1", "assistant", "2"),
            msg("3", "2", "user", "3"),
            msg("4", "1", "user", "shallow, but last"),
        )
        assert s.leaf_id == "4"
        assert ids(s.path()) == ["1", "4"]

    def test_context_follows_current_branch_only(self) -> None:
        s = session_of(
            msg("1", None, "user", "msg1"),
            msg("2", "1", "assistant", "msg2"),
            msg("3", "2", "user", "msg3"),
            msg("4", "2", "assistant", "msg4-branch"),
        )
        ctx = build_session_context(s, profile="pi")
        assert [text_of(m) for m in ctx.messages] == ["msg1", "msg2", "msg4-branch"]


class TestTree:
    def test_empty_session_has_no_roots(self) -> None:
        assert empty_session().roots == ()

    def test_linear_session_is_one_chain(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"), msg("2", "1", "assistant", "2"), msg("3", "2", "user", "3")
        )
        assert ids(s.roots) == ["1"]
        assert ids(s.children("1")) == ["2"]
        assert ids(s.children("2")) == ["3"]
        assert s.children("3") == ()

    def test_branch_gives_siblings(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"),
            msg("2", "1", "assistant", "2"),
            msg("3", "2", "user", "3"),
            msg("4", "2", "user", "4-branch"),
        )
        assert ids(s.roots) == ["1"]
        assert sorted(ids(s.children("2"))) == ["3", "4"]

    def test_three_way_branch(self) -> None:
        s = session_of(
            msg("1", None, "user", "root"),
            msg("2", "1", "assistant", "response"),
            msg("A", "2", "user", "branch-A"),
            msg("B", "2", "user", "branch-B"),
            msg("C", "2", "user", "branch-C"),
        )
        assert sorted(ids(s.children("2"))) == ["A", "B", "C"]

    def test_deep_branching(self) -> None:
        s = session_of(
            msg("1", None, "user", "1"),
            msg("2", "1", "assistant", "2"),
            msg("3", "2", "user", "3"),
            msg("4", "3", "assistant", "4"),
            msg("5", "2", "user", "5"),
            msg("6", "5", "assistant", "6"),
            msg("7", "5", "user", "7"),
        )
        assert sorted(ids(s.children("2"))) == ["3", "5"]
        assert sorted(ids(s.children("5"))) == ["6", "7"]
        assert ids(s.children("3")) == ["4"]

    def test_children_are_ordered_by_timestamp_not_file_order(self) -> None:
        s = session_of(
            msg("1", None, "user", "root", ts="2025-01-01T00:00:00.000Z"),
            msg("late", "1", "user", "x", ts="2025-01-01T00:00:09.000Z"),
            msg("early", "1", "user", "y", ts="2025-01-01T00:00:01.000Z"),
            msg("mid", "1", "user", "z", ts="2025-01-01T00:00:05.000Z"),
        )
        assert ids(s.children("1")) == ["early", "mid", "late"]

    def test_roots_include_orphans_and_self_parented(self) -> None:
        s = session_of(
            msg("r", None, "user", "root", ts="2025-01-01T00:00:00.000Z"),
            msg("orphan", "missing", "user", "x", ts="2025-01-01T00:00:01.000Z"),
            msg("self", "self", "user", "y", ts="2025-01-01T00:00:02.000Z"),
        )
        assert ids(s.roots) == ["r", "orphan", "self"]

    def test_duplicate_ids_later_wins_in_tree(self, tmp_path: Path) -> None:
        # file-operations.test.ts "deduplicates duplicate entry IDs when building tree".
        def marker(entry_id: str, parent: str | None, second: int) -> dict[str, Any]:
            return {"type": "custom", "customType": "marker", "id": entry_id, "parentId": parent,
                    "timestamp": f"2026-02-24T21:10:4{second}.000Z"}  # fmt: skip

        file = tmp_path / "duplicate-ids.jsonl"
        lines = [
            {**HEADER, "id": "session-2"},
            marker("root0001", None, 2),
            marker("child0001", "root0001", 3),
            marker("root0001", None, 2),
            marker("child0001", "root0001", 3),
            marker("leaf0001", "child0001", 4),
        ]
        file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        s = read_pi_jsonl(file)
        assert ids(s.roots) == ["root0001"]
        assert ids(s.children("root0001")) == ["child0001"]
        assert ids(s.children("child0001")) == ["leaf0001"]
        assert [p.line for p in s.errors if p.kind == "duplicate-id"] == [4, 5]

    def test_parent_cycle_members_become_roots(self) -> None:
        s = session_of(
            {"type": "custom", "id": "cycle-a", "parentId": "cycle-b", "timestamp": TS},
            {"type": "custom", "id": "cycle-b", "parentId": "cycle-a", "timestamp": TS},
        )
        assert sorted(ids(s.roots)) == ["cycle-a", "cycle-b"]

    def test_branch_summary_attaches_at_target(self) -> None:
        # branchWithSummary(id1, ...): summary's parent is the target and it becomes the leaf.
        s = session_of(
            msg("1", None, "user", "1"), msg("2", "1", "assistant", "2"), msg("3", "2", "user", "3")
        )
        s = s.append(branch_summary("bs", "1", "Summary of abandoned work", "1"))
        assert s.leaf_id == "bs"
        assert s.get("bs").parent_id == "1"
        ctx = build_session_context(s, profile="pi")
        assert [m["role"] for m in ctx.messages] == ["user", "branchSummary"]

    def test_get_entry(self) -> None:
        s = session_of(msg("1", None, "user", "first"), msg("2", "1", "assistant", "second"))
        assert s.get("nonexistent") is None
        assert s.get("1").message["content"] == "first"
        assert s.get("2").message["content"][0]["text"] == "second"
        assert s.leaf.id == "2"


# =======================================================================================
# labels.test.ts
# =======================================================================================
class TestLabels:
    def test_label_is_resolved(self) -> None:
        s = session_of(msg("m", None, "user", "hello"), label("l1", "m", "m", "checkpoint"))
        assert s.label("m") == "checkpoint"
        assert s.get("l1").type == "label"

    def test_last_label_wins(self) -> None:
        s = session_of(
            msg("m", None, "user", "hello"),
            label("l1", "m", "m", "first"),
            label("l2", "l1", "m", "second"),
            label("l3", "l2", "m", "third"),
        )
        assert s.label("m") == "third"

    @pytest.mark.parametrize("cleared", [None, ""], ids=["undefined", "empty"])
    def test_undefined_or_empty_label_clears(self, cleared: str | None) -> None:
        s = session_of(
            msg("m", None, "user", "hello"),
            label("l1", "m", "m", "checkpoint"),
            label("l2", "l1", "m", cleared),
        )
        assert s.label("m") is None
        assert "m" not in s.labels

    def test_labels_of_several_targets(self) -> None:
        s = session_of(
            msg("a", None, "user", "a"),
            msg("b", "a", "user", "b"),
            label("l1", "b", "a", "start"),
            label("l2", "l1", "b", "end"),
        )
        assert dict(s.labels) == {"a": "start", "b": "end"}

    @pytest.mark.parametrize("profile", ["pi", "musepi"])
    def test_labels_are_not_in_context(self, profile: str) -> None:
        s = session_of(
            msg("m", None, "user", "hello"),
            label("l1", "m", "m", "checkpoint"),
            msg("a", "l1", "assistant", "hi"),
        )
        ctx = build_session_context(s, profile=profile)
        assert ctx.entry_ids == ("m", "a")


# =======================================================================================
# migration.test.ts
# =======================================================================================
def v1_records() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header = {"type": "session", "id": "sess-1", "timestamp": TS, "cwd": "/tmp"}
    records = [
        {"type": "message", "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "message", "timestamp": "2025-01-01T00:00:02Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}],
                     "api": "test", "provider": "test", "model": "test",
                     "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
                     "stopReason": "stop", "timestamp": 2}},
    ]  # fmt: skip
    return header, records


class TestMigration:
    def test_v1_entries_get_ids_and_linear_parents(self) -> None:
        header, records = v1_records()
        assert migrate_records(header, records) == 1
        assert header["version"] == 3
        first, second = records
        assert re.fullmatch(r"[0-9a-f]{8}", first["id"])
        assert first["parentId"] is None
        assert re.fullmatch(r"[0-9a-f]{8}", second["id"])
        assert second["parentId"] == first["id"]

    def test_idempotent_on_migrated_input(self) -> None:
        header = {"type": "session", "id": "sess-1", "version": 2, "timestamp": TS, "cwd": "/tmp"}
        records = [
            {"type": "message", "id": "abc12345", "parentId": None, "timestamp": TS,
             "message": {"role": "user", "content": "hi", "timestamp": 1}},
            {"type": "message", "id": "def67890", "parentId": "abc12345", "timestamp": TS,
             "message": {"role": "user", "content": "again", "timestamp": 2}},
        ]  # fmt: skip
        before = copy.deepcopy(records)
        migrate_records(header, records)
        assert records == before
        assert header["version"] == 3

    def test_running_twice_changes_nothing_more(self) -> None:
        header, records = v1_records()
        migrate_records(header, records)
        once = copy.deepcopy((header, records))
        assert migrate_records(header, records) == 3
        assert (header, records) == once

    def test_first_kept_entry_index_becomes_id(self) -> None:
        header, records = v1_records()
        # Index into the whole line array, the header being index 0: index 2 = records[1].
        records.append({"type": "compaction", "timestamp": TS, "summary": "s",
                        "firstKeptEntryIndex": 2, "tokensBefore": 5})  # fmt: skip
        records.append({"type": "compaction", "timestamp": TS, "summary": "s",
                        "firstKeptEntryIndex": 0, "tokensBefore": 5})  # fmt: skip
        migrate_records(header, records)
        assert records[2]["firstKeptEntryId"] == records[1]["id"]
        assert "firstKeptEntryIndex" not in records[2]
        assert "firstKeptEntryId" not in records[3]  # pointed at the header: ignored

    def test_hook_message_becomes_custom(self) -> None:
        header = {"type": "session", "id": "s", "version": 2, "timestamp": TS, "cwd": "/"}
        records = [{"type": "message", "id": "h1", "parentId": None, "timestamp": TS,
                    "message": {"role": "hookMessage", "customType": "x", "content": "c",
                                "display": True, "timestamp": 1}}]  # fmt: skip
        migrate_records(header, records)
        assert records[0]["message"]["role"] == "custom"

    def test_reading_a_v1_file_migrates_in_memory_only(self, tmp_path: Path) -> None:
        header, records = v1_records()
        file = tmp_path / "v1.jsonl"
        file.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n")
        raw = file.read_bytes()
        s = read_pi_jsonl(file)
        assert s.header["version"] == 3
        assert [e.parent_id for e in s.entries] == [None, s.entries[0].id]
        assert file.read_bytes() == raw

    def test_v2_entries_missing_ids_are_reported(self, tmp_path: Path) -> None:
        # Newer pi repairs these; our reader keeps them outside the tree and says where.
        file = tmp_path / "v2.jsonl"
        lines = [
            {**HEADER, "version": 2},
            {"type": "message", "id": "abc12345", "parentId": None, "timestamp": TS,
             "message": {"role": "user", "content": "hi", "timestamp": 1}},
            {"type": "message", "timestamp": TS,
             "message": {"role": "user", "content": "later", "timestamp": 3}},
        ]  # fmt: skip
        file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        s = read_pi_jsonl(file)
        assert len(s.entries) == 2
        assert (3, "missing-id") in [(p.line, p.kind) for p in s.errors]
        assert all(p.line == 3 for p in s.errors)

    def test_records_to_session_migrates(self) -> None:
        header, records = v1_records()
        s = records_to_session(header, records)
        assert len(s.entries) == 2
        assert ids(s.path()) == [s.entries[0].id, s.entries[1].id]


# =======================================================================================
# file-operations.test.ts: our reader records problems where pi returns []
# =======================================================================================
VALID_HEADER = '{"type":"session","id":"abc","timestamp":"2025-01-01T00:00:00Z","cwd":"/tmp"}\n'
VALID_ENTRY = (
    '{"type":"message","id":"1","parentId":null,"timestamp":"2025-01-01T00:00:01Z",'
    '"message":{"role":"user","content":"hi","timestamp":1}}\n'
)


class TestFileOperations:
    def test_missing_file_is_a_clear_error(self, tmp_path: Path) -> None:
        missing = tmp_path / "nonexistent.jsonl"
        with pytest.raises(SessionReadError) as info:
            read_pi_jsonl(missing)
        assert info.value.kind == "not-found"
        assert str(missing) in str(info.value)

    def test_empty_file_records_a_problem(self, tmp_path: Path) -> None:
        file = tmp_path / "empty.jsonl"
        file.write_text("")
        s = read_pi_jsonl(file)
        assert s.entries == ()
        assert [(p.path, p.line, p.kind) for p in s.errors] == [(str(file), None, "empty-file")]

    def test_file_without_header_keeps_entries_and_says_so(self, tmp_path: Path) -> None:
        file = tmp_path / "no-header.jsonl"
        file.write_text('{"type":"message","id":"1"}\n')
        s = read_pi_jsonl(file)
        assert ids(s.entries) == ["1"]
        assert (1, "missing-header") in [(p.line, p.kind) for p in s.errors]

    def test_malformed_json_only(self, tmp_path: Path) -> None:
        file = tmp_path / "malformed.jsonl"
        file.write_text("not json\n")
        s = read_pi_jsonl(file)
        assert s.entries == ()
        assert [(p.path, p.line, p.kind) for p in s.errors] == [(str(file), 1, "malformed-json")]

    def test_strict_mode_raises_on_malformed_line(self, tmp_path: Path) -> None:
        file = tmp_path / "malformed.jsonl"
        file.write_text(VALID_HEADER + "not valid json\n" + VALID_ENTRY)
        with pytest.raises(SessionReadError) as info:
            read_pi_jsonl(file, strict=True)
        assert (info.value.path, info.value.line, info.value.kind) == (
            str(file),
            2,
            "malformed-json",
        )

    def test_loads_valid_session_file(self, tmp_path: Path) -> None:
        file = tmp_path / "valid.jsonl"
        file.write_text(VALID_HEADER + VALID_ENTRY)
        s = read_pi_jsonl(file)
        assert s.header["type"] == "session"
        assert [e.type for e in s.entries] == ["message"]
        assert s.errors == ()

    def test_skips_malformed_lines_but_keeps_valid_ones(self, tmp_path: Path) -> None:
        file = tmp_path / "mixed.jsonl"
        file.write_text(VALID_HEADER + "not valid json\n" + VALID_ENTRY)
        raw = file.read_bytes()
        s = read_pi_jsonl(file)
        assert ids(s.entries) == ["1"]
        assert [(p.line, p.kind) for p in s.errors] == [(2, "malformed-json")]
        assert file.read_bytes() == raw


@pytest.mark.parametrize("seed", range(60))
def test_path_is_the_parent_walk_on_chains_and_trees(seed):
    # Sessions of a few entries whose parents are the previous entry (a chain), another
    # earlier entry, a missing id, None, the entry itself or a later entry; some ids repeat
    # or are absent. The expected path follows `parentId` from the leaf through the last
    # entry of each id, stopping at a missing parent or an id already on the path.
    import random

    rng = random.Random(seed)
    n = rng.randrange(1, 9)
    ids: list[str | None] = [f"e{i}" for i in range(n)]
    if rng.random() < 0.2:
        ids[rng.randrange(n)] = ids[rng.randrange(n)]  # a repeated id
    if rng.random() < 0.1:
        ids[rng.randrange(n)] = None
    records = []
    for i, entry_id in enumerate(ids):
        roll = rng.random()
        if roll < 0.6:
            parent = ids[i - 1] if i else None
        elif roll < 0.7:
            parent = ids[rng.randrange(i)] if i else None
        elif roll < 0.8:
            parent = "missing"
        elif roll < 0.9:
            parent = entry_id
        else:
            parent = ids[rng.randrange(n)]
        record = {"type": "custom", "customType": "x", "parentId": parent, "timestamp": "t"}
        if entry_id is not None:
            record["id"] = entry_id
        records.append(record)
    entries = [Entry.from_record(r) for r in records]
    session = Session(HEADER, entries)

    last = {e.id: e for e in entries if e.id is not None}
    leaf = session.leaf  # the walk is under test here, not the choice of the leaf
    assert leaf is not None
    expected, seen, node = [], set(), leaf
    while node is not None:
        expected.append(node)
        if node.id is None:
            break
        seen.add(node.id)
        parent = node.parent_id
        node = last.get(parent) if parent is not None and parent not in seen else None
    expected.reverse()
    assert session.path() == tuple(expected)

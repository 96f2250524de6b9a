"""`prepare_compaction` (spec §4.3–4.5) and `CompactionResult` (spec §1.4, §1.11).

The MusePi retained-history cases are the examples asserted by oh-my-pi's
`compaction.test.ts`@2ebae80e (spec §4.5), with the same entry ids, run with the release
boundary (`boundary="release"`); the seed-boundary cases (the default) follow the seed's
"Boundary and cut-point logic" (`boundaryStart = prevCompactionIndex + 1`). Token sizes are
exact (an ASCII text of 4·n characters is n tokens for both estimators), so the other
expectations are worked out by hand in the comments.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from musepi_lab.compaction._prepare import CompactionPreparation, prepare_compaction
from musepi_lab.compaction._result import CompactionResult, iso_timestamp
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.tokens._counter import TokenCounter

PI = CompactionSettings.pi()
MUSEPI = CompactionSettings.musepi(remote_enabled=False)
RELEASE = MUSEPI.copy_with(boundary="release")  # oh-my-pi 18.2.3: re-open the kept region


def words(tokens: int) -> str:
    return "abcd" * tokens


def usage(inp: int, out: int = 0, cache_read: int = 0) -> dict:
    return {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": inp + out + cache_read,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


class Journal:
    """Appends entries as a live session would: each one a child of the current leaf."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.leaf: str | None = None

    def add(self, kind: str, entry_id: str | None = None, **fields: Any) -> str:
        entry_id = entry_id or f"e{len(self.records)}"
        self.records.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": self.leaf,
                "timestamp": f"2026-01-01T00:00:{len(self.records):02d}.000Z",
                **fields,
            }
        )
        self.leaf = entry_id
        return entry_id

    def msg(self, message: dict, entry_id: str | None = None) -> str:
        return self.add("message", entry_id, message={"timestamp": 0, **message})

    def user(self, text: str | int, entry_id: str | None = None) -> str:
        content = words(text) if isinstance(text, int) else text
        return self.msg({"role": "user", "content": content}, entry_id)

    def assistant(
        self,
        text: str | int = "ok",
        entry_id: str | None = None,
        *,
        use: dict | None = None,
        calls: list[dict] | None = None,
        stop: str = "stop",
    ) -> str:
        content: list[dict] = [
            {"type": "text", "text": words(text) if isinstance(text, int) else text}
        ]
        content += calls or []
        message: dict[str, Any] = {"role": "assistant", "content": content, "stopReason": stop}
        if use is not None:
            message["usage"] = use
        return self.msg(message, entry_id)

    def result(self, call_id: str, text: str | int = "done", entry_id: str | None = None) -> str:
        content = words(text) if isinstance(text, int) else text
        return self.msg(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "read",
                "content": [{"type": "text", "text": content}],
                "isError": False,
            },
            entry_id,
        )

    def compaction(self, summary: str, keep: str, entry_id: str | None = None, **extra: Any) -> str:
        return self.add(
            "compaction",
            entry_id,
            summary=summary,
            firstKeptEntryId=keep,
            tokensBefore=10000,
            **extra,
        )

    def entries(self) -> list[Entry]:
        return [Entry.from_record(r) for r in self.records]

    def session(self) -> Session:
        return Session({"type": "session", "version": 3, "id": "s"}, self.entries())

    def message_of(self, entry_id: str) -> dict:
        return next(r["message"] for r in self.records if r["id"] == entry_id)


def call(call_id: str, name: str, path: str) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": path}}


def musepi_tokens(*messages: dict) -> int:
    counter = TokenCounter("musepi")
    return sum(counter.count_message(m) for m in messages)


# -- pi (§4.3) -----------------------------------------------------------------------
def test_pi_nothing_summarizable_still_prepares():
    # §4.3 note: pi does not refuse; everything fits, so the cut is the first cut point.
    j = Journal()
    j.user(10)
    j.assistant(10, use=usage(500, 20))
    prep = prepare_compaction(j.session(), PI)
    assert prep is not None
    assert prep.first_kept_entry_id == "e0"
    assert prep.messages_to_summarize == () and prep.turn_prefix_messages == ()
    assert prep.kept_entry_ids == ("e0", "e1")
    assert prep.tokens_before == 520  # last usage, no trailing messages


@pytest.mark.parametrize("settings", [PI, MUSEPI])
def test_already_compacted_and_empty_paths_give_none(settings):
    j = Journal()
    j.user(10)
    j.assistant(10)
    j.compaction("S", "e0")
    assert prepare_compaction(j.session(), settings) is None
    assert prepare_compaction([], settings) is None


def test_pi_region_after_previous_compaction():
    j = Journal()
    j.user(100)  # e0
    j.assistant(100, use=usage(1000, 500))  # e1: before the compaction, not in the estimate
    j.compaction(words(40), "e0")  # e2: its summary (40 tokens) is in the estimate
    j.user(50)  # e3
    j.assistant(60, use=usage(300, 30), stop="aborted")  # e4: aborted, not valid usage
    j.user(30)  # e5
    prep = prepare_compaction(j.session(), PI.copy_with(keep_recent_tokens=75))
    assert prep is not None
    # No valid usage from the compaction on: 40 + 50 + 60 + 30 estimated.
    assert prep.tokens_before == 180
    assert prep.context_estimate.last_usage_index == -1
    # Walk: e5 30, e4 → 90 ≥ 75 → cut at e4, an assistant: split turn from e3.
    assert (prep.cut_index, prep.turn_start_index, prep.is_split_turn) == (4, 3, True)
    assert prep.boundary_start == 3 and prep.previous_compaction_index == 2
    # A split turn with no complete turn before it: nothing to summarize but a previous
    # summary — the shape on which pi's compact() writes "No prior history." and loses
    # the previous summary (§5.4, §10); the preparation carries both for the strategy.
    assert prep.summarize_entry_ids == ()
    assert prep.turn_prefix_entry_ids == ("e3",)
    assert prep.kept_entry_ids == ("e4", "e5")
    assert prep.turn_prefix_messages == (j.message_of("e3"),)
    assert prep.previous_summary == words(40)
    assert prep.leaf_id == "e5"


def test_pi_tokens_before_is_usage_plus_trailing():
    j = Journal()
    j.user(100)
    j.compaction("S", "e0")  # 1 token summary
    j.user(50)
    j.assistant(60, use=usage(2000, 100))  # e3
    j.user(30)  # e4 trailing
    j.user(12)  # e5 trailing
    prep = prepare_compaction(j.session(), PI)
    assert prep.tokens_before == 2100 + 30 + 12
    assert (prep.context_estimate.usage_tokens, prep.context_estimate.trailing_tokens) == (2100, 42)
    assert prep.context_estimate.last_usage_index == 3  # a path index


@pytest.mark.parametrize("from_hook", [False, True])
def test_pi_file_ops_seeded_from_previous_details_unless_from_hook(from_hook):
    j = Journal()
    j.user(10)
    j.compaction(
        "S",
        "e0",
        details={"readFiles": ["a.py"], "modifiedFiles": ["b.py"]},
        fromHook=from_hook,
    )
    j.user(10)  # e2
    j.assistant(10, calls=[call("c1", "read", "c.py"), call("c2", "edit", "d.py")])  # e3
    j.result("c1")
    j.result("c2")
    j.user(100)  # e6: kept
    j.assistant(100, calls=[call("c3", "write", "kept.py")])  # e7: kept
    j.result("c3", 10)
    prep = prepare_compaction(j.session(), PI.copy_with(keep_recent_tokens=150))
    assert prep.kept_entry_ids == ("e6", "e7", "e8")
    ops = prep.file_ops
    if from_hook:
        assert (ops.read, ops.edited, ops.written) == ({"c.py"}, {"d.py"}, frozenset())
    else:
        assert (ops.read, ops.edited, ops.written) == (
            {"a.py", "c.py"},
            {"b.py", "d.py"},
            frozenset(),
        )


def test_pi_file_ops_include_the_turn_prefix():
    j = Journal()
    j.user(10)  # e0
    j.assistant(10, calls=[call("c1", "read", "prefix.py")])  # e1: turn prefix
    j.result("c1")  # e2
    j.assistant(300, calls=[call("c2", "edit", "kept.py")])  # e3: kept
    j.result("c2", 10)  # e4
    prep = prepare_compaction(j.session(), PI.copy_with(keep_recent_tokens=200))
    # Walk: e4 10, e3 → 310 ≥ 200 → cut at e3; turn from e0.
    assert prep.is_split_turn and prep.turn_prefix_entry_ids == ("e0", "e1", "e2")
    assert prep.file_ops.read == {"prefix.py"}
    assert prep.file_ops.edited == frozenset()


def test_pi_unmigrated_entries_give_none():
    # Records without ids (v1 data read raw): the cut entry has no id (§4.3 step 5).
    records = [
        {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 0}},
        {"type": "message", "message": {"role": "assistant", "content": [], "timestamp": 0}},
    ]
    assert prepare_compaction(records, PI) is None


def test_accepts_records_and_leaf_id_on_a_branch():
    j = Journal()
    j.user(10)  # e0
    j.assistant(10)  # e1
    j.user(100, entry_id="main")  # main branch
    j.assistant(100, entry_id="main-a")
    j.leaf = "e1"  # branch back to e1
    j.user(100, entry_id="side")
    j.assistant(100, entry_id="side-a")
    session = j.session()
    # Default leaf = last in file order: the side branch.
    prep = prepare_compaction(session, PI.copy_with(keep_recent_tokens=150))
    assert prep.kept_entry_ids == ("side", "side-a") and prep.leaf_id == "side-a"
    main = prepare_compaction(session, PI.copy_with(keep_recent_tokens=150), leaf_id="main-a")
    assert main.kept_entry_ids == ("main", "main-a") and main.leaf_id == "main-a"
    # The same from plain records (a list of v3 dicts walked to the leaf).
    from_records = prepare_compaction(
        j.records, PI.copy_with(keep_recent_tokens=150), leaf_id="main-a"
    )
    assert from_records.kept_entry_ids == ("main", "main-a")


def test_bad_inputs_raise_clear_errors():
    j = Journal()
    j.user(10)
    with pytest.raises(KeyError):
        prepare_compaction(j.session(), PI, leaf_id="nope")
    with pytest.raises(KeyError):
        prepare_compaction(j.records, PI, leaf_id="nope")
    with pytest.raises(TypeError):
        prepare_compaction("session.jsonl", PI)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        prepare_compaction(j.session(), PI, profile="omp")


def test_profile_argument_overrides_settings_profile():
    j = Journal()
    j.user(10)
    j.assistant(10)
    prep = prepare_compaction(j.session(), MUSEPI.copy_with(keep_recent_tokens=1), profile="pi")
    assert prep is not None and prep.profile == "pi"


# -- MusePi retained history, release boundary (§4.5, oh-my-pi compaction.test.ts) ----
def test_partitions_retained_history_across_successive_compactions():
    j = Journal()
    a = j.user("Already summarized A", "a")
    b1 = j.user("Retained B1", "b1")
    j.add("model_change", "mc", model="anthropic/claude-sonnet-4-5")
    b2 = j.user("Retained B2", "b2")
    m = j.message_of
    first = prepare_compaction(
        j.entries(), RELEASE.copy_with(keep_recent_tokens=musepi_tokens(m(b1), m(b2)))
    )
    assert first.messages_to_summarize == (m(a),)
    assert first.recent_messages == (m(b1), m(b2))
    assert first.first_kept_entry_id == "b1"

    j.compaction("Summary A", first.first_kept_entry_id, "cmp1")
    j.add("thinking_level_change", "tl", thinkingLevel="high")
    c = j.user("New C", "c")
    # C alone fits the budget; B1 must still be summarized rather than a no-op.
    second = prepare_compaction(
        j.entries(), RELEASE.copy_with(keep_recent_tokens=musepi_tokens(m(b2), m(c)))
    )
    assert second.previous_summary == "Summary A"
    assert second.messages_to_summarize == (m(b1),)
    assert second.turn_prefix_messages == ()
    assert second.recent_messages == (m(b2), m(c))
    assert second.first_kept_entry_id == "b2"  # not the model_change before it
    j.compaction("Summary A+B1", second.first_kept_entry_id, "cmp2")
    assert build_session_context(j.entries()).messages[1:] == (m(b2), m(c))

    d = j.user("New D", "d")
    journal_before = [dict(r) for r in j.records]
    third = prepare_compaction(
        j.entries(), RELEASE.copy_with(keep_recent_tokens=musepi_tokens(m(d)))
    )
    assert third.previous_summary == "Summary A+B1"
    assert third.messages_to_summarize == (m(b2), m(c))
    assert third.turn_prefix_messages == ()
    assert third.recent_messages == (m(d),)
    assert third.first_kept_entry_id == "d"
    assert j.records == journal_before  # the journal is never rewritten
    j.compaction("Summary A+B1+B2+C", third.first_kept_entry_id)
    assert build_session_context(j.entries()).messages[1:] == (m(d),)


def test_retained_tool_turn_prefix_across_the_compaction_record():
    j = Journal()
    j.user("Summarized request", "a")
    b = j.user("Inspect retained.ts", "b")
    call_id = j.assistant(
        "",
        "call",
        use=usage(0),
        calls=[call("read-retained", "read", "retained.ts")],
        stop="toolUse",
    )
    result = j.result("read-retained", "Retained file contents", "result")
    j.compaction("Summary A", b, "previous")
    answer = j.assistant("Inspection complete", "answer", use=usage(0))
    prep = prepare_compaction(j.entries(), RELEASE.copy_with(keep_recent_tokens=1))
    m = j.message_of
    assert prep.previous_summary == "Summary A"
    assert prep.is_split_turn is True
    assert prep.messages_to_summarize == ()
    assert prep.turn_prefix_messages == (m(b), m(call_id), m(result))
    assert prep.recent_messages == (m(answer),)
    assert prep.first_kept_entry_id == "answer"
    # The prefix's read is seeded into the file operations.
    assert prep.file_ops.read == {"retained.ts"}


def test_retained_region_calibrates_the_keep_budget():
    j = Journal()
    j.user("Summarized A", "a")
    b = j.user("Uncompressed reasoning in B. " * 256, "b")
    j.compaction("Summary A", b, "previous")
    c = j.user("Recent request C", "c")
    answer = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Recent answer C"}],
        "stopReason": "stop",
        "timestamp": 0,
    }
    m = j.message_of
    answer["usage"] = usage(musepi_tokens(m(b), m(c), answer))
    last = j.msg(answer, "last")
    prep = prepare_compaction(
        j.entries(), RELEASE.copy_with(keep_recent_tokens=musepi_tokens(m(c), m(last)))
    )
    # The usage equals the estimate of the whole retained sequence: ratio 1, no shrink.
    assert prep.usage_ratio == 1.0
    assert prep.messages_to_summarize == (m(b),)
    assert prep.turn_prefix_messages == ()
    assert prep.recent_messages == (m(c), m(last))
    assert prep.first_kept_entry_id == "c"


def test_message_bearing_custom_entries_are_summarized_state_is_not():
    j = Journal()
    j.user("A", "a")
    j.add("custom_message", "custom", customType="note", content="Retained note", display=True)
    j.add("branch_summary", "branch", fromId="a", summary="Retained branch context")
    j.add("compaction", "compact", summary="Summary A", firstKeptEntryId="custom", tokensBefore=0)
    j.add("custom", "metadata", customType="state", data={"secret": "not a message"})
    j.user("New C1", "c1")
    j.user("New C2", "c2")
    prep = prepare_compaction(j.entries(), RELEASE.copy_with(keep_recent_tokens=1))
    summarized = prep.messages_to_summarize
    assert [m["role"] for m in summarized] == ["custom", "branchSummary", "user"]
    assert summarized[0]["customType"] == "note" and summarized[0]["content"] == "Retained note"
    assert summarized[1]["summary"] == "Retained branch context"
    assert summarized[2]["content"] == "New C1"
    assert prep.summarize_entry_ids == ("custom", "branch", "c1")
    assert prep.turn_prefix_messages == ()
    assert [m["content"] for m in prep.recent_messages] == ["New C2"]


def test_keep_id_after_the_compaction_partitions_everything_after_it():
    # Advisor snapshots rebuild ids: the old keep id can name a later message.
    j = Journal()
    j.add("compaction", "previous", summary="Summary A", firstKeptEntryId="d", tokensBefore=1)
    b = j.user("Retained B", "b")
    c = j.user("New C", "c")
    d = j.user("New D", "d")
    prep = prepare_compaction(j.entries(), RELEASE.copy_with(keep_recent_tokens=1))
    m = j.message_of
    assert prep.messages_to_summarize == (m(b), m(c))
    assert prep.recent_messages == (m(d),)


def test_unreadable_remote_compaction_behind_a_local_one():
    j = Journal()
    j.user("Summarized A", "a")
    b = j.user("Retained B", "b")
    j.compaction("Summary A", b, "local")
    c = j.user("Original remote C", "c")
    remote = {
        "openaiRemoteCompaction": {
            "provider": "openai",
            "replacementHistory": [{"type": "compaction", "encrypted_content": "replay"}],
            "compactionItem": {"type": "compaction", "encrypted_content": "replay"},
        }
    }
    j.compaction("Opaque remote summary", c, "remote", preserveData=remote)
    d = j.user("New D", "d")
    e = j.user("New E", "e")
    m = j.message_of
    reused = prepare_compaction(
        j.entries(), RELEASE.copy_with(remote_enabled=True, keep_recent_tokens=1)
    )
    assert reused.messages_to_summarize == (m(d),)
    assert reused.recent_messages == (m(e),)
    assert reused.previous_preserve_data == remote
    # Remote replay unreadable (here: remote compaction disabled) → re-expand the local one.
    expanded = prepare_compaction(j.entries(), RELEASE.copy_with(keep_recent_tokens=1))
    assert expanded.previous_summary == "Summary A"
    assert expanded.messages_to_summarize == (m(b), m(c), m(d))
    assert expanded.recent_messages == (m(e),)


def test_remote_replay_starts_after_its_snapshot_entry():
    j = Journal()
    j.user("A", "a")
    j.user("B", "b")
    c = j.user("C", "c")
    remote = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}
    j.compaction("Remote", "c", "remote", preserveData=remote, providerReplayThroughEntryId="b")
    d = j.user("D", "d")
    prep = prepare_compaction(
        j.entries(), RELEASE.copy_with(remote_enabled=True, keep_recent_tokens=1)
    )
    m = j.message_of
    assert prep.messages_to_summarize == (m(c),)  # after the snapshot through b
    assert prep.recent_messages == (m(d),)


# -- MusePi seed boundary, the default (seed: boundaryStart = prevCompactionIndex + 1) ---
def test_seed_boundary_is_the_default():
    assert CompactionSettings().boundary == "seed"
    assert CompactionSettings.musepi().boundary == "seed"
    assert CompactionSettings.musepi().reference == "oh-my-pi 18.2.3"
    with pytest.raises(ValueError, match="boundary"):
        CompactionSettings(boundary="effective")


def test_seed_boundary_considers_only_entries_after_the_previous_compaction():
    # The release example above, under the seed: b1 and b2 (kept by cmp1) are not re-opened.
    j = Journal()
    j.user("Already summarized A", "a")
    j.user("Retained B1", "b1")
    j.add("model_change", "mc", model="anthropic/claude-sonnet-4-5")
    j.user("Retained B2", "b2")
    j.compaction("Summary A", "b1", "cmp1")  # path index 4
    j.add("thinking_level_change", "tl", thinkingLevel="high")
    c = j.user("New C", "c")
    m = j.message_of
    # The window is [c]: it fits any budget, nothing to summarize → no-op.
    assert prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=1)) is None
    d = j.user("New D", "d")
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=1))
    assert prep.previous_summary == "Summary A" and prep.previous_compaction_index == 4
    assert prep.boundary_start == 6  # c: after cmp1 (5, the thinking change, is metadata)
    assert prep.messages_to_summarize == (m(c),)
    assert prep.recent_messages == (m(d),)
    assert prep.first_kept_entry_id == "d"


def test_seed_boundary_does_not_re_open_a_retained_turn_prefix():
    # The split-turn example of §4.5: under the seed the window after the compaction is
    # [answer] alone, so nothing is summarized.
    j = Journal()
    j.user("Summarized request", "a")
    b = j.user("Inspect retained.ts", "b")
    j.assistant(
        "",
        "call",
        use=usage(0),
        calls=[call("read-retained", "read", "retained.ts")],
        stop="toolUse",
    )
    j.result("read-retained", "Retained file contents", "result")
    j.compaction("Summary A", b, "previous")
    j.assistant("Inspection complete", "answer", use=usage(0))
    assert prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=1)) is None


def test_seed_boundary_estimates_only_the_window_for_the_usage_ratio():
    # Seed step 3 adapts the budget with the usage ratio; the estimate covers the window
    # after the compaction, so the retained b (billed in the usage) raises the ratio.
    j = Journal()
    j.user("Summarized A", "a")
    b = j.user("Uncompressed reasoning in B. " * 256, "b")
    j.compaction("Summary A", b, "previous")
    c = j.user("Recent request C", "c")
    answer = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Recent answer C"}],
        "stopReason": "stop",
        "timestamp": 0,
    }
    m = j.message_of
    billed = musepi_tokens(m(b), m(c), answer)
    answer["usage"] = usage(billed)
    last = j.msg(answer, "last")
    window = musepi_tokens(m(c), m(last))
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=window))
    assert prep.usage_ratio == billed / window
    assert prep.keep_recent_tokens == max(1, int(window // (billed / window)))
    assert "b" not in prep.summarize_entry_ids + prep.turn_prefix_entry_ids + prep.kept_entry_ids


def test_seed_boundary_with_an_unreadable_remote_compaction_starts_after_the_local_one():
    j = Journal()
    j.user("Summarized A", "a")
    b = j.user("Retained B", "b")
    j.compaction("Summary A", b, "local")
    c = j.user("Original remote C", "c")
    remote = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}
    j.compaction("Opaque remote summary", c, "remote", preserveData=remote)
    d = j.user("New D", "d")
    e = j.user("New E", "e")
    m = j.message_of
    reused = prepare_compaction(
        j.entries(), MUSEPI.copy_with(remote_enabled=True, keep_recent_tokens=1)
    )
    assert reused.messages_to_summarize == (m(d),) and reused.recent_messages == (m(e),)
    # Remote unreadable: the previous compaction is the local one; start right after it
    # (c), the remote record itself dropped; b is not re-opened.
    local = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=1))
    assert local.previous_summary == "Summary A"
    assert local.messages_to_summarize == (m(c), m(d))
    assert local.recent_messages == (m(e),)


def test_seed_boundary_ignores_the_remote_snapshot_entry():
    j = Journal()
    j.user("A", "a")
    j.user("B", "b")
    j.user("C", "c")
    remote = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}
    j.compaction("Remote", "c", "remote", preserveData=remote, providerReplayThroughEntryId="b")
    d = j.user("D", "d")
    e = j.user("E", "e")
    prep = prepare_compaction(
        j.entries(), MUSEPI.copy_with(remote_enabled=True, keep_recent_tokens=1)
    )
    m = j.message_of
    assert prep.boundary_start == 4
    assert prep.messages_to_summarize == (m(d),)
    assert prep.recent_messages == (m(e),)


# -- MusePi specifics (§4.4) ----------------------------------------------------------
def test_musepi_no_op_gives_none():
    j = Journal()
    j.user(10)
    j.assistant(10)
    assert prepare_compaction(j.entries(), MUSEPI) is None  # everything fits
    # pi prepares anyway (summarizing nothing).
    assert prepare_compaction(j.entries(), PI) is not None


def test_reset_boundary_after_compaction_discards_previous_summary():
    j = Journal()
    j.user("A", "a")
    j.user("B", "b")
    j.compaction("Summary", "a", "cmp")
    j.user("C", "c")
    j.add("reset_boundary", "reset")
    d = j.user("D", "d")
    e = j.user("E", "e")
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=1))
    m = j.message_of
    assert prep.previous_summary is None and prep.previous_compaction_index == -1
    assert prep.reset_boundary_index == 4
    assert prep.messages_to_summarize == (m(d),)
    assert prep.recent_messages == (m(e),)


def test_older_reset_boundary_bounds_the_re_expansion():
    j = Journal()
    j.user("A", "a")
    j.user("B", "b")
    j.add("reset_boundary", "reset")
    c = j.user("C", "c")
    j.compaction("Summary", "b", "cmp")  # keeps from b, before the reset
    d = j.user("D", "d")
    e = j.user("E", "e")
    prep = prepare_compaction(j.entries(), RELEASE.copy_with(keep_recent_tokens=1))
    m = j.message_of
    assert prep.previous_summary == "Summary"
    assert prep.boundary_start == 3
    assert prep.messages_to_summarize == (m(c), m(d))
    assert prep.recent_messages == (m(e),)


def test_adaptive_keep_budget_shrinks_by_usage_ratio():
    # Sequence estimate 400 tokens; the provider billed 1200 prompt tokens: ratio 3, so
    # keep 300 → 100. Walk: e3 100 ≥ 100 → cut at e3 (assistant), turn from e2.
    # (Unadapted, keep 300 would cut at e1.)
    j = Journal()
    j.user(100)  # e0
    j.assistant(100)  # e1
    j.user(100)  # e2
    j.assistant(100, use=usage(1200, 50))  # e3
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=300))
    assert prep.usage_ratio == 3.0
    assert prep.keep_recent_tokens == 100
    assert prep.tokens_before == 1250  # context tokens of the last usage (§4.4)
    assert prep.summarize_entry_ids == ("e0", "e1")
    assert prep.turn_prefix_entry_ids == ("e2",)
    assert prep.kept_entry_ids == ("e3",)


def test_all_zero_usage_neither_sets_tokens_before_nor_adapts():
    # oh-my-pi 18.2.3 getLastAssistantUsage takes the newest valid usage even when it is all
    # zero: calculateContextTokens → 0, promptTokens 0, ratio 0 → the budget is kept.
    j = Journal()
    j.user(100)
    j.assistant(100, use=usage(0))
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=100))
    assert prep.tokens_before == 0 and prep.usage_ratio == 0.0
    assert prep.keep_recent_tokens == 100


def test_all_zero_usage_hides_an_older_real_usage():
    # The release stops at the newest assistant with usage, zero or not (converted sessions
    # write zeros), so an older real usage does not count.
    j = Journal()
    j.user(100)
    j.assistant(100, use=usage(5000))
    j.user(100)
    j.assistant(100, use=usage(0))
    prep = prepare_compaction(j.entries(), MUSEPI.copy_with(keep_recent_tokens=100))
    assert prep.tokens_before == 0
    assert prep.keep_recent_tokens == 100


def test_musepi_seeds_selector_stripped_read_files_and_preserve_data():
    j = Journal()
    j.user(10, "a")
    preserve = {"otherState": "keep-me"}
    j.compaction(
        "Summary",
        "a",
        "cmp",
        details={"readFiles": ["src/a.ts:50-200"], "modifiedFiles": ["src/b.ts"]},
        preserveData=preserve,
    )
    j.assistant(
        10, "x", calls=[call("c1", "read", "src/c.ts:L5-L16"), call("c2", "read", "artifact://3")]
    )
    j.result("c1")
    j.result("c2")
    j.user(100, "kept")
    prep = prepare_compaction(
        j.entries(), MUSEPI.copy_with(keep_recent_tokens=50), custom_instructions="focus"
    )
    assert prep.kept_entry_ids == ("kept",)
    assert prep.file_ops.read == {"src/a.ts", "src/c.ts"}
    assert prep.file_ops.edited == {"src/b.ts"}
    assert prep.previous_preserve_data == preserve
    assert prep.custom_instructions == "focus"


@pytest.mark.parametrize("settings", [PI, MUSEPI])
def test_shared_counter_sweep_matches_fresh_preparations(settings):
    # Plans are reused across calls with one counter; the results must not depend on it.
    j = Journal()
    for t in range(12):
        j.user(20 + 7 * t)
        j.assistant(30 + 5 * t, calls=[call(f"c{t}", "read", f"f{t}.py")], use=usage(500 * (t + 1)))
        j.result(f"c{t}", 40 + 11 * t)
        if t == 6:
            j.compaction("S", "e12")
    session = j.session()
    shared = TokenCounter(settings.profile)
    for keep in range(0, 3000, 137):
        s = settings.copy_with(keep_recent_tokens=keep)
        assert prepare_compaction(session, s, shared) == prepare_compaction(
            session, s, TokenCounter(settings.profile)
        )


def test_cached_plans_follow_the_remote_setting():
    j = Journal()
    j.user("A", "a")
    j.compaction("Local", "a", "local")
    j.user("B", "b")
    j.compaction(
        "Remote", "b", "remote", preserveData={"openaiRemoteCompaction": {"provider": "x"}}
    )
    j.user("C", "c")
    j.user("D", "d")
    session, counter = j.session(), TokenCounter("musepi")
    on = prepare_compaction(
        session, MUSEPI.copy_with(remote_enabled=True, keep_recent_tokens=1), counter
    )
    off = prepare_compaction(
        session, RELEASE.copy_with(remote_enabled=False, keep_recent_tokens=1), counter
    )
    assert on.previous_summary == "Remote" and on.summarize_entry_ids == ("c",)
    assert off.previous_summary == "Local" and off.summarize_entry_ids == ("a", "b", "c")


def test_cached_plans_follow_the_boundary_setting():
    # Same session and counter, the two boundaries back to back: each gets its own plan.
    j = Journal()
    j.user("A", "a")
    j.user("B", "b")
    j.compaction("Summary", "a", "cmp")
    j.user("C", "c")
    j.user("D", "d")
    session, counter = j.session(), TokenCounter("musepi")
    for _ in range(2):
        release = prepare_compaction(session, RELEASE.copy_with(keep_recent_tokens=1), counter)
        seed = prepare_compaction(session, MUSEPI.copy_with(keep_recent_tokens=1), counter)
        assert release.summarize_entry_ids == ("a", "b", "c")
        assert seed.summarize_entry_ids == ("c",)


# -- CompactionResult (§1.4, §1.11) --------------------------------------------------
def test_pi_entry_record_layout():
    result = CompactionResult(
        summary="S",
        first_kept_entry_id="e3",
        tokens_before=1234,
        details={"readFiles": ["a"], "modifiedFiles": []},
        short_summary="ignored by pi",
        method="soft",
        profile="pi",
    )
    record = result.to_entry_record("e9", entry_id="abcd1234", timestamp="2026-01-01T00:00:00.000Z")
    assert record == {
        "type": "compaction",
        "id": "abcd1234",
        "parentId": "e9",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "summary": "S",
        "firstKeptEntryId": "e3",
        "tokensBefore": 1234,
        "details": {"readFiles": ["a"], "modifiedFiles": []},
        "fromHook": False,
    }
    no_details = CompactionResult("S", "e3", 1, profile="pi", from_extension=True)
    rec = no_details.to_entry_record(None, entry_id="x", timestamp="t")
    assert "details" not in rec and rec["fromHook"] is True and rec["parentId"] is None


def test_musepi_entry_record_drops_undefined_fields():
    full = CompactionResult(
        summary="S",
        first_kept_entry_id="e3",
        tokens_before=1234,
        details={"readFiles": [], "modifiedFiles": ["b"]},
        method="snapcompact",
        short_summary="short",
        tokens_after=300,
        preserve_data={"snapcompact": {"frames": []}},
        from_extension=True,
        summarizer_input_tokens=999,
        strategy="snapcompact",
    )
    record = full.to_entry_record("e9", entry_id="id", timestamp="t")
    assert record == {
        "type": "compaction",
        "id": "id",
        "parentId": "e9",
        "timestamp": "t",
        "summary": "S",
        "shortSummary": "short",
        "firstKeptEntryId": "e3",
        "tokensBefore": 1234,
        "tokensAfter": 300,
        "details": {"readFiles": [], "modifiedFiles": ["b"]},
        "method": "snapcompact",
        "preserveData": {"snapcompact": {"frames": []}},
        "fromExtension": True,
    }
    bare = CompactionResult("S", "e3", 5).to_entry_record("p", entry_id="id", timestamp="t")
    assert set(bare) == {
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
    }


def test_result_is_immutable_and_copies_its_mappings():
    details = {"readFiles": ["a"], "modifiedFiles": []}
    result = CompactionResult("S", "e1", 1, details=details)
    details["readFiles"] = ["changed"]
    assert result.details["readFiles"] == ["a"]
    with pytest.raises(TypeError):
        result.details["x"] = 1  # type: ignore[index]
    assert result.copy_with(summary="T").summary == "T" and result.summary == "S"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"summary": None}, TypeError),
        ({"first_kept_entry_id": ""}, ValueError),
        ({"profile": "omp"}, ValueError),
        ({"details": ["a"]}, TypeError),
    ],
)
def test_result_rejects_bad_fields(kwargs, error):
    base: dict[str, Any] = {"summary": "S", "first_kept_entry_id": "e1", "tokens_before": 1}
    with pytest.raises(error):
        CompactionResult(**{**base, **kwargs})


@pytest.mark.parametrize("settings", [PI, MUSEPI])
def test_apply_appends_a_compaction_and_rebuilds_context(settings, tmp_path):
    j = Journal()
    for t in range(4):
        j.user(100)
        j.assistant(100, use=usage(1000 * (t + 1)))
    session = j.session()
    prep = prepare_compaction(session, settings.copy_with(keep_recent_tokens=250))
    assert isinstance(prep, CompactionPreparation)
    result = CompactionResult.from_preparation(
        prep, "Short summary", details={"readFiles": [], "modifiedFiles": []}
    )
    assert result.first_kept_entry_id == prep.first_kept_entry_id
    assert result.tokens_before == prep.tokens_before and result.profile == settings.profile
    after = result.apply(session, timestamp="2026-02-02T00:00:00.000Z")
    assert len(session.entries) == 8 and len(after.entries) == 9  # input unchanged
    entry = after.entries[-1]
    assert entry.type == "compaction" and after.leaf_id == entry.id
    assert re.fullmatch(r"[0-9a-f]{8}", entry.id)
    assert entry.parent_id == prep.leaf_id == "e7"
    assert entry.get("firstKeptEntryId") == prep.first_kept_entry_id
    context = build_session_context(after, profile=settings.profile)
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["summary"] == "Short summary"
    assert context.entry_ids[1:] == prep.kept_entry_ids
    # Already compacted now.
    assert prepare_compaction(after, settings) is None
    # Written and read back, the record is the same.
    path = after.write(tmp_path / "s.jsonl")
    again = read_pi_jsonl(path, strict=True)
    assert dict(again.entries[-1].record) == dict(entry.record)


def test_apply_on_a_branch_attaches_to_the_prepared_leaf():
    j = Journal()
    j.user(100)  # e0
    j.assistant(100)  # e1
    j.user(100, entry_id="main")
    j.assistant(100, entry_id="main-a")
    j.leaf = "e1"
    j.user(100, entry_id="side")
    session = j.session()
    prep = prepare_compaction(session, PI.copy_with(keep_recent_tokens=150), leaf_id="main-a")
    after = CompactionResult.from_preparation(prep, "S").apply(session, entry_id="cafe0001")
    assert after.get("cafe0001").parent_id == "main-a"
    assert after.leaf_id == "cafe0001"
    assert [e.id for e in after.path()][-3:] == ["main", "main-a", "cafe0001"]


def test_apply_rejects_inconsistent_results():
    j = Journal()
    j.user(10)  # e0
    j.assistant(10)  # e1
    j.leaf = "e0"
    j.user(10, entry_id="side")
    session = j.session()
    with pytest.raises(ValueError, match="not on the path"):
        CompactionResult("S", "e1", 1).apply(session)  # e1 is on the other branch
    with pytest.raises(ValueError, match="not an entry"):
        CompactionResult("S", "e0", 1, leaf_id="ghost").apply(session)
    with pytest.raises(ValueError, match="already used"):
        CompactionResult("S", "e0", 1).apply(session, entry_id="e1")
    with pytest.raises(ValueError, match="empty"):
        CompactionResult("S", "e0", 1).apply(Session({"type": "session"}, []))


def test_fresh_ids_are_unique_and_timestamps_iso():
    j = Journal()
    j.user(10)
    session = j.session()
    ids = set()
    for _ in range(50):
        session = CompactionResult("S", "e0", 1, leaf_id="e0").apply(session)
        ids.add(session.entries[-1].id)
    assert len(ids) == 50
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", iso_timestamp())


def test_replacements_rewrite_entries_in_place_without_appending():
    j = Journal()
    j.user(10)  # e0
    j.assistant(10, calls=[call("c1", "read", "a.py")])  # e1
    j.result("c1", 500)  # e2
    session = j.session()
    masked = {**j.records[2], "message": {**j.records[2]["message"], "content": []}}
    result = CompactionResult("", "e0", 1, replacements={"e2": masked}, append_entry=False)
    after = result.apply(session)
    assert [e.id for e in after.entries] == ["e0", "e1", "e2"]  # nothing appended
    assert after.get("e2").message["content"] == []
    assert session.get("e2").message["content"] != []  # the input is unchanged
    with pytest.raises(ValueError, match="carries id"):
        CompactionResult("", "e0", 1, replacements={"e1": masked})
    ghost = {**masked, "id": "ghost"}
    with pytest.raises(ValueError, match="not in the session"):
        CompactionResult("", "e0", 1, replacements={"ghost": ghost}).apply(session)

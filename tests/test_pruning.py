"""Tool-output pruning (spec §6.3): hand-built sessions for each rule, then the pi corpus."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab.compaction._prune_rules import (
    MIN_PRUNE_TOKENS,
    SUPERSEDED_NOTICE,
    USELESS_NOTICE,
    is_complete_read_result,
    pruned_notice,
    read_supersede_key,
)
from musepi_lab.compaction._pruning import (
    maintenance_prune,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.tokens import TokenCounter

NOW = 1_800_000_000_000
T0 = NOW - 60_000  # messages one minute old: the provider cache is warm


class Builder:
    """A linear session of tool calls and results; each result of `chars` ASCII chars.

    With the `pi` counter a result of L chars counts ceil(L / 4) tokens.
    """

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.n = 0

    def _add(self, record: dict[str, Any], parent: str | bool | None = True) -> str:
        self.n += 1
        rid = f"{self.n:08x}"
        if parent is True:
            parent = self.records[-1]["id"] if self.records else None
        record.update(id=rid, parentId=parent, timestamp=f"2026-01-01T00:00:{self.n % 60:02d}.000Z")
        self.records.append(record)
        return rid

    def user(self, text: str = "go", ts: int = T0, parent: str | bool | None = True) -> str:
        msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
        return self._add({"type": "message", "message": msg}, parent)

    def tool(
        self,
        name: str,
        chars: int,
        *,
        ts: int = T0,
        is_error: bool = False,
        useless: bool = False,
        pruned: bool = False,
        parent: str | bool | None = True,
        **args: Any,
    ) -> tuple[str, str]:
        call_id = f"call{self.n}"
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
        a = self._add(
            {
                "type": "message",
                "message": {"role": "assistant", "content": [call], "timestamp": ts},
            },
            parent,
        )
        result: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": "x" * chars}],
            "isError": is_error,
            "timestamp": ts,
        }
        if useless:
            result["useless"] = True
        if pruned:
            result["prunedAt"] = 1
        r = self._add({"type": "message", "message": result})
        return a, r

    def compaction(self, first_kept: str) -> str:
        return self._add(
            {
                "type": "compaction",
                "summary": "s",
                "firstKeptEntryId": first_kept,
                "tokensBefore": 1,
            }
        )

    def session(self) -> Session:
        header = {"type": "session", "version": 3, "id": "test", "cwd": "/w"}
        return Session(header, [Entry.from_record(r) for r in self.records])


def counter() -> TokenCounter:
    return TokenCounter("pi")


def text_of(session: Session, entry_id: str) -> str:
    entry = session.get(entry_id)
    assert entry is not None and entry.message is not None
    return entry.message["content"][0]["text"]


def snapshot(session: Session) -> str:
    return json.dumps([dict(e.record) for e in session.entries], sort_keys=True)


# -- prune_tool_outputs: age ---------------------------------------------------------------


def test_age_pruning_starts_behind_the_protect_window() -> None:
    b = Builder()
    b.user()
    results = [b.tool("bash", 4000, command=f"cmd {i}")[1] for i in range(5)]
    s = b.session()
    before = snapshot(s)
    out = prune_tool_outputs(s, counter(), protect_tokens=1000, minimum_savings=0, now_ms=NOW)
    # The newest result fills the 1000-token window; the four older ones are pruned.
    assert out.pruned_ids == tuple(results[:4])
    notice = "[Output truncated - 1000 tokens]"
    assert pruned_notice(1000) == notice
    assert out.tokens_saved == 4 * (1000 - math.ceil(len(notice) / 4))
    assert out.session is not None and out.session is not s
    for rid in results[:4]:
        assert text_of(out.session, rid) == notice
        assert out.session.get(rid).message["prunedAt"] == NOW  # type: ignore[union-attr]
    assert text_of(out.session, results[4]) == "x" * 4000
    assert snapshot(s) == before, "the input session is never modified"


def test_below_minimum_savings_nothing_changes() -> None:
    b = Builder()
    b.user()
    for i in range(3):
        b.tool("bash", 4000, command=str(i))
    s = b.session()
    out = prune_tool_outputs(s, counter(), protect_tokens=1000, minimum_savings=5000, now_ms=NOW)
    assert not out.changed and out.tokens_saved == 0
    assert out.session is s


def test_protected_tools_small_results_and_skill_reads_are_kept() -> None:
    b = Builder()
    b.user()
    _, skill = b.tool("skill", 4000, skill="x")
    _, skill_read = b.tool("read", 4000, path="skill://writing/SKILL.md")
    _, small = b.tool("bash", 4 * (MIN_PRUNE_TOKENS - 1), command="small")
    _, at_floor = b.tool("bash", 4 * MIN_PRUNE_TOKENS, command="floor")
    b.tool("bash", 4000, command="newest")
    out = prune_tool_outputs(
        b.session(), counter(), protect_tokens=1000, minimum_savings=0, now_ms=NOW
    )
    assert out.pruned_ids == (at_floor,)
    out2 = prune_tool_outputs(
        b.session(),
        counter(),
        protect_tokens=1000,
        minimum_savings=0,
        protected_tools=(),
        protect_skill_reads=False,
        now_ms=NOW,
    )
    assert set(out2.pruned_ids) == {skill, skill_read, at_floor}
    assert small not in out2.pruned_ids


def test_already_pruned_results_count_toward_the_window() -> None:
    b = Builder()
    b.user()
    _, old = b.tool("bash", 4000, command="old")
    b.tool("bash", 4000, command="pruned before", pruned=True)
    out = prune_tool_outputs(
        b.session(), counter(), protect_tokens=1000, minimum_savings=0, now_ms=NOW
    )
    assert out.pruned_ids == (old,)


def test_entries_before_the_keep_boundary_are_left_alone() -> None:
    b = Builder()
    b.user()
    _, before = b.tool("bash", 4000, command="a")
    kept = b.user("kept from here")
    _, after = b.tool("bash", 4000, command="b")
    b.compaction(kept)
    b.tool("bash", 4000, command="c")
    out = prune_tool_outputs(
        b.session(), counter(), protect_tokens=1000, minimum_savings=0, now_ms=NOW
    )
    assert out.pruned_ids == (after,)
    no_boundary = prune_tool_outputs(
        b.session(),
        counter(),
        protect_tokens=1000,
        minimum_savings=0,
        keep_boundary_id="",
        now_ms=NOW,
    )
    assert no_boundary.pruned_ids == (before, after)


def test_settings_supply_the_prune_values() -> None:
    b = Builder()
    b.user()
    ids = [b.tool("bash", 4000, command=str(i))[1] for i in range(3)]
    settings = dataclasses.replace(
        CompactionSettings(), prune_protect_tokens=1000, prune_minimum_savings=0
    )
    out = prune_tool_outputs(b.session(), counter(), settings=settings, now_ms=NOW)
    assert out.pruned_ids == tuple(ids[:2])
    # An explicit keyword wins over the settings.
    out2 = prune_tool_outputs(
        b.session(), counter(), settings=settings, protect_tokens=2000, now_ms=NOW
    )
    assert out2.pruned_ids == (ids[0],)


def test_only_the_current_path_is_pruned() -> None:
    b = Builder()
    root = b.user()
    _, side = b.tool("bash", 4000, command="side branch")
    b.user("main", parent=root)
    _, old = b.tool("bash", 4000, command="old")
    b.tool("bash", 4000, command="new")
    s = b.session()
    out = prune_tool_outputs(s, counter(), protect_tokens=1000, minimum_savings=0, now_ms=NOW)
    assert out.pruned_ids == (old,)
    assert out.session is not None
    assert [e.id for e in out.session.entries] == [e.id for e in s.entries]
    assert out.session.get(side) is s.get(side)


# -- superseded reads ----------------------------------------------------------------------


def supersede_case(*reads: tuple[str, bool], complete: Any = None) -> list[bool]:
    """Which of the given `(path, is_error)` reads, oldest first, get superseded."""
    b = Builder()
    b.user()
    ids = [b.tool("read", 400, path=p, is_error=err)[1] for p, err in reads]
    out = prune_tool_outputs(
        b.session(), counter(), minimum_savings=0, supersede_complete=complete, now_ms=NOW
    )
    for rid in out.pruned_ids:
        assert out.session is not None and text_of(out.session, rid) == SUPERSEDED_NOTICE
    return [rid in out.pruned_ids for rid in ids]


def test_newer_successful_read_supersedes_same_key_at_any_age() -> None:
    # Far inside the 40000-token protect window: superseding ignores age.
    assert supersede_case(("a.ts", False), ("a.ts", False)) == [True, False]
    assert supersede_case(("a.ts:1-10", False), ("a.ts:1-10", False)) == [True, False]
    assert supersede_case(("a.ts", False), ("b.ts", False)) == [False, False]


def test_complete_parent_read_supersedes_range_reads_but_not_the_reverse() -> None:
    assert supersede_case(("a.ts:1-10", False), ("a.ts", False)) == [True, False]
    assert supersede_case(("a.ts", False), ("a.ts:1-10", False)) == [False, False]
    # With oh-my-pi's strict completeness test a read without details proves nothing.
    strict = supersede_case(("a.ts:1-10", False), ("a.ts", False), complete=is_complete_read_result)
    assert strict == [False, False]


def test_raw_and_conflicts_reads_are_superseded_only_by_the_same_selector() -> None:
    assert supersede_case(("a.ts:raw", False), ("a.ts", False)) == [False, False]
    assert supersede_case(("a.ts:raw", False), ("a.ts:raw", False)) == [True, False]
    assert supersede_case(("a.ts:conflicts", False), ("a.ts:conflicts", False)) == [True, False]


def test_failed_reads() -> None:
    # A failed result is superseded by any newer result of its key, failed or not ...
    assert supersede_case(("a.ts", True), ("a.ts", True)) == [True, False]
    # ... and by a newer successful parent read.
    assert supersede_case(("a.ts:5-9", True), ("a.ts", False)) == [True, False]
    # A failed newer read never supersedes a successful older one.
    assert supersede_case(("a.ts", False), ("a.ts", True)) == [False, False]
    assert supersede_case(("a.ts:5-9", False), ("a.ts", True)) == [False, False]


def test_url_reads_are_exempt() -> None:
    assert read_supersede_key("read", {"path": "https://x.dev/a"}) is None
    assert read_supersede_key("bash", {"path": "a.ts"}) is None
    assert supersede_case(("https://x.dev/a", False), ("https://x.dev/a", False)) == [False, False]


def test_supersede_keys() -> None:
    assert read_supersede_key("read", {"path": "a.ts"}) == "a.ts"
    assert read_supersede_key("read", {"path": "a.ts:L5-L9"}) == "a.ts\x00L5-L9"
    assert read_supersede_key("read", {"path": "a.ts:raw"}) == "a.ts\x01raw"
    assert read_supersede_key("read", {"path": "a.ts:1-5:raw"}) == "a.ts\x011-5:raw"
    assert read_supersede_key("read", {"path": ""}) is None


# -- useless results -----------------------------------------------------------------------


def test_useless_results_are_elided_at_any_age() -> None:
    b = Builder()
    b.user()
    _, useless = b.tool("grep", 400, useless=True, pattern="zzz")
    _, error = b.tool("grep", 400, useless=True, is_error=True, pattern="yyy")
    _, tiny = b.tool("grep", 20, useless=True, pattern="xxx")
    s = b.session()
    out = prune_tool_outputs(s, counter(), minimum_savings=0, now_ms=NOW)
    assert out.pruned_ids == (useless,)
    assert out.session is not None and text_of(out.session, useless) == USELESS_NOTICE
    assert out.tokens_saved == 100 - math.ceil(len(USELESS_NOTICE) / 4)
    assert error not in out.pruned_ids and tiny not in out.pruned_ids
    off = prune_tool_outputs(s, counter(), minimum_savings=0, prune_useless=False, now_ms=NOW)
    assert not off.changed


# -- per-turn pass -------------------------------------------------------------------------


def test_per_turn_pass_prunes_in_the_cheap_tail_only() -> None:
    b = Builder()
    b.user()
    _, first = b.tool("read", 400, path="a.ts")
    b.tool("read", 400, path="a.ts")
    s = b.session()
    out = prune_superseded_tool_results(s, counter(), now_ms=NOW)
    assert out.pruned_ids == (first,)
    assert out.tokens_saved == 100 - math.ceil(len(SUPERSEDED_NOTICE) / 4)
    # 9000 tokens after the candidate: too costly to re-cache while the cache is warm ...
    b.tool("bash", 36000, command="big")
    warm = prune_superseded_tool_results(b.session(), counter(), now_ms=NOW)
    assert not warm.changed
    assert not prune_superseded_tool_results(
        b.session(), counter(), suffix_token_limit=9000, now_ms=NOW
    ).changed  # 9000 + the second read's 100 + call tokens exceed it
    # ... but flushed once the session has been idle for 90 minutes (oh-my-pi 18.2.3
    # session-maintenance.ts PRUNE_IDLE_FLUSH_MS = 90 * 60_000).
    idle = prune_superseded_tool_results(b.session(), counter(), now_ms=T0 + 90 * 60 * 1000)
    assert idle.pruned_ids == (first,)
    assert not prune_superseded_tool_results(
        b.session(), counter(), now_ms=T0 + 90 * 60 * 1000 - 1
    ).changed


def test_per_turn_pass_respects_switches_and_boundary() -> None:
    b = Builder()
    kept = b.user()
    _, old = b.tool("read", 400, path="a.ts")
    b.compaction(kept)
    b.tool("read", 400, path="a.ts")
    _, useless = b.tool("find", 400, useless=True, pattern="*.none")
    s = b.session()
    out = prune_superseded_tool_results(s, counter(), now_ms=NOW)
    assert out.pruned_ids == (old, useless)
    assert prune_superseded_tool_results(
        s, counter(), supersede_reads=False, now_ms=NOW
    ).pruned_ids == (useless,)
    assert prune_superseded_tool_results(
        s, counter(), prune_useless=False, now_ms=NOW
    ).pruned_ids == (old,)
    # Move the boundary past the first read: it is no longer sent, so it is left alone.
    b2 = Builder()
    b2.user()
    b2.tool("read", 400, path="a.ts")
    kept2 = b2.user("later")
    b2.compaction(kept2)
    b2.tool("read", 400, path="a.ts")
    idle = prune_superseded_tool_results(b2.session(), counter(), now_ms=NOW + 10**9)
    assert not idle.changed


def test_per_turn_pass_reads_settings() -> None:
    b = Builder()
    b.user()
    b.tool("read", 400, path="a.ts")
    b.tool("read", 400, path="a.ts")
    settings = dataclasses.replace(CompactionSettings.pi())
    assert settings.supersede_reads is False
    assert not prune_superseded_tool_results(
        b.session(), counter(), settings=settings, now_ms=NOW
    ).changed
    assert prune_superseded_tool_results(
        b.session(), counter(), settings=CompactionSettings.musepi(), now_ms=NOW
    ).changed


def test_bare_entries_in_bare_entries_out() -> None:
    b = Builder()
    b.user()
    _, first = b.tool("read", 400, path="a.ts")
    b.tool("read", 400, path="a.ts")
    entries = b.session().path()
    out = prune_superseded_tool_results(entries, counter(), now_ms=NOW)
    assert out.session is None
    assert out.pruned_ids == (first,)
    assert [e.id for e in out.entries] == [e.id for e in entries]
    assert entries[2].message["content"][0]["text"] == "x" * 400  # type: ignore[index]


# -- corpus --------------------------------------------------------------------------------


def test_pi_corpus_pruning_with_defaults() -> None:
    path = corpus_file("pi", "before-compaction.jsonl")
    session = read_session(path)
    before = snapshot(session)
    out = prune_tool_outputs(session, TokenCounter("musepi"), now_ms=NOW)
    assert out.tokens_saved > 20000
    assert out.session is not None and out.session is not session
    assert snapshot(session) == before
    assert path.read_bytes() == path.read_bytes()  # read twice: the file is untouched
    assert [e.id for e in out.session.entries] == [e.id for e in session.entries]

    # Pairing, counted from the raw file: every pruned result still answers a tool call
    # made earlier, with the same tool name.
    raw_calls: dict[str, str] = {}
    raw_results: dict[str, tuple[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        msg = rec.get("message") or {}
        if msg.get("role") == "assistant":
            for block in msg.get("content", []):
                if block.get("type") == "toolCall":
                    raw_calls[block["id"]] = block["name"]
        elif msg.get("role") == "toolResult":
            raw_results.setdefault(msg["toolCallId"], (msg["toolName"], str(msg["content"])))
    notices = (SUPERSEDED_NOTICE, USELESS_NOTICE, "[Output truncated - ")
    for rid in out.pruned_ids:
        old, new = session.get(rid), out.session.get(rid)
        assert old is not None and new is not None
        call_id = new.message["toolCallId"]  # type: ignore[index]
        assert call_id == old.message["toolCallId"]  # type: ignore[index]
        assert raw_calls[call_id] == new.message["toolName"] == raw_results[call_id][0]  # type: ignore[index]
        content = new.message["content"]  # type: ignore[index]
        assert len(content) == 1 and content[0]["text"].startswith(notices)
        assert new.message["prunedAt"] == NOW  # type: ignore[index]


@pytest.mark.parametrize("method", ["pi", "musepi"])
def test_pi_corpus_per_turn_pass_when_idle(method: str) -> None:
    session = read_session(corpus_file("pi", "before-compaction.jsonl"))
    out = prune_superseded_tool_results(session, TokenCounter(method), now_ms=NOW)
    assert out.changed
    assert out.session is not None
    for rid in out.pruned_ids:
        assert text_of(out.session, rid) == SUPERSEDED_NOTICE


def test_maintenance_pass_protects_the_warm_cache_and_supersedes_nothing() -> None:
    # oh-my-pi 18.2.3 session maintenance: DEFAULT_PRUNE_CONFIG, no supersede key,
    # cacheWarmSuffixTokens 8000. Three bash outputs of 30000 tokens: the library default
    # prunes the oldest (40000 newer tokens protect the other two; 30000 saved ≥ 20000), the
    # maintenance none (every candidate is followed by more than 8000 tokens).
    b = Builder()
    b.user()
    _, oldest = b.tool("bash", 120000, command="a")
    b.tool("bash", 120000, command="b")
    b.tool("bash", 120000, command="c")
    s = b.session()
    library = prune_tool_outputs(
        s, counter(), supersede_reads=False, cache_warm_suffix_tokens=None, now_ms=NOW
    )
    assert library.pruned_ids == (oldest,)
    assert not maintenance_prune(s, counter(), now_ms=NOW).changed
    # Superseded reads stay for the per-turn pass, even where the cache guard allows pruning.
    r = Builder()
    r.user()
    r.tool("read", 400, path="a.ts")
    r.tool("read", 400, path="a.ts")
    no_guard = CompactionSettings.musepi(
        prune_cache_warm_suffix_tokens=None, prune_minimum_savings=0
    )
    assert not maintenance_prune(r.session(), counter(), settings=no_guard, now_ms=NOW).changed
    assert maintenance_prune(
        r.session(),
        counter(),
        settings=no_guard.copy_with(prune_supersede_reads=True),
        now_ms=NOW,
    ).changed

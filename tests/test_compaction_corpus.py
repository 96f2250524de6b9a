"""Conformance on the real pi fixtures (spec §9, §8.1 "Large session fixture").

pi profile, pi estimator, `keepRecentTokens = 20000`. The cut indices and token totals are
the spec's §9 figures; everything else (entry counts, roles at the cut, message counts of
each region, usage figures, file paths) is counted here from the raw JSON lines with plain
`json`, not through the code under test. The spec notes its §9 figures come from a Python
transcription of pi, not from running the TypeScript.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab.compaction._cut import find_cut_point
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.session._session import Session
from musepi_lab.tokens._counter import TokenCounter
from musepi_lab.tokens._estimate import estimate_tokens_musepi

pytestmark = pytest.mark.corpus

KEEP = 20000
BEARING = {"message", "custom_message", "branch_summary"}


@cache
def raw_entries(name: str) -> tuple[dict[str, Any], ...]:
    """The non-header records of a fixture, parsed with plain json (header = line 1)."""
    lines = Path(corpus_file("pi", name)).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert records[0]["type"] == "session"
    return tuple(records[1:])


@cache
def session(name: str) -> Session:
    return read_session(corpus_file("pi", name), strict=True)


def role(record: dict[str, Any]) -> str | None:
    return record["message"]["role"] if record["type"] == "message" else None


def bearing_count(records: tuple[dict[str, Any], ...], lo: int, hi: int) -> int:
    return sum(1 for r in records[lo:hi] if r["type"] in BEARING)


def raw_file_ops(records: tuple[dict[str, Any], ...], lo: int, hi: int) -> dict[str, set[str]]:
    ops: dict[str, set[str]] = {"read": set(), "write": set(), "edit": set()}
    for record in records[lo:hi]:
        if role(record) != "assistant":
            continue
        for block in record["message"].get("content") or []:
            if block.get("type") == "toolCall" and block.get("name") in ops:
                path = (block.get("arguments") or {}).get("path")
                if isinstance(path, str) and path:
                    ops[block["name"]].add(path)
    return ops


def raw_context_tokens(usage: dict) -> int:
    """pi `calculateContextTokens` (§3.2): totalTokens, or the sum of the parts (these
    2025 fixtures predate `totalTokens`)."""
    return usage.get("totalTokens") or (
        usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    )


def raw_last_valid_usage(records: tuple[dict[str, Any], ...], lo: int) -> tuple[int, dict]:
    for index in range(len(records) - 1, lo - 1, -1):
        message = records[index].get("message") or {}
        if (
            message.get("role") == "assistant"
            and isinstance(message.get("usage"), dict)
            and message.get("stopReason") not in ("aborted", "error")
        ):
            return index, message["usage"]
    raise AssertionError("no usage")


# -- large-session.jsonl ---------------------------------------------------------------
def test_large_session_shape():
    records = raw_entries("large-session.jsonl")
    entries = session("large-session.jsonl").entries
    assert len(records) == len(entries) == 1018  # §9: 1018 entries after the header
    assert sum(1 for r in records if r["type"] == "message") > 100  # §8.1
    assert not any(r["type"] == "compaction" for r in records)


def test_large_session_find_cut_point():
    records = raw_entries("large-session.jsonl")
    entries = session("large-session.jsonl").entries
    result = find_cut_point(
        entries, 0, len(entries), KEEP, counter=TokenCounter("pi"), profile="pi"
    )
    # §9: firstKept index 837 (an assistant), turn start 834, split turn.
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (
        837,
        834,
        True,
    )
    assert role(records[837]) == "assistant"  # §8.1: the cut lands on user/assistant
    assert role(records[834]) == "user"


def test_large_session_prepare_compaction():
    records = raw_entries("large-session.jsonl")
    prep = prepare_compaction(
        session("large-session.jsonl"), CompactionSettings.pi(), TokenCounter("pi")
    )
    assert prep is not None
    # §9: tokensBefore 177,657 = the last assistant usage, no trailing messages.
    assert prep.tokens_before == 177_657
    last, usage = raw_last_valid_usage(records, 0)
    assert last == len(records) - 1 and raw_context_tokens(usage) == 177_657
    assert prep.context_estimate.trailing_tokens == 0
    assert (prep.cut_index, prep.turn_start_index, prep.is_split_turn) == (837, 834, True)
    assert len(prep.messages_to_summarize) == bearing_count(records, 0, 834)
    assert len(prep.turn_prefix_messages) == bearing_count(records, 834, 837)
    assert len(prep.recent_messages) == bearing_count(records, 837, len(records))
    ops = raw_file_ops(records, 0, 837)
    assert prep.file_ops.read == ops["read"]
    assert prep.file_ops.written == ops["write"]
    assert prep.file_ops.edited == ops["edit"]
    assert prep.previous_summary is None


@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_large_session_cut_lands_on_user_or_assistant(profile):
    records = raw_entries("large-session.jsonl")
    prep = prepare_compaction(
        session("large-session.jsonl"), CompactionSettings.for_profile(profile)
    )
    assert role(records[prep.cut_index]) in ("user", "assistant")


def test_large_session_musepi_adapts_keep_budget():
    # §4.4: ratio = prompt tokens of the last valid usage / MusePi estimate of the
    # sequence (every message-bearing entry here, there is no compaction).
    records = raw_entries("large-session.jsonl")
    _, usage = raw_last_valid_usage(records, 0)
    prompt = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    estimated = sum(estimate_tokens_musepi(r["message"]) for r in records if r["type"] == "message")
    ratio = prompt / estimated
    assert ratio > 1
    prep = prepare_compaction(session("large-session.jsonl"), CompactionSettings.musepi())
    assert prep.keep_recent_tokens == max(1, math.floor(KEEP / ratio))
    assert prep.usage_ratio == pytest.approx(ratio)
    assert prep.tokens_before == raw_context_tokens(usage)


# -- before-compaction.jsonl -----------------------------------------------------------
def test_before_compaction_shape():
    records = raw_entries("before-compaction.jsonl")
    entries = session("before-compaction.jsonl").entries
    assert len(records) == len(entries) == 1002
    # §9: compactions at file lines 360 and 629 → entry indices 358 and 627.
    assert [i for i, r in enumerate(records) if r["type"] == "compaction"] == [358, 627]
    # firstKeptEntryIndex 551 counts the header as 0: entry index 550, after migration.
    assert records[627]["firstKeptEntryIndex"] == 551
    assert entries[627].get("firstKeptEntryId") == entries[550].id


def test_before_compaction_find_cut_point():
    records = raw_entries("before-compaction.jsonl")
    entries = session("before-compaction.jsonl").entries
    result = find_cut_point(
        entries, 628, len(entries), KEEP, counter=TokenCounter("pi"), profile="pi"
    )
    # §9: findCutPoint(628, 1002) → 946 (assistant), turn start 939, split.
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (
        946,
        939,
        True,
    )
    assert role(records[946]) == "assistant"


def test_before_compaction_prepare_compaction():
    records = raw_entries("before-compaction.jsonl")
    prep = prepare_compaction(
        session("before-compaction.jsonl"), CompactionSettings.pi(), TokenCounter("pi")
    )
    assert prep is not None
    # §9: tokensBefore 180,820 = usage 168,018 + 12,802 estimated trailing tokens.
    assert prep.tokens_before == 180_820
    estimate = prep.context_estimate
    assert (estimate.usage_tokens, estimate.trailing_tokens) == (168_018, 12_802)
    last, usage = raw_last_valid_usage(records, 627)
    assert estimate.last_usage_index == last
    assert raw_context_tokens(usage) == 168_018
    assert prep.previous_compaction_index == 627 and prep.boundary_start == 628
    assert prep.previous_summary == records[627]["summary"]
    assert (prep.cut_index, prep.turn_start_index, prep.is_split_turn) == (946, 939, True)
    assert len(prep.messages_to_summarize) == bearing_count(records, 628, 939)
    assert len(prep.turn_prefix_messages) == bearing_count(records, 939, 946)
    assert len(prep.recent_messages) == bearing_count(records, 946, len(records))
    # The v1 compaction entries carry no details: file ops come from [628, 946) only.
    assert "details" not in records[627]
    ops = raw_file_ops(records, 628, 946)
    assert prep.file_ops.read == ops["read"]
    assert prep.file_ops.edited == ops["edit"]
    assert prep.file_ops.written == ops["write"]


def test_before_compaction_budget_sweep_moves_the_cut_monotonically():
    # A larger keep budget never keeps less: the cut index does not increase.
    s = session("before-compaction.jsonl")
    counter = TokenCounter("pi")
    cuts = [
        prepare_compaction(s, CompactionSettings.pi(keep_recent_tokens=k), counter).cut_index
        for k in range(1000, 60001, 3000)
    ]
    assert cuts == sorted(cuts, reverse=True)
    assert all(628 <= c < 1002 for c in cuts)

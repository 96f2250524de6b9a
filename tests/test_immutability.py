"""Values are immutable in fact: assigning or deleting an attribute raises, and the derived
indexes (ids, children) can never go stale."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import musepi_lab as ml
from musepi_lab.compaction import CompactionSettings

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"


@pytest.fixture(scope="module")
def session() -> ml.Session:
    return ml.read_session(SAMPLE)


def _refuses(obj: object, name: str, value: object) -> None:
    with pytest.raises((AttributeError, dataclasses.FrozenInstanceError, TypeError)):
        setattr(obj, name, value)


def test_session_refuses_assignment_and_keeps_its_index(session: ml.Session) -> None:
    entries = session.entries
    first = entries[0]
    with pytest.raises(AttributeError, match="immutable"):
        session.entries = entries[:5]  # type: ignore[misc]
    with pytest.raises(AttributeError):
        session._by_id = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del session.header
    with pytest.raises(AttributeError):
        session.new_field = 1  # type: ignore[attr-defined]
    assert session.entries is entries
    assert session.get(first.id) is first
    # The supported way to change a session is a copy, whose index matches its entries.
    shorter = session.copy_with(entries=entries[:5])
    assert len(shorter) == 5 and shorter.get(entries[10].id) is None
    assert len(session) == len(entries)


def test_entry_refuses_assignment(session: ml.Session) -> None:
    entry = session.entries[1]
    _refuses(entry, "type", "message")
    _refuses(entry, "id", "x")
    with pytest.raises(TypeError):
        entry.record["type"] = "x"  # type: ignore[index]


def test_preparation_result_context_and_strategy_refuse_assignment(session: ml.Session) -> None:
    prep = ml.prepare_compaction(session.path(), CompactionSettings.musepi(keep_recent_tokens=4000))
    assert prep is not None
    _refuses(prep, "cut_index", 0)
    result = ml.compact(session, "truncate")
    _refuses(result, "tokens_after", 0)
    _refuses(result, "summary", "")
    ctx = ml.build_session_context(session)
    _refuses(ctx, "messages", ())
    strategy = ml.strategies.get("observation-masking")
    _refuses(strategy, "keep_turns", 1)


def test_replay_result_refuses_assignment(session: ml.Session) -> None:
    replayed = ml.replay_session(session, "none", window=200_000)
    _refuses(replayed, "events", ())

"""`entry_path` over bare entries (pi's `buildSessionContext(entries, leafId)` input)."""

from __future__ import annotations

from musepi_lab.context._build import entry_path
from musepi_lab.session._model import Entry


def entry(entry_id: str | None, parent: str | None) -> Entry:
    return Entry.from_record({"type": "label", "id": entry_id, "parentId": parent})


def ids(path: tuple[Entry, ...]) -> list[str | None]:
    return [e.id for e in path]


def test_a_chain_with_a_branch_walks_to_the_root() -> None:
    entries = [entry("a", None), entry("b", "a"), entry("c", "b"), entry("d", "a")]
    assert ids(entry_path(entries)) == ["a", "d"]
    assert ids(entry_path(entries, "c")) == ["a", "b", "c"]
    assert ids(entry_path(entries, "unknown")) == ["a", "d"]  # falls back to the last entry


def test_a_walk_ends_at_a_missing_parent() -> None:
    assert ids(entry_path([entry("x", "gone"), entry("y", "x")])) == ["x", "y"]


def test_cycles_stop_the_walk_before_an_entry_comes_again() -> None:
    assert ids(entry_path([entry("a", "a")])) == ["a"]
    looped = [entry("a", "c"), entry("b", "a"), entry("c", "b"), entry("d", "c")]
    assert ids(entry_path(looped)) == ["a", "b", "c", "d"]
    assert ids(entry_path(looped, "b")) == ["c", "a", "b"]


def test_a_last_entry_shadowed_by_its_id_or_without_an_id() -> None:
    # The last entry repeats the id "a"; the lookup keeps the later one, which is the leaf.
    twice = [entry("a", None), entry("b", "a"), entry("a", "b")]
    assert ids(entry_path(twice)) == ["b", "a"]
    assert ids(entry_path([entry("a", None), entry(None, "a")])) == [None]
    assert entry_path([]) == ()

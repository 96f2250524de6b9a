"""`read_session` pauses the cyclic collector while reading and leaves it as it found it."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from musepi_lab.formats._registry import read_session

_PI_LINES = (
    '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"hi","timestamp":1767225601000}}\n'
)


class _Node:
    """A value that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.other: object = None


def _session_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text(_PI_LINES, encoding="utf-8")
    return path


def test_collector_enabled_after_read_and_caller_cycles_still_collected(tmp_path: Path) -> None:
    path = _session_file(tmp_path)
    node = _Node()
    node.other = node  # a cycle made by the caller before the read
    ref = weakref.ref(node)
    del node
    assert gc.isenabled()
    session = read_session(path)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert [e.id for e in session.entries] == ["a1"]
    gc.collect()
    assert ref() is None


def test_collector_left_off_when_caller_turned_it_off(tmp_path: Path) -> None:
    path = _session_file(tmp_path)
    gc.disable()
    try:
        read_session(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_caller_frozen_objects_stay_frozen(tmp_path: Path) -> None:
    path = _session_file(tmp_path)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        read_session(path)
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_read_leaves_no_pending_young_pass(tmp_path: Path) -> None:
    """The objects a long read made are not left in the young generation, so re-enabling
    the collector does not run a pass over the whole session."""
    lines = [_PI_LINES.splitlines()[0]]
    parent = "null"
    for i in range(3000):
        lines.append(
            f'{{"type":"message","id":"m{i}","parentId":{parent},'
            f'"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user",'
            f'"content":[{{"type":"text","text":"t{i}"}}],"timestamp":1767225601000}}}}'
        )
        parent = f'"m{i}"'
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    passes: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.collect()
    gc.callbacks.append(record)
    try:
        session = read_session(path)
    finally:
        gc.callbacks.remove(record)
    assert len(session.entries) == 3000
    assert passes == []

"""`new_entry` (the readers' per-line constructor) makes what `Entry(...)` makes."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from musepi_lab.session._model import Entry, new_entry

_FIELDS = ("type", "id", "parent_id", "timestamp", "record", "line", "source_id", "message")


@pytest.mark.parametrize(
    "record",
    [
        {"type": "message", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "message": "not a mapping"},
        {"type": "message"},
        {"type": "custom", "message": {"role": "user", "content": "hi"}},
    ],
)
def test_new_entry_equals_the_dataclass_constructor(record: dict[str, object]) -> None:
    frozen = MappingProxyType(record)
    kind = str(record["type"])
    made = new_entry(kind, "a1", None, "2026-01-01T00:00:00.000Z", frozen, 7, "src")
    plain = Entry(kind, "a1", None, "2026-01-01T00:00:00.000Z", frozen, 7, "src")
    assert [getattr(made, f) for f in _FIELDS] == [getattr(plain, f) for f in _FIELDS]
    assert made.message is plain.message
    expected = (
        record["message"] if kind == "message" and isinstance(record.get("message"), dict) else None
    )
    assert made.message == expected
    assert made._memo is None and plain._memo is None

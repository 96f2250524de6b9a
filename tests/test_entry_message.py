"""`Entry.message`: the message lifted out of the record, however the entry was made."""

from __future__ import annotations

from types import MappingProxyType

from musepi_lab.session._model import Entry

MESSAGE = {"role": "user", "content": "hi", "timestamp": 1}
RECORD = {"type": "message", "id": "a1", "parentId": None, "timestamp": "t", "message": MESSAGE}


def test_from_record_lifts_the_message() -> None:
    assert Entry.from_record(RECORD).message == MESSAGE
    assert Entry.from_record(dict(RECORD), owned=True).message is MESSAGE


def test_init_lifts_the_message_as_importers_build_entries() -> None:
    entry = Entry("message", "a1", None, "t", MappingProxyType(dict(RECORD)), 3, None)
    assert entry.message is MESSAGE


def test_no_message_unless_a_message_entry_holding_a_mapping() -> None:
    assert Entry.from_record({**RECORD, "message": "text"}).message is None
    assert Entry.from_record({**RECORD, "type": "custom_message"}).message is None
    without = {k: v for k, v in RECORD.items() if k != "message"}
    assert Entry.from_record(without).message is None
    proxied = MappingProxyType(MESSAGE)
    assert Entry.from_record({**RECORD, "message": proxied}).message is proxied


def test_copy_with_keeps_the_message_in_step() -> None:
    entry = Entry.from_record(RECORD)
    other = {"role": "assistant", "content": []}
    assert entry.copy_with(message=other).message == other
    assert entry.copy_with(type="label").message is None

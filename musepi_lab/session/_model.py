"""The MusePi/pi entry model: immutable entries over the raw JSON records.

Why raw records and not one validation model per entry type: reading is the hot path
(sessions of tens of MB), a record must round-trip with every unknown field, and the
compaction code only ever reads a handful of fields. So an entry is one slotted, frozen
wrapper around the parsed record (read-only at the top level through `MappingProxyType`),
with `type`, `id`, `parent_id` and `timestamp` lifted out; everything else is read from the
record on demand. Measured with `perf/bench_read.py`: reading a pi file this way costs
about what bare `json.loads` of its lines costs (0.8–1.2x), where the parse alone with
orjson is about half of it; constructing an entry takes about 0.8 µs (slots set directly,
against 1.5 µs through the frozen dataclass `__init__`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# Entry types of pi (spec §1.4) and oh-my-pi / MusePi (spec §1.11).
PI_ENTRY_TYPES: frozenset[str] = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
MUSEPI_ENTRY_TYPES: frozenset[str] = PI_ENTRY_TYPES | frozenset(
    {
        "model_usage",
        "service_tier_change",
        "reset_boundary",
        "archive",
        "title_change",
        "ttsr_injection",
        "session_init",
        "mode_change",
        "credential_pin",
    }
)
KNOWN_ENTRY_TYPES = MUSEPI_ENTRY_TYPES

# Message roles (spec §1.5, §1.11).
MESSAGE_ROLES: frozenset[str] = frozenset(
    {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
        "developer",
        "hookMessage",
        "pythonExecution",
    }
)

STOP_REASONS: frozenset[str] = frozenset({"stop", "length", "toolUse", "error", "aborted"})
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

_FROZEN = MappingProxyType


@dataclass(frozen=True, slots=True, eq=False)
class Entry:
    """One line of a session file: a node of the entry tree.

    The whole JSON record (known and unknown fields alike) lives in `record`, read-only at
    the top level; `id`, `parent_id`, `type` and `timestamp` are lifted out for speed.
    Entries compare and hash by identity, so token counts can be cached per entry.

    Attributes:
        type: The entry type (`message`, `compaction`, ...; unknown types are kept).
        id: The entry id (8 hex chars for pi), or None for a broken record.
        parent_id: The id of the parent entry, None for a root.
        timestamp: ISO-8601 append time as written in the file.
        record: The full record as it would be written back (v3 layout).
        message: The message of a `message` entry (a mapping, read-only), else None.
        line: 1-based line number in the file the entry was read from, if any.
        source_id: The id the record had in its source format (importers write it into the
            record as `sourceId`, so it survives a write and a re-read).
    """

    type: str
    id: str | None
    parent_id: str | None
    timestamp: str | None
    record: Mapping[str, Any]
    line: int | None = None
    source_id: str | None = None
    # The message of a `message` entry, lifted out of the record when the entry is made (the
    # context and the counters read it for every path entry; a record is read-only, so it
    # cannot change afterwards).
    message: Mapping[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    # Token counts per method, filled by `tokens` on first use (see `entry_memo`). Entries are
    # immutable, so a count made once holds for every counter, preparation and replay.
    _memo: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_record(
        cls,
        record: Mapping[str, Any],
        *,
        line: int | None = None,
        source_id: str | None = None,
        owned: bool = False,
    ) -> Entry:
        """Wrap a v3 record (a dict as parsed from JSON) into an entry.

        The record is copied (shallow) unless `owned`: a reader that parsed the dict itself
        and keeps no other reference hands it over without the copy.
        """
        fields: Mapping[str, Any]
        if isinstance(record, MappingProxyType):
            rec: Mapping[str, Any] = record
            fields = record
        else:
            fields = record if owned and type(record) is dict else dict(record)
            rec = _FROZEN(fields)
        get = fields.get
        entry_id = get("id")
        parent = get("parentId")
        ts = get("timestamp")
        if source_id is None:
            given = get("sourceId")
            if isinstance(given, str):
                source_id = given
        raw_kind = get("type")
        kind = raw_kind if isinstance(raw_kind, str) else str(raw_kind)
        return _make_entry(
            kind,
            entry_id if isinstance(entry_id, str) else None,
            parent if isinstance(parent, str) else None,
            ts if isinstance(ts, str) else None,
            rec,
            line,
            source_id,
            _message_of(kind, fields),
        )

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the record, or `default`."""
        return self.record.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.record[key]

    def __post_init__(self) -> None:
        _set_message(self, _message_of(self.type, self.record))

    @property
    def role(self) -> str | None:
        """The role of a `message` entry's message, else None."""
        msg = self.message
        if msg is None:
            return None
        role = msg.get("role")
        return role if type(role) is str else None

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-serializable copy of the record (shallow)."""
        return dict(self.record)

    def copy_with(self, **fields: Any) -> Entry:
        """A new entry whose record has `fields` replaced (keys as in the JSON record).

        A value of `None` for `parentId` writes an explicit null; to remove a field pass
        the sentinel `REMOVE`.
        """
        rec = dict(self.record)
        for key, value in fields.items():
            if value is REMOVE:
                rec.pop(key, None)
            else:
                rec[key] = value
        return Entry.from_record(rec, line=self.line, source_id=self.source_id)

    def __repr__(self) -> str:
        extra = f" role={self.role!r}" if self.type == "message" else ""
        return f"Entry(type={self.type!r}, id={self.id!r}, parent_id={self.parent_id!r}{extra})"


# Reading builds one Entry per line: set the slots directly instead of going through the
# frozen dataclass __init__ (one object.__setattr__ call per field), about 1.8x faster.
_SLOT_SETTERS = tuple(
    Entry.__dict__[name].__set__
    for name in (
        "type",
        "id",
        "parent_id",
        "timestamp",
        "record",
        "line",
        "source_id",
        "message",
        "_memo",
    )
)
_set_message = Entry.__dict__["message"].__set__


def _message_of(kind: str, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The message a record of type `kind` holds: a mapping under `message`, else None."""
    if kind != "message":
        return None
    msg = record.get("message")
    return msg if type(msg) is dict or isinstance(msg, Mapping) else None


_get_memo = Entry.__dict__["_memo"].__get__
_set_memo = Entry.__dict__["_memo"].__set__


def thinking_level_of(record: Entry | Mapping[str, Any], default: str) -> str:
    """The `thinkingLevel` a record sets (a header, a `thinking_level_change`): a
    non-empty string, else `default`."""
    level = record.get("thinkingLevel")
    return level if isinstance(level, str) and level else default


def entry_memo(entry: Entry) -> dict[str, int]:
    """The entry's memo of derived counts (one int per key, e.g. a token method).

    Created on first use. Only pure functions of the (immutable) entry may be stored in it,
    so a value is the same for every caller; the memo is not part of the record, equality
    or the written file.
    """
    memo: dict[str, int] | None = _get_memo(entry)
    if memo is None:
        memo = {}
        _set_memo(entry, memo)
    return memo


_new_object = object.__new__


def _make_entry(
    kind: str,
    entry_id: str | None,
    parent_id: str | None,
    timestamp: str | None,
    record: Mapping[str, Any],
    line: int | None,
    source_id: str | None,
    message: Mapping[str, Any] | None,
) -> Entry:
    entry = _new_object(Entry)
    (
        set_type,
        set_id,
        set_parent,
        set_ts,
        set_record,
        set_line,
        set_source,
        set_message,
        set_memo,
    ) = _SLOT_SETTERS
    set_type(entry, kind)
    set_id(entry, entry_id)
    set_parent(entry, parent_id)
    set_ts(entry, timestamp)
    set_record(entry, record)
    set_line(entry, line)
    set_source(entry, source_id)
    set_message(entry, message)
    set_memo(entry, None)
    return entry


def new_entry(
    kind: str,
    entry_id: str | None,
    parent_id: str | None,
    timestamp: str | None,
    record: Mapping[str, Any],
    line: int | None = None,
    source_id: str | None = None,
) -> Entry:
    """`Entry(kind, entry_id, parent_id, timestamp, record, line, source_id)`, the slots
    set directly: for a reader's loop over every line (the frozen dataclass `__init__`
    sets each field through `object.__setattr__`)."""
    return _make_entry(
        kind, entry_id, parent_id, timestamp, record, line, source_id, _message_of(kind, record)
    )


def owned_entries(records: Iterable[dict[str, Any]], lines: Iterable[int]) -> list[Entry]:
    """`Entry.from_record(record, line=line, owned=True)` for each record and its line.

    For a reader handing over the dicts it parsed (nothing else holds them, so no copy);
    one loop instead of a call per record, which was a tenth of reading a pi file.
    """
    out: list[Entry] = []
    append = out.append
    for record, line in zip(records, lines, strict=True):
        if type(record) is not dict:
            append(Entry.from_record(record, line=line, owned=True))
            continue
        get = record.get
        raw_kind, entry_id, parent, ts = get("type"), get("id"), get("parentId"), get("timestamp")
        source_id = get("sourceId")
        kind = raw_kind if isinstance(raw_kind, str) else str(raw_kind)
        append(
            _make_entry(
                kind,
                entry_id if isinstance(entry_id, str) else None,
                parent if isinstance(parent, str) else None,
                ts if isinstance(ts, str) else None,
                _FROZEN(record),
                line,
                source_id if isinstance(source_id, str) else None,
                _message_of(kind, record),
            )
        )
    return out


class _Remove:
    __slots__ = ()

    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()
"""Sentinel for `Entry.copy_with`: drop the field from the record."""

Message = Mapping[str, Any]
"""A runtime or LLM message as read from a record (`role`, `content`, ...): read-only."""


def message_text(content: Any) -> str:
    """The text of a message `content` (a string or a list of blocks), texts concatenated."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        b.get("text", "")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "".join(parts)


def tool_calls(message: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The `toolCall` blocks of an assistant message (empty for anything else)."""
    if not message or message.get("role") != "assistant":
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"]

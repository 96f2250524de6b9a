"""The immutable `Session`: a header, entries in file order, and the entry tree over them."""

from __future__ import annotations

import calendar
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from .._atomic import write_bytes_atomic
from .._repr import html_of
from ._errors import ReadProblem
from ._model import Entry

CURRENT_SESSION_VERSION = 3

# Entry types that are part of the conversation (what `Session.branches` counts the tips of).
_CONVERSATION_TYPES = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def parse_timestamp_ms(value: Any) -> float | None:
    """Epoch milliseconds of an ISO-8601 timestamp (as JS `Date.parse`), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None


# `Date.prototype.toISOString()` layout, the one pi writes. Strings of this one layout sort
# as their instants do; the pattern rules out what no calendar has, but for days 29-31.
_ISO_MS_Z = re.compile(
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z"
)


def _sorts_as_text(timestamp: str | None) -> bool:
    """Whether a timestamp is a valid instant in the `YYYY-MM-DDTHH:MM:SS.mmmZ` layout."""
    if timestamp is None or _ISO_MS_Z.fullmatch(timestamp) is None:
        return False
    day = int(timestamp[8:10])
    return day <= 28 or day <= calendar.monthrange(int(timestamp[:4]), int(timestamp[5:7]))[1]


def _time_key(entry: Entry) -> float:
    ms = parse_timestamp_ms(entry.timestamp)
    return ms if ms is not None else math.inf


def in_timestamp_order(entries: list[Entry]) -> tuple[Entry, ...]:
    """Siblings in the order of their timestamps' instants (pi sorts by `Date.parse`).

    Ties keep file order; a missing or unreadable timestamp sorts last. Timestamps that all
    have pi's `toISOString()` layout sort as strings, which is their instants' order, so
    only a group holding another layout has its timestamps parsed (`parse_timestamp_ms`).
    An only child, most entries, is not looked at.
    """
    if len(entries) < 2:
        return tuple(entries)
    if all(_sorts_as_text(entry.timestamp) for entry in entries):
        return tuple(sorted(entries, key=_timestamp_text))
    return tuple(sorted(entries, key=_time_key))


def _timestamp_text(entry: Entry) -> str:
    return entry.timestamp  # type: ignore[return-value]  # checked by _sorts_as_text


def _parents_come_first(by_id: Mapping[str, Entry]) -> bool:
    """True when every parent precedes its child among the ids: then no chain can cycle.

    That is how sessions are written, and one pass checks it, so the walk that finds the
    members of cycles only runs for files that may have one.
    """
    position = dict(zip(by_id, range(len(by_id)), strict=True))
    for index, entry in enumerate(by_id.values()):
        parent = position.get(entry.parent_id) if entry.parent_id is not None else None
        if parent is not None and parent >= index:
            return False
    return True


def iso_timestamp(moment: datetime | None = None) -> str:
    """An ISO-8601 UTC timestamp with milliseconds and `Z`, as JS `toISOString()`
    (default: now)."""
    moment = (moment if moment is not None else datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def timestamp_after(entry: Entry | None, *, ms: int = 1) -> str:
    """The ISO timestamp `ms` milliseconds after an entry's (the epoch when it has none).

    Entries appended by the workbench (replayed or benchmarked compactions) take it, so
    repeated runs build byte-identical sessions instead of stamping the wall clock.
    """
    base = parse_timestamp_ms(entry.timestamp) if entry is not None else None
    moment = datetime.fromtimestamp((base or 0) / 1000, tz=UTC) + timedelta(milliseconds=ms)
    return iso_timestamp(moment)


class _FileOrderLeaf:
    __slots__ = ()

    def __repr__(self) -> str:
        return "FILE_ORDER_LEAF"


_FILE_ORDER_LEAF: Any = _FileOrderLeaf()
"""The default leaf: the last entry in file order."""


_PATHS_KEPT = 8


class Session:
    """One agent session in the MusePi entry model. Immutable: every change returns a copy.

    Attributes:
        header: The session header record (`type: "session"`, `id`, `cwd`, ...).
        entries: Every entry in file order, unknown types included.
        errors: Problems met while reading, each with file and line.
        source_path: The file the session was read from, if any.
        source_format: `pi` for pi/MusePi JSONL, else the importer's format name.
        linked: Sessions that belong to this one but are not part of its tree
            (e.g. Claude Code subagent transcripts, compaction runs).
    """

    __slots__ = (
        "_by_id",
        "_children",
        "_labels",
        "_leaf",
        "_memo",
        "_paths",
        "entries",
        "errors",
        "header",
        "linked",
        "source_format",
        "source_path",
    )

    header: Mapping[str, Any]
    entries: tuple[Entry, ...]
    errors: tuple[ReadProblem, ...]
    source_path: str | None
    source_format: str
    linked: tuple[Session, ...]
    _by_id: dict[str, Entry]
    _children: dict[str | None, tuple[Entry, ...]] | None
    _labels: dict[str, str] | None
    _leaf: Any
    _paths: dict[str | None, tuple[Entry, ...]]
    _memo: dict[Any, Any]

    def __init__(
        self,
        header: Mapping[str, Any],
        entries: Iterable[Entry],
        *,
        errors: Iterable[ReadProblem] = (),
        source_path: str | os.PathLike[str] | None = None,
        source_format: str = "pi",
        linked: Iterable[Session] = (),
    ) -> None:
        entries = tuple(entries)
        by_id: dict[str, Entry] = {}
        for entry in entries:
            if entry.id is not None:
                by_id[entry.id] = entry  # last wins, as pi's Map.set
        fields: dict[str, Any] = {
            "header": header
            if isinstance(header, MappingProxyType)
            else MappingProxyType(dict(header)),
            "entries": entries,
            "errors": tuple(errors),
            "source_path": os.fspath(source_path) if source_path is not None else None,
            "source_format": source_format,
            "linked": tuple(linked),
            "_by_id": by_id,
            "_children": None,
            "_labels": None,
            "_leaf": _FILE_ORDER_LEAF,
            "_paths": {},
            "_memo": {},
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    # Immutable in fact: the id index and the cached tree are derived from `entries`, so
    # assigning a field would leave them stale. Changes go through `copy_with`.
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Session is immutable: cannot set {name!r} (use copy_with)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Session is immutable: cannot delete {name!r}")

    # -- identity ---------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The session id from the header."""
        return str(self.header.get("id", ""))

    @property
    def cwd(self) -> str | None:
        """The working directory recorded in the header."""
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else None

    @property
    def name(self) -> str | None:
        """The latest non-empty `session_info` name (spec §1.10)."""
        name = None
        for entry in self.entries:
            if entry.type == "session_info":
                value = entry.get("name")
                if isinstance(value, str) and value.strip():
                    name = value.strip()
        return name

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __repr__(self) -> str:
        src = f", source={self.source_path!r}" if self.source_path else ""
        errs = f", errors={len(self.errors)}" if self.errors else ""
        return (
            f"Session(id={self.id!r}, format={self.source_format!r}, "
            f"entries={len(self.entries)}{errs}{src})"
        )

    def _repr_html_(self) -> str | None:
        return html_of(self)

    # -- lookup -----------------------------------------------------------------------
    @property
    def by_id(self) -> Mapping[str, Entry]:
        """Entries by id (for a duplicated id, the last one in file order)."""
        return MappingProxyType(self._by_id)

    def get(self, entry_id: str | None) -> Entry | None:
        """The entry with this id, or None."""
        return self._by_id.get(entry_id) if entry_id is not None else None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    @property
    def leaf_id(self) -> str | None:
        """The leaf: the last entry in file order (not the deepest node), spec §1.9, unless
        the leaf was moved (`with_leaf`, as pi's `branch`/`resetLeaf` on tree navigation);
        None for an empty session or a leaf reset to before the first entry."""
        if self._leaf is not _FILE_ORDER_LEAF:
            return self._leaf  # type: ignore[no-any-return]
        for entry in reversed(self.entries):
            if entry.id is not None:
                return entry.id
        return None

    @property
    def leaf(self) -> Entry | None:
        """The leaf entry."""
        return self.get(self.leaf_id)

    # -- tree -------------------------------------------------------------------------
    def path(self, leaf_id: str | None = None) -> tuple[Entry, ...]:
        """Root→leaf path to `leaf_id` (default: the session leaf).

        The walk follows `parentId` and stops at a missing parent or a cycle. An unknown
        `leaf_id` falls back to the last entry in file order (as pi's buildSessionContext).
        """
        start = self._by_id.get(leaf_id) if leaf_id is not None else None
        if start is None:
            start = self.leaf  # None after a leaf reset: the path is empty
        if start is None:
            return ()
        # Paths are derived from the (immutable) entries: the last few are kept, so the
        # context, the preparation and the strategies of one call walk the tree once.
        paths = self._paths
        path = paths.get(start.id)
        if path is None or path[-1] is not start:
            path = self._walk_to_root(start)
            paths[start.id] = path
            if len(paths) > _PATHS_KEPT:
                del paths[next(iter(paths))]
        return path

    def _walk_to_root(self, start: Entry) -> tuple[Entry, ...]:
        if self._is_chain_to(start):
            return self.entries
        # Without a cycle a walk visits each id at most once; only a longer walk needs the
        # seen-set below, which costs about as much again per step.
        get = self._by_id.get
        out = [start]
        append = out.append
        parent = start.parent_id
        for _ in range(len(self._by_id) + 1):
            node = get(parent) if parent is not None else None
            if node is None:
                out.reverse()
                return tuple(out)
            append(node)
            parent = node.parent_id
        return self._walk_to_root_checked(start)

    def _is_chain_to(self, start: Entry) -> bool:
        """Whether the path to `start` is every entry in file order: `start` is the last
        entry, ids are unique, each entry's parent is the entry before it and the first has
        no parent here (most sessions: checked by comparing two lists, about half the cost
        of the walk)."""
        entries = self.entries
        if not entries or entries[-1] is not start or len(self._by_id) != len(entries):
            return False
        first = entries[0].parent_id
        if first is not None and first in self._by_id:
            return False
        ids = [e.id for e in entries]
        return [e.parent_id for e in entries[1:]] == ids[:-1]

    def _walk_to_root_checked(self, start: Entry) -> tuple[Entry, ...]:
        out: list[Entry] = []
        seen: set[str] = set()
        node: Entry | None = start
        while node is not None and node.id not in seen:
            out.append(node)
            if node.id is not None:
                seen.add(node.id)
            parent = node.parent_id
            node = self._by_id.get(parent) if parent is not None and parent != node.id else None
        out.reverse()
        return tuple(out)

    def _child_index(self) -> dict[str | None, tuple[Entry, ...]]:
        if self._children is None:
            buckets: dict[str | None, list[Entry]] = {}
            by_id = self._by_id
            in_cycle = self._cycle_members()
            for entry in self.entries:
                entry_id = entry.id
                if entry_id is None or by_id.get(entry_id) is not entry:
                    continue
                parent = entry.parent_id
                if (
                    parent is None
                    or parent == entry_id
                    or parent not in by_id
                    or entry_id in in_cycle
                ):
                    # Roots: null parent, self-parented, orphan, or caught in a parent
                    # cycle (as newer pi's getTree, so no entry is unreachable).
                    parent = None
                bucket = buckets.get(parent)
                if bucket is None:
                    buckets[parent] = [entry]
                else:
                    bucket.append(entry)
            children = {
                parent: (items[0],) if len(items) == 1 else in_timestamp_order(items)
                for parent, items in buckets.items()
            }
            object.__setattr__(self, "_children", children)  # a cache derived from entries
            return children
        return self._children

    def _cycle_members(self) -> set[str]:
        """Ids of entries whose parent chain leads back to themselves (linear overall)."""
        if _parents_come_first(self._by_id):
            return set()
        state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
        members: set[str] = set()
        for start in self._by_id:
            walk: list[str] = []
            node: str | None = start
            while node is not None and node in self._by_id and node not in state:
                state[node] = 1
                walk.append(node)
                node = self._by_id[node].parent_id
            if node is not None and state.get(node) == 1:
                members.update(walk[walk.index(node) :])
            for visited in walk:
                state[visited] = 2
        return members

    @property
    def roots(self) -> tuple[Entry, ...]:
        """Entries with no parent, a self-parent, or a missing parent (orphans)."""
        return self._child_index().get(None, ())

    def children(self, entry_id: str) -> tuple[Entry, ...]:
        """The children of an entry, ordered by timestamp."""
        return self._child_index().get(entry_id, ())

    def walk(self) -> Iterator[tuple[int, Entry]]:
        """Depth-first walk of the tree: `(depth, entry)` pairs, roots in timestamp order."""
        index = self._child_index()
        stack: list[tuple[int, Entry]] = [(0, e) for e in reversed(index.get(None, ()))]
        seen: set[str] = set()
        while stack:
            depth, entry = stack.pop()
            if entry.id in seen:
                continue
            seen.add(entry.id)  # type: ignore[arg-type]
            yield depth, entry
            stack.extend((depth + 1, c) for c in reversed(index.get(entry.id, ())))

    @property
    def leaves(self) -> tuple[Entry, ...]:
        """Entries without children (the tips of every branch), in file order."""
        index = self._child_index()
        return tuple(e for e in self._by_id.values() if not index.get(e.id))

    @property
    def branches(self) -> int:
        """How many conversations the tree holds: tips of what the model saw.

        A branch ends at a conversation entry (a message, compaction, branch summary or
        custom message) with no conversation entry below it. Bookkeeping hanging off the
        path (Claude Code turn durations, OpenHands state changes, ...) is a leaf of the
        tree but no branch, so a linear session has one branch however many such leaves
        it has. A session with no conversation entry has none.
        """
        index = self._child_index()
        below: dict[str, bool] = {}  # entry id -> a conversation entry at or under it
        count = 0
        # Reversed pre-order visits every child before its parent.
        for _, entry in reversed(list(self.walk())):
            children = index.get(entry.id, ())
            under = any(below.get(c.id, False) for c in children)  # type: ignore[arg-type]
            talk = entry.type in _CONVERSATION_TYPES
            if talk and not under:
                count += 1
            below[entry.id] = talk or under  # type: ignore[index]
        return count

    # -- labels -----------------------------------------------------------------------
    @property
    def labels(self) -> Mapping[str, str]:
        """Resolved labels: target entry id → label, from replaying `label` entries."""
        if self._labels is None:
            labels: dict[str, str] = {}
            for entry in self.entries:
                if entry.type != "label":
                    continue
                target = entry.get("targetId")
                if not isinstance(target, str):
                    continue
                label = entry.get("label")
                if isinstance(label, str) and label:
                    labels[target] = label
                else:
                    labels.pop(target, None)
            object.__setattr__(self, "_labels", labels)  # a cache derived from entries
            return MappingProxyType(labels)
        return MappingProxyType(self._labels)

    def label(self, entry_id: str) -> str | None:
        """The label of an entry, if any."""
        return self.labels.get(entry_id)

    # -- copies -----------------------------------------------------------------------
    def copy_with(self, **changes: Any) -> Session:
        """A new session with the given attributes replaced (`header`, `entries`, ...)."""
        fields: dict[str, Any] = {
            "header": self.header,
            "entries": self.entries,
            "errors": self.errors,
            "source_path": self.source_path,
            "source_format": self.source_format,
            "linked": self.linked,
        }
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"unknown Session fields: {sorted(unknown)}")
        fields.update(changes)
        header = fields.pop("header")
        entries = fields.pop("entries")
        copy = Session(header, entries, **fields)
        if self._leaf is not _FILE_ORDER_LEAF and (self._leaf is None or self._leaf in copy):
            object.__setattr__(copy, "_leaf", self._leaf)  # a moved leaf stays moved
        return copy

    def with_leaf(self, entry_id: str | None) -> Session:
        """A copy whose leaf is `entry_id` (pi's `branch`), or, with None, reset to before
        the first entry (pi's `resetLeaf`: the next entry appended becomes a root). Entries
        are unchanged; appending makes the appended entry the leaf again.

        Raises:
            KeyError: `entry_id` is not in the session.
        """
        if entry_id is not None and entry_id not in self:
            raise KeyError(f"entry {entry_id!r} is not in the session")
        copy = self.copy_with()
        object.__setattr__(copy, "_leaf", entry_id)
        return copy

    def append(self, entry: Entry | Mapping[str, Any]) -> Session:
        """A new session with `entry` appended (its parent defaults to the current leaf); the
        appended entry is the new leaf."""
        if not isinstance(entry, Entry):
            record = dict(entry)
            record.setdefault("parentId", self.leaf_id)
            entry = Entry.from_record(record)
        return Session(
            self.header,
            (*self.entries, entry),
            errors=self.errors,
            source_path=self.source_path,
            source_format=self.source_format,
            linked=self.linked,
        )

    # -- writing ----------------------------------------------------------------------
    def to_jsonl(self) -> bytes:
        """The session as pi/MusePi JSONL v3 bytes (header line, then one line per entry)."""
        header = dict(self.header)
        title_slot = header.pop("titleSlot", None)
        header["type"] = "session"
        header["version"] = CURRENT_SESSION_VERSION
        lines = [orjson.dumps(title_slot)] if isinstance(title_slot, Mapping) else []
        lines.append(orjson.dumps(header))
        lines.extend(orjson.dumps(dict(entry.record)) for entry in self.entries)
        return b"\n".join(lines) + b"\n"

    def write(self, path: str | os.PathLike[str], *, overwrite_source: bool = False) -> Path:
        """Write the session as JSONL v3, atomically (temporary file, then rename).

        Args:
            path: Destination file.
            overwrite_source: Allow writing over the file the session was read from.

        Returns:
            The path written.
        """
        dest = Path(path)
        if (
            not overwrite_source
            and self.source_path is not None
            and dest.exists()
            and os.path.samefile(dest, self.source_path)
        ):
            raise FileExistsError(
                f"{dest}: refusing to overwrite the file this session was read from "
                "(pass overwrite_source=True)"
            )
        data = self.to_jsonl()
        dest.parent.mkdir(parents=True, exist_ok=True)
        return write_bytes_atomic(dest, data)


_MEMO_KEPT = 8


def session_memo_get(session: Session, key: Any) -> Any:
    """A value derived from the session and stored with `session_memo_put`, or None.

    Sessions are immutable, so a value computed once from one (a compaction plan, say)
    holds for as long as the session lives; the memo is not part of its value.
    """
    return session._memo.get(key)


def session_memo_put(session: Session, key: Any, value: Any) -> None:
    """Store a derived value with the session; the oldest goes past the last few."""
    memo = session._memo
    memo[key] = value
    while len(memo) > _MEMO_KEPT:
        memo.pop(next(iter(memo)), None)

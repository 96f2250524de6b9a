"""Codex spawned and review agents: which rollouts of a folder are children of which session,
and which records a forked child copied from its parent.

Codex writes every agent thread as a rollout of its own, in the same
`sessions/YYYY/MM/DD/` folder as the session that started it. What links them:

- **Spawned agents** (`spawn_agent`, Codex 0.7x and later): the child's `session_meta`
  names its parent, `source: {"subagent": {"thread_spawn": {"parent_thread_id", "depth",
  …}}}`; a child that forks the parent's context also has `forked_from_id`, and its file
  opens with a copy of the parent's history (the parent's `session_meta` and records, kept
  as codex-rs `agent/control/spawn.rs` filters them) before its own first turn. Some
  versions keep the copied lines' original timestamps (before the child's own start),
  others write them at the fork instant.
- **Review agents** (`/review`): the child's `source` is `{"subagent": "review"}` and names
  no parent; the parent logs an `entered_review_mode` event when it starts the child, and
  the child's `session_meta` timestamp is that moment (agtrace's provider samples
  `rollout-parent-019b88e0` / `rollout-subagent-019b88e5`, codex_cli_rs 0.77, match them
  within 100 ms; here within `REVIEW_WINDOW_MS`).
- **Forks** (`codex fork`): `forked_from_id` and the copied history, but no subagent
  source: a session of its own (not a child), whose copied records are kept apart all the
  same.

A child is linked to its parent only when the parent's rollout is in the same folder (its
file name ends with the parent's id, or it holds the matching `entered_review_mode`); a
folder read then reads the child with its parent (`Session.linked`) and not on its own, and
a child whose parent is elsewhere is read as a session of its own, its header still naming
the parent. `folder_family` reads the first line of each rollout of a folder once per change
of the folder (cached on its modification time).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..session._session import parse_timestamp_ms
from ._codex_items import rollout_session_id

REVIEW_WINDOW_MS = 1000
"""How far apart (ms) a review child's start and its parent's `entered_review_mode` may be."""

_CHILD_MARKERS = (b'"subagent"', b'"sub_agent"', b'"forked_from_id"')
_REVIEW_EVENT = b'"entered_review_mode"'
_FIRST_LINE_LIMIT = 1 << 22  # a session_meta holds the whole system prompt: some 20 KB


@dataclass(frozen=True, slots=True)
class ChildMeta:
    """What a rollout's `session_meta` says of the session that started it.

    Attributes:
        id: The rollout's own session id.
        kind: `thread_spawn`, `review`, another subagent source's name, or `fork` (a
            `forked_from_id` without a subagent source).
        parent_id: The parent a spawned child names (`parent_thread_id`), else None.
        forked_from: `forked_from_id`: the session whose history the rollout copied.
        spawn_call_id: The parent's `spawn_agent` call, when the record names it.
        start_ms: The session's start (the payload's `timestamp`, else the line's).
        cwd: Its working directory.
    """

    id: str
    kind: str
    parent_id: str | None = None
    forked_from: str | None = None
    spawn_call_id: str | None = None
    start_ms: float | None = None
    cwd: str | None = None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def subagent_source(source: Any) -> tuple[str | None, str | None, str | None]:
    """(kind, parent id, spawn call id) of a `session_meta` `source`; kind None for a
    session a person started (`"cli"`, `"vscode"`, `"exec"`, …)."""
    if not isinstance(source, Mapping):
        return None, None, None
    sub = source.get("subagent", source.get("sub_agent"))
    if isinstance(sub, str):
        return sub, None, None
    if not isinstance(sub, Mapping) or not sub:
        return None, None, None
    spawn = sub.get("thread_spawn")
    if isinstance(spawn, Mapping):
        return (
            "thread_spawn",
            _text(spawn.get("parent_thread_id")),
            _text(spawn.get("spawn_call_id")),
        )
    return str(next(iter(sub))), None, None


def child_meta(payload: Mapping[str, Any], line_timestamp: Any = None) -> ChildMeta | None:
    """The `ChildMeta` of a `session_meta` payload, or None for a session nothing started."""
    own = _text(payload.get("id"))
    kind, parent, call = subagent_source(payload.get("source"))
    forked = _text(payload.get("forked_from_id"))
    if own is None or (kind is None and forked is None):
        return None
    start = parse_timestamp_ms(payload.get("timestamp")) or parse_timestamp_ms(line_timestamp)
    return ChildMeta(
        id=own,
        kind=kind or "fork",
        parent_id=parent,
        forked_from=forked,
        spawn_call_id=call or _text(payload.get("spawn_call_id")),
        start_ms=start,
        cwd=_text(payload.get("cwd")),
    )


def own_child_meta(values: Sequence[tuple[int, Any]]) -> ChildMeta | None:
    """The `ChildMeta` of parsed rollout lines (from their first `session_meta`), or None."""
    for _, value in values:
        if (
            isinstance(value, dict)
            and value.get("type") == "session_meta"
            and isinstance(value.get("payload"), dict)
        ):
            return child_meta(value["payload"], value.get("timestamp"))
    return None


def _first_line(path: Path) -> bytes:
    """The first line of a file (at most `_FIRST_LINE_LIMIT` bytes); b"" when unreadable."""
    try:
        with open(path, "rb") as fh:
            head = b""
            while len(head) < _FIRST_LINE_LIMIT:
                chunk = fh.read(65536)
                if not chunk:
                    break
                head += chunk
                if b"\n" in chunk:
                    break
    except OSError:
        return b""
    return head.split(b"\n", 1)[0]


def _meta_of_line(line: bytes) -> tuple[Mapping[str, Any], Any] | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("type") != "session_meta":
        return None
    payload = record.get("payload")
    return (payload, record.get("timestamp")) if isinstance(payload, dict) else None


def read_child_meta(path: Path) -> ChildMeta | None:
    """The `ChildMeta` of a rollout file from its first line, or None."""
    line = _first_line(path)
    if not any(marker in line for marker in _CHILD_MARKERS):
        return None  # most rollouts: no need to parse a 20 KB line
    found = _meta_of_line(line)
    return child_meta(*found) if found is not None else None


@dataclass(frozen=True)
class Family:
    """The spawned, review and forked rollouts of one folder, and their links.

    Attributes:
        children: Every rollout of the folder that a session started or forked.
        parent_of: Linked child → (its parent's file, the parent's line that started it:
            the `entered_review_mode` event of a review child, else None).
        by_id: Session id (from the file name) → rollout file.
    """

    children: Mapping[Path, ChildMeta] = field(default_factory=dict)
    parent_of: Mapping[Path, tuple[Path, int | None]] = field(default_factory=dict)
    by_id: Mapping[str, Path] = field(default_factory=dict)


def is_rollout_name(name: str) -> bool:
    """True for the names Codex gives its rollouts (`rollout-<ts>-<uuid>.jsonl`)."""
    return name.startswith("rollout-") and name.endswith(".jsonl")


def folder_family(directory: str | os.PathLike[str]) -> Family:
    """The `Family` of the rollouts in one folder (cached until the folder changes)."""
    folder = Path(directory)
    try:
        stamp = folder.stat().st_mtime_ns
    except OSError:
        return Family()
    return _folder_family(str(folder), stamp)


@functools.lru_cache(maxsize=32)
def _folder_family(folder: str, _stamp: int) -> Family:
    try:
        names = sorted(n for n in os.listdir(folder) if is_rollout_name(n))
    except OSError:
        return Family()
    paths = [Path(folder, n) for n in names]
    by_id = {rollout_session_id(str(p)): p for p in paths}
    children = {p: m for p in paths if (m := read_child_meta(p)) is not None}
    parent_of: dict[Path, tuple[Path, int | None]] = {}
    for path, meta in children.items():
        parent = (
            by_id.get(meta.parent_id) if meta.kind == "thread_spawn" and meta.parent_id else None
        )
        if parent is not None and parent != path:
            parent_of[path] = (parent, None)
    reviews = [(p, m) for p, m in children.items() if m.kind == "review" and m.start_ms is not None]
    if reviews:
        candidates = [p for p in paths if p not in children or children[p].kind != "review"]
        parent_of.update(_review_links(reviews, candidates))
    return Family(children=children, parent_of=parent_of, by_id=by_id)


def _review_events(path: Path) -> list[tuple[int, float]]:
    """(line, ms) of the `entered_review_mode` events of a rollout."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if _REVIEW_EVENT not in data:
        return []
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if _REVIEW_EVENT not in raw:
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        payload = record.get("payload") if isinstance(record, dict) else None
        if isinstance(payload, dict) and payload.get("type") == "entered_review_mode":
            ms = parse_timestamp_ms(record.get("timestamp"))
            if ms is not None:
                out.append((number, ms))
    return out


def _review_links(
    reviews: Sequence[tuple[Path, ChildMeta]], candidates: Sequence[Path]
) -> dict[Path, tuple[Path, int | None]]:
    """Each review child → the parent event nearest its start (within the window, in the
    same working directory when both name one); an event starts one child."""
    events: list[tuple[float, Path, int, str | None]] = []
    for parent in candidates:
        found = _meta_of_line(_first_line(parent))
        cwd = _text(found[0].get("cwd")) if found is not None else None
        events.extend((ms, parent, line, cwd) for line, ms in _review_events(parent))
    used: set[tuple[Path, int]] = set()
    links: dict[Path, tuple[Path, int | None]] = {}
    for child, meta in sorted(reviews, key=lambda r: (r[1].start_ms or 0.0, str(r[0]))):
        start = meta.start_ms or 0.0
        near = [
            (abs(ms - start), str(parent), parent, line)
            for ms, parent, line, cwd in events
            if abs(ms - start) <= REVIEW_WINDOW_MS
            and (parent, line) not in used
            and parent != child
            and (cwd is None or meta.cwd is None or cwd == meta.cwd)
        ]
        if near:
            _, _, parent, line = min(near)
            used.add((parent, line))
            links[child] = (parent, line)
    return links


def is_linked_child(path: str | os.PathLike[str]) -> bool:
    """True for a rollout its parent's reader links (its parent's rollout is beside it)."""
    p = Path(path)
    return is_rollout_name(p.name) and p in folder_family(p.parent).parent_of


def linked_children(path: str | os.PathLike[str]) -> list[tuple[Path, int | None]]:
    """The rollouts linked to this one as its children, with the line that started each."""
    p = Path(path)
    if not is_rollout_name(p.name):
        return []
    family = folder_family(p.parent)
    return sorted((c, line) for c, (parent, line) in family.parent_of.items() if parent == p)


def history_source(path: str | os.PathLike[str], meta: ChildMeta) -> Path | None:
    """The rollout beside this one whose history a forked child copied, or None."""
    p = Path(path)
    source = meta.forked_from or (meta.parent_id if meta.kind == "thread_spawn" else None)
    if source is None or not is_rollout_name(p.name):
        return None
    found = folder_family(p.parent).by_id.get(source)
    return found if found is not None and found != p else None


def _copy_key(value: Any) -> tuple[Any, Any]:
    return (value.get("type"), value.get("payload")) if isinstance(value, dict) else (None, value)


def _find_copy(prefix: Sequence[tuple[Any, Any]], key: tuple[Any, Any], start: int) -> int | None:
    """The first record of `prefix` from `start` on equal to `key` (type, payload)."""
    for k in range(start, len(prefix)):
        kind, payload = prefix[k]
        if kind == key[0] and payload == key[1]:
            return k
    return None


def inherited_lines(
    values: Sequence[tuple[int, Any]],
    own: ChildMeta,
    parent_values: Sequence[tuple[int, Any]] | None = None,
) -> tuple[frozenset[int], int | None]:
    """The lines of a forked rollout that copy another session's history, and the line of a
    copied `session_meta` whose copy could not be told apart (else None).

    The copy is the run of records after the rollout's own `session_meta`: the ancestors'
    `session_meta` lines, then the copied records. With the parent's rollout at hand they are
    the records found, in order, among the parent's records written before the child
    started (exact, whatever their timestamps); without it, those timestamped before the
    child's start. A rollout with no fork mark (`forked_from_id`, or another session's
    `session_meta` after its own) copied nothing.
    """
    own_index = next(
        (
            i
            for i, (_, v) in enumerate(values)
            if isinstance(v, dict)
            and v.get("type") == "session_meta"
            and isinstance(v.get("payload"), dict)
        ),
        None,
    )
    if own_index is None:
        return frozenset(), None
    rest = values[own_index + 1 :]
    if own.forked_from is None and not any(_other_meta(v, own.id) for _, v in rest):
        return frozenset(), None
    prefix = None
    if parent_values is not None:
        prefix = [
            _copy_key(v)
            for _, v in parent_values
            if own.start_ms is None
            or not isinstance(v, dict)
            or (parse_timestamp_ms(v.get("timestamp")) or 0.0) <= own.start_ms
        ]
    lines: set[int] = set()
    metas: list[int] = []
    at = 0
    for line, value in rest:
        if _other_meta(value, own.id):
            metas.append(line)
            continue
        if prefix is not None:
            found = _find_copy(prefix, _copy_key(value), at)
            if found is None:
                break
            at = found + 1
        elif not _stamped_before(value, own.start_ms):
            break
        lines.add(line)
    unresolved = metas[0] if metas and not lines and prefix is None else None
    return frozenset(lines | set(metas)), unresolved


def _other_meta(value: Any, own_id: str) -> bool:
    """A `session_meta` of another session: an ancestor's, copied with its history."""
    if not isinstance(value, dict) or value.get("type") != "session_meta":
        return False
    payload = value.get("payload")
    return isinstance(payload, dict) and payload.get("id") != own_id


def _stamped_before(value: Any, start_ms: float | None) -> bool:
    ms = parse_timestamp_ms(value.get("timestamp")) if isinstance(value, dict) else None
    return ms is not None and start_ms is not None and ms < start_ms

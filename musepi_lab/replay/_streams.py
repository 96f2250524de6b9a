"""A session's request streams: the conversations that each sent their own requests, with
their own prompt, and so their own prompt cache and their own harness prefix.

- `main`: the session's active path (its leaf's path).
- `sidechain`: an inline sidechain of Claude Code 1.x (`isSidechain: true` lines under a root
  of their own: a Task subagent's conversation), as the path from its root to its latest entry.
- `subagent`: a linked session (`Session.linked`: Claude Code's `subagents/agent-*.jsonl`, or
  any linked session a reader adds) that is not a compaction run; each of its own sidechains
  too.
- `compaction`: a linked compaction run (`subagentKind: "compaction"`): the agent's own
  summarization request, sent with the main conversation as its prefix (`compactionEntryId`
  names the compaction it made).

A reply with recorded usage that no stream walks is counted with its reason
(`LeftOut.reason`): on an abandoned branch of its tree, or under a root that is neither the
main one nor a sidechain's (a reader that bridged nothing: Claude Code's `compact_boundary`
whose logical parent is absent, before the reader attaches it; a dangling parent).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..session._model import Entry
from ..session._session import Session
from ._billing import recorded_usage, reply_less_request

STREAM_KINDS: tuple[str, ...] = ("main", "sidechain", "subagent", "compaction")
"""The kinds of request stream (module notes)."""

OFF_PATH = "on an abandoned branch (off its stream's path)"
SECOND_ROOT = "under a second root (neither the main chain nor a sidechain)"


@dataclass(frozen=True)
class Stream:
    """One request stream of a session.

    Attributes:
        label: Its id: the session id for `main`, `<session id>/sidechain-<root id>` for
            an inline sidechain, a linked session's own header id otherwise.
        kind: One of `STREAM_KINDS`.
        session: The session it is replayed from: for `main` the session itself (its path
            to `leaf_id`), else a session whose entries are the stream's path, its header
            naming the kind (`subagentKind`).
        leaf_id: The leaf of `main` (None: the session's).
        owner: The id of the session whose file holds it (for `usage_df` rows).
        anchor: For `compaction`: the compaction entry of the main stream it made.
    """

    label: str
    kind: str
    session: Session
    leaf_id: str | None = None
    owner: str = ""
    anchor: str | None = None


@dataclass(frozen=True)
class LeftOut:
    """A reply with recorded usage that no stream walks.

    Attributes:
        session_id: The id of the session whose file holds it.
        entry_id: Its entry id.
        reason: Why (`OFF_PATH`, `SECOND_ROOT`).
    """

    session_id: str
    entry_id: str
    reason: str


def billed_entries(entries: tuple[Entry, ...]) -> Iterator[Entry]:
    """The entries that record a billed request: replies with usage, and entries carrying
    a request no reply answers (`_billing.reply_less_request`)."""
    for entry in entries:
        message = entry.message
        if message is not None and message.get("role") != "assistant":
            continue
        request = message if message is not None else reply_less_request(entry)
        if entry.id is not None and recorded_usage(request) is not None:
            yield entry


def _root_of(session: Session, entry: Entry) -> Entry:
    """The root of an entry's tree (the walk stops at a missing parent or a cycle)."""
    seen = {entry.id}
    while entry.parent_id is not None:
        parent = session.get(entry.parent_id)
        if parent is None or parent.id in seen:
            break
        seen.add(parent.id)
        entry = parent
    return entry


def _sidechains(session: Session, main_root: str | None) -> list[tuple[str, tuple[Entry, ...]]]:
    """`(root id, path)` of each inline sidechain tree: the path from its root to the last
    entry of the tree in file order."""
    last: dict[str, Entry] = {}
    roots: dict[str, Entry] = {}
    for entry in session.entries:
        if entry.id is None or entry.get("isSidechain") is not True:
            continue
        root = _root_of(session, entry)
        if root.id is None or root.id == main_root or root.get("isSidechain") is not True:
            continue
        roots[root.id] = root
        last[root.id] = entry
    return [(rid, session.path(last[rid].id)) for rid in roots]


def _stream_session(session: Session, label: str, kind: str, path: tuple[Entry, ...]) -> Session:
    header = {**session.header, "id": label, "subagentKind": kind}
    return session.copy_with(header=header, entries=path, errors=(), linked=())


def session_streams(
    session: Session, leaf_id: str | None = None
) -> tuple[tuple[Stream, ...], tuple[LeftOut, ...]]:
    """The request streams of a session and of its linked sessions (module notes), main
    first, and the replies with recorded usage none of them walks.

    Args:
        session: The session.
        leaf_id: The main stream's leaf (default: the session's).
    """
    streams: list[Stream] = []
    left: list[LeftOut] = []
    _collect(session, leaf_id, "main", streams, left)
    return tuple(streams), tuple(left)


def _collect(
    session: Session,
    leaf_id: str | None,
    kind: str,
    streams: list[Stream],
    left: list[LeftOut],
) -> None:
    path = session.path(leaf_id)
    main_root = path[0].id if path else None
    anchor = session.header.get("compactionEntryId")
    streams.append(
        Stream(
            label=session.id,
            kind=kind,
            session=session,
            leaf_id=leaf_id,
            owner=session.id,
            anchor=str(anchor) if kind == "compaction" and anchor else None,
        )
    )
    walked = {e.id for e in path}
    sidechains = _sidechains(session, main_root)
    for root_id, side in sidechains:
        label = f"{session.id}/sidechain-{root_id}"
        copy = _stream_session(session, label, "sidechain", side)
        streams.append(Stream(label, "sidechain", copy, None, session.id))
        walked.update(e.id for e in side)
    sidechain_roots = {rid for rid, _ in sidechains}
    for entry in billed_entries(session.entries):
        if entry.id in walked:
            continue
        root = _root_of(session, entry)
        in_known_tree = root.id == main_root or root.id in sidechain_roots
        reason = OFF_PATH if in_known_tree else SECOND_ROOT
        left.append(LeftOut(session.id, str(entry.id), reason))
    for linked in session.linked:
        sub = "compaction" if linked.header.get("subagentKind") == "compaction" else "subagent"
        _collect(linked, None, sub, streams, left)

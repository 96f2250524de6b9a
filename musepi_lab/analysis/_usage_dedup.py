"""Requests a harness recorded twice, billed once (Claude Code).

Claude Code copies replies between files: a resumed session's file repeats the lines it
continues (the same `message.id` and `requestId`), a forked subagent inherits its parent's
messages, and a `/btw` side question (inline, or an `agent-aside_question-*` subagent file)
replays the parent reply it was asked at under a new `requestId` before its own answer,
carrying that reply's whole cache read again. Each was one request to the API, and is
billed once:

- **repeated-request**: a reply whose (`message.id`, `requestId`) an earlier request of the
  same `usage_df` call already has (sessions in the order given, a session before its
  subagents, entries in file order) is not billed again; ccusage keeps one per pair across
  all files too.
- **sidechain-replay**: a sidechain reply (an inline sidechain entry, or any entry of a
  subagent session) whose `message.id` is a main-thread reply's of the same root session,
  under another `requestId`, is that reply replayed, not a request. ccusage (20.x) drops
  these too; its session and blocks reports only when the two lines' timestamps are equal,
  its daily report always. A `message.id` names one API response, so the timestamp does
  not matter here.

Readers that record no message id (every format but Claude Code) have nothing to match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

REASONS = ("repeated-request", "sidechain-replay")
"""Why a recorded request is not billed again (`usage_df`'s `attrs["duplicate_requests"]`)."""


@dataclass(frozen=True)
class Identity:
    """Which API request a reply was, as its entry records it."""

    message_id: str | None
    request_id: str | None
    sidechain: bool


class _HasIdentity(Protocol):
    @property
    def identity(self) -> Identity: ...
    @property
    def root_id(self) -> str: ...


R = TypeVar("R", bound=_HasIdentity)


def identity(record: Mapping[str, Any], *, in_subagent: bool) -> Identity:
    """The identity of a reply entry's record (Claude Code keeps `sourceMessageId`,
    `sourceRequestId` and `isSidechain`; a subagent session's entries are all sidechain)."""
    mid, rid = record.get("sourceMessageId"), record.get("sourceRequestId")
    return Identity(
        mid if isinstance(mid, str) else None,
        rid if isinstance(rid, str) else None,
        in_subagent or record.get("isSidechain") is True,
    )


def split_duplicates(
    requests: Sequence[R],
) -> tuple[list[R], list[tuple[R, str, R | None]]]:
    """The requests to bill, and the others as (request, reason, the billed one it repeats
    or None when that one is not among them)."""
    main_ids: dict[tuple[str, str], str | None] = {}  # (root, message id) -> request id
    for request in requests:
        ident = request.identity
        if ident.message_id is not None and not ident.sidechain:
            main_ids.setdefault((request.root_id, ident.message_id), ident.request_id)
    seen: dict[tuple[str, str], R] = {}
    billed: list[R] = []
    others: list[tuple[R, str, R | None]] = []
    for request in requests:
        ident = request.identity
        if ident.message_id is None:
            billed.append(request)
            continue
        pair = (ident.message_id, ident.request_id) if ident.request_id is not None else None
        if pair is not None and pair in seen:
            others.append((request, "repeated-request", seen[pair]))
            continue
        main = (request.root_id, ident.message_id)
        if ident.sidechain and main in main_ids and main_ids[main] != ident.request_id:
            others.append((request, "sidechain-replay", None))
            continue
        if pair is not None:
            seen[pair] = request
        billed.append(request)
    return billed, others


def duplicate_records(others: Iterable[tuple[Any, str, Any]], row: Any) -> list[dict[str, Any]]:
    """`attrs["duplicate_requests"]`: each request not billed again as its usage row would
    be, with `reason` and, for a repeat, the billed row's `billed_file` and `billed_line`."""
    out: list[dict[str, Any]] = []
    for request, reason, kept in others:
        record = {**row(request), "reason": reason}
        record["message_id"] = request.identity.message_id
        record["request_id"] = request.identity.request_id
        record["billed_file"] = kept.session.source_path if kept is not None else None
        record["billed_line"] = kept.entry_line if kept is not None else None
        out.append(record)
    return out

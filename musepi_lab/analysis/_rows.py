"""What one frame row is made from: a session seen through its frame id, and row values.

A `SessionView` computes the per-session lookups rows share (leaf path, message roles,
token counts) lazily, once, so a frame only pays for the columns it asks for.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..session._messages import entry_to_message
from ..session._model import Entry, tool_calls
from ..session._session import Session, parse_timestamp_ms
from ..tokens._counter import TokenCounter

TokenScope = Callable[[Session], Iterable[Entry]]
"""The entries of a session whose tokens a frame reads (counted together on first use)."""


def all_entries(session: Session) -> Iterable[Entry]:
    """Every entry: the token scope of entry, message and session frames."""
    return session.entries


def entries_of_type(kind: str) -> TokenScope:
    """A token scope of the entries of one type (`compaction`, ...)."""
    return lambda session: [e for e in session.entries if e.type == kind]


def tool_result_entries(session: Session) -> Iterable[Entry]:
    """Tool-result message entries: the token scope of the tool-call frame."""
    return [e for e in session.entries if e.role == "toolResult"]


class SessionView:
    """A session as the frames see it: its frame id, its counter, and shared lookups.

    Attributes:
        session_id: The id rows carry in `session_id` (the header id, made unique among
            the sessions of one frame call, see `frame_session_ids`).
        session: The session.
        counter: The token counter for token columns.
        token_scope: The entries whose tokens the frame reads (default: all).
    """

    def __init__(
        self,
        session_id: str,
        session: Session,
        counter: TokenCounter,
        token_scope: TokenScope | None = None,
    ) -> None:
        self.session_id = session_id
        self.session = session
        self.counter = counter
        self.token_scope: TokenScope = token_scope or all_entries
        self._scope_counted = False

    @cached_property
    def path_ids(self) -> frozenset[str]:
        """Ids of the entries on the root→leaf path of the session leaf."""
        return frozenset(e.id for e in self.session.path() if e.id is not None)

    @cached_property
    def messages(self) -> tuple[tuple[Entry, Mapping[str, Any]], ...]:
        """Entries that put a message in the LLM context, with that runtime message."""
        out = []
        for entry in self.session.entries:
            message = entry_to_message(entry)
            if message is not None:
                out.append((entry, message))
        return tuple(out)

    @cached_property
    def message_roles(self) -> Counter[str]:
        """How many runtime messages the session has per role."""
        return Counter(str(message.get("role")) for _, message in self.messages)

    def tokens(self, entry: Entry) -> int:
        """Tokens of one entry of this session.

        The first call counts every entry of the view's token scope in one batch (what
        makes BPE counting fast); frames that read no token column count nothing.
        """
        if not self._scope_counted:
            self.counter.count_entries(self.token_scope(self.session))
            self._scope_counted = True
        return self.counter.count_entry(entry)

    def total_tokens(self) -> int:
        """Tokens of all the session's entries."""
        return sum(self.counter.count_entries(self.session.entries))

    @cached_property
    def timestamps_ms(self) -> tuple[tuple[float, str], ...]:
        """`(epoch_ms, iso)` of every entry whose timestamp parses, sorted by time."""
        stamps: list[tuple[float, str]] = []
        for entry in self.session.entries:
            ms = parse_timestamp_ms(entry.timestamp)
            if ms is not None and entry.timestamp is not None:
                stamps.append((ms, entry.timestamp))
        return tuple(sorted(stamps))

    def tool_call_rows(self) -> Iterator[ToolCallRow]:
        """Every toolCall block of the session joined to its result, in file order.

        A result answers the earliest call before it with the same id that is still
        unanswered (one pass, so duplicated call ids pair in order).
        """
        calls: list[tuple[Entry, Mapping[str, Any], int]] = []
        results: list[Entry | None] = []
        waiting: dict[str, deque[int]] = {}
        for entry, message in self.messages:
            role = message.get("role")
            if role == "assistant":
                for index, call in enumerate(tool_calls(message)):
                    call_id = call.get("id")
                    if isinstance(call_id, str):
                        waiting.setdefault(call_id, deque()).append(len(calls))
                    calls.append((entry, call, index))
                    results.append(None)
            elif role == "toolResult":
                pending = waiting.get(message.get("toolCallId"))  # type: ignore[arg-type]
                if pending:
                    results[pending.popleft()] = entry
        for (entry, call, index), result in zip(calls, results, strict=True):
            yield ToolCallRow(self, entry, call, index, result)


@dataclass(frozen=True, slots=True)
class EntryRow:
    """One entry of a session, with the message it stands for (if any)."""

    view: SessionView
    entry: Entry
    message: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class ToolCallRow:
    """One toolCall block and the tool-result entry that answers it (None if none)."""

    view: SessionView
    entry: Entry
    call: Mapping[str, Any]
    index: int
    result: Entry | None

    @property
    def result_message(self) -> Mapping[str, Any] | None:
        """The tool-result message, if the call has a result."""
        return self.result.message if self.result is not None else None


def frame_session_ids(sessions: list[Session]) -> list[str]:
    """The `session_id` of each session in a frame call: the header id, and for the
    second and later sessions sharing one (copies of a file) `<id>#2`, `<id>#3`, ...

    Ids depend only on the sessions and their order, so frames built from the same
    input join on `session_id`.
    """
    return unique_ids(session.id for session in sessions)


def unique_ids(header_ids: Iterable[str]) -> list[str]:
    """Ids made unique in order: the first as it is, a later one `<id>#2`, `<id>#3`, ...
    (the first suffix not taken). Each id's last suffix is kept, so many copies of one id
    cost linear time (a suffix once taken stays taken)."""
    taken: set[str] = set()
    last: dict[str, int] = {}
    ids: list[str] = []
    for header in header_ids:
        candidate, n = header, last.get(header, 1)
        if n > 1:
            candidate = f"{header}#{n}"
        while candidate in taken:
            n += 1
            candidate = f"{header}#{n}"
        taken.add(candidate)
        last[header] = n
        ids.append(candidate)
    return ids

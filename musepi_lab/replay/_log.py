"""The simulated session a replay builds, with a live window that keeps each compaction
proportional to the context rather than to the whole session.

The replay appends every recorded entry and every compaction it fires to one log. A
strategy only ever needs the part of the path that can still reach the model: from the
first kept entry of the latest compaction on (spec §2.1 step 5, §4.3, §4.5). So the log
keeps a window start, moved forward at each compaction, and hands strategies a session of
the window alone, preceded by the metadata entries that still decide the thinking level
and the models in force (the latest `thinking_level_change`, the latest `model_change` of
each role). Under the MusePi profile the newest entry with valid usage stays in the window
too: MusePi's preparation reads it for `tokensBefore` and the adaptive keep budget (§4.4);
pi's reads usage only after its previous compaction (§4.3).

The log is the one mutable piece of a replay: append-only, except that a strategy's
rewrites (masking) replace entries in place, by position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..compaction._prepare import is_remote_compaction
from ..compaction._threshold import message_usage
from ..formats._records import stable_id
from ..session._model import Entry
from ..session._session import Session


def _role(entry: Entry) -> str:
    role = entry.get("role")
    return role if isinstance(role, str) and role else "default"


class SimulatedPath:
    """The simulated session: an entry log with a live window (see the module docstring).

    Attributes:
        session: The recorded session the replay started from (for its header).
        entries: Every simulated entry, root first (a single path).
        start: Position of the first entry of the live window.
    """

    __slots__ = (
        "_carried",
        "_keep_usage",
        "_last_usage",
        "_positions",
        "entries",
        "session",
        "start",
    )

    def __init__(self, session: Session, *, profile: str = "musepi") -> None:
        """An empty log.

        Args:
            session: The recorded session (its header names the simulated one).
            profile: The settings profile (MusePi keeps the newest usage in the window).
        """
        self.session = session
        self._keep_usage = profile == "musepi"
        self.entries: list[Entry] = []
        self.start = 0
        self._positions: dict[str, int] = {}
        self._last_usage = -1
        # Metadata before the window that still decides the context's settings, by key.
        self._carried: dict[tuple[str, str], int] = {}

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._positions

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def leaf(self) -> Entry | None:
        """The newest entry."""
        return self.entries[-1] if self.entries else None

    @property
    def live_size(self) -> int:
        """Entries a strategy sees: the window plus the carried metadata."""
        return len(self.entries) - self.start + len(self._carried)

    def append(self, entry: Entry) -> Entry:
        """Append a recorded entry under the current leaf; returns the entry as appended."""
        parent = self.entries[-1].id if self.entries else None
        if entry.parent_id != parent:
            entry = entry.copy_with(parentId=parent)
        self._push(entry)
        return entry

    def _push(self, entry: Entry) -> None:
        position = len(self.entries)
        self.entries.append(entry)
        if entry.id is not None:
            self._positions[entry.id] = position
        if entry.type == "message" and message_usage(entry.message, profile="musepi") is not None:
            self._last_usage = position

    def fresh_id(self, salt: str) -> str:
        """A deterministic id free in the whole log (as `derived_entry_id`, which needs a
        `Session`; building one per compaction would cost the whole log)."""
        entry_id = stable_id(self.session.id, salt)
        while entry_id in self._positions:
            entry_id = stable_id(entry_id)
        return entry_id

    def live_session(self) -> Session:
        """The window as a session a strategy can compact: carried metadata chained first,
        then the window's entries (the first re-linked to the last carried one)."""
        chain: list[Entry] = []
        parent: str | None = None
        for position in sorted(self._carried.values()):
            entry = self.entries[position]
            chain.append(entry if entry.parent_id == parent else entry.copy_with(parentId=parent))
            parent = entry.id
        window = self.entries[self.start :]
        if window and window[0].parent_id != parent:
            window = [window[0].copy_with(parentId=parent), *window[1:]]
        return self.session.copy_with(entries=(*chain, *window), errors=(), linked=())

    def commit(
        self,
        live: Session,
        after: Session,
        replaced: Mapping[str, Any] | None,
        *,
        restarted: bool = False,
    ) -> None:
        """Take a compaction applied to `live` into the log.

        Args:
            live: The session the strategy compacted (`live_session()`).
            after: `live` with the result applied.
            replaced: Ids of the entries the result rewrote in place, if any.
            restarted: `after` is a new session (a handoff): its entries continue the
                log and the window starts at them.
        """
        if restarted:
            self._restart(after)
            return
        for entry_id in replaced or ():
            position = self._positions[entry_id]
            new = after.get(entry_id)
            old = self.entries[position]
            if new is not None:
                # The live copy may have been re-linked; the log keeps the real parent.
                self.entries[position] = (
                    new if new.parent_id == old.parent_id else new.copy_with(parentId=old.parent_id)
                )
        added = after.entries[len(live.entries) :]
        for entry in added:
            self._push(entry)
        for entry in added:
            if entry.type == "compaction":
                self._advance(entry)

    def _restart(self, new: Session) -> None:
        """Continue in a new session: its entries follow the log's leaf and open the window.

        The carried metadata stays (the agent keeps its model and thinking level); usage
        recorded before the handoff no longer describes the context.
        """
        first = len(self.entries)
        for entry in new.entries:
            self.append(entry)
        self.start = first
        self._last_usage = -1

    def _advance(self, compaction: Entry) -> None:
        """Move the window start to the compaction's first kept entry (never back, never
        past the newest usage). A provider-native compaction may be unreadable later, which
        brings the previous one back: the window stays where it is."""
        if is_remote_compaction(compaction):
            return
        kept = self._positions.get(str(compaction.get("firstKeptEntryId")))
        if kept is None:
            return
        if self._keep_usage and self._last_usage >= 0:
            kept = min(kept, self._last_usage)
        for position in range(self.start, max(kept, self.start)):
            entry = self.entries[position]
            if entry.type == "thinking_level_change":
                self._carried[("thinking", "")] = position
            elif entry.type == "model_change":
                self._carried[("model", _role(entry))] = position
        self.start = max(self.start, kept)

    def session_copy(self) -> Session:
        """The whole simulated session (once, at the end of the replay)."""
        return self.session.copy_with(entries=tuple(self.entries), errors=(), linked=())

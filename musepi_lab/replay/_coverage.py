"""How many of a session's recorded requests a replay covers, and why the others are out.

A recorded request is a reply with recorded usage (the rows of `analysis.usage_df`, over the
session and its linked sessions), plus the Codex requests whose usage no assistant item
carries (`analysis._usage.unassigned_usage`: they are in no `usage_df` row, but the provider
billed them). A replay covers a recorded request when one of its streams billed that reply.
Every other one is counted with its reason, never dropped: on an abandoned branch or under a
second root (`_streams`), a compaction run left out of a counterfactual strategy, a Codex
request no item carries, or (should a walk skip a reply for a reason not named here)
`UNEXPLAINED`, so a gap shows instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..session._session import Session
from ._streams import LeftOut, _billed_replies

COMPACTION_RUN = "the agent's own compaction run (a counterfactual strategy compacts itself)"
UNASSIGNED = "a Codex request whose usage no assistant item carries"
UNEXPLAINED = "not billed by any stream (no reason known)"


@dataclass(frozen=True)
class Coverage:
    """The recorded requests of a session and what a replay made of them.

    Attributes:
        recorded: Recorded requests of the session and its linked sessions.
        covered: Of those, the ones a stream billed.
        left_out: `(reason, count)` of the others, by reason.
        estimated: Requests the replay billed whose reply carries no usage (output and
            prompt estimated; no recorded bill to compare with).
    """

    recorded: int
    covered: int
    left_out: tuple[tuple[str, int], ...] = ()
    estimated: int = 0

    @property
    def complete(self) -> bool:
        """Whether every recorded request is covered or counted with a known reason."""
        reasons = dict(self.left_out)
        return UNEXPLAINED not in reasons and self.covered + sum(reasons.values()) == self.recorded

    def as_dict(self) -> dict[str, object]:
        """`recorded`, `covered`, `left_out` (reason → count) and `estimated`."""
        return {
            "recorded": self.recorded,
            "covered": self.covered,
            "left_out": dict(self.left_out),
            "estimated": self.estimated,
        }


def _sessions(session: Session) -> Iterable[Session]:
    yield session
    for linked in session.linked:
        yield from _sessions(linked)


def recorded_requests(session: Session) -> set[tuple[str, str]]:
    """`(session id, entry id)` of every reply with recorded usage, linked sessions too."""
    return {(s.id, str(e.id)) for s in _sessions(session) for e in _billed_replies(s.entries)}


def unassigned_requests(session: Session) -> int:
    """Codex requests (token_count events) beyond the replies that carry usage (the count
    `usage_df`'s `unassigned-usage` problem reports)."""
    # Imported here: `analysis` imports the replay's result type at import time.
    from ..analysis._usage import _codex_requests

    total = 0
    for s in _sessions(session):
        requests = len(_codex_requests(s))
        if requests:
            total += max(0, requests - sum(1 for _ in _billed_replies(s.entries)))
    return total


def coverage(
    session: Session,
    billed: Iterable[tuple[str, str]],
    left: Iterable[LeftOut],
    *,
    excluded: Mapping[tuple[str, str], str] | None = None,
    estimated: int = 0,
) -> Coverage:
    """The coverage of a replay of `session`.

    Args:
        session: The session replayed.
        billed: `(owner session id, entry id)` of each billed request that carries usage.
        left: The replies no stream walks (`_streams.session_streams`).
        excluded: Replies of streams the replay chose not to bill, with the reason.
        estimated: Billed requests without recorded usage.
    """
    recorded = recorded_requests(session)
    covered = recorded & set(billed)
    reasons: dict[str, int] = {}
    explained: set[tuple[str, str]] = set()
    for item in left:
        key = (item.session_id, item.entry_id)
        if key in recorded and key not in covered:
            reasons[item.reason] = reasons.get(item.reason, 0) + 1
            explained.add(key)
    for key, reason in (excluded or {}).items():
        if key in recorded and key not in covered and key not in explained:
            reasons[reason] = reasons.get(reason, 0) + 1
            explained.add(key)
    rest = len(recorded - covered - explained)
    if rest:
        reasons[UNEXPLAINED] = rest
    unassigned = unassigned_requests(session)
    if unassigned:
        reasons[UNASSIGNED] = unassigned
    return Coverage(
        recorded=len(recorded) + unassigned,
        covered=len(covered),
        left_out=tuple(sorted(reasons.items())),
        estimated=estimated,
    )

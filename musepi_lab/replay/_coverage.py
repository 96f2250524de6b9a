"""How many of a session's recorded requests a replay covers, and why the others are out.

A recorded request is what `analysis.usage_df` bills, over the session and its linked
sessions: a reply with recorded usage, or an entry recording a request no reply answers
(`_billing.reply_less_request`: Codex's `token_count` without an output item). A replay
covers a recorded request when one of its streams billed it. Every other one is counted
with its reason, never dropped: on an abandoned branch or under a second root (`_streams`),
a compaction run left out of a counterfactual strategy, or (should a walk skip one for a
reason not named here) `UNEXPLAINED`, so a gap shows instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..session._session import Session
from ._streams import LeftOut, billed_entries

COMPACTION_RUN = "the agent's own compaction run (a counterfactual strategy compacts itself)"
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
    return {(s.id, str(e.id)) for s in _sessions(session) for e in billed_entries(s.entries)}


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
    return Coverage(
        recorded=len(recorded),
        covered=len(covered),
        left_out=tuple(sorted(reasons.items())),
        estimated=estimated,
    )

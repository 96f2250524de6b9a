"""Scoring many contexts of one session: which of its facts each context still holds.

A benchmark builds dozens of contexts from one session (strategies × budgets), and most of
their messages are the session's own, unchanged message objects (`SessionContext.messages`
promises that). `SessionScorer` finds the session's facts in each message once, with one
Aho–Corasick pass over the message's text, and remembers the answer by message identity;
a context's facts are then the union over its messages, so only messages a strategy wrote
(summaries, masked or pruned results) are ever scanned again.

The text of a message is what `context_text` reads from it; facts never span two messages
(facts are single lines), so the union equals one scan of the joined context text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..session._session import Session
from ._archive import ArchiveText, imaged_text
from ._facts import context_text
from ._match import FactMatcher
from ._session_facts import session_fingerprint

_MAX_MESSAGES = 200_000
_SCORERS = 8
_scorers: OrderedDict[tuple[Any, ...], SessionScorer] = OrderedDict()


class SessionScorer:
    """Finds a fixed set of facts in contexts, caching each message's answer.

    Args:
        needles: The fact strings of the session (planted, or every extracted fact).
    """

    def __init__(self, needles: Iterable[str]) -> None:
        self.matcher = FactMatcher(needles)
        # id(message) -> (message, facts found); the message is held so its id stays its own.
        self._by_message: dict[int, tuple[Mapping[str, Any], frozenset[str]]] = {}

    @property
    def needles(self) -> tuple[str, ...]:
        """The fact strings looked for."""
        return self.matcher.needles

    def _message_found(self, message: Mapping[str, Any]) -> frozenset[str]:
        hit = self._by_message.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        found = self.matcher.found(context_text([message]))
        if len(self._by_message) >= _MAX_MESSAGES:
            self._by_message.clear()
        self._by_message[id(message)] = (message, found)
        return found

    def found(
        self, messages: Sequence[Mapping[str, Any]], *, archives: Sequence[ArchiveText] = ()
    ) -> frozenset[str]:
        """The needles present in the context `messages` (as `context_text` reads it);
        with `archives`, snapcompact's imaged pages count as read (the upper bound)."""
        out: set[str] = set()
        for message in messages:
            out |= self._message_found(message)
        if archives:
            out |= self.matcher.found(imaged_text(messages, archives))
        return frozenset(out)

    def bounds(
        self,
        facts: Iterable[str],
        messages: Sequence[Mapping[str, Any]],
        archives: Sequence[ArchiveText] = (),
    ) -> tuple[float | None, float | None]:
        """`(retention_lower, retention_upper)` of `facts` (strings among the needles) in a
        context: imaged pages unreadable, then read perfectly. None without facts."""
        wanted = list(facts)
        if not wanted:
            return None, None
        lower = self.found(messages)
        upper = self.found(messages, archives=archives) if archives else lower
        kept_lower = sum(1 for f in wanted if f in lower)
        kept_upper = sum(1 for f in wanted if f in upper)
        return kept_lower / len(wanted), kept_upper / len(wanted)


def session_scorer(session: Session, needles: Sequence[str]) -> SessionScorer:
    """A `SessionScorer` for `session`'s facts, shared by every cell of the session
    (a few kept, keyed by the session's fingerprint and the needles)."""
    key = (session_fingerprint(session), hash(tuple(needles)), len(needles))
    scorer = _scorers.get(key)
    if scorer is None:
        scorer = SessionScorer(needles)
        _scorers[key] = scorer
        while len(_scorers) > _SCORERS:
            _scorers.popitem(last=False)
    else:
        _scorers.move_to_end(key)
    return scorer


def clear_scorers() -> None:
    """Forget the shared scorers (and the messages they hold)."""
    _scorers.clear()

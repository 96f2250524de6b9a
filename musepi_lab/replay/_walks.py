"""The walks a replay, a fit and a judgement share: a session's streams, and each stream
walked under the `recorded` strategy (the context the agent sent), which is what a stream's
own line and miss rate are estimated from.

Neither depends on a fitted parameter, so both are kept for the few sessions used last (by
identity: a bench worker replays one session object under many strategies, a fit bills one
walk under many calibrations), and each is computed once per session.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from ..compaction._settings import CompactionSettings
from ..session._session import Session
from ..strategies._base import Strategy
from ._billing import recorded_rates
from ._cache import SPLIT_REPLY_HARNESSES
from ._options import ReplayOptions
from ._state import ReplayConfig, configure
from ._streams import LeftOut, Stream, session_streams
from ._walk import Walk, walk

FIT_STRATEGY = "recorded"
"""The strategy a stream's own line is estimated under (follows the agent's compactions)."""
FIT_WINDOW = 10**9
"""The window of that walk: no trigger of the window fires."""
KEPT = 64
"""Sessions (and stream walks) kept."""

_T = TypeVar("_T")


class _IdentityCache:
    """A small LRU of values keyed by objects' identity (the object is held, so its id is
    not reused while the entry lives) and a hashable suffix."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[int, Hashable], tuple[object, object]] = OrderedDict()

    def get(self, owner: object, key: Hashable, make: Callable[[], _T]) -> _T:
        slot = (id(owner), key)
        found = self._items.get(slot)
        if found is not None and found[0] is owner:
            self._items.move_to_end(slot)
            return found[1]  # type: ignore[return-value]
        value = make()
        self._items[slot] = (owner, value)
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        self._items.clear()


_STREAMS = _IdentityCache(KEPT)
_WALKS = _IdentityCache(KEPT * 4)


def streams_of(
    session: Session, leaf_id: str | None = None
) -> tuple[tuple[Stream, ...], tuple[LeftOut, ...]]:
    """`session_streams`, kept per session object."""
    return _STREAMS.get(session, leaf_id, lambda: session_streams(session, leaf_id))


def stream_config(
    stream: Stream, strategy: str | Strategy, options: ReplayOptions, window: int
) -> ReplayConfig:
    """The walk configuration of one stream under `window`: `configure` with the stream's
    own reply splitting (Codex writes one record per output item) and recorded prices."""
    messages = [e.message for e in stream.session.entries if e.message is not None]
    return configure(
        strategy,
        options,
        window=window,
        split_replies=stream.session.header.get("sourceFormat") in SPLIT_REPLY_HARNESSES,
        rates=recorded_rates(messages),
    )


def recorded_walk(stream: Stream, profile: str = "musepi") -> Walk:
    """The stream walked under `FIT_STRATEGY`, kept per stream."""

    def make() -> Walk:
        options = ReplayOptions(settings=CompactionSettings.for_profile(profile), triggers=())
        config = stream_config(stream, FIT_STRATEGY, options, FIT_WINDOW)
        return walk(config, stream.session, stream.leaf_id)

    return _WALKS.get(stream.session, (stream.leaf_id, profile), make)


def clear_walks() -> None:
    """Forget the kept streams and walks (benchmarks that time a cold start)."""
    _STREAMS.clear()
    _WALKS.clear()

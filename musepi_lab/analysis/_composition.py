"""Context composition as DataFrames: what the context holds by kind, before and after each
strategy at a budget, and at each request of a replay.

One tidy row per (context, kind): `tokens` of that kind and `share` of the context. The
kinds are `COMPOSITION_KINDS`; a context's rows sum to the tokens its counter gives the
rebuilt context (plus `system_tokens`, which sessions do not record).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..compaction._settings import CompactionSettings
from ..context._build import UNSET, build_session_context
from ..llm._summarizer import Summarizer
from ..replay._result import ReplayResult
from ..session._errors import ReadProblem
from ..session._session import Session
from ..strategies._base import compact
from ..tokens._composition import COMPOSITION_KINDS, context_composition_of
from ..tokens._counter import TokenCounter
from ._load import SessionSource, load_sessions
from ._problems import with_problems
from ._rows import frame_session_ids
from ._sources import EXPECTED_SOURCE, check_source, takes_sources

COMPOSITION_COLUMNS: tuple[str, ...] = (
    "session_id",
    "strategy",
    "budget",
    "stage",
    "kind",
    "tokens",
    "share",
)
"""Columns of `context_composition_df`, in order."""
REPLAY_COMPOSITION_COLUMNS: tuple[str, ...] = (
    "session_id",
    "strategy",
    "request",
    "entry_id",
    "kind",
    "tokens",
    "share",
)
"""Columns of `replay_composition_df`, in order."""
DEFAULT_COMPOSITION_STRATEGIES: tuple[str, ...] = (
    "none",
    "prune",
    "observation-masking",
    "truncate",
    "snapcompact",
)
"""Strategies that need no model, so the default comparison runs offline."""
# The measured copy's entry gets a fixed time: counts never depend on it.
_TIMESTAMP = "1970-01-01T00:00:00.000Z"


def context_composition(
    session: Session,
    *,
    leaf_id: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
    system_tokens: int = 0,
) -> dict[str, int]:
    """Tokens of the context at a leaf of `session`, by kind (`COMPOSITION_KINDS`).

    Args:
        session: The session.
        leaf_id: The leaf (default: the session leaf).
        profile: Which agent's context rules rebuild the context.
        counter: Token counter (default: the profile's estimator).
        system_tokens: Tokens of the system prompt and tools, added to `system/tools`.

    Returns:
        Kind → tokens; the values sum to `counter.count_messages` of the rebuilt context
        plus `system_tokens`.
    """
    counter = counter or TokenCounter.for_profile(profile)
    context = build_session_context(session, UNSET if leaf_id is None else leaf_id, profile=profile)
    return context_composition_of(context.messages, counter, system_tokens=system_tokens)


def _rows(keys: Mapping[str, Any], composition: Mapping[str, int]) -> list[dict[str, Any]]:
    total = sum(composition.values())
    return [
        {
            **keys,
            "kind": kind,
            "tokens": composition[kind],
            "share": composition[kind] / total if total else 0.0,
        }
        for kind in COMPOSITION_KINDS
    ]


def _frame(records: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=list(columns))
    frame["kind"] = pd.Categorical(frame["kind"], categories=list(COMPOSITION_KINDS))
    return frame


@takes_sources
def context_composition_df(
    source: SessionSource,
    *,
    strict: bool = False,
    strategies: Iterable[str] = DEFAULT_COMPOSITION_STRATEGIES,
    budget: int | None = None,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    system_tokens: int = 0,
) -> pd.DataFrame:
    """The context by kind before compaction and after each strategy at one budget.

    Args:
        source: A `Session`, a session file or folder, or a list of those (as
            `entries_df`); none is changed.
        strict: Raise on read problems instead of keeping them on the frame.
        strategies: Registry names; those that call a model need `summarizer`.
        budget: The keep-recent budget (tokens) every strategy runs with (default: the
            settings' `keep_recent_tokens`), as `run_benchmark`'s `budget`.
        settings: Compaction settings (default: MusePi's).
        counter: Token counter (default: the profile's estimator).
        summarizer: The model seam, for strategies that need one.
        system_tokens: Tokens of the system prompt and tools, added to every context.

    Returns:
        A DataFrame with `COMPOSITION_COLUMNS`, per session: one `before` context (strategy
        `""`), then one `after` context per strategy (the context rebuilt from the applied
        result; the same as `before` when the strategy has nothing to do). The read
        problems travel on it, as on every frame (`problems_of(frame)`).

    Raises:
        TypeError: `sessions` is none of those.
        SessionReadError: A path does not exist; with `strict=True`, a read problem.
    """
    settings = settings or CompactionSettings.musepi()
    if budget is not None:
        settings = settings.copy_with(keep_recent_tokens=budget)
    counter = counter or TokenCounter.for_profile(settings.profile)
    names = list(strategies)
    loaded, problems = load_sessions(source, strict=strict)
    records: list[dict[str, Any]] = []
    for session_id, session in zip(frame_session_ids(loaded), loaded, strict=True):
        records += _session_composition(
            session, session_id, names, settings, counter, summarizer, system_tokens
        )
    return with_problems(_frame(records, COMPOSITION_COLUMNS), problems)


def _session_composition(
    session: Session,
    session_id: str,
    strategies: list[str],
    settings: CompactionSettings,
    counter: TokenCounter,
    summarizer: Summarizer | None,
    system_tokens: int,
) -> list[dict[str, Any]]:
    keep = settings.keep_recent_tokens
    base = {"session_id": session_id, "budget": keep}
    before = context_composition(
        session, profile=settings.profile, counter=counter, system_tokens=system_tokens
    )
    records = _rows({**base, "strategy": "", "stage": "before"}, before)
    for name in strategies:
        result = compact(session, name, settings=settings, counter=counter, summarizer=summarizer)
        if result is None:
            after = before
        else:
            applied = result.apply(session, timestamp=_TIMESTAMP)
            after = context_composition(
                applied,
                leaf_id=None if result.append_entry else session.leaf_id,
                profile=settings.profile,
                counter=counter,
                system_tokens=system_tokens,
            )
        records += _rows({**base, "strategy": name, "stage": "after"}, after)
    return records


def replay_composition_df(
    source: ReplayResult | Iterable[ReplayResult] | SessionSource,
    *,
    strict: bool = False,
    strategy: str = "none",
    window: int | None = None,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    system_tokens: int = 0,
    max_requests: int | None = 200,
) -> pd.DataFrame:
    """The context by kind at the requests of a replay.

    Each request's context is rebuilt from the replay's simulated session at the request's
    entry, so the compactions the replay fired show up as `summaries`.

    Args:
        source: A `ReplayResult` (or a list of them), or sessions as every frame function
            takes them (a `Session`, a session file or folder, or a list of those), each
            replayed here with `strategy` under `window`.
        strict: Raise on read problems instead of keeping them on the frame.
        strategy: The strategy sessions are replayed with (not used for replay results).
        window: The window sessions are replayed under (default: each session's own,
            `metrics.session_context_window`, as `replay` picks it).
        settings: Compaction settings of those replays (default: MusePi's).
        counter: Token counter (default: the replay profile's estimator; pass the
            replay's own counter to match its `context_tokens`).
        system_tokens: As given to `replay` (sessions do not record it).
        max_requests: At most this many requests per replay, evenly spaced, always
            including the first and the last (None: every request).

    Returns:
        A DataFrame with `REPLAY_COMPOSITION_COLUMNS`, the read problems on it, as on
        every frame (`problems_of(frame)`).

    Raises:
        TypeError: `source` is none of those.
        SessionReadError: A path does not exist; with `strict=True`, a read problem.
    """
    replays, problems = _replays(source, strict, strategy, window, settings, counter, system_tokens)
    ids = frame_session_ids([r.session for r in replays])
    records: list[dict[str, Any]] = []
    for session_id, result in zip(ids, replays, strict=True):
        records += _replay_rows(result, session_id, counter, system_tokens, max_requests)
    return with_problems(_frame(records, REPLAY_COMPOSITION_COLUMNS), problems)


def _replays(
    source: Any,
    strict: bool,
    strategy: str,
    window: int | None,
    settings: CompactionSettings | None,
    counter: TokenCounter | None,
    system_tokens: int,
) -> tuple[list[ReplayResult], list[ReadProblem]]:
    """The replays a `replay_composition_df` call covers, and the read problems."""
    if isinstance(source, ReplayResult):
        return [source], []
    if isinstance(source, (list, tuple)) and source and isinstance(source[0], ReplayResult):
        bad = [type(r).__name__ for r in source if not isinstance(r, ReplayResult)]
        if bad:
            raise TypeError(f"replay_composition_df got a list mixing replays and {bad[0]}")
        return list(source), []
    if not isinstance(source, (Session, str, os.PathLike, list, tuple)):
        try:
            check_source(source, "replay_composition_df")
        except TypeError:
            raise TypeError(
                "replay_composition_df expects a ReplayResult (or a list of them), "
                f"or {EXPECTED_SOURCE}; got {type(source).__name__}"
            ) from None
    check_source(source, "replay_composition_df")
    from ..replay._replay import replay_session

    sessions, problems = load_sessions(source, strict=strict)
    replays = []
    for session in sessions:
        replays.append(
            replay_session(
                session,
                strategy,
                window=window,
                settings=settings,
                counter=counter,
                system_tokens=system_tokens,
            )
        )
    return replays, problems


def _replay_rows(
    replay: ReplayResult,
    session_id: str,
    counter: TokenCounter | None,
    system_tokens: int,
    max_requests: int | None,
) -> list[dict[str, Any]]:
    counter = counter or TokenCounter.for_profile(replay.profile)
    rows = list(zip(replay.timeline["request"], replay.timeline["entry_id"], strict=True))
    chosen = rows if max_requests is None else _evenly(rows, max_requests)
    known = {e.id for e in replay.session.entries}
    records: list[dict[str, Any]] = []
    for request, entry_id in chosen:
        if entry_id not in known:
            continue
        composition = context_composition(
            replay.session,
            leaf_id=entry_id,
            profile=replay.profile,
            counter=counter,
            system_tokens=system_tokens,
        )
        keys = {
            "session_id": session_id,
            "strategy": replay.strategy,
            "request": int(request),
            "entry_id": entry_id,
        }
        records += _rows(keys, composition)
    return records


def _evenly(items: Sequence[Any], at_most: int) -> list[Any]:
    """At most `at_most` items spread evenly, first and last included."""
    if len(items) <= at_most or at_most < 2:
        return list(items[:at_most]) if at_most < 2 else list(items)
    step = (len(items) - 1) / (at_most - 1)
    picks = sorted({round(i * step) for i in range(at_most)})
    return [items[i] for i in picks]

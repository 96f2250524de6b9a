"""`replay_session`: a recorded session replayed stream by stream under a given window, compactions
fired where MusePi's triggers would (spec §6.5), every request billed under its provider's
prompt-cache model.

A session is the sum of its request streams (`_streams`): its main path, inline sidechains
and linked subagent sessions each walk on their own (`_walk`), under their own harness
prefix (the system prompt and warm prefix of a subagent are not the main harness's), and are
billed on their own cache (`_stream_bill`). The agent's own compaction runs (Claude Code's
`agent-acompact-*`) are billed only under a strategy that follows the recorded compactions:
they start from the main conversation's cache, with its prompt as their prefix.

Each stream is billed on its own line (system prompt, token ratio; `_own`): under the
default `ratio="session"` estimated from all of the stream's recorded requests (walked under
`recorded`, the context the agent sent), the family fit as the prior; `ratio="causal"`
(the `recorded` strategy only) estimates request k's from the requests before k;
`ratio="family"` bills the family fit itself (the plain rules). The timeline says which
output tokens are recorded and which estimated; `coverage` counts the session's recorded
requests, billed or left out with a reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics._session_window import session_context_window
from ..session._session import Session
from ..strategies._base import Strategy
from ._cache import CacheState
from ._calibrated import DEFAULT_CALIBRATION, Calibration
from ._coverage import COMPACTION_RUN, coverage
from ._options import RATIOS, ReplayOptions
from ._own import Terms, fixed_terms, observations, own_terms
from ._result import (
    COLUMNS,
    TRIGGERS,
    CompactionEvent,
    CompactionFailure,
    ReplayResult,
    StreamResult,
)
from ._stream_bill import Billed, bill_stream
from ._streams import Stream
from ._uncertainty import Rate, StreamDraws, beta_rates
from ._walk import Walk, walk
from ._walks import FIT_STRATEGY, FIT_WINDOW, recorded_walk, stream_config, streams_of

__all__ = [
    "RATIOS",
    "TRIGGERS",
    "CompactionEvent",
    "CompactionFailure",
    "ReplayResult",
    "replay_session",
]

UNANCHORED = "a compaction run whose compaction is not on the main stream's path"


def replay_session(
    session: Session,
    strategy: str | Strategy,
    *,
    options: ReplayOptions | None = None,
    **keywords: Any,
) -> ReplayResult:
    """Replay a session, every request stream of it, under a context window with a
    compaction strategy.

    Args:
        session: The recorded session (not changed).
        strategy: A strategy name or value (`none` replays without compacting;
            `recorded` follows the agent's own recorded compactions and fires no trigger).
            A strategy with a `window` parameter (`hybrid`) gets the replay's window.
            Every stream is replayed with it.
        options: A `ReplayOptions` (default: every option at its default): the window
            (default: the session's, `session_context_window`), the compaction settings
            every compaction runs with, the token counter, summarizer, triggers
            (`TRIGGERS`; idle is off by default, as MusePi's `idleEnabled`), manual
            compactions, prices, system prompt tokens, cache model, leaf, hooks (the
            seed's touchpoints, asked and told at every compaction attempt), calibration
            (`calibrate`) and `ratio` (`RATIOS`).
        **keywords: Any option of `ReplayOptions` by name (`window=64_000`,
            `settings=...`, `ratio="family"`, ...), replacing the one in `options`; any
            other keyword is a strategy parameter when `strategy` is a name.

    Returns:
        A `ReplayResult`: a timeline of one row per request (`COLUMNS`), the bill's
        expected value and 90% interval (`cost`, `cost_interval`), its `coverage`.

    Raises:
        TypeError: `options` is not a `ReplayOptions`.
        ValueError: Unknown triggers, cache model or `ratio`, a contradicting strategy
            window, or `ratio="causal"` with a strategy that does not follow the record.
    """
    opts = ReplayOptions.of_call(options, keywords, "replay_session")
    opts.check()
    chosen = session_context_window(session, window=opts.window)
    result = _replay_streams(session, strategy, opts, chosen.tokens)
    return dataclasses.replace(result, window_source=chosen.source, window_reason=chosen.reason)


def _replay_streams(
    session: Session, strategy: str | Strategy, opts: ReplayOptions, window: int
) -> ReplayResult:
    """Every stream walked (or its kept `recorded` walk taken) and billed, main first,
    under `window`."""
    fit = opts.calibration or DEFAULT_CALIBRATION
    streams, left = streams_of(session, opts.leaf_id)
    kept_walks = _is_fit_walk(strategy, opts, window)
    parts: list[_Part] = []
    excluded: dict[tuple[str, str], str] = {}
    config = None
    for stream in streams:
        config = stream_config(stream, strategy, opts, window)
        if opts.ratio == "causal" and not config.follows_recorded:
            raise ValueError("ratio='causal' needs a strategy that follows the record")
        if stream.kind == "compaction":
            part = _compaction_part(
                stream, config.follows_recorded, parts, fit, opts.cache, config.profile
            )
            if part is None:
                reason = COMPACTION_RUN if not config.follows_recorded else UNANCHORED
                excluded.update(_replies(stream, reason))
            else:
                parts.append(part)
            continue
        walked = (
            recorded_walk(stream, config.profile)
            if kept_walks
            else walk(config, stream.session, stream.leaf_id)
        )
        parts.append(
            _bill_part(
                stream, walked, fit, config.profile, opts.ratio, opts.system_tokens, opts.cache
            )
        )
    return _result(session, parts, left, excluded, fit, config)


def _is_fit_walk(strategy: object, opts: ReplayOptions, window: int) -> bool:
    """Whether a replay's walks are the kept `recorded` walks (`_walks.recorded_walk`): the
    `recorded` strategy at the fit's window with every walk option at its default."""
    defaults = {
        "settings": None,
        "counter": None,
        "summarizer": None,
        "prices": None,
        "cache": "auto",
        "hooks": None,
    }
    return (
        strategy == FIT_STRATEGY
        and window == FIT_WINDOW
        and not opts.system_tokens
        and opts.manual_at == ()
        and not opts.params
        and all(getattr(opts, k) == v for k, v in defaults.items())
    )


class _Part:
    """One stream walked and billed."""

    __slots__ = ("billed", "draws", "states", "stream", "terms", "walk")

    def __init__(
        self,
        stream: Stream,
        walked: Walk,
        terms: Sequence[Terms],
        billed: Sequence[Billed],
        states: Sequence[CacheState | None],
        draws: StreamDraws,
    ) -> None:
        self.stream, self.walk, self.terms = stream, walked, terms
        self.billed, self.states, self.draws = billed, states, draws


def stream_family(walked: Walk, fit: Calibration) -> str:
    """The tokenizer family of most of a stream's requests (a session that tried another
    provider once keeps its own line); `neutral` for a stream without requests."""
    counts: dict[str, int] = {}
    for spec in walked.specs:
        family = fit.model(spec.cache).provider
        counts[family] = counts.get(family, 0) + 1
    return max(counts, key=lambda f: (counts[f], f)) if counts else "neutral"


def stream_terms(
    stream: Stream,
    walked: Walk,
    fit: Calibration,
    profile: str,
    ratio: str,
    system_tokens: int | None = None,
) -> list[Terms]:
    """The line each request of a walked stream is billed under (`ratio`, module notes)."""
    prior = fit.prior(stream.session.header, stream_family(walked, fit))
    if system_tokens is not None:
        prior = prior._replace(system=float(system_tokens), system_sd=0.0)
    n = len(walked.specs)
    if ratio == "family":
        return fixed_terms(n, prior.system, prior.ratio)
    if ratio == "causal":
        found = observations(walked.specs, compacted=True)
        return own_terms(n, found, prior, causal=True, compactions=compaction_starts(walked))
    return own_terms(n, observations(recorded_walk(stream, profile).specs), prior, causal=False)


def compaction_starts(walked: Walk) -> list[int]:
    """The requests a compaction (fired, or recorded and followed) ran before."""
    return [
        k for k, row in enumerate(walked.rows) if row["compaction"] or row["recorded_compaction"]
    ]


def stream_rates(
    walked: Walk,
    billed: Sequence[Billed],
    fit: Calibration,
    *,
    causal: bool,
    learn: bool = True,
    length: int | None = None,
) -> tuple[list[Rate], list[Rate]]:
    """Each request's own miss and unpredicted-hit rates (`_uncertainty.beta_rates`), from
    the recorded outcomes of `walked`'s requests billed as `billed` (`learn=False`: the
    family's prior alone; `length`: the requests the rates are for, when not `walked`'s)."""
    misses: list[bool | None] = []
    hits: list[bool | None] = []
    for spec, b in zip(walked.specs, billed, strict=True):
        usage = spec.recorded
        if not learn or usage is None or b.refused or usage.prompt <= 0:
            misses.append(None)
            hits.append(None)
            continue
        recorded_hit = usage.cache_read * 2 >= usage.prompt
        # A miss is a candidate only where the rules read the stream's own cache (a
        # first request reads only the warm prefix: nothing of its own to miss).
        misses.append(not recorded_hit if b.hit and b.bill.cache_read > b.warm else None)
        hits.append(recorded_hit if not b.hit and b.expired else None)
    family = stream_family(walked, fit)
    k = fit.concentration(walked.session.header, family)
    miss, hit = fit.rates(walked.session.header, family)
    return (
        beta_rates(misses, miss, k, causal=causal, length=length),
        beta_rates(hits, hit, k, causal=causal, length=length),
    )


def _bill_part(
    stream: Stream,
    walked: Walk,
    fit: Calibration,
    profile: str,
    ratio: str,
    system_tokens: int | None,
    cache: str,
) -> _Part:
    terms = stream_terms(stream, walked, fit, profile, ratio, system_tokens)
    warm = fit.warm_prefix_tokens(stream.session.header, stream_family(walked, fit))
    follow = cache == "auto"
    billed, states = bill_stream(walked.specs, terms, fit, warm=warm, follow_record=follow)
    if ratio == "session":
        # The stream's own rates: its recorded walk, billed on its own line.
        source = recorded_walk(stream, profile)
        own = stream_terms(stream, source, fit, profile, "session", system_tokens)
        source_billed, _ = bill_stream(source.specs, own, fit, warm=warm, follow_record=follow)
        rates = stream_rates(source, source_billed, fit, causal=False, length=len(billed))
    else:
        rates = stream_rates(walked, billed, fit, causal=True, learn=ratio == "causal")
    draws = _draws(stream, fit, walked, billed, terms, rates)
    return _Part(stream, walked, terms, billed, states, draws)


def _draws(
    stream: Stream,
    fit: Calibration,
    walked: Walk,
    billed: Sequence[Billed],
    terms: Sequence[Terms],
    rates: tuple[list[Rate], list[Rate]],
) -> StreamDraws:
    model = fit.family(stream_family(walked, fit))
    return StreamDraws(
        stream.label,
        billed,
        terms,
        rates[0],
        rates[1],
        noise=model.noise,
        correlation=model.noise_correlation,
    )


def _anchor_index(main: _Part, anchor: str | None) -> int | None:
    """The main stream's request just before the compaction `anchor`, or None."""
    for event in main.walk.events:
        if anchor is not None and event.entry_id == anchor and event.request > 0:
            return event.request - 1
    return None


def _compaction_part(
    stream: Stream,
    follows: bool,
    parts: Sequence[_Part],
    fit: Calibration,
    cache: str,
    profile: str,
) -> _Part | None:
    """A compaction run billed after the main stream's request before its compaction: that
    request's prompt is its prefix, that request's cache what it finds; None when it is
    not billed (a counterfactual strategy, or no such request)."""
    main = parts[0] if parts and parts[0].stream.kind == "main" else None
    index = _anchor_index(main, stream.anchor) if follows and main is not None else None
    if main is None or index is None or index >= len(main.billed):
        return None
    walked = recorded_walk(stream, profile)
    before = main.billed[index]
    terms = fixed_terms(len(walked.specs), before.prompt, main.terms[index].ratio)
    billed, states = bill_stream(
        walked.specs, terms, fit, warm=0, follow_record=cache == "auto", initial=main.states[index]
    )
    rates = stream_rates(walked, billed, fit, causal=True, learn=False)
    draws = _draws(stream, fit, walked, billed, terms, rates)
    return _Part(stream, walked, terms, billed, states, draws)


def _replies(stream: Stream, reason: str) -> dict[tuple[str, str], str]:
    from ._streams import billed_entries

    return {(stream.owner, str(e.id)): reason for e in billed_entries(stream.session.entries)}


def _rows(part: _Part) -> list[dict[str, Any]]:
    rows = []
    for row, b in zip(part.walk.rows, part.billed, strict=True):
        bill = b.bill
        rows.append(
            {
                **row,
                "cache_model": b.cache_model,
                "prompt_tokens": bill.input_tokens + bill.cache_read + bill.cache_write,
                "input_tokens": bill.input_tokens,
                "cache_read": bill.cache_read,
                "cache_write": bill.cache_write,
                "output_tokens": bill.output_tokens,
                "cost_usd": bill.cost_usd,
                "stream": part.stream.label,
                "stream_kind": part.stream.kind,
                "cache_write_1h": bill.cache_write_1h,
                "output_source": "recorded" if b.output_recorded else "estimated",
            }
        )
    return rows


def _result(
    session: Session,
    parts: Sequence[_Part],
    left: Sequence[Any],
    excluded: Mapping[tuple[str, str], str],
    fit: Calibration,
    config: Any,
) -> ReplayResult:
    import pandas as pd

    rows = [row for part in parts for row in _rows(part)]
    billed_keys = [
        (part.stream.owner, str(spec.entry_id))
        for part in parts
        for spec in part.walk.specs
        if spec.recorded is not None
    ]
    estimated = sum(1 for part in parts for spec in part.walk.specs if spec.recorded is None)
    main = parts[0] if parts else None
    return ReplayResult(
        timeline=pd.DataFrame(rows, columns=list(COLUMNS)),
        events=main.walk.events if main is not None else (),
        session=main.walk.session if main is not None else session,
        window=config.window,
        threshold=config.threshold,
        strategy=config.label,
        profile=config.profile,
        failures=main.walk.failures if main is not None else (),
        calibration=fit,
        streams=tuple(
            StreamResult(
                p.stream.label,
                p.stream.kind,
                len(p.billed),
                p.walk.events,
                p.draws,
                tuple(spec.recorded for spec in p.walk.specs),
            )
            for p in parts
        ),
        coverage=coverage(session, billed_keys, left, excluded=excluded, estimated=estimated),
    )

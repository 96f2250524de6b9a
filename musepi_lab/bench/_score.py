"""Scoring: the metric columns of one benchmark cell, from what a strategy produced.

Pure functions of a session and a compaction result (compact mode) or a replay result
(replay mode); no files, no executors. `score_compaction` is also what the strategy
comparer widget uses, so a widget row and a benchmark row mean the same thing.

What a row holds (`COLUMNS`), for a `compact` cell (budget = keep-recent tokens, one
compaction at the session leaf):

- identity: `session_id`, `source` (the file), `format`, `mode`, `strategy`, `params`
  (canonical JSON), `label` (name and non-default parameters), `budget`, `counter`,
  `fact_source`;
- `compacted` (the strategy did something), `method`, `compactions` (0 or 1);
- `tokens_before` / `tokens_after` (the context the model sees, measured as `compact()`
  measures it: text with the cell's counter, images by one billing rule),
  `token_reduction`, `summary_tokens`;
- `facts`, `facts_kept`, `fact_retention`, `retention_<kind>`: facts of the part the
  engine's cut at this budget would summarize away (planted facts when the session has a
  `facts.json` beside it, else `extract_facts` of the summarized messages), counted only
  when present in the context before; retained when their exact text is still in the
  context after (`metrics.context_text`). None when there was nothing to score. The facts
  are extracted once per session and found with one multi-pattern pass per message
  (`metrics.session_scorer`);
- `retention_lower` / `retention_upper`: the same retention with snapcompact's imaged pages
  counted as unreadable (lower bound, equal to `fact_retention`) and as read perfectly
  (upper bound); equal for strategies that image nothing. In replay mode they describe
  the last compaction, its whole archive taken as sent and read for the upper bound;
- `instructions`, `instruction_survival`: the first user request and the user's standing
  instructions (planted `instruction` facts, else extracted ones) present before;
- `tool_pairing_valid`, `tool_pairing_problems`, `cache_prefix_tokens`, `cache_prefix_kept`;
- `summarizer_input_tokens`, `summarizer_output_tokens`, `summarizer_cost_usd`;
- timings `compact_seconds` (the strategy), `score_seconds` (every metric of the cell:
  rebuilding the contexts, facts, retention, pairing, cache prefix) and `cell_seconds`
  (the whole cell);
- `error`: the exception of a cell that failed (its metrics are then None).

A `replay` cell (budget = context window) replays the session with the strategy
(`musepi_lab.replay`), every request stream of it (main path, sidechains, subagents):
`compactions`, `requests` (of every stream), `streams`, the recorded requests the bill covers
(`requests_recorded`, `requests_covered`, `requests_left_out`: JSON of reason → count;
`requests_estimated`: billed requests whose reply carries no usage, so their output is
estimated; `requests_coverage`: covered over recorded), `peak_context`, `replay_cost_usd` (the bill under the providers' documented
rules, each stream on its own line), `replay_cost_expected` (`ReplayResult.cost`, exact: the
expected unpredicted misses and hits added) with its 90% prediction interval
`replay_cost_low` / `replay_cost_high` (`cost_interval`) and `replay_cost_draws` (the
draws as JSON, seeded alike in every cell, so two strategies' cells of one session pair
draw by draw, `bench.cost_differences`); token
columns describe the last compaction; `fact_retention` is the retention, after the last
compaction, of the facts of the session's first part (every entry before the request at
which the first compaction fired); `retention_first` is their retention after the first
compaction, `decay` lists every step and `decay_slope` its mean change per compaction.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compaction._prepare import prepare_compaction
from ..compaction._result import CompactionResult, derived_entry_id
from ..compaction._settings import CompactionSettings
from ..context._build import UNSET, build_session_context
from ..context._llm import convert_to_llm
from ..datasets._generator import PlantedFact
from ..metrics._archive import archive_text, session_archives
from ..metrics._facts import FACT_KINDS, Fact, context_text, extract_facts
from ..metrics._metrics import (
    DEFAULT_PRICES,
    cache_prefix_tokens,
    decay_curve,
    fact_retention,
    summarizer_cost,
    summary_tokens,
    token_reduction,
    tool_pairing_problems,
)
from ..metrics._scoring import SessionScorer, session_scorer
from ..metrics._session_facts import entry_facts, facts_of_entries
from ..replay._uncertainty import prediction_interval
from ..session._messages import entry_to_message
from ..session._session import Session, timestamp_after
from ..strategies._context_size import measure_messages
from ..tokens._counter import TokenCounter
from ._grid import canonical_json

if TYPE_CHECKING:
    from ..replay._replay import CompactionEvent, ReplayResult

TIMING_COLUMNS: tuple[str, ...] = ("compact_seconds", "score_seconds", "cell_seconds")
"""Columns that vary from run to run; leave them out when comparing frames."""

COLUMNS: tuple[str, ...] = (
    "session_id",
    "source",
    "format",
    "mode",
    "strategy",
    "params",
    "label",
    "budget",
    "counter",
    "fact_source",
    "compacted",
    "method",
    "compactions",
    "requests",
    "streams",
    "requests_recorded",
    "requests_covered",
    "requests_left_out",
    "requests_estimated",
    "requests_coverage",
    "tokens_before",
    "tokens_after",
    "token_reduction",
    "summary_tokens",
    "peak_context",
    "replay_cost_usd",
    "replay_cost_expected",
    "replay_cost_low",
    "replay_cost_high",
    "replay_cost_draws",
    "facts",
    "facts_kept",
    "fact_retention",
    *(f"retention_{kind}" for kind in FACT_KINDS),
    "retention_lower",
    "retention_upper",
    "retention_first",
    "decay",
    "decay_slope",
    "instructions",
    "instruction_survival",
    "tool_pairing_valid",
    "tool_pairing_problems",
    "cache_prefix_tokens",
    "cache_prefix_kept",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "summarizer_cost_usd",
    *TIMING_COLUMNS,
    "error",
)
"""Every column of a benchmark frame, in order."""


# -- small pure helpers -------------------------------------------------------------------
def first_request(session: Session) -> str | None:
    """The first text block of the first user message on the active path."""
    for entry in session.path():
        message = entry.message
        if message is None or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content.strip() or None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = str(block.get("text", "")).strip()
                if text:
                    return text
        return None
    return None


def standing_instructions(
    session: Session, planted: Sequence[PlantedFact] | None = None
) -> list[str]:
    """The first user request plus the user's rules: the planted `instruction` facts when
    given, else the instructions `extract_facts` finds in the user's messages."""
    items: list[str] = []
    first = first_request(session)
    if first:
        items.append(first)
    if planted is not None:
        items.extend(f.fact for f in planted if f.kind == "instruction")
    else:
        users = [
            m for e in session.path() if (m := e.message) is not None and m.get("role") == "user"
        ]
        items.extend(f.text for f in extract_facts(users) if f.kind == "instruction")
    return list(dict.fromkeys(items))


def _retention_columns(facts: Sequence[Fact], after: str | frozenset[str]) -> dict[str, Any]:
    """Retention of `facts` in a context, overall and per kind; `after` is the context's
    text, or the set of facts found in it."""
    kept = sum(1 for f in facts if f.text in after)
    row: dict[str, Any] = {
        "facts": len(facts),
        "facts_kept": kept,
        "fact_retention": kept / len(facts) if facts else None,
    }
    for kind in FACT_KINDS:
        of_kind = [f for f in facts if f.kind == kind]
        kept_of_kind = sum(1 for f in of_kind if f.text in after)
        row[f"retention_{kind}"] = kept_of_kind / len(of_kind) if of_kind else None
    return row


def _survival(instructions: Sequence[str], after: str | frozenset[str]) -> float | None:
    if not instructions:
        return None
    return sum(1 for i in instructions if i in after) / len(instructions)


def cell_cost(
    input_tokens: int,
    output_tokens: int,
    prices: Mapping[str, float] | None,
    *,
    cached_input_tokens: int = 0,
) -> float:
    """Summarizer cost in USD at `DEFAULT_PRICES` overridden by `prices` (cached input
    at the cache-read price)."""
    return summarizer_cost(
        input_tokens,
        output_tokens,
        {**DEFAULT_PRICES, **(prices or {})},
        cached_input_tokens=cached_input_tokens,
    )


# -- compact mode -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Before:
    """The context before any compaction at a leaf: the same for every cell of a session
    at that leaf, so it is built, converted and counted once."""

    messages: Sequence[Any]
    llm: Sequence[Any]
    llm_tokens: int
    model_id: str | None


@dataclass(frozen=True)
class _Contexts:
    """The contexts a compact cell compares: runtime and provider messages before and after,
    the session after (for its snapcompact archives), its leaf, and the model in force."""

    before: _Before
    after: Sequence[Any]
    llm_after: Sequence[Any]
    after_session: Session
    after_leaf: str | None


_BEFORE_KEPT = 8
# (id(session), leaf, profile, counter method) -> (session, before); the session is held
# so its id stays its own (sessions are immutable).
_befores: OrderedDict[tuple[int, str | None, str, str], tuple[Session, _Before]] = OrderedDict()


def _before(session: Session, leaf_id: str | None, profile: str, counter: TokenCounter) -> _Before:
    key = (id(session), leaf_id, profile, counter.method)
    hit = _befores.get(key)
    if hit is not None and hit[0] is session:
        _befores.move_to_end(key)
        return hit[1]
    built = build_session_context(session, UNSET if leaf_id is None else leaf_id, profile=profile)
    llm = convert_to_llm(built.messages, profile=profile)
    model_id = built.model.get("modelId") if isinstance(built.model, Mapping) else None
    before = _Before(
        messages=built.messages,
        llm=llm,
        llm_tokens=counter.count_messages(llm),
        model_id=model_id if isinstance(model_id, str) else None,
    )
    _befores[key] = (session, before)
    while len(_befores) > _BEFORE_KEPT:
        _befores.popitem(last=False)
    return before


def clear_score_caches() -> None:
    """Forget the contexts kept per session (benchmarks call this between runs)."""
    _befores.clear()


def _contexts(
    session: Session,
    result: CompactionResult | None,
    leaf_id: str | None,
    profile: str,
    counter: TokenCounter,
    salt: str,
) -> _Contexts:
    """Runtime and provider messages before and after the result is applied (with a
    deterministic id and time, so equal inputs give equal rows)."""
    leaf = UNSET if leaf_id is None else leaf_id
    before = _before(session, leaf_id, profile, counter)
    if result is None:
        return _Contexts(before, before.messages, before.llm, session, leaf_id)
    after = result.apply(
        session,
        timestamp=timestamp_after(session.leaf),
        entry_id=derived_entry_id(session, salt),
    )
    # An appended compaction is the new leaf; a rewrite keeps the leaf compacted at.
    after_leaf = UNSET if result.append_entry else leaf
    ctx_after = build_session_context(after, after_leaf, profile=profile).messages
    return _Contexts(
        before=before,
        after=ctx_after,
        llm_after=convert_to_llm(ctx_after, profile=profile),
        after_session=after,
        after_leaf=None if after_leaf is UNSET else after_leaf,
    )


def _summarized_facts(
    session: Session,
    settings: CompactionSettings,
    counter: TokenCounter,
    planted: Sequence[PlantedFact] | None,
    leaf_id: str | None,
) -> list[Fact]:
    """Facts of the part the engine's cut at these settings summarizes away: the planted
    ones of those entries, else the session's facts extracted once (`facts_of_entries`)."""
    prep = prepare_compaction(session, settings, counter, leaf_id=leaf_id)
    if prep is None:
        return []
    ids = [*prep.summarize_entry_ids, *prep.turn_prefix_entry_ids]
    if planted is not None:
        wanted = set(ids)
        return [Fact(f.fact, f.kind) for f in planted if f.entry_id in wanted]
    return list(facts_of_entries(session, ids))


def _needles(
    session: Session, planted: Sequence[PlantedFact] | None, instructions: Sequence[str]
) -> list[str]:
    """Every string a session's cells look for: its facts (planted, or all extracted once)
    and its standing instructions, for one `SessionScorer` per session."""
    if planted is not None:
        facts = [f.fact for f in planted]
    else:
        facts = [f.text for fs in entry_facts(session).values() for f in fs]
    return list(dict.fromkeys([*facts, *instructions]))


def _bound_columns(
    scorer: SessionScorer, facts: Sequence[Fact], contexts: _Contexts
) -> dict[str, Any]:
    """`retention_lower` (imaged pages unreadable) and `retention_upper` (read perfectly)."""
    archives = session_archives(contexts.after_session, contexts.after_leaf)
    lower, upper = scorer.bounds([f.text for f in facts], contexts.after, archives)
    return {"retention_lower": lower, "retention_upper": upper}


def score_compaction(
    session: Session,
    result: CompactionResult | None,
    *,
    settings: CompactionSettings,
    counter: TokenCounter,
    planted: Sequence[PlantedFact] | None = None,
    instructions: Sequence[str] = (),
    leaf_id: str | None = None,
    salt: str = "",
) -> dict[str, Any]:
    """What one compaction at a leaf did: the metric columns of a compact-mode cell.

    The context before and after (the result applied, with a deterministic id and time) is
    rebuilt; its size is the one measurement `compact()` makes (`measure_messages`: text
    by `counter`, images by one billing rule). Facts are those of the part the engine's cut
    at `settings` summarizes away — the `planted` ones when given, else the session's facts
    extracted once — counted only when present before; likewise the `instructions`. One
    `SessionScorer` per session finds them all in one multi-pattern pass per message.

    Returns:
        `compacted`, `method`, `tokens_before`, `tokens_after`, `token_reduction`,
        `summary_tokens`, the retention columns (`facts`, `facts_kept`,
        `fact_retention`, `retention_<kind>`, `retention_lower`, `retention_upper`),
        `instructions`, `instruction_survival`, `tool_pairing_valid`,
        `tool_pairing_problems`, `cache_prefix_tokens`, `cache_prefix_kept`,
        `summarizer_input_tokens`, `summarizer_output_tokens`.
    """
    contexts = _contexts(session, result, leaf_id, settings.profile, counter, salt)
    before = contexts.before
    # `compact()` measured both already, with the same function; measure only what it did not.
    tokens_before = (
        result.context_tokens_before
        if result is not None and result.context_tokens_before is not None
        else measure_messages(before.messages, counter, before.model_id)
    )
    tokens_after = (
        result.tokens_after
        if result is not None and result.tokens_after is not None
        else measure_messages(contexts.after, counter, before.model_id)
    )
    scorer = session_scorer(session, _needles(session, planted, instructions))
    found_before = scorer.found(before.messages)
    found_after = scorer.found(contexts.after)
    facts = _summarized_facts(session, settings, counter, planted, leaf_id)
    facts = [f for f in facts if f.text in found_before]
    standing = [i for i in instructions if i in found_before]
    prefix = cache_prefix_tokens(before.llm, contexts.llm_after, counter)
    llm_total = before.llm_tokens
    problems = tool_pairing_problems(contexts.llm_after)
    # `none` returns a result that changes nothing: not a compaction.
    changed = result is not None and contexts.llm_after != before.llm
    return {
        "compacted": changed,
        "method": (result.method or result.strategy) if result is not None else None,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "token_reduction": token_reduction(tokens_before, tokens_after),
        "summary_tokens": summary_tokens(result.summary, counter) if result is not None else 0,
        **_retention_columns(facts, found_after),
        **_bound_columns(scorer, facts, contexts),
        "instructions": len(standing),
        "instruction_survival": _survival(standing, found_after),
        "tool_pairing_valid": not problems,
        "tool_pairing_problems": len(problems),
        "cache_prefix_tokens": prefix,
        "cache_prefix_kept": prefix / llm_total if llm_total > 0 else None,
        "summarizer_input_tokens": result.summarizer_input_tokens if result is not None else 0,
        "summarizer_output_tokens": result.summarizer_output_tokens if result is not None else 0,
    }


# -- replay mode --------------------------------------------------------------------------
def _early_facts(
    session: Session,
    res: ReplayResult,
    planted: Sequence[PlantedFact] | None,
    path_text: str,
) -> list[Fact]:
    """Facts of the session's first part: every entry on the path before the request at
    which the first compaction fired, present in the path's text."""
    if not res.events:
        return []
    fired_at = res.timeline["entry_id"].iloc[res.events[0].request]
    path = session.path()
    ids = [e.id for e in path]
    early = path[: ids.index(fired_at)] if fired_at in ids else []
    if planted is not None:
        early_ids = {e.id for e in early}
        facts = [Fact(f.fact, f.kind) for f in planted if f.entry_id in early_ids]
    else:
        early_msgs = [m for e in early if (m := entry_to_message(e)) is not None]
        facts = list(extract_facts(early_msgs))
    return [f for f in facts if f.text in path_text]


def _cost_uncertainty(res: ReplayResult) -> dict[str, Any]:
    """The replay's expected bill, its 90% interval and its draws (the request bills only:
    the summarizer's calls are priced by the cell's prices in `summarizer_cost_usd`)."""
    summarizer = float(res.timeline["summarizer_cost_usd"].sum()) if len(res.timeline) else 0.0
    draws = res.cost_draws - summarizer
    low, high = prediction_interval(draws)
    return {
        "replay_cost_expected": res.cost - summarizer,
        "replay_cost_low": low,
        "replay_cost_high": high,
        "replay_cost_draws": canonical_json([round(float(d), 9) for d in draws]),
    }


def _coverage_columns(res: ReplayResult) -> dict[str, Any]:
    """How many recorded requests the replay's bill covers, and why the others are out."""
    coverage = res.coverage
    if coverage is None:
        keys = ("recorded", "covered", "left_out", "estimated", "coverage")
        return dict.fromkeys(f"requests_{k}" for k in keys) | {"streams": len(res.streams) or None}
    return {
        "streams": len(res.streams),
        "requests_recorded": coverage.recorded,
        "requests_covered": coverage.covered,
        "requests_left_out": canonical_json(dict(coverage.left_out)),
        "requests_estimated": coverage.estimated,
        "requests_coverage": coverage.covered / coverage.recorded if coverage.recorded else None,
    }


def _last_event_columns(last: CompactionEvent | None, counter: TokenCounter) -> dict[str, Any]:
    """Token and cache columns of a replay row: those of its last compaction."""
    if last is None:
        keys = ("method", "tokens_before", "tokens_after", "token_reduction", "summary_tokens")
        return {k: None for k in (*keys, "cache_prefix_tokens", "cache_prefix_kept")}
    return {
        "method": last.method,
        "tokens_before": last.tokens_before,
        "tokens_after": last.tokens_after,
        "token_reduction": token_reduction(last.tokens_before, last.tokens_after),
        "summary_tokens": summary_tokens(last.result.summary, counter),
        "cache_prefix_tokens": last.cache_prefix_tokens,
        "cache_prefix_kept": last.cache_prefix_tokens / last.tokens_before
        if last.tokens_before > 0
        else None,
    }


def _replay_bounds(
    facts: Sequence[Fact], last: CompactionEvent | None, lower: float | None
) -> dict[str, Any]:
    """`retention_lower` (the last compaction's context as text) and `retention_upper`
    (also its snapcompact archive read in full: every frame taken as sent and read)."""
    archive = archive_text(last.result.preserve_data) if last is not None else None
    if last is None or lower is None or archive is None:
        return {"retention_lower": lower, "retention_upper": lower}
    read = f"{last.context}\n{archive.head}{''.join(archive.pages)}{archive.tail}"
    return {
        "retention_lower": lower,
        "retention_upper": sum(f.text in read for f in facts) / len(facts),
    }


def score_replay(
    session: Session,
    res: ReplayResult,
    *,
    counter: TokenCounter,
    profile: str,
    planted: Sequence[PlantedFact] | None = None,
    instructions: Sequence[str] = (),
    prices: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """What a replay did: the metric columns of a replay-mode cell (see the module notes).

    Args:
        session: The session replayed.
        res: The replay's result.
        counter: The cell's token counter.
        profile: The settings' profile (for the final context).
        planted: Planted facts, or None to extract them from the session's first part.
        instructions: Standing instructions; scored when present on the path.
        prices: Price overrides for the summarizer cost.
    """
    events, timeline = res.events, res.timeline
    final = build_session_context(res.session, profile=profile).messages
    problems = tool_pairing_problems(convert_to_llm(final, profile=profile))
    path_text = context_text([m for e in session.path() if (m := entry_to_message(e)) is not None])
    standing = [i for i in instructions if i in path_text]
    facts = _early_facts(session, res, planted, path_text)
    curve = [fact_retention(facts, ev.context) for ev in events] if facts else []
    last = events[-1] if events else None
    s_in = sum(ev.summarizer_input_tokens for ev in events)
    s_out = sum(ev.summarizer_output_tokens for ev in events)
    retention = _retention_columns(facts, last.context if last is not None else "")
    if last is None:
        retention.update({"facts_kept": None, "fact_retention": None})
    retention.update(_replay_bounds(facts, last, retention["fact_retention"]))
    decay = decay_curve(curve) if curve else None
    return {
        "compacted": bool(events),
        "compactions": len(events),
        "requests": len(timeline),
        **_coverage_columns(res),
        **_last_event_columns(last, counter),
        "peak_context": res.peak_context,
        "replay_cost_usd": float(timeline["cost_usd"].sum()) if len(timeline) else 0.0,
        **_cost_uncertainty(res),
        **retention,
        "retention_first": curve[0] if curve else None,
        "decay": canonical_json(curve) if curve else None,
        "decay_slope": decay["slope"] if decay else None,
        "instructions": len(standing),
        "instruction_survival": _survival(standing, last.context) if last is not None else None,
        "tool_pairing_valid": not problems,
        "tool_pairing_problems": len(problems),
        "summarizer_input_tokens": s_in,
        "summarizer_output_tokens": s_out,
        "summarizer_cost_usd": cell_cost(
            s_in,
            s_out,
            prices,
            cached_input_tokens=sum(ev.summarizer_cached_input_tokens for ev in events),
        ),
    }

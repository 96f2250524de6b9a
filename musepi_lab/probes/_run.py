"""Running probes: compact, ask the reader, score, one tidy row per probe or per cell.

A cell is (session, strategy, budget) as in the benchmark: the session is compacted at the
probe point with the strategy, the engine's keep budget set to `budget`. The probes of a
(session, budget) are made once, from the engine's cut there, and asked of every strategy,
so strategies are compared on the same questions; `none` is the ceiling.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .._prompts import PromptSet, resolve_prompts
from ..compaction._prepare import prepare_compaction
from ..compaction._result import CompactionResult
from ..compaction._settings import CompactionSettings
from ..formats import read_session
from ..llm._summarizer import Summarizer, SummaryResponse
from ..metrics._metrics import DEFAULT_PRICES, summarizer_cost
from ..session._session import Session
from ..strategies._base import Strategy, compact, get
from ..tokens._counter import TokenCounter
from ._ask import JUDGE_DIMENSIONS, exact_score, judge_request, parse_judgement, reader_request
from ._context import compacted_session, reader_messages
from ._make import ProbeLimits, make_probes, probe_point
from ._model import PROBE_KINDS, Probe
from ._options import ProbeOptions

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class ProbeModels:
    """The reader and the judge, with the prices their calls are costed at.

    Attributes:
        reader: Answers the probes.
        judge: Scores the answers that have no exact reference.
        reader_prices: USD per million tokens, `input` and `output` (default: DEFAULT_PRICES).
        judge_prices: Likewise for the judge.
        images: Send images to the reader as data URLs (for models that take them).
    """

    reader: Summarizer
    judge: Summarizer
    reader_prices: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    judge_prices: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    images: bool = False


def _usage(
    prefix: str, response: SummaryResponse | None, prices: Mapping[str, float]
) -> dict[str, Any]:
    if response is None:
        return {
            f"{prefix}_input_tokens": 0,
            f"{prefix}_output_tokens": 0,
            f"{prefix}_cached": False,
            f"{prefix}_latency_s": 0.0,
            f"{prefix}_cost_usd": 0.0,
        }
    return {
        f"{prefix}_input_tokens": response.input_tokens,
        f"{prefix}_output_tokens": response.output_tokens,
        f"{prefix}_cached": response.cached,
        f"{prefix}_latency_s": response.latency_s,
        # A cached answer was paid for once already; a re-run costs nothing.
        f"{prefix}_cost_usd": 0.0
        if response.cached
        else summarizer_cost(response.input_tokens, response.output_tokens, prices),
    }


def answer_probe(
    probe: Probe,
    history: Sequence[Mapping[str, Any]],
    models: ProbeModels,
    prompts: PromptSet,
) -> dict[str, Any]:
    """Ask one probe over one context and score the answer (exact, else by the judge)."""
    reply = models.reader.summarize(reader_request(probe, history, prompts))
    answer = reply.text
    judged: SummaryResponse | None = None
    dims: dict[str, Any] = {f"judge_{d}": None for d in JUDGE_DIMENSIONS}
    judge_error = None
    if probe.exact:
        score = exact_score(probe.exact, answer)
    else:
        judged = models.judge.summarize(judge_request(probe, answer, prompts))
        judgement = parse_judgement(judged.text)
        score, judge_error = judgement.score, judgement.error
        dims.update({f"judge_{d}": v for d, v in judgement.scores.items()})
    row = {
        "probe_id": probe.probe_id,
        "first_kept_entry_id": probe.first_kept_entry_id,
        "kind": probe.kind,
        "subkind": probe.subkind,
        "scoring": probe.scoring,
        "source": probe.source,
        "question": probe.question,
        "reference": probe.reference,
        "exact": list(probe.exact),
        "answer": answer,
        "score": score,
        **dims,
        "judge_error": judge_error,
        **_usage("reader", reply, models.reader_prices),
        **_usage("judge", judged, models.judge_prices),
    }
    row["cost_usd"] = row["reader_cost_usd"] + row["judge_cost_usd"]
    return row


def _as_session(item: Session | str | os.PathLike[str]) -> Session:
    return item if isinstance(item, Session) else read_session(item)


@dataclass(frozen=True)
class _Grid:
    settings: CompactionSettings
    counter: TokenCounter
    prompts: PromptSet
    models: ProbeModels
    summarizer: Summarizer | None
    facts: str
    limits: ProbeLimits


def answer_compacted(
    session: Session,
    result: CompactionResult | None,
    probes: Sequence[Probe],
    *,
    leaf_id: str | None,
    models: ProbeModels,
    prompts: PromptSet | None = None,
    profile: str = "musepi",
) -> list[dict[str, Any]]:
    """Every probe asked over the context a compaction leaves, answered and scored.

    Args:
        session: The session before the compaction.
        result: The compaction made at `leaf_id` (None: nothing was compacted).
        probes: The probes of that point (`make_probes` / `cell_probes`).
        leaf_id: The probe point the compaction was made at.
        models: Reader and judge.
        prompts: Prompt set (default: the project's).
        profile: Context profile.

    Returns:
        One `answer_probe` row per probe, with `compacted`, `tokens_before`,
        `tokens_after`; a single row without probe columns when there is no probe.
    """
    prompts = resolve_prompts(prompts)
    after, after_leaf = compacted_session(session, result)
    if result is None:
        after_leaf = leaf_id
    history = reader_messages(
        after, after_leaf, profile=profile, prompts=prompts, images=models.images
    )
    cell = {
        "compacted": result is not None and (result.append_entry or bool(result.replacements)),
        "tokens_before": result.context_tokens_before if result is not None else None,
        "tokens_after": result.tokens_after if result is not None else None,
        "error": None,
    }
    if not probes:
        return [cell]  # the cell still shows in the table, with no probe to score
    return [{**cell, **answer_probe(probe, history, models, prompts)} for probe in probes]


def cell_probes(
    session: Session,
    *,
    settings: CompactionSettings,
    counter: TokenCounter,
    point: str | None = "last-request",
    facts: str = "auto",
    limits: ProbeLimits | None = None,
    prompts: PromptSet | None = None,
) -> tuple[str | None, tuple[Probe, ...]]:
    """The probe point of a session and its probes for the cut `settings` make there
    (`settings.keep_recent_tokens` is the budget); no probes when the engine cuts nothing."""
    leaf = _point(session, point)
    prep = prepare_compaction(session, settings, counter, leaf_id=leaf)
    if prep is None:
        return leaf, ()
    return leaf, make_probes(session, prep, facts=facts, limits=limits, prompts=prompts)


def score_probes(
    session: Session,
    result: CompactionResult | None,
    probes: Sequence[Probe],
    *,
    leaf_id: str | None,
    models: ProbeModels,
    prompts: PromptSet | None = None,
    profile: str = "musepi",
) -> dict[str, Any]:
    """The probe columns of one benchmark cell (see `probe_cells`): `probes`, `score`,
    `score_<kind>`, `probes_<kind>`, `judge_errors` and the summed tokens and costs."""
    rows = answer_compacted(
        session, result, probes, leaf_id=leaf_id, models=models, prompts=prompts, profile=profile
    )
    return _aggregate(rows)


def _cell_rows(
    session: Session,
    leaf: str | None,
    strategy: Strategy,
    budget: int,
    probes: Sequence[Probe],
    grid: _Grid,
) -> list[dict[str, Any]]:
    settings = grid.settings.copy_with(keep_recent_tokens=budget)
    cell = {
        "session_id": session.id,
        "point": leaf,
        "strategy": strategy.name,
        "label": strategy.label,
        "budget": budget,
    }
    try:
        result = compact(
            session,
            strategy,
            settings=settings,
            counter=grid.counter,
            summarizer=grid.summarizer,
            prompts=grid.prompts,
            leaf_id=leaf,
        )
    except Exception as exc:  # a failed cell is a row, not a lost grid
        return [{**cell, "error": f"{type(exc).__name__}: {exc}"}]
    rows = answer_compacted(
        session,
        result,
        probes,
        leaf_id=leaf,
        models=grid.models,
        prompts=grid.prompts,
        profile=settings.profile,
    )
    return [{**cell, **row} for row in rows]


def run_probe_answers(
    sessions: Iterable[Session | str | os.PathLike[str]],
    strategies: Sequence[str | Strategy],
    budgets: Sequence[int],
    *,
    reader: Summarizer,
    judge: Summarizer,
    options: ProbeOptions | None = None,
    **keywords: Any,
) -> pd.DataFrame:
    """Every probe of every cell, answered and scored: one row per (cell, probe).

    Args:
        sessions: Sessions or session files (a `.facts.json` beside a file gives planted
            facts).
        strategies: Strategy names or values.
        budgets: Keep-recent budgets (tokens) of the engine's cut.
        reader: Answers probes (any `Summarizer`, e.g. `OpenAICompatibleSummarizer`).
        judge: Scores answers that have no exact reference.
        options: A `ProbeOptions` (default: every option at its default).
        **keywords: Any option of `ProbeOptions` by name (`summarizer=`, `settings=`,
            `counter=`, `prompts=`, `point=`, `facts=`, `limits=`, `reader_prices=`,
            `judge_prices=`, `images=`), replacing the one in `options`.

    Returns:
        Columns: `session_id`, `point`, `strategy`, `label`, `budget`, `compacted`,
        `tokens_before`, `tokens_after`, `error`, then per probe `probe_id`,
        `first_kept_entry_id` (the cut it was made for), `kind`, `subkind`, `scoring`,
        `source`, `question`, `reference`, `exact`, `answer`, `score` (0–1),
        `judge_<dimension>`, `judge_error`, and per call `reader_*` / `judge_*` tokens,
        `cached`, `latency_s`, `cost_usd`, with `cost_usd` their sum.

    Raises:
        TypeError: A keyword that is not an option.
    """
    import pandas as pd

    opts = ProbeOptions.given(options, keywords, "run_probe_answers")
    grid = _grid(opts, reader, judge)
    strats = [get(s) for s in strategies]
    rows: list[dict[str, Any]] = []
    for item in sessions:
        session = _as_session(item)
        leaf = _point(session, opts.point)
        for budget in budgets:
            probes = _probes_at(session, leaf, budget, grid)
            for strategy in strats:
                rows.extend(_cell_rows(session, leaf, strategy, budget, probes, grid))
    return pd.DataFrame(rows)


def _grid(opts: ProbeOptions, reader: Summarizer, judge: Summarizer) -> _Grid:
    """What every cell of a probe run shares: settings, counter, prompts, models, facts."""
    settings = opts.settings or CompactionSettings.musepi()
    models = ProbeModels(
        reader,
        judge,
        {**DEFAULT_PRICES, **(opts.reader_prices or {})},
        {**DEFAULT_PRICES, **(opts.judge_prices or {})},
        opts.images,
    )
    return _Grid(
        settings=settings,
        counter=opts.counter or TokenCounter.for_profile(settings.profile),
        prompts=resolve_prompts(opts.prompts),
        models=models,
        summarizer=opts.summarizer,
        facts=opts.facts,
        limits=opts.limits or ProbeLimits(),
    )


def _point(session: Session, point: str | None) -> str | None:
    if point == "last-request":
        return probe_point(session)
    if point in (None, "leaf"):
        return session.leaf_id
    if point not in session:
        raise KeyError(f"probe point {point!r} is not an entry of session {session.id!r}")
    return point


def _probes_at(session: Session, leaf: str | None, budget: int, grid: _Grid) -> tuple[Probe, ...]:
    settings = grid.settings.copy_with(keep_recent_tokens=budget)
    return cell_probes(
        session,
        settings=settings,
        counter=grid.counter,
        point=leaf,
        facts=grid.facts,
        limits=grid.limits,
        prompts=grid.prompts,
    )[1]


_CELL_KEYS = ("session_id", "point", "strategy", "label", "budget")
_SUMS = (
    "reader_input_tokens",
    "reader_output_tokens",
    "judge_input_tokens",
    "judge_output_tokens",
    "reader_cost_usd",
    "judge_cost_usd",
    "cost_usd",
)


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def _aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The score and cost columns of one cell's probe rows."""
    scored = [r for r in rows if r.get("score") is not None and not math.isnan(r["score"])]
    record: dict[str, Any] = {
        "probes": len(scored),
        "score": _mean(r["score"] for r in scored),
    }
    for kind in PROBE_KINDS:
        of_kind = [r["score"] for r in scored if r["kind"] == kind]
        record[f"score_{kind}"] = _mean(of_kind)
        record[f"probes_{kind}"] = len(of_kind)
    record["judge_errors"] = sum(1 for r in rows if r.get("judge_error"))
    for column in _SUMS:
        record[column] = float(sum(r.get(column) or 0 for r in rows))
    return record


def probe_cells(answers: pd.DataFrame) -> pd.DataFrame:
    """Per-cell probe scores by kind, from `run_probe_answers`' rows.

    Columns: the cell keys, `compacted`, `tokens_before`, `tokens_after`, `error`,
    `probes`, `score` (mean over the cell's scored probes), `score_<kind>` for each of
    `PROBE_KINDS` (NaN where the cell had none of that kind), `probes_<kind>`,
    `judge_errors`, and the summed tokens and `cost_usd`.
    """
    import pandas as pd

    records: list[dict[str, Any]] = []
    for keys, group in answers.groupby(list(_CELL_KEYS), sort=False, dropna=False):
        rows = cast(list[dict[str, Any]], group.to_dict("records"))
        record: dict[str, Any] = dict(zip(_CELL_KEYS, keys, strict=True))
        for column in ("compacted", "tokens_before", "tokens_after", "error"):
            record[column] = rows[0].get(column)
        record.update(_aggregate([r for r in rows if r.get("kind") in PROBE_KINDS]))
        records.append(record)
    return pd.DataFrame(records)


def run_probes(
    sessions: Iterable[Session | str | os.PathLike[str]],
    strategies: Sequence[str | Strategy],
    budgets: Sequence[int],
    *,
    reader: Summarizer,
    judge: Summarizer,
    options: ProbeOptions | None = None,
    **keywords: Any,
) -> pd.DataFrame:
    """Per-cell probe scores by kind: `probe_cells(run_probe_answers(...))`.

    Takes the same arguments as `run_probe_answers`; call that one and `probe_cells`
    yourself to keep the per-probe rows (answers, judge scores, costs).
    """
    answers = run_probe_answers(
        sessions, strategies, budgets, reader=reader, judge=judge, options=options, **keywords
    )
    return probe_cells(answers)


def probe_score_table(
    cells: pd.DataFrame, *, by: Sequence[str] = ("label", "budget")
) -> pd.DataFrame:
    """Mean score per kind (columns) for each strategy and budget (rows), over sessions;
    a mean only over the cells where that kind was asked."""
    columns = ["score", *(f"score_{k}" for k in PROBE_KINDS)]
    table = cells.groupby(list(by), sort=True)[columns].mean()
    table.columns = ["all", *PROBE_KINDS]
    return table

"""Strategies × budgets over one session, in process: the comparison as a frozen value.

`compact_scores` is the one construction of a compact-mode row's metrics (compact at the
keep-recent budget, score it as `score_compaction` does, price the summarizer calls):
`run_benchmark`'s compact cells and `compare_strategies` both call it, so a benchmark cell
and a comparison cell of the same session agree column for column. `compare_strategies`
runs every (strategy, budget) on a `Session` (which need not come from a file) and returns
a `Comparison`: its rows, the `CompactionResult` of each cell, the errors and the prices.
The `StrategyComparer` widget and `musepi-lab compare` only display one.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..compaction._result import CompactionResult
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..metrics._metrics import DEFAULT_PRICES
from ..session._session import Session
from ..strategies._base import Strategy, available, compact, get, strategy_type
from ..tokens._counter import TokenCounter
from ._score import cell_cost, score_compaction, standing_instructions

if TYPE_CHECKING:
    import pandas as pd

    from ..datasets._generator import PlantedFact

COMPARISON_COLUMNS: tuple[str, ...] = (
    "session_id",
    "strategy",
    "budget",
    "compacted",
    "method",
    "tokens_before",
    "tokens_after",
    "token_reduction",
    "summary_tokens",
    "facts",
    "facts_kept",
    "fact_retention",
    "retention_lower",
    "retention_upper",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "summarizer_cost_usd",
    "compact_seconds",
    "error",
)
"""Columns of a comparison's frame (a subset of the benchmark's, same meanings)."""
DEFAULT_BUDGETS: tuple[int, ...] = (4000, 8000, 16000)
"""Keep-recent budgets of a comparison when none are given (tokens)."""
FACT_CHOICES = ("auto", "extracted")
"""`facts=` by name: planted beside the session file when there, else extracted; or extracted."""

Key = tuple[str, int]
"""A cell: (strategy label, keep-recent budget)."""


def usable_strategies(*, with_summarizer: bool) -> tuple[str, ...]:
    """Registered strategies that can run: those calling a model only with a summarizer."""
    return tuple(
        name for name in available() if with_summarizer or not strategy_type(name).needs_summarizer
    )


def compact_scores(
    session: Session,
    strategy: str | Strategy,
    budget: int,
    *,
    settings: CompactionSettings,
    counter: TokenCounter,
    summarizer: Summarizer | None = None,
    planted: Sequence[PlantedFact] | None = None,
    instructions: Sequence[str] = (),
    leaf_id: str | None = None,
    prices: Mapping[str, float] | None = None,
) -> tuple[dict[str, Any], CompactionResult | None]:
    """One compact-mode cell: compact at keep-recent `budget`, score it, price it.

    Args:
        session: The session (not changed).
        strategy: A registry name or a strategy value.
        budget: Keep-recent tokens (replaces `settings.keep_recent_tokens`).
        settings: Compaction settings.
        counter: Token counter for every count of the cell.
        summarizer: The LLM seam for strategies that call a model.
        planted: Planted facts scored (None: the facts extracted from the session).
        instructions: The standing instructions whose survival is scored.
        leaf_id: The leaf compacted (default: the session leaf).
        prices: USD per million tokens over `DEFAULT_PRICES`.

    Returns:
        The metric columns of `score_compaction` with `compactions`,
        `summarizer_cost_usd`, `compact_seconds` and `score_seconds`; and the result
        (None when the strategy had nothing to do). Raises what the strategy raises.
    """
    strat = get(strategy)
    cell_settings = settings.copy_with(keep_recent_tokens=budget)
    started = time.perf_counter()
    result = compact(
        session,
        strat,
        settings=cell_settings,
        counter=counter,
        summarizer=summarizer,
        leaf_id=leaf_id,
    )
    compact_seconds = time.perf_counter() - started
    scoring = time.perf_counter()
    scores = score_compaction(
        session,
        result,
        settings=cell_settings,
        counter=counter,
        planted=planted,
        instructions=instructions,
        leaf_id=leaf_id,
        salt=f"{strat.label}:{budget}",
    )
    if scores["method"] is None and result is not None:
        scores["method"] = strat.name
    cached = result.summarizer_cached_input_tokens if result else 0
    s_in, s_out = scores["summarizer_input_tokens"], scores["summarizer_output_tokens"]
    row = {
        **scores,
        "compactions": int(scores["compacted"]),
        "summarizer_cost_usd": cell_cost(s_in, s_out, prices, cached_input_tokens=cached),
        "compact_seconds": compact_seconds,
        "score_seconds": time.perf_counter() - scoring,
    }
    return row, result


def planted_beside(session: Session) -> tuple[PlantedFact, ...] | None:
    """The planted facts of the `.facts.json` beside the session's file, or None."""
    source = session.source_path
    if not source:
        return None
    path = Path(source)
    beside = path.with_name(path.name.removesuffix(".jsonl") + ".facts.json")
    if not (path.name.endswith(".jsonl") and beside.is_file()):
        return None
    from ..datasets._generator import read_facts

    return tuple(read_facts(path))


def resolve_facts(session: Session, facts: str | Sequence[Any]) -> tuple[Any, ...] | None:
    """`facts=` as the planted facts scored: a sequence as given, `"auto"` the file's
    planted facts when there, `"extracted"` (or `"auto"` without a file) None."""
    if isinstance(facts, str):
        if facts not in FACT_CHOICES:
            raise ValueError(f"facts must be 'auto', 'extracted' or a sequence, not {facts!r}")
        return planted_beside(session) if facts == "auto" else None
    return tuple(facts)


def failed_cell(session: Session, strategy: str, budget: int, exc: BaseException) -> dict[str, Any]:
    """The row of a comparison cell whose strategy raised `exc`."""
    row: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS)
    row.update(
        session_id=session.id,
        strategy=strategy,
        budget=budget,
        compacted=False,
        error=f"{type(exc).__name__}: {exc}",
    )
    return row


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Strategies × keep-recent budgets over one session: rows, results, errors, prices.

    Attributes:
        session: The session compared (not changed).
        strategies: The strategies, in the order asked.
        budgets: The keep-recent budgets, ascending.
        rows: One row per cell in (strategy, budget) order, every column of
            `COMPARISON_COLUMNS` (and the benchmark's other metric columns).
        results: `{(strategy, budget): CompactionResult | None}`; None when the strategy
            had nothing to do or failed.
        errors: `{(strategy, budget): message}` of the cells that failed.
        prices: USD per million tokens the summarizer cost was priced at.
    """

    session: Session
    strategies: tuple[str, ...]
    budgets: tuple[int, ...]
    rows: tuple[Mapping[str, Any], ...]
    results: Mapping[Key, CompactionResult | None]
    errors: Mapping[Key, str]
    prices: Mapping[str, float]

    def copy_with(self, **changes: Any) -> Comparison:
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **changes)

    def frame(self, columns: Sequence[str] = COMPARISON_COLUMNS) -> pd.DataFrame:
        """The rows as a DataFrame with `columns` (default: `COMPARISON_COLUMNS`)."""
        import pandas as pd

        return pd.DataFrame([dict(r) for r in self.rows], columns=list(columns))

    def row(self, strategy: str, budget: int) -> Mapping[str, Any]:
        """The row of one cell (KeyError when the comparison has no such cell)."""
        for r in self.rows:
            if r["strategy"] == strategy and r["budget"] == budget:
                return r
        raise KeyError((strategy, budget))

    def at_budget(self, budget: int) -> tuple[str, ...]:
        """The strategies with a cell at `budget`, in order."""
        return tuple(s for s, b in self.results if b == budget)


def _compare_cell(
    session: Session,
    key: str,
    strategy: str | Strategy,
    budget: int,
    cell: Mapping[str, Any],
) -> tuple[dict[str, Any], CompactionResult | None]:
    """One cell of a comparison: its row and result, or the row of its error."""
    try:
        scores, result = compact_scores(session, strategy, budget, **cell)
    except Exception as exc:  # one failing strategy must not hide the others
        return failed_cell(session, key, budget, exc), None
    row = {**scores, "session_id": session.id, "strategy": key, "budget": budget, "error": None}
    return row, result


def compare_strategies(
    session: Session,
    strategies: Iterable[str | Strategy],
    budgets: Iterable[int] = DEFAULT_BUDGETS,
    *,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    leaf_id: str | None = None,
    facts: str | Sequence[Any] = "auto",
    prices: Mapping[str, float] | None = None,
    on_cell: Callable[[Mapping[str, Any]], None] | None = None,
) -> Comparison:
    """Run every (strategy, keep-recent budget) on `session`, scored as the benchmark does.

    A strategy that raises gives a row whose `error` says so; the other cells go on.

    Args:
        session: The session (not changed).
        strategies: Registry names or strategy values (a value's cells are keyed by its
            `label`, e.g. `observation-masking(keep_turns=3)`).
        budgets: Keep-recent budgets (tokens); duplicates dropped, sorted.
        settings: Compaction settings (default: MusePi's); the budget replaces
            `keep_recent_tokens`.
        counter: Token counter (default: the profile's estimator).
        summarizer: The LLM seam for strategies that call a model.
        leaf_id: The leaf compacted (default: the session leaf).
        facts: `"auto"`, `"extracted"` or a sequence of planted facts (`resolve_facts`).
        prices: USD per million tokens over `DEFAULT_PRICES`.
        on_cell: Called with each row as it is made (a progress bar).

    Returns:
        The `Comparison`.
    """
    settings = settings or CompactionSettings.musepi()
    counter = counter or TokenCounter.for_profile(settings.profile)
    chosen = {(s if isinstance(s, str) else s.label): s for s in strategies}
    names = tuple(chosen)
    budget_list = tuple(sorted({int(b) for b in budgets}))
    planted = resolve_facts(session, facts)
    instructions = standing_instructions(session, planted) if names and budget_list else []
    priced = {**DEFAULT_PRICES, **(prices or {})}
    cell = {
        "settings": settings,
        "counter": counter,
        "summarizer": summarizer,
        "planted": planted,
        "instructions": instructions,
        "leaf_id": leaf_id,
        "prices": priced,
    }
    rows: list[dict[str, Any]] = []
    results: dict[Key, CompactionResult | None] = {}
    for budget in budget_list:
        for name in names:
            row, results[(name, budget)] = _compare_cell(session, name, chosen[name], budget, cell)
            rows.append(row)
            if on_cell is not None:
                on_cell(row)
    errors = {(r["strategy"], r["budget"]): r["error"] for r in rows if r["error"] is not None}
    # Rows in (strategy, budget) order, as the benchmark lays its grid out.
    rows.sort(key=lambda r: (names.index(r["strategy"]), r["budget"]))
    ordered = {(r["strategy"], r["budget"]): results[(r["strategy"], r["budget"])] for r in rows}
    return Comparison(
        session=session,
        strategies=names,
        budgets=budget_list,
        rows=tuple(MappingProxyType(r) for r in rows),
        results=MappingProxyType(ordered),
        errors=MappingProxyType(errors),
        prices=MappingProxyType(priced),
    )

"""`StrategyComparer`: run strategies at several budgets on one session, side by side.

The rows it makes have the column names and meanings of `run_benchmark`'s compact mode
(budget = keep-recent tokens, one compaction at the leaf; fact retention over the part the
engine's cut summarizes away), so `plot_strategy_comparison` draws both the same way. The work is
`musepi_lab.bench.compare_strategies` (in process, on a `Session` that need not come from a
file); the widget holds the `Comparison` it returns and only displays it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..bench._compare import (
    COMPARISON_COLUMNS,
    DEFAULT_BUDGETS,
    Comparison,
    compare_strategies,
    resolve_facts,
)
from ..bench._compare import (
    usable_strategies as usable_strategies,  # where the tests and notebooks import it
)
from ..compaction._result import CompactionResult
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..metrics._metrics import DEFAULT_PRICES
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._figures import escape_clip, show_figure, show_text

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_STRATEGIES: tuple[str, ...] = ("truncate", "observation-masking", "extractive", "none")
"""Strategies selected at first, of those available."""
ROW_COLUMNS: tuple[str, ...] = COMPARISON_COLUMNS
"""Columns of the comparer's frame (`bench.COMPARISON_COLUMNS`)."""
COST = "summarizer_cost_usd"
"""The cost the comparison shows: what the strategies' summarizer calls cost."""
TABLE_COLUMNS: tuple[str, ...] = (
    "strategy",
    "budget",
    "method",
    "tokens_before",
    "tokens_after",
    "token_reduction",
    "retention_lower",
    "retention_upper",
    "summary_tokens",
    "summarizer_cost_usd",
    "compact_seconds",
    "error",
)


class StrategyComparer(widgets.VBox):
    """Pick strategies and keep-recent budgets, run them, compare them side by side.

    Controls (child widgets, settable from Python): `strategy_picker` (SelectMultiple of
    the strategies that can run: those calling a model only when a summarizer is given),
    `budget_input` (IntsInput of keep-recent budgets), `run_button`, and
    `summary_budget_picker` (which budget's summaries are shown side by side).

    State: `session`, `results` (`{(strategy, budget): CompactionResult | None}`, None when
    the strategy had nothing to do or failed), `frame` (one row per cell, the columns of
    `ROW_COLUMNS`), `errors` (`{(strategy, budget): message}`), `progress` (IntProgress).

    Args:
        session: The session (not changed).
        strategies: Strategies selected at first (default: `DEFAULT_STRATEGIES` that are
            available, else the first few).
        budgets: Keep-recent budgets at first.
        summarizer: The LLM seam; strategies that call a model are offered only with one.
        settings: Compaction settings (default: MusePi's); the budget replaces
            `keep_recent_tokens`.
        counter: Token counter (default: the profile's estimator).
        leaf_id: The leaf compacted (default: the session leaf).
        facts: `"auto"` (planted facts when a `.facts.json` is beside the session file,
            else extracted), `"extracted"`, or your own sequence of planted facts
            (objects with `fact`, `kind`, `entry_id`).
        prices: USD per million tokens for the summarizer cost.
    """

    def __init__(
        self,
        session: Session,
        *,
        strategies: Iterable[str] | None = None,
        budgets: Iterable[int] = DEFAULT_BUDGETS,
        summarizer: Summarizer | None = None,
        settings: CompactionSettings | None = None,
        counter: TokenCounter | None = None,
        leaf_id: str | None = None,
        facts: str | Sequence[Any] = "auto",
        prices: Mapping[str, float] | None = None,
    ) -> None:
        self.session = session
        self.summarizer = summarizer
        self.settings = settings or CompactionSettings.musepi()
        self.counter = counter or TokenCounter.for_profile(self.settings.profile)
        self.leaf_id = leaf_id
        self.prices = {**DEFAULT_PRICES, **(prices or {})}
        self.planted = resolve_facts(session, facts)
        self.comparison: Comparison | None = None
        self.results: Mapping[tuple[str, int], CompactionResult | None] = {}
        self.errors: Mapping[tuple[str, int], str] = {}
        self.frame: pd.DataFrame | None = None

        options = usable_strategies(with_summarizer=summarizer is not None)
        chosen = list(strategies) if strategies is not None else None
        if chosen is not None:
            unknown = [s for s in chosen if s not in options]
            if unknown:
                raise ValueError(
                    f"strategies {unknown} cannot run here; choose from {list(options)}"
                    + ("" if summarizer else " (pass summarizer= for the LLM strategies)")
                )
        else:
            chosen = [s for s in DEFAULT_STRATEGIES if s in options] or list(options[:3])
        self.strategy_picker = widgets.SelectMultiple(
            description="strategies",
            options=list(options),
            value=chosen,
            rows=min(10, max(3, len(options))),
        )
        self.budget_input = widgets.IntsInput(
            value=sorted(set(budgets)), min=1, description="budgets", format=","
        )
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.progress = widgets.IntProgress(min=0, max=1, value=0, description="progress")
        self.status = widgets.HTML()
        self.table_view = widgets.HTML()
        self.plot_output = widgets.Output()
        self.summary_budget_picker = widgets.Dropdown(description="summaries at")
        self.summary_view = widgets.HBox(layout={"width": "100%", "overflow": "auto"})

        self.run_button.on_click(lambda _button: self.run())
        self.summary_budget_picker.observe(self._on_summary_budget, names="value")
        super().__init__(
            children=[
                widgets.HBox(
                    [
                        self.strategy_picker,
                        widgets.VBox([self.budget_input, self.run_button, self.progress]),
                    ]
                ),
                self.status,
                self.table_view,
                self.plot_output,
                self.summary_budget_picker,
                self.summary_view,
            ]
        )

    # -- running ----------------------------------------------------------------------
    def run(
        self, strategies: Iterable[str] | None = None, budgets: Iterable[int] | None = None
    ) -> pd.DataFrame:
        """Run every chosen (strategy, budget) and show the table, plot and summaries.

        Args:
            strategies: Override the picker's selection (the picker is updated).
            budgets: Override the budgets (the input is updated).

        Returns:
            The frame, also kept as `frame`.
        """
        import pandas as pd

        if strategies is not None:
            self.strategy_picker.value = list(strategies)
        if budgets is not None:
            self.budget_input.value = sorted(set(budgets))
        names = list(self.strategy_picker.value)
        budget_list = sorted({int(b) for b in self.budget_input.value})
        self.results, self.errors = {}, {}
        if not names or not budget_list:
            self.status.value = "<b>Choose at least one strategy and one budget.</b>"
            self.frame = pd.DataFrame(columns=list(ROW_COLUMNS))
            return self.frame
        self.progress.max = len(names) * len(budget_list)
        self.progress.value = 0
        self.status.value = f"running {self.progress.max} cells…"
        self.comparison = compare_strategies(
            self.session,
            names,
            budget_list,
            settings=self.settings,
            counter=self.counter,
            summarizer=self.summarizer,
            leaf_id=self.leaf_id,
            facts=self.planted if self.planted is not None else "extracted",
            prices=self.prices,
            on_cell=self._advance,
        )
        self.results, self.errors = self.comparison.results, self.comparison.errors
        self.frame = self.comparison.frame(ROW_COLUMNS)
        failed = len(self.errors)
        self.status.value = f"{len(self.frame)} cells done" + (
            f", <b style='color:#a33'>{failed} failed</b> (see the error column)" if failed else ""
        )
        self._show(budget_list)
        return self.frame

    def _advance(self, _row: Mapping[str, Any]) -> None:
        self.progress.value += 1

    # -- showing ----------------------------------------------------------------------
    def _show(self, budgets: Sequence[int]) -> None:
        frame = self.frame
        assert frame is not None
        table = frame[list(TABLE_COLUMNS)]
        # Wider than a notebook with every column: it scrolls rather than overflows.
        self.table_view.value = (
            "<div style='max-width:100%;overflow-x:auto;max-height:420px;overflow-y:auto'>"
            + table.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.3f}", border=0)
            + "</div>"
        )
        self._plot(frame)
        self.summary_budget_picker.options = list(budgets)
        self.summary_budget_picker.value = budgets[-1]
        self._show_summaries(budgets[-1])

    figure_axes = 0
    """Panels of the last comparison figure drawn (1: no cost to show, 2: with cost)."""

    def _plot(self, frame: pd.DataFrame) -> None:
        from matplotlib.figure import Figure

        from ..plot._comparison import has_cost, plot_comparison

        ok = frame[frame["error"].isna()]
        if ok.empty:
            show_text(self.plot_output, "no results to plot")
            return
        # The cost panel only when a summarizer cost something: model-free runs cost 0.
        width = 11 if has_cost(ok, COST) else 8
        fig = Figure(figsize=(width, 4), layout="constrained")
        plot_comparison(ok, cost=COST, fig=fig)
        self.figure_axes = len(fig.axes)
        show_figure(self.plot_output, fig, description="strategy comparison")

    def _on_summary_budget(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self._show_summaries(int(change["new"]))

    def _show_summaries(self, budget: int) -> None:
        names = [n for n, b in self.results if b == budget]
        width = f"{max(18, 100 // max(1, len(names)))}%"
        columns = []
        for name in names:
            result = self.results[(name, budget)]
            if (name, budget) in self.errors:
                body = f"<i style='color:#a33'>{html.escape(self.errors[(name, budget)])}</i>"
            elif result is None:
                body = "<i>nothing to do at this budget</i>"
            else:
                text = result.summary or "(empty summary)"
                body = (
                    "<pre style='white-space:pre-wrap;max-height:360px;overflow:auto;"
                    f"font-size:11px;background:#f7f7f7;padding:4px'>{escape_clip(text, 20000)}"
                    "</pre>"
                )
            after = result.tokens_after if result is not None else None
            head = f"<b>{html.escape(name)}</b> @ {budget:,}" + (
                f" · {after:,} tokens after" if isinstance(after, int) else ""
            )
            columns.append(widgets.HTML(f"<div>{head}</div>{body}", layout={"width": width}))
        self.summary_view.children = columns

"""Probe scores beside the benchmark's metrics (`run_benchmark(..., evaluate="probes")`).

The probes of each (session, budget) are made once and asked of every strategy by the
reader, the judge scoring answers without an exact reference (`musepi_lab.probes`); the
per-cell scores by kind are joined to the benchmark rows on (session, strategy label,
budget). Compact mode only: a replay has no single compaction to question.

Where the probes' compaction is made (`run_benchmark`'s `probe_point`, `run_probe_answers`'
`point`): `last-request` (the default: before the last user request the agent answers with
a tool call, so continuation probes exist), `leaf` (the cell's own compaction point, no
continuation probes) or an entry id. The `probe_point` column names the entry used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..llm._types import Summarizer
from ..probes._model import PROBE_KINDS
from ..probes._run import run_probes
from ..tokens._counter import TokenCounter
from ._cell import _load_session
from ._grid import Cell

if TYPE_CHECKING:
    import pandas as pd

EVALUATIONS: tuple[str, ...] = ("metrics", "probes")
"""What `run_benchmark` evaluates: the metrics alone, or the metrics and the probes."""
PROBE_COLUMNS: tuple[str, ...] = (
    "probe_point",
    "probes",
    "probe_score",
    *(f"probe_{kind}" for kind in PROBE_KINDS),
    *(f"probes_{kind}" for kind in PROBE_KINDS),
    "probe_judge_errors",
    "probe_reader_input_tokens",
    "probe_reader_output_tokens",
    "probe_judge_input_tokens",
    "probe_judge_output_tokens",
    "probe_cost_usd",
    "probe_error",
)
"""Columns a probe evaluation adds to a benchmark frame: the probe point, how many probes
were scored, the mean score (0–1) overall and per kind (NaN where none of a kind was
asked), how many of each kind, judge failures, the reader's and judge's tokens and their
cost in USD, and the error of a cell whose probes could not run."""

_RENAMES: Mapping[str, str] = {
    "point": "probe_point",
    "score": "probe_score",
    **{f"score_{kind}": f"probe_{kind}" for kind in PROBE_KINDS},
    "judge_errors": "probe_judge_errors",
    "reader_input_tokens": "probe_reader_input_tokens",
    "reader_output_tokens": "probe_reader_output_tokens",
    "judge_input_tokens": "probe_judge_input_tokens",
    "judge_output_tokens": "probe_judge_output_tokens",
    "cost_usd": "probe_cost_usd",
    "error": "probe_error",
}
_KEYS = ["session_id", "label", "budget"]


def _unique(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def check_evaluation(
    evaluate: str, *, mode: str, reader: Summarizer | None, judge: Summarizer | None
) -> None:
    """Raise `ValueError` unless `evaluate` is one of `EVALUATIONS` and, for probes, a
    reader and a judge are given and the mode is `compact`."""
    if evaluate not in EVALUATIONS:
        raise ValueError(f"unknown evaluation {evaluate!r}; expected one of {EVALUATIONS}")
    if evaluate == "probes":
        if reader is None or judge is None:
            raise ValueError('evaluate="probes" needs reader= and judge= (Summarizers)')
        if mode != "compact":
            raise ValueError('evaluate="probes" runs in compact mode only')


def probe_scores(
    cells: Sequence[Cell],
    *,
    reader: Summarizer,
    judge: Summarizer,
    point: str = "last-request",
    reader_prices: Mapping[str, float] | None = None,
    judge_prices: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Per-cell probe scores of a benchmark grid's compact cells, keyed by `session_id`,
    `label` and `budget`, with the columns of `PROBE_COLUMNS`."""
    import pandas as pd

    compact_cells = [c for c in cells if c.mode == "compact"]
    if not compact_cells:
        return pd.DataFrame(columns=[*_KEYS, *PROBE_COLUMNS])
    first = compact_cells[0]
    refs = _unique([c.session for c in compact_cells])
    sessions = [_load_session(r.path, r.index, r.sha256) for r in refs]
    scored = run_probes(
        sessions,
        _unique([c.strategy for c in compact_cells]),
        _unique([c.budget for c in compact_cells]),
        reader=reader,
        judge=judge,
        summarizer=first.summarizer,
        settings=first.settings,
        counter=TokenCounter(first.counter_method),
        point=point,
        facts=first.facts,
        reader_prices=reader_prices,
        judge_prices=judge_prices,
    )
    scored = scored.rename(columns=dict(_RENAMES))
    return scored[[*_KEYS, *(c for c in PROBE_COLUMNS if c in scored.columns)]]


def with_probe_scores(df: pd.DataFrame, scores: pd.DataFrame, *, point: str) -> pd.DataFrame:
    """The benchmark frame with the probe columns joined on session, label and budget
    (every column of `PROBE_COLUMNS`, None where a cell has no probe row; `probe_point` is
    the entry the probes' compaction was made at), and `point` (how it was chosen) in its
    configuration."""
    joined = df.merge(scores, on=_KEYS, how="left", validate="many_to_one")
    for column in PROBE_COLUMNS:
        if column not in joined.columns:
            joined[column] = None
    joined.attrs.update(df.attrs)
    config = joined.attrs.get("config", {})
    joined.attrs["config"] = {**config, "evaluate": "probes", "probe_point": point}
    return joined


def with_evaluation(
    df: pd.DataFrame,
    cells: Sequence[Cell],
    evaluate: str,
    *,
    reader: Summarizer | None,
    judge: Summarizer | None,
    point: str,
) -> pd.DataFrame:
    """The benchmark frame as `evaluate` asks: unchanged for `"metrics"`; for `"probes"`
    with the probe scores of its cells joined (`probe_scores`, `with_probe_scores`)."""
    if evaluate != "probes" or reader is None or judge is None:
        return df
    scores = probe_scores(cells, reader=reader, judge=judge, point=point)
    return with_probe_scores(df, scores, point=point)

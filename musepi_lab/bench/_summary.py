"""Summary tables of a benchmark frame: per strategy × budget the counts and each metric's
mean where defined with a bootstrap interval (`_aggregate`), as a DataFrame, Markdown or
plain text, and `write_summary` (`summary.md`, `summary.csv`). The figures of a report
are drawn by `musepi_lab.plot` (`write_benchmark_report`), the layer above this one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._atomic import write_files_atomic
from ..probes._model import PROBE_KINDS
from ..strategies._base import strategy_label
from ._aggregate import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CI_LEVEL,
    COUNT_COLUMNS,
    DIFFERENCE_COLUMNS,
    aggregate_table,
    cost_differences,
)

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_MD = "summary.md"
SUMMARY_CSV = "summary.csv"
SUMMARY_METRICS: tuple[str, ...] = ("token_reduction", "retention_lower", "retention_upper")
"""What the summary table aggregates by default for compact runs: the reduction where the
strategy compacted, and fact retention with snapcompact's imaged pages unreadable (lower
bound, the same as `fact_retention`) and read perfectly (upper bound)."""
REPLAY_SUMMARY_METRICS: tuple[str, ...] = (
    "token_reduction",
    "retention_lower",
    "retention_upper",
    "compactions",
    "replay_cost_usd",
    "replay_cost_expected",
    "replay_cost_low",
    "replay_cost_high",
    "requests_coverage",
)
"""The default for replay results: also how often each strategy compacted, what the
replayed session cost (under the documented rules; expected, with the low and high ends of
each cell's 90% prediction interval, averaged like the other metrics) and the share of its
recorded requests that bill covers."""


PROBE_SUMMARY_METRICS: tuple[str, ...] = (
    "probe_score",
    *(f"probe_{kind}" for kind in PROBE_KINDS),
)
"""Added to the summary of a frame run with `evaluate="probes"`: the mean probe score
overall and per kind."""


def default_metrics(df: pd.DataFrame) -> tuple[str, ...]:
    """The metrics a summary of this frame aggregates: `REPLAY_SUMMARY_METRICS` for replay
    results, else `SUMMARY_METRICS`, with `PROBE_SUMMARY_METRICS` when it has probe scores."""
    replay = not df.empty and bool((df["mode"] == "replay").all())
    metrics = REPLAY_SUMMARY_METRICS if replay else SUMMARY_METRICS
    if "probe_score" in df.columns:
        metrics = (*metrics, *PROBE_SUMMARY_METRICS)
    return metrics


def strategy_labels(df: pd.DataFrame) -> pd.Series:
    """The `label` column (strategy name and non-default parameters), or, for frames
    without one, `name(k=v, ...)` built from `strategy` and `params`."""
    if "label" in df.columns:
        return df["label"].astype(str).rename("label")

    def label(name: str, params: str) -> str:
        values = json.loads(params) if isinstance(params, str) and params else {}
        return strategy_label(name, values)

    return df.apply(lambda r: label(r["strategy"], r["params"]), axis=1).rename("label")


def summary_table(
    df: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    baseline: str | None = None,
) -> pd.DataFrame:
    """Per strategy (with parameters) and budget: how many cells, how many failed, how
    many compacted, how many carried facts, and each metric's mean over the cells where it
    is defined with its count and a seeded bootstrap 95% interval across sessions
    (`aggregate_table`); for replay frames, the expected bill's difference from a baseline
    strategy with the replay model's paired 90% interval (`cost_differences`).

    Args:
        df: A benchmark frame.
        metrics: Numeric columns to aggregate (default: `default_metrics(df)`).
        resamples: Bootstrap resamples per interval.
        seed: Seed of the resampling.
        baseline: The strategy label costs are compared with (default: `none` when
            present, else the first).

    Returns:
        Indexed by `(label, budget)`; columns `cells`, `errors`, `compacted`,
        `with_facts`, then per metric `<metric>`, `<metric>_n`, `<metric>_ci_low`,
        `<metric>_ci_high`; for replay frames with cost draws also `DIFFERENCE_COLUMNS`
        (`cost_difference_within_uncertainty`: the model cannot tell the two bills apart).
        Empty for an empty frame.
    """
    import pandas as pd

    if df.empty:
        return pd.DataFrame()
    metrics = default_metrics(df) if metrics is None else metrics
    labels = strategy_labels(df)
    table = aggregate_table(df, metrics, labels, resamples=resamples, seed=seed)
    differences = cost_differences(df, labels, baseline)
    return table.join(differences) if len(differences) and len(table) else table


def table_metrics(table: pd.DataFrame) -> list[str]:
    """The metrics of a summary table, in column order."""
    return [c for c in table.columns if f"{c}_n" in table.columns]


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.3f}"


def _metric_cell(row: pd.Series, metric: str) -> str:
    """`mean [low, high] n=k`, or `n=0` where the metric is defined on no cell."""
    n = int(row[f"{metric}_n"])
    if n == 0:
        return "n=0"
    low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
    interval = f" [{_number(low)}, {_number(high)}]" if _number(low) else ""
    return f"{_number(row[metric])}{interval} n={n}"


def _difference_cell(row: pd.Series) -> str:
    """`+d [low, high]`, marked `(within uncertainty)` when the interval holds 0."""
    if _number(row.get("cost_difference")) == "":
        return ""
    within = " (within uncertainty)" if bool(row["cost_difference_within_uncertainty"]) else ""
    return (
        f"{row['cost_difference']:+.4f} [{row['cost_difference_low']:+.4f}, "
        f"{row['cost_difference_high']:+.4f}]{within}"
    )


def _rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    metrics = table_metrics(table)
    header = ["strategy", "budget", *(c.replace("_", " ") for c in COUNT_COLUMNS), *metrics]
    differences = all(c in table.columns for c in DIFFERENCE_COLUMNS)
    if differences:
        names = table["cost_baseline"].dropna()
        header.append(f"cost vs {names.iloc[0] if len(names) else 'baseline'} [90%]")
    body = []
    for key, row in table.iterrows():
        label, budget = cast(tuple[Any, Any], key)
        counts = [str(int(row[c])) for c in COUNT_COLUMNS]
        cells = [str(label), _budget(budget), *counts, *(_metric_cell(row, m) for m in metrics)]
        body.append([*cells, _difference_cell(row)] if differences else cells)
    return header, body


def _budget(budget: Any) -> str:
    return (
        f"{int(budget):,}" if isinstance(budget, (int, float)) and budget == budget else str(budget)
    )


def table_markdown(table: pd.DataFrame) -> str:
    """A summary table as GitHub Markdown (no extra dependency)."""
    if table.empty:
        return "(no results)\n"
    header, body = _rows(table)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in body)
    return "\n".join(lines) + "\n"


TEXT_WIDTH = 110
"""Widest line `table_text` prints (a terminal, a notebook cell's text output)."""
KEY_COLUMNS = 2
"""Columns every block of a split text table repeats: strategy and budget."""


def _text_block(rows: Sequence[Sequence[str]], columns: Sequence[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in columns]
    lines = [
        "  ".join(
            r[i].ljust(w) if i == 0 else r[i].rjust(w) for i, w in zip(columns, widths, strict=True)
        ).rstrip()
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _column_blocks(widths: Sequence[int], width: int) -> list[list[int]]:
    """The data columns in blocks that fit `width` beside the key columns (at least one
    column a block, however wide)."""
    key = sum(widths[:KEY_COLUMNS]) + 2 * KEY_COLUMNS
    blocks: list[list[int]] = []
    used = key
    for i in range(KEY_COLUMNS, len(widths)):
        if blocks and used + widths[i] <= width:
            blocks[-1].append(i)
            used += widths[i] + 2
        else:
            blocks.append([i])
            used = key + widths[i] + 2
    return blocks or [[]]


def table_text(table: pd.DataFrame, *, width: int = TEXT_WIDTH) -> str:
    """A summary table as aligned plain text, for terminals: split into blocks of columns
    no wider than `width`, each block repeating strategy and budget."""
    if table.empty:
        return "(no results)"
    header, body = _rows(table)
    rows = [header, *body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    keys = list(range(min(KEY_COLUMNS, len(header))))
    blocks = [_text_block(rows, [*keys, *block]) for block in _column_blocks(widths, width)]
    return "\n\n".join("\n".join(lines) for lines in blocks)


def token_sources_note(frame: pd.DataFrame) -> str:
    """Where a benchmark's token figures come from, in one sentence per mode."""
    counters = sorted({str(c) for c in frame.get("counter", []) if isinstance(c, str)})
    counter = ", ".join(counters) or "the profile's"
    modes = set(frame["mode"]) if "mode" in frame and len(frame) else set()
    notes = [
        f"Token figures (tokens_before, tokens_after, token_reduction, summary_tokens) are "
        f"estimated by the counter ({counter})."
    ]
    if "replay" in modes:
        notes.append(
            "Replay contexts (peak_context) are recorded by the provider until the first "
            "replayed compaction and estimated by the counter (scaled by the recorded ratio) "
            "after it; costs price the usage the provider recorded."
        )
    return " ".join(notes)


def summary_markdown(frame: pd.DataFrame, table: pd.DataFrame | None = None) -> str:
    """The `summary.md` text of a benchmark frame: mode, counts and the summary table."""
    table = summary_table(frame) if table is None else table
    config = frame.attrs.get("config", {})
    lines = [
        "# Benchmark summary",
        "",
        f"Mode: {config.get('mode', frame['mode'].iloc[0] if len(frame) else '?')}; "
        f"budget = {config.get('budget_meaning', 'tokens')}.",
        f"Cells: {len(frame)} ({int(frame['error'].notna().sum()) if len(frame) else 0} failed); "
        f"sessions: {frame['session_id'].nunique() if len(frame) else 0}.",
        "",
        "Per strategy × budget: cells, failed cells, cells that compacted, cells that",
        "carried facts; each metric as `mean [low, high] n=k`: the mean over the k cells",
        "where it is defined (token reduction only where the strategy compacted; retention",
        "only where there were facts), with a seeded bootstrap "
        f"{int(CI_LEVEL * 100)}% interval across sessions (none below two sessions).",
        "`retention_lower` counts snapcompact's imaged pages as unreadable,",
        "`retention_upper` as read perfectly; they differ only for strategies that image.",
        "Replay: `replay_cost_usd` is the bill under the providers' documented rules,",
        "`replay_cost_expected` [`replay_cost_low`, `replay_cost_high`] the expected bill and",
        "its 90% prediction interval with the fitted unpredicted misses and token-ratio spread;",
        "`cost vs` the expected difference from the baseline with the model's paired 90%",
        "interval: `(within uncertainty)` when it holds 0, the model cannot tell them apart.",
        token_sources_note(frame),
        "",
        table_markdown(table),
    ]
    return "\n".join(lines)


def write_summary(out_dir: str | os.PathLike[str], df: pd.DataFrame) -> dict[str, Path]:
    """Write `summary.md` and `summary.csv` (the summary table) into a result folder, each
    atomically.

    Returns:
        Name → path of every file written.
    """
    base = Path(out_dir)
    table = summary_table(df)
    text = summary_markdown(df, table)
    written = {SUMMARY_CSV: base / SUMMARY_CSV, SUMMARY_MD: base / SUMMARY_MD}
    write_files_atomic(
        {
            written[SUMMARY_CSV]: lambda tmp: table.to_csv(tmp),
            written[SUMMARY_MD]: lambda tmp: tmp.write_text(text, encoding="utf-8"),
        }
    )
    return written

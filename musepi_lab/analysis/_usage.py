"""Usage and cost reports: one row per billed request, and sums per day, month, session or
5-hour billing block.

Which replies are billed requests and what each costs (recorded, the harness's own total,
priced from the one table, or unpriced and listed in `attrs["unpriced_models"]`; nothing
fetched from the network) is stated once, in `_usage_rows`, which builds the rows.

Billing blocks follow ccusage (`identifySessionBlocks` in 18.0.11's data loader, unchanged in 20.0.24): requests
sorted by time; the first opens a block starting at its time floored to the UTC hour; a
request more than 5 hours after the block's start, or more than 5 hours after the previous
request, opens a new block (floored the same way).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..session._errors import SessionReadError
from ..session._session import Session
from ._load import SessionSource, load_sessions
from ._problems import with_problems
from ._sources import takes_sources
from ._usage_read import usage_rows
from ._usage_rows import (
    BLOCK_HOURS,
    REPORTS,
    TOKEN_COLUMNS,
    UNDATED,
    USAGE_COLUMNS,
    WEEK_DAYS,
    Report,
    negative_usage,
    requests_without_reply,
    sessions_with_linked,
    usage_records,
)
from ._usage_sums import day_key

__all__ = [
    "BLOCK_HOURS",
    "REPORTS",
    "TOKEN_COLUMNS",
    "USAGE_COLUMNS",
    "billing_blocks",
    "format_report",
    "negative_usage",
    "report_records",
    "requests_without_reply",
    "usage_df",
    "usage_frame",
    "usage_report",
    "week_starts",
]


def usage_frame(sessions: Iterable[Session]) -> pd.DataFrame:
    """The `usage_df` frame of sessions already read (and of their linked sessions); a
    request recorded twice is billed once (`_usage_dedup`), the others listed in
    `attrs["duplicate_requests"]`; a harness's own session totals are folded in
    (`_harness_usage`)."""
    return records_frame(*usage_records(sessions))


def records_frame(
    records: Sequence[Mapping[str, Any]], duplicates: list[dict[str, Any]]
) -> pd.DataFrame:
    """The `usage_df` frame of `usage_records`' rows and duplicates."""
    frame = pd.DataFrame.from_records(records, columns=USAGE_COLUMNS)
    frame["timestamp"] = pd.to_datetime(
        frame["timestamp"], utc=True, format="ISO8601", errors="coerce"
    )
    for name in ("input", "output", "cache_read", "cache_write", "cache_write_5m"):
        frame[name] = frame[name].astype("int64")
    frame["cache_write_1h"] = frame["cache_write_1h"].astype("int64")
    frame["total_tokens"] = frame["total_tokens"].astype("int64")
    frame["line"] = frame["line"].astype("Int64")
    frame["requests"] = frame["requests"].astype("int64")
    for name in ("recorded_cost", "priced_cost", "cost"):
        frame[name] = frame[name].astype("float64")
    unpriced = frame.loc[frame["cost_source"] == "unpriced", "model"]
    frame.attrs["unpriced_models"] = sorted({str(m) for m in unpriced})
    frame.attrs["duplicate_requests"] = duplicates
    return frame


@takes_sources
def usage_df(source: SessionSource, *, strict: bool = False) -> pd.DataFrame:
    """One row per billed request (an assistant reply with recorded usage) of every session
    and of the subagent sessions linked to it (Claude Code's `subagents/`).

    Columns are `USAGE_COLUMNS`: `session_id` (the reading session's header id) and
    `root_session_id` (the main session a subagent belongs to, else the same), `file`, `line`,
    `entry_id`, `timestamp` (UTC), `model`, `provider`, the token counts `input` (uncached),
    `output`, `cache_read`, `cache_write` (all writes) split into `cache_write_5m` and
    `cache_write_1h` (Claude Code records the split; elsewhere every write counts as 5-minute),
    `total_tokens`, `recorded_cost` (the harness's, missing where none), `priced_cost` (the
    price table's, missing for an unknown model), `cost` (recorded, else priced),
    `cost_source` ("recorded", "priced", "unpriced", or "harness": the harness's own total
    for the session, SWE-agent's `info.model_stats` and OpenHands' `accumulated_cost`) and
    `requests` (1 a row; a harness total's row counts the calls it recorded).
    `frame.attrs["unpriced_models"]` lists the models without a price. A request Claude
    Code recorded twice (a resumed file repeating a `message.id` and `requestId`, a `/btw`
    side question replaying a parent reply) is billed once: the others are listed in
    `frame.attrs["duplicate_requests"]`, each as its row would be, with a `reason`
    ("repeated-request" or "sidechain-replay"). A Codex request no assistant item answers
    gets its row from its `token_count` event (`requestUsage`), and the session a
    `usage-without-reply` note (lenient mode) saying how many.

    Args:
        source: A `Session`, a session file or folder (read with `iter_sessions`), or a
            list of those.
        strict: Raise on read problems instead of keeping them on the frame.

    Returns:
        The frame, keeping every valid record; every `ReadProblem` met (each naming file and
        line, the notes above among them) travels on it, `problems_of(frame)`.

    Raises:
        SessionReadError: A path does not exist; with `strict=True`, a file cannot be read or
            a session has read problems.
    """
    if not strict:
        records, duplicates, problems = usage_rows(source)
        return with_problems(records_frame(records, duplicates), problems)
    read, _ = load_sessions(source, strict=True)
    frame = usage_frame(read)
    linked = [session for session, _ in sessions_with_linked(read)]
    negative = [p for session in linked for p in negative_usage(session)]
    if negative:
        raise SessionReadError.from_problem(negative[0], negative)
    return with_problems(frame, [])  # requests without a reply are billed: not refused


# -- reports -------------------------------------------------------------------------------


def billing_blocks(timestamps: pd.Series, hours: float = BLOCK_HOURS) -> pd.Series:
    """The start of each request's billing block (ccusage's rule, see the module docstring),
    aligned with `timestamps` (UTC); a missing timestamp gets no block."""
    span = pd.Timedelta(hours=hours)
    ordered = timestamps.dropna().sort_values(kind="stable")
    labels: list[Any] = []
    values: list[pd.Timestamp] = []
    start: pd.Timestamp | None = None
    last: pd.Timestamp | None = None
    for index, moment in ordered.items():
        if start is None or last is None or moment - start > span or moment - last > span:
            start = moment.floor("h")
        labels.append(index)
        values.append(start)
        last = moment
    found = pd.Series(values, index=labels, dtype="datetime64[ns, UTC]")
    return found.reindex(timestamps.index)


def _window(timezone: str, since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """The first and last day kept, checked with the zone (a window that keeps no day, or
    a zone pandas cannot use, is an error rather than an empty report)."""
    try:
        pd.Timestamp(0, tz="UTC").tz_convert(timezone)
    except (ValueError, KeyError, IndexError, TypeError, OSError):
        raise ValueError(
            f"unknown time zone {timezone!r} (an IANA name, e.g. Europe/Paris)"
        ) from None
    first = day_key(since) if since is not None else None
    last = day_key(until) if until is not None else None
    if first is not None and last is not None and first > last:
        raise ValueError(f"since {since} is after until {until}: no day would be kept")
    return first, last


def week_starts(local: pd.Series, start_of_week: str = "sunday") -> pd.Series:
    """The first day (YYYY-MM-DD) of each local time's week, weeks starting on
    `start_of_week` (ccusage 18.0.11's `getDateWeek`: the latest such day on or before)."""
    if start_of_week not in WEEK_DAYS:
        raise ValueError(f"unknown start of week {start_of_week!r}; one of {', '.join(WEEK_DAYS)}")
    # pandas counts Monday as 0, JavaScript's getDay() Sunday as 0.
    start = (WEEK_DAYS.index(start_of_week) - 1) % 7
    days = local.dt.normalize()
    shift = pd.to_timedelta((local.dt.dayofweek - start) % 7, unit="D")
    return pd.Series((days - shift).dt.strftime("%Y-%m-%d"), index=local.index)


def _report_keys(
    frame: pd.DataFrame, by: Report, timezone: str, start_of_week: str = "sunday"
) -> pd.Series:
    keys = _dated_keys(frame, by, timezone, start_of_week)
    return keys.fillna(UNDATED) if by != "session" else keys


def _dated_keys(frame: pd.DataFrame, by: Report, timezone: str, start_of_week: str) -> pd.Series:
    local = frame["timestamp"].dt.tz_convert(timezone)
    if by == "daily":
        return pd.Series(local.dt.strftime("%Y-%m-%d"), index=frame.index)
    if by == "weekly":
        return week_starts(local, start_of_week)
    if by == "monthly":
        return pd.Series(local.dt.strftime("%Y-%m"), index=frame.index)
    if by == "session":
        return pd.Series(frame["session_id"].astype(str), index=frame.index)
    if by == "blocks":
        starts = billing_blocks(frame["timestamp"])
        return pd.Series(starts.dt.strftime("%Y-%m-%dT%H:%M:%SZ"), index=frame.index)
    raise ValueError(f"unknown report {by!r}; expected one of {', '.join(REPORTS)}")


def usage_report(
    frame: pd.DataFrame,
    by: Report = "daily",
    *,
    timezone: str = "UTC",
    since: str | None = None,
    until: str | None = None,
    per_model: bool = True,
    start_of_week: str = "sunday",
) -> pd.DataFrame:
    """Sums of a `usage_df` frame per day, week, month, session or billing block (and per
    model).

    Args:
        frame: A `usage_df` frame.
        by: "daily", "weekly" (keyed by the week's first day) and "monthly" (the request's
            date in `timezone`), "session" (`session_id`) or "blocks" (5-hour billing
            blocks, `billing_blocks`). Rows without a time are keyed `UNDATED`.
        timezone: An IANA zone name for the dates (default UTC).
        since, until: Keep requests whose date in `timezone` is on or after / on or before
            this day (YYYYMMDD or YYYY-MM-DD).
        per_model: One row per (key, model) rather than per key.
        start_of_week: The day weeks start on ("sunday", ccusage's default, to "saturday").

    Returns:
        Columns `key` (the date, week, month, session id or block start), `model` (with
        `per_model`), `requests`, the `TOKEN_COLUMNS`, `cost` (the sum over priced,
        recorded and harness-recorded rows), `unpriced` (requests without a cost) and
        `harness` (requests whose cost is the harness's own total for their session),
        sorted by key.
    """
    if by not in REPORTS:
        raise ValueError(f"unknown report {by!r}; expected one of {', '.join(REPORTS)}")
    first, last = _window(timezone, since, until)
    days = frame["timestamp"].dt.tz_convert(timezone).dt.strftime("%Y-%m-%d")
    keep = pd.Series(True, index=frame.index)
    if first is not None:
        keep &= days >= first
    if last is not None:
        keep &= days <= last
    rows = frame.loc[keep].copy()
    if len(rows):
        rows["key"] = _report_keys(rows, by, timezone, start_of_week)
    else:
        rows["key"] = pd.Series(dtype=str)
    if "requests" not in rows:
        rows["requests"] = 1
    rows["unpriced"] = rows["requests"].where(rows["cost_source"] == "unpriced", 0)
    rows["harness"] = rows["requests"].where(rows["cost_source"] == "harness", 0)
    rows["model"] = rows["model"].fillna("unknown")
    keys = ["key", "model"] if per_model else ["key"]
    sums = ["requests", *TOKEN_COLUMNS, "cost", "unpriced", "harness"]
    out = rows.groupby(keys, sort=True, dropna=False)[sums].sum(min_count=0).reset_index()
    return out[[*keys, *sums]]


def report_records(report: pd.DataFrame) -> list[dict[str, Any]]:
    """A report as JSON-ready records (NaN becomes None)."""
    records: list[dict[str, Any]] = []
    for record in report.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for key, value in record.items():
            if key in ("key", "model"):
                clean[str(key)] = str(value)
            elif key == "cost":
                clean[str(key)] = None if math.isnan(float(value)) else float(value)
            else:
                clean[str(key)] = int(value)
        records.append(clean)
    return records


def format_report(report: pd.DataFrame, *, columns: Sequence[str] | None = None) -> str:
    """A report as a plain-text table with thousands separators and a total row."""
    names = list(columns or report.columns)
    numeric = [n for n in names if n not in ("key", "model")]
    rows = [[_cell(record[n], n) for n in names] for record in report.to_dict(orient="records")]
    if len(report):
        total = {n: report[n].sum() for n in numeric}
        rows.append(
            [
                ("total" if n == "key" else "") if n in ("key", "model") else _cell(total[n], n)
                for n in names
            ]
        )
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if n in ("key", "model") else c.rjust(w)
            for c, w, n in zip(cells, widths, names, strict=True)
        )

    return "\n".join([line(names), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _cell(value: Any, name: str) -> str:
    if name in ("key", "model"):
        return str(value)
    if name == "cost":
        return (
            ""
            if value is None or (isinstance(value, float) and math.isnan(value))
            else f"${value:,.2f}"
        )
    return f"{int(value):,}"

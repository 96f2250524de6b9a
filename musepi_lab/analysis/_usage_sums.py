"""The usage reports summed without pandas, for `musepi-lab usage` (pandas takes longer to
import than the whole report takes to make on a month of sessions).

`report_rows(records, by, ...)` makes of `usage_records`' rows what
`report_records(usage_report(usage_frame(...), by, ...))` makes of the frame (the same keys,
models, sums and order; tests/test_usage_sums.py holds them equal): timestamps read as pandas
reads them (`to_datetime(utc=True, format="ISO8601", errors="coerce")`: a time without a zone
is UTC, one that does not parse has no time); costs are summed exactly rounded
(`math.fsum`, missing costs skipped), which may differ from pandas' compensated groupby sum in
the last bit of a double; `format_table` writes `format_report`'s table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from ._usage_rows import BLOCK_HOURS, REPORTS, TOKEN_COLUMNS, UNDATED, WEEK_DAYS

SUMS = ("requests", *TOKEN_COLUMNS, "cost", "unpriced", "harness")
"""The summed columns of a report row, in order."""


def day_key(value: str) -> str:
    """A day given as YYYYMMDD or YYYY-MM-DD, as YYYY-MM-DD.

    Raises:
        ValueError: Not such a day.
    """
    text = value.replace("-", "")
    if len(text) != 8 or not text.isdigit():
        raise ValueError(f"expected a date as YYYYMMDD or YYYY-MM-DD, got {value!r}")
    try:
        datetime.strptime(text, "%Y%m%d")
    except ValueError:
        raise ValueError(f"no such day: {value!r} (YYYYMMDD or YYYY-MM-DD)") from None
    return f"{text[:4]}-{text[4:6]}-{text[6:]}"


def zone(timezone: str) -> tzinfo:
    """The IANA zone `timezone`.

    Raises:
        ValueError: No such zone.
    """
    try:
        return UTC if timezone.upper() == "UTC" else ZoneInfo(timezone)
    except (ValueError, KeyError, OSError):
        raise ValueError(
            f"unknown time zone {timezone!r} (an IANA name, e.g. Europe/Paris)"
        ) from None


def moment(value: Any) -> datetime | None:
    """A row's timestamp as an aware UTC time, None when it has none or it does not parse."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _block_keys(moments: Sequence[datetime | None]) -> list[str | None]:
    """ccusage's billing block start of each time (see `_usage.billing_blocks`)."""
    span = timedelta(hours=BLOCK_HOURS)
    keys: list[str | None] = [None] * len(moments)
    start: datetime | None = None
    last: datetime | None = None
    # Sorted by time, rows of one time in their order (pandas' stable sort).
    for when, index in sorted((m, i) for i, m in enumerate(moments) if m is not None):
        if start is None or last is None or when - start > span or when - last > span:
            start = when.replace(minute=0, second=0, microsecond=0)
        keys[index] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
        last = when
    return keys


def _week_start(local: datetime, start_of_week: str) -> str:
    start = (WEEK_DAYS.index(start_of_week) - 1) % 7  # Python counts Monday as 0
    return (local - timedelta(days=(local.weekday() - start) % 7)).strftime("%Y-%m-%d")


def _keys(
    rows: Sequence[Mapping[str, Any]],
    moments: Sequence[datetime | None],
    by: str,
    place: tzinfo,
    start_of_week: str,
) -> list[str]:
    if by == "session":
        return [str(row["session_id"]) for row in rows]
    if by == "blocks":
        return [key or UNDATED for key in _block_keys(moments)]
    pattern = "%Y-%m" if by == "monthly" else "%Y-%m-%d"
    out = []
    for when in moments:
        if when is None:
            out.append(UNDATED)
        elif by == "weekly":
            out.append(_week_start(when.astimezone(place), start_of_week))
        else:
            out.append(when.astimezone(place).strftime(pattern))
    return out


def _summed(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": sum(int(r["requests"]) for r in group)}
    for name in TOKEN_COLUMNS:
        out[name] = sum(int(r[name]) for r in group)
    out["cost"] = math.fsum(c for c in (float(r["cost"]) for r in group) if c == c)
    for name in ("unpriced", "harness"):
        out[name] = sum(int(r["requests"]) for r in group if r["cost_source"] == name)
    return out


def report_window(
    by: str, timezone: str, since: str | None, until: str | None, start_of_week: str
) -> tuple[tzinfo, str | None, str | None]:
    """A report's arguments checked, before anything is read: its zone and the first and
    last day kept (YYYY-MM-DD, None: unbounded).

    Raises:
        ValueError: An unknown report, zone or start of week, or a bad day or window.
    """
    if by not in REPORTS:
        raise ValueError(f"unknown report {by!r}; expected one of {', '.join(REPORTS)}")
    if start_of_week not in WEEK_DAYS:
        raise ValueError(f"unknown start of week {start_of_week!r}; one of {', '.join(WEEK_DAYS)}")
    place = zone(timezone)
    first = day_key(since) if since is not None else None
    last = day_key(until) if until is not None else None
    if first is not None and last is not None and first > last:
        raise ValueError(f"since {since} is after until {until}: no day would be kept")
    return place, first, last


def report_rows(
    records: Sequence[Mapping[str, Any]],
    by: str = "daily",
    *,
    timezone: str = "UTC",
    since: str | None = None,
    until: str | None = None,
    per_model: bool = True,
    start_of_week: str = "sunday",
) -> list[dict[str, Any]]:
    """`usage_report`'s rows as `report_records` gives them, made of `usage_records` rows.

    Raises:
        ValueError: An unknown report, zone or start of week, or a bad day or window.
    """
    place, first, last = report_window(by, timezone, since, until, start_of_week)
    rows, moments = [], []
    for row in records:
        when = moment(row["timestamp"])
        day = when.astimezone(place).strftime("%Y-%m-%d") if when is not None else None
        if first is not None or last is not None:
            if day is None:
                continue  # pandas compares a missing day as False
            if (first is not None and day < first) or (last is not None and day > last):
                continue
        rows.append(row)
        moments.append(when)
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for key, row in zip(_keys(rows, moments, by, place, start_of_week), rows, strict=True):
        model = row["model"] if row["model"] is not None else "unknown"
        groups.setdefault((key, str(model)) if per_model else (key,), []).append(row)
    out = []
    for group_key in sorted(groups):
        head = {"key": group_key[0], **({"model": group_key[1]} if per_model else {})}
        out.append({**head, **_summed(groups[group_key])})
    return out


def _cell(value: Any, name: str) -> str:
    if name in ("key", "model"):
        return str(value)
    if name == "cost":
        return "" if value is None or math.isnan(value) else f"${value:,.2f}"
    return f"{int(value):,}"


def format_table(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    """`format_report`'s table of report rows (thousands separators, a total row)."""
    numeric = [n for n in names if n not in ("key", "model")]
    cells = [[_cell(row[n], n) for n in names] for row in rows]
    if rows:
        total = {n: (math.fsum if n == "cost" else sum)(r[n] for r in rows) for n in numeric}
        cells.append(
            [
                ("total" if n == "key" else "") if n in ("key", "model") else _cell(total[n], n)
                for n in names
            ]
        )
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]

    def line(items: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if n in ("key", "model") else c.rjust(w)
            for c, w, n in zip(items, widths, names, strict=True)
        )

    return "\n".join([line(names), line(["-" * w for w in widths]), *(line(r) for r in cells)])

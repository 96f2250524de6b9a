"""The rows of the usage reports, one per billed request, without pandas (`_usage` makes
them a frame, `_usage_sums` sums them for the command line): which replies are billed
requests, their costs, and the requests recorded twice.

A *billed request* is an assistant reply whose message records usage (pi's `usage` shape,
which every reader fills: Claude Code from the Anthropic `usage` of the reply's last streamed
line, Codex from each `token_count` event's `last_token_usage`, pi and MusePi as written).
Replies whose counts are all zero (Claude Code's `<synthetic>` replies) are no request. A
request the record counted but no reply answers (a Codex `token_count` with no output item,
an interrupted turn) is billed from the entry that carries its `requestUsage`.

Cost: the cost the harness recorded (`usage.cost.total`, pi and MusePi record it) where it is
above zero (`cost_source` "recorded"); a harness's own total for a whole session (SWE-agent's
`info.model_stats`, OpenHands' `accumulated_cost`: `cost_source` "harness", see
`_harness_usage`); else the tokens priced with the package's one price
table (`metrics.MODEL_PRICES`, `PRICES_SOURCE`, `PRICES_DATE`; `cost_source` "priced"). A
model the table does not know is never priced with a default: its rows have `cost_source`
"unpriced" and a missing cost, and the frame's `attrs["unpriced_models"]` lists them (the CLI
prints them). Nothing is fetched from the network, ever.

Billing blocks (`blocks` reports) follow ccusage: the rule is stated at `_usage.billing_blocks`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ..metrics._prices import known_prices, usage_cost
from ..session._errors import ReadProblem
from ..session._session import Session
from ._harness_usage import with_harness_total
from ._usage_dedup import Identity, duplicate_records, identity, split_duplicates

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
"""The aggregations `usage_report` makes."""

BLOCK_HOURS = 5
"""The length of a billing block (ccusage's `DEFAULT_SESSION_DURATION_HOURS`)."""

USAGE_COLUMNS = (
    "session_id",
    "root_session_id",
    "file",
    "line",
    "entry_id",
    "timestamp",
    "model",
    "provider",
    "input",
    "output",
    "cache_read",
    "cache_write",
    "cache_write_5m",
    "cache_write_1h",
    "total_tokens",
    "recorded_cost",
    "priced_cost",
    "cost",
    "cost_source",
    "requests",
)
"""The columns of `usage_df`, in order."""

TOKEN_COLUMNS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "total_tokens")
"""The token columns a report sums."""

Report = Literal["daily", "weekly", "monthly", "session", "blocks"]

WEEK_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
"""The days a week may start on (`usage_report(..., start_of_week=)`; ccusage's choices)."""

UNDATED = "undated"
"""The key of rows without a time in the daily, weekly, monthly and blocks reports (a
SWE-agent trajectory records none)."""


@dataclass(frozen=True)
class _Request:
    session: Session
    root: Session
    entry_line: int | None
    entry_id: str | None
    timestamp: str | None
    message: Mapping[str, Any]
    identity: Identity

    @property
    def root_id(self) -> str:
        return self.root.id


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _recorded_cost(usage: Mapping[str, Any]) -> float:
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool) and math.isfinite(total):
        return float(total) if total > 0 else 0.0
    return 0.0


def sessions_with_linked(sessions: Iterable[Session]) -> Iterator[tuple[Session, Session]]:
    """(session, its root session) for every session and, depth first, its linked ones."""
    for root in sessions:
        stack = [root]
        while stack:
            session = stack.pop(0)
            yield session, root
            stack[:0] = list(session.linked)


def _requests(sessions: Iterable[Session]) -> Iterator[_Request]:
    for session, root in sessions_with_linked(sessions):
        yield from _session_requests(session, root)


def _session_requests(session: Session, root: Session) -> Iterator[_Request]:
    """The billed requests of one session (not of its linked ones)."""
    for entry in session.entries:
        message = entry.message
        if entry.type != "message" or message is None or message.get("role") != "assistant":
            message = _reply_less_request(entry)
            if message is None:
                continue
        usage = message.get("usage")
        if not isinstance(usage, Mapping):
            continue
        counts = (usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite"))
        if not any(_count(c) for c in counts):
            continue
        when = entry.timestamp or _message_time(message)
        ident = identity(entry.record, in_subagent=session is not root)
        yield _Request(session, root, entry.line, entry.id, when, message, ident)


def _reply_less_request(entry: Any) -> Mapping[str, Any] | None:
    """The `requestUsage` of an entry that records a request no reply answers (the reader
    puts `usage`, `model` and `provider` there), else None."""
    request = entry.record.get("requestUsage") if entry.type != "message" else None
    return request if isinstance(request, Mapping) else None


def _message_time(message: Mapping[str, Any]) -> str | None:
    """The message's own `timestamp` (epoch milliseconds) as ISO text, for an entry without
    one."""
    ms = message.get("timestamp")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms):
        return None
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _row(request: _Request) -> dict[str, Any]:
    message = request.message
    usage: Mapping[str, Any] = message["usage"]
    model = str(message.get("model") or "") or None
    inp, out = _count(usage.get("input")), _count(usage.get("output"))
    read, write = _count(usage.get("cacheRead")), _count(usage.get("cacheWrite"))
    write_1h = min(_count(usage.get("cacheWrite1h")), write)
    prices = known_prices(model)
    priced = (
        usage_cost(
            prices,
            input=inp,
            output=out,
            cache_read=read,
            cache_write_5m=write - write_1h,
            cache_write_1h=write_1h,
        )
        if prices is not None
        else math.nan
    )
    recorded = _recorded_cost(usage)
    if recorded > 0:
        cost, source = recorded, "recorded"
    elif prices is not None:
        cost, source = priced, "priced"
    else:
        cost, source = math.nan, "unpriced"
    return {
        "session_id": request.session.id,
        "root_session_id": request.root.id,
        "file": request.session.source_path,
        "line": request.entry_line,
        "entry_id": request.entry_id,
        "timestamp": request.timestamp,
        "model": model,
        "provider": str(message.get("provider") or "") or None,
        "input": inp,
        "output": out,
        "cache_read": read,
        "cache_write": write,
        "cache_write_5m": write - write_1h,
        "cache_write_1h": write_1h,
        "total_tokens": inp + out + read + write,
        "recorded_cost": recorded if recorded > 0 else math.nan,
        "priced_cost": priced,
        "cost": cost,
        "cost_source": source,
    }


def usage_records(
    sessions: Iterable[Session], *, duplicate_rows: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of sessions already read (and of their linked sessions), `USAGE_COLUMNS`
    keys, timestamps as written, and the requests recorded twice (`_usage_dedup`), each as
    its row would be (with `duplicate_rows=False` only their `reason`, which is all the
    command line prints); a harness's own session totals are folded in (`_harness_usage`)."""
    sessions = list(sessions)
    billed, others = split_duplicates(list(_requests(sessions)))
    rows: dict[int, list[dict[str, Any]]] = {}
    for request in billed:
        rows.setdefault(id(request.session), []).append(_row(request))
    records = [
        row
        for session, root in sessions_with_linked(sessions)
        for row in with_harness_total(session, root, rows.get(id(session), []))
    ]
    if not duplicate_rows:
        return records, [{"reason": reason} for _, reason, _ in others]
    return records, duplicate_records(others, _row)


_USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "totalTokens")


def _negative(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0


def negative_usage(session: Session) -> list[ReadProblem]:
    """A `negative-usage` problem for each reply whose usage records a negative token count
    or a negative cost: its row reads such a count as 0 and prices it from the table, as a
    reply that recorded none, which the problem says."""
    out: list[ReadProblem] = []
    for entry in session.entries:
        message = entry.message
        usage = message.get("usage") if message is not None else None
        if entry.type != "message" or not isinstance(usage, Mapping):
            continue
        said = [f"{key} {usage[key]}" for key in _USAGE_COUNTS if _negative(usage.get(key))]
        cost = usage.get("cost")
        if isinstance(cost, Mapping) and _negative(cost.get("total")):
            said.append(f"cost.total {cost['total']}")
        if said:
            out.append(
                ReadProblem(
                    session.source_path or session.id,
                    entry.line,
                    "negative-usage",
                    f"usage {', '.join(said)}: negative; a count is read as 0 and a cost "
                    "is priced from the table instead",
                )
            )
    return out


def requests_without_reply(session: Session) -> list[ReadProblem]:
    """A note when some of a session's requests have no reply: Codex counted them
    (`token_count` events) but recorded no output item, so their usage rows come from the
    events and there is no reply text behind them."""
    lines = [e.line for e in session.entries if _reply_less_request(e) is not None]
    if not lines:
        return []
    total = sum(1 for _ in _session_requests(session, session))
    return [
        ReadProblem(
            session.source_path or session.id,
            lines[0],
            "usage-without-reply",
            f"{len(lines)} of {total} Codex requests (token_count events) have no assistant "
            "item; their usage rows come from the token_count events (lines "
            f"{', '.join(str(n) for n in lines[:10])}{', …' if len(lines) > 10 else ''})",
        )
    ]

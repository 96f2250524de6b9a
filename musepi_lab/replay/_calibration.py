"""Replay checked against the recorded bill: per request, what the provider recorded
(input, cache read, cache write, cost) beside what the replay's cache model predicted.

Only requests whose reply recorded usage are compared (aborted replies and Codex items
without a `token_count` record none). The recorded cost is the reply's own `usage.cost`
when the harness recorded one (pi), else its usage priced at the model's list prices, 1-hour
cache writes (`cacheWrite1h`, Claude Code) at their own price (`_billing.recorded_usage`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..session._session import Session
from ._billing import RecordedUsage, recorded_usage
from ._result import ReplayResult

if TYPE_CHECKING:
    import pandas as pd

MEASURES: tuple[str, ...] = ("input", "cache_read", "cache_write", "output", "cost_usd")
"""What a calibration compares, each as `recorded_<m>` and `replayed_<m>`."""


def recorded_bill(message: Mapping[str, Any]) -> dict[str, float] | None:
    """A reply's recorded usage as `{input, cache_read, cache_write, output, cost_usd}`, or
    None when it recorded no prompt tokens (`_billing.recorded_usage`)."""
    usage = recorded_usage(message)
    if usage is None or usage.prompt == 0:
        return None
    return {
        "input": usage.input,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
        "output": usage.output,
        "cost_usd": usage.cost,
    }


def _recorded_per_row(session: Session, result: ReplayResult) -> list[RecordedUsage | None]:
    """The recorded usage of each timeline row: from the result's streams (in timeline
    order), else (a result made by hand) from the session's entries by id."""
    if result.streams:
        return [usage for stream in result.streams for usage in stream.recorded]
    messages = {e.id: e.message for e in session.entries if e.message is not None}
    return [recorded_usage(messages.get(str(i))) for i in result.timeline["entry_id"]]


def calibration_rows(session: Session, result: ReplayResult) -> pd.DataFrame:
    """One row per replayed request with recorded usage (every stream): `entry_id`,
    `stream`, `after_recorded_compaction` (the recorded agent had compacted before it in
    its stream, so its bill is of a context `none` does not rebuild), `recorded_<m>` and
    `replayed_<m>` for each of `MEASURES`, and the request's `cache_model`."""
    import pandas as pd

    rows = []
    compacted: dict[str, bool] = {}
    recorded = _recorded_per_row(session, result)
    for row, usage in zip(result.timeline.itertuples(index=False), recorded, strict=True):
        stream = str(getattr(row, "stream", "") or "")
        compacted[stream] = compacted.get(stream, False) or bool(row.recorded_compaction)
        if usage is None or usage.prompt == 0:
            continue
        bill = {
            "input": usage.input,
            "cache_read": usage.cache_read,
            "cache_write": usage.cache_write,
            "output": usage.output,
            "cost_usd": usage.cost,
        }
        replayed = {
            "input": row.input_tokens,
            "cache_read": row.cache_read,
            "cache_write": row.cache_write,
            "output": row.output_tokens,
            "cost_usd": row.cost_usd,
        }
        record: dict[str, Any] = {
            "entry_id": row.entry_id,
            "stream": stream,
            "after_recorded_compaction": compacted[stream],
        }
        for m in MEASURES:
            record[f"recorded_{m}"] = bill[m]
            record[f"replayed_{m}"] = replayed[m]
        record["cache_model"] = row.cache_model
        rows.append(record)
    columns = [
        "entry_id",
        "stream",
        "after_recorded_compaction",
        *(f"{k}_{m}" for m in MEASURES for k in ("recorded", "replayed")),
        "cache_model",
    ]
    return pd.DataFrame(rows, columns=columns)


def relative_error(recorded: float, replayed: float) -> float:
    """`replayed / recorded - 1` (0 when both are 0; infinite when only the record is 0)."""
    if recorded == 0:
        return 0.0 if replayed == 0 else float("inf")
    return replayed / recorded - 1.0


def within(summary: Mapping[str, float], tolerance: float = 0.05) -> bool:
    """Whether a calibration summary is within `tolerance`: each token measure's
    `share_error` and the cost's relative error."""
    keys = ("share_error_input", "share_error_cache_read", "share_error_cache_write")
    return (
        all(abs(summary[k]) <= tolerance for k in keys)
        and abs(summary["error_cost_usd"]) <= tolerance
    )


def calibration_summary(rows: pd.DataFrame) -> dict[str, float]:
    """Session totals of `calibration_rows`: `requests`, `recorded_<m>`, `replayed_<m>`
    and `error_<m>` (relative, see `relative_error`) for each measure, `share_error_<m>`
    for the token measures (the difference as a share of the recorded prompt tokens, so a
    measure the provider barely uses, such as Anthropic's uncached input, does not
    dominate), plus, request by request, `prompt_error_median` (the median absolute
    relative error of the whole prompt, input + cache read + cache write) and
    `hit_agreement` (the share of requests where the replay and the record agree on whether
    most of the prompt was read from cache).

    A diagnostic of what the cache model cannot know rides along (never part of `within`):
    `unpredicted_misses`, the requests the replay read mostly from cache while the provider
    recorded mostly a miss; `unpredicted_miss_cost_share`, their share of the recorded cost;
    and `error_cost_usd_rest`, the cost error over the other requests."""
    out: dict[str, float] = {"requests": float(len(rows))}
    for m in MEASURES:
        rec = float(rows[f"recorded_{m}"].sum()) if len(rows) else 0.0
        rep = float(rows[f"replayed_{m}"].sum()) if len(rows) else 0.0
        out[f"recorded_{m}"] = rec
        out[f"replayed_{m}"] = rep
        out[f"error_{m}"] = relative_error(rec, rep)
    parts = ("input", "cache_read", "cache_write")
    prompt = sum(out[f"recorded_{p}"] for p in parts)
    for p in parts:
        diff = out[f"replayed_{p}"] - out[f"recorded_{p}"]
        out[f"share_error_{p}"] = diff / prompt if prompt else 0.0
    if len(rows):
        rec_prompt = rows[[f"recorded_{p}" for p in parts]].sum(axis=1)
        rep_prompt = rows[[f"replayed_{p}" for p in parts]].sum(axis=1)
        out["prompt_error_median"] = float((rep_prompt / rec_prompt - 1).abs().median())
        rec_hit = rows["recorded_cache_read"] * 2 >= rec_prompt
        rep_hit = rows["replayed_cache_read"] * 2 >= rep_prompt
        out["hit_agreement"] = float((rec_hit == rep_hit).mean())
        unpredicted = rep_hit & ~rec_hit
        rest = rows[~unpredicted]
        recorded_cost = out["recorded_cost_usd"]
        out["unpredicted_misses"] = float(unpredicted.sum())
        out["unpredicted_miss_cost_share"] = (
            float(rows.loc[unpredicted, "recorded_cost_usd"].sum()) / recorded_cost
            if recorded_cost
            else 0.0
        )
        out["error_cost_usd_rest"] = relative_error(
            float(rest["recorded_cost_usd"].sum()), float(rest["replayed_cost_usd"].sum())
        )
    else:
        out["prompt_error_median"] = 0.0
        out["hit_agreement"] = 1.0
        out["unpredicted_misses"] = 0.0
        out["unpredicted_miss_cost_share"] = 0.0
        out["error_cost_usd_rest"] = 0.0
    return out

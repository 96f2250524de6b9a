"""Why ccusage's figures differ from ours, each cause with its size measured from the raw lines.

A cause's size is the part of (ccusage − ours) it accounts for, per report and key, in the
token counts and the cost; it is measured from the session files (plain JSON, restating the
rule ccusage's source follows), not from the two reports it explains. Whatever the named
causes leave over is the row's residual, reported as `unexplained` with its size.

Also measured, though they make no difference: the requests Claude Code recorded twice that
both tools bill once (`duplicate_summary`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..metrics._prices import known_prices, usage_cost

FIGURES = ("input", "output", "cache_read", "cache_write", "cost")
"""What a size has: the four token counts (input uncached) and the cost in USD."""

Vector = dict[str, float]
Sizes = dict[str, dict[str, dict[str, Vector]]]
"""report → key → cause → size."""

CAUSES: Mapping[str, str] = {
    "claude-progress-usage": (
        "Claude Code 2.1 streams a subagent's replies into the parent's progress lines "
        "(agent_progress); ccusage's daily report counts each such reply once per "
        "message.id:requestId, so one whose subagent transcript is not there (the file was not "
        "kept) is billed by it and by no other report, nor by ours."
    ),
    "claude-sidechain-replay": (
        "a /btw side question (inline, or an agent-aside_question-* file) replays a parent "
        "reply (the same message.id) under a new requestId before its own answer; ours bills "
        "the reply once, ccusage's session and blocks reports count the replay again when its "
        "timestamp differs from the parent line's (its daily report never does)."
    ),
    "codex-repeated-token-count": (
        "Codex writes a token_count event again without a new request (the same "
        "total_token_usage); @ccusage/codex counts every event's last_token_usage, ours one "
        "request per new cumulative total."
    ),
    "pi-unrecorded-cost": (
        "a pi reply without a recorded cost: @ccusage/pi counts $0 (it never prices), ours "
        "prices it from the table."
    ),
    "unexplained": "a difference none of the causes above accounts for (its size is shown).",
}
"""Why a figure can differ between ccusage and ours, by cause id."""


def zero() -> Vector:
    return dict.fromkeys(FIGURES, 0.0)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def _ms(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- Claude Code ----------------------------------------------------------------------------


def _claude_vector(message: Mapping[str, Any]) -> Vector:
    usage = message["usage"]
    split = usage.get("cache_creation")
    one_hour = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    inp, out = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    read, write = (
        _int(usage.get("cache_read_input_tokens")),
        _int(usage.get("cache_creation_input_tokens")),
    )
    prices = known_prices(str(message.get("model") or ""))
    cost = (
        usage_cost(
            prices,
            input=inp,
            output=out,
            cache_read=read,
            cache_write_5m=write - min(one_hour, write),
            cache_write_1h=min(one_hour, write),
        )
        if prices is not None
        else 0.0
    )
    return {"input": inp, "output": out, "cache_read": read, "cache_write": write, "cost": cost}


def _claude_groups(files: Iterable[Path]) -> dict[tuple[bool, str, str | None], dict[str, Any]]:
    """(sidechain, message.id, requestId) → the line ccusage keeps of that reply: the one
    with the most tokens (the last streamed line), the first of equals."""
    kept: dict[tuple[bool, str, str | None], dict[str, Any]] = {}
    for file in files:
        for record in _records(file):
            message = record.get("message")
            if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
                continue
            mid, rid = message.get("id"), record.get("requestId")
            if not isinstance(mid, str) or _ms(record.get("timestamp")) is None:
                continue
            key = (record.get("isSidechain") is True, mid, rid if isinstance(rid, str) else None)
            total = sum(_claude_vector(message)[n] for n in FIGURES[:4])
            best = kept.get(key)
            if best is None or total > best["total"]:
                kept[key] = {"total": total, "record": record}
    return kept


def claude_replays_ccusage_counts(session_files: Sequence[Path]) -> list[tuple[float, Vector]]:
    """The sidechain replays of one session (its main file and subagent files) that
    ccusage's session and blocks reports count: a sidechain reply whose message.id a main
    reply has, under another requestId, at another timestamp than that main reply's kept
    line. (timestamp in ms, size) each."""
    groups = _claude_groups(session_files)
    main = {mid: group for (side, mid, _), group in groups.items() if not side}
    main_requests = {mid: rid for (side, mid, rid) in groups if not side}
    out: list[tuple[float, Vector]] = []
    for (side, mid, rid), group in groups.items():
        if not side or mid not in main or main_requests[mid] == rid:
            continue
        record = group["record"]
        when = _ms(record["timestamp"])
        if when is not None and when != _ms(main[mid]["record"]["timestamp"]):
            out.append((when, _claude_vector(record["message"])))
    return out


def session_files(main: Path) -> list[Path]:
    """A Claude Code main file and its subagent files (plain and Workflow agents)."""
    folder = main.with_suffix("") / "subagents"
    return [main, *sorted(folder.rglob("agent-*.jsonl"))] if folder.is_dir() else [main]


def claude_progress_only(session_files: Sequence[Path]) -> list[tuple[str, Vector]]:
    """Replies of one session that only `agent_progress` lines carry (no transcript line has
    their message.id and requestId), the fullest line of each: (UTC day, size)."""
    transcript = {(mid, rid) for _, mid, rid in _claude_groups(session_files)}
    progress: dict[tuple[str, str | None], tuple[float, str, dict[str, Any]]] = {}
    for file in session_files:
        for record in _records(file):
            data = record.get("data")
            outer = data.get("message") if isinstance(data, dict) else None
            inner = outer.get("message") if isinstance(outer, dict) else None
            if record.get("type") != "progress" or not isinstance(outer, dict):
                continue
            if not isinstance(inner, dict):
                continue
            if not isinstance(inner.get("usage"), dict) or not isinstance(inner.get("id"), str):
                continue
            rid = outer.get("requestId")
            key = (inner["id"], rid if isinstance(rid, str) else None)
            total = sum(_claude_vector(inner)[n] for n in FIGURES[:4])
            day = str(outer.get("timestamp") or record.get("timestamp", ""))[:10]
            if key not in progress or total > progress[key][0]:
                progress[key] = (total, day, inner)
    return [
        (day, _claude_vector(m)) for key, (_, day, m) in progress.items() if key not in transcript
    ]


def claude_sizes(files: Sequence[Path], block_starts: Sequence[str]) -> Sizes:
    """Sizes of the Claude Code causes per report and key (blocks by their start)."""
    sizes: Sizes = {"daily": {}, "session": {}, "blocks": {}}
    starts = sorted(block_starts)
    for main in files:
        for day, vector in claude_progress_only(session_files(main)):
            _add(sizes["daily"], day, "claude-progress-usage", vector)
        for when, vector in claude_replays_ccusage_counts(session_files(main)):
            _add(sizes["session"], main.stem, "claude-sidechain-replay", vector)
            block = _block_of(starts, when)
            if block is not None:
                _add(sizes["blocks"], block, "claude-sidechain-replay", vector)
    return sizes


def _block_of(starts: Sequence[str], when: float) -> str | None:
    found = None
    for start in starts:
        ms = _ms(start)
        if ms is not None and ms <= when:
            found = start
    return found


# -- Codex ------------------------------------------------------------------------------------


def codex_sizes(files: Sequence[Path]) -> Sizes:
    """Per file and day, the token_count events @ccusage/codex counts and ours does not
    (a repeated cumulative total, or no input or output), priced at the rollout's model."""
    sizes: Sizes = {"daily": {}, "session": {}}
    for file in files:
        previous: Any = None
        model = _first_model(file)
        for record in _records(file):
            payload = record.get("payload")
            if not isinstance(payload, dict):
                continue
            if record.get("type") == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if record.get("type") != "event_msg" or payload.get("type") != "token_count":
                continue
            if not isinstance(last, dict):
                continue
            cumulative = info.get("total_token_usage") if isinstance(info, dict) else None
            repeated = cumulative is not None and cumulative == previous
            if not repeated:
                previous = cumulative
            inp, out = _int(last.get("input_tokens")), _int(last.get("output_tokens"))
            cached = min(_int(last.get("cached_input_tokens")), inp)
            theirs = bool(inp or cached or out or _int(last.get("reasoning_output_tokens")))
            ours = not repeated and bool(inp or out)
            if not theirs or ours:
                continue
            prices = known_prices(model)
            cost = (
                usage_cost(
                    prices, input=inp - cached, output=out, cache_read=cached, cache_write_5m=0
                )
                if prices is not None
                else 0.0
            )
            vector = {
                "input": inp - cached,
                "output": out,
                "cache_read": cached,
                "cache_write": 0,
                "cost": cost,
            }
            day = str(record.get("timestamp", ""))[:10]
            _add(sizes["daily"], day, "codex-repeated-token-count", vector)
            _add(sizes["session"], file.stem, "codex-repeated-token-count", vector)
    return sizes


def _first_model(file: Path) -> str | None:
    """The model of the rollout's first `turn_context` (what an event before it runs on)."""
    for record in _records(file):
        payload = record.get("payload")
        if record.get("type") == "turn_context" and isinstance(payload, dict):
            model = payload.get("model")
            return model if isinstance(model, str) else None
    return None


# -- pi ---------------------------------------------------------------------------------------


def pi_sizes(priced: Mapping[str, Mapping[str, float]]) -> Sizes:
    """The cost ours priced for replies without a recorded cost, per report and key
    (`priced`: report → key → that cost, from our rows whose cost_source is "priced")."""
    sizes: Sizes = {}
    for report, keys in priced.items():
        for key, cost in keys.items():
            if cost:
                vector = {**zero(), "cost": -cost}
                _add(sizes.setdefault(report, {}), key, "pi-unrecorded-cost", vector)
    return sizes


# -- explaining a row -------------------------------------------------------------------------


def _add(
    table: dict[str, dict[str, Vector]], key: str, cause: str, vector: Mapping[str, float]
) -> None:
    size = table.setdefault(key, {}).setdefault(cause, zero())
    for name in FIGURES:
        size[name] += float(vector.get(name, 0.0))


def explain(
    theirs: Mapping[str, float], ours: Mapping[str, float], sizes: Mapping[str, Vector]
) -> tuple[tuple[str, ...], Vector]:
    """The causes of (theirs − ours) and the residual they leave; "unexplained" is among the
    causes when the residual is not zero (tokens exactly, the cost to a billionth)."""
    named = [c for c, size in sizes.items() if any(size[n] for n in FIGURES)]
    residual = {
        n: float(theirs.get(n, 0.0)) - float(ours.get(n, 0.0)) - sum(sizes[c][n] for c in named)
        for n in FIGURES
    }
    scale = max(1.0, abs(float(theirs.get("cost", 0.0))), abs(float(ours.get("cost", 0.0))))
    left = any(residual[n] for n in FIGURES[:4]) or not math.isclose(
        residual["cost"], 0.0, abs_tol=1e-9 * scale
    )
    return (*named, *(["unexplained"] if left else [])), residual


def duplicate_summary(duplicates: Iterable[Mapping[str, Any]]) -> dict[str, Vector]:
    """reason → {requests, and the figures} of the requests ours did not bill again."""
    out: dict[str, Vector] = defaultdict(lambda: {"requests": 0.0, **zero()})
    for row in duplicates:
        total = out[str(row["reason"])]
        total["requests"] += 1
        for name in FIGURES:
            value = row.get(name)
            if isinstance(value, (int, float)) and not (
                isinstance(value, float) and math.isnan(value)
            ):
                total[name] += float(value)
    return dict(out)

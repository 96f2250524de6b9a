"""Usage and cost reports (`usage_df`, `usage_report`, `musepi-lab usage`).

Expected values come from small independent parsers of the raw JSONL written here (Claude Code:
the last line of each streamed reply; Codex: one request per new cumulative total; pi: every
assistant message's usage), from ccusage's block rule restated here, and from hand-made files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _corpus import CORPUS, REPO_ROOT, needs_corpus
from _raw import jsonl_records

from musepi_lab.analysis import billing_blocks, problems_of, usage_df, usage_report
from musepi_lab.cli import main
from musepi_lab.metrics import MODEL_PRICES, PRICES_DATE, PRICES_SOURCE, known_prices

KINDS = ("input", "output", "cache_read", "cache_write")
SAMPLE = REPO_ROOT / "datasets" / "sample"


def claude_last_line_totals(main_file: Path) -> dict[str, int]:
    """Sum of each streamed reply's last line (per file and message id), subagents included."""
    files = [main_file, *sorted((main_file.with_suffix("") / "subagents").glob("*.jsonl"))]
    totals = dict.fromkeys(KINDS, 0)
    for file in files:
        last: dict[Any, dict[str, Any]] = {}
        for n, record in enumerate(jsonl_records(file)):
            message = record.get("message")
            if record.get("type") != "assistant" or not isinstance(message, dict):
                continue
            if not isinstance(message.get("usage"), dict):
                continue
            key = (record.get("isSidechain") is True, message.get("id") or n)
            last[key] = message["usage"]
        for u in last.values():
            totals["input"] += u.get("input_tokens", 0)
            totals["output"] += u.get("output_tokens", 0)
            totals["cache_read"] += u.get("cache_read_input_tokens", 0)
            totals["cache_write"] += u.get("cache_creation_input_tokens", 0)
    return totals


def codex_new_total_requests(path: Path) -> dict[str, int]:
    """Sum of `last_token_usage` over token_count events whose cumulative total is new."""
    totals = dict.fromkeys(KINDS, 0)
    previous: Any = None
    for record in jsonl_records(path):
        payload = record.get("payload")
        if record.get("type") != "event_msg" or not isinstance(payload, dict):
            continue
        info = payload.get("info")
        if payload.get("type") != "token_count" or not isinstance(info, dict):
            continue
        last, cumulative = info.get("last_token_usage"), info.get("total_token_usage")
        if not isinstance(last, dict) or (cumulative is not None and cumulative == previous):
            continue
        previous = cumulative
        if not (last.get("input_tokens") or last.get("output_tokens")):
            continue
        cached = last.get("cached_input_tokens", 0)
        totals["input"] += last.get("input_tokens", 0) - cached
        totals["output"] += last.get("output_tokens", 0)
        totals["cache_read"] += cached
    return totals


def pi_totals(path: Path) -> tuple[dict[str, int], float]:
    totals = dict.fromkeys(KINDS, 0)
    cost = 0.0
    for record in jsonl_records(path):
        message = record.get("message")
        if record.get("type") != "message" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if message.get("role") != "assistant" or not isinstance(usage, dict):
            continue
        for ours, theirs in zip(KINDS, ("input", "output", "cacheRead", "cacheWrite"), strict=True):
            totals[ours] += usage.get(theirs, 0)
        cost += (usage.get("cost") or {}).get("total", 0)
    return totals, cost


def _sums(frame: pd.DataFrame) -> dict[str, int]:
    return {k: int(frame[k].sum()) for k in KINDS}


@needs_corpus
@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "claude-code").glob("*.jsonl")))
def test_claude_code_requests_match_the_last_streamed_line(name: str) -> None:
    path = CORPUS / "claude-code" / name
    frame = usage_df(path, strict=True)
    assert _sums(frame) == claude_last_line_totals(path)
    assert frame["cost_source"].eq("priced").all()


@needs_corpus
@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "codex").glob("*.jsonl")))
def test_codex_requests_are_per_new_cumulative_total(name: str) -> None:
    path = CORPUS / "codex" / name
    frame = usage_df(path, strict=True)
    assert _sums(frame) == codex_new_total_requests(path)
    # Request by request, in file order: the deltas of the cumulative `total_token_usage`.
    deltas = codex_cumulative_deltas(path)
    got = frame.sort_values("line")[["input", "cache_read", "output"]]
    assert [tuple(int(v) for v in row) for row in got.itertuples(index=False)] == deltas


def codex_cumulative_deltas(path: Path) -> list[tuple[int, int, int]]:
    """(uncached input, cached input, output) of each request, as the difference between
    consecutive distinct `total_token_usage` values (never `last_token_usage`)."""
    previous: dict[str, int] = {}
    out = []
    for record in jsonl_records(path):
        payload = record.get("payload")
        info = payload.get("info") if isinstance(payload, dict) else None
        if record.get("type") != "event_msg" or not isinstance(info, dict):
            continue
        total = info.get("total_token_usage")
        if payload.get("type") != "token_count" or not isinstance(total, dict) or total == previous:
            continue
        delta = {k: total.get(k, 0) - previous.get(k, 0) for k in total}
        previous = total
        if delta.get("input_tokens", 0) or delta.get("output_tokens", 0):
            cached = delta.get("cached_input_tokens", 0)
            out.append((delta["input_tokens"] - cached, cached, delta.get("output_tokens", 0)))
    return out


@needs_corpus
@pytest.mark.parametrize(
    "parts",
    [
        ("pi", "large-session.jsonl"),
        ("pi", "earendil-works-pi", "prompt-cache-replay-session.jsonl"),
    ],
)
def test_pi_requests_carry_the_recorded_usage_and_cost(parts: tuple[str, ...]) -> None:
    path = CORPUS.joinpath(*parts)
    frame = usage_df(path, strict=True)
    totals, recorded = pi_totals(path)
    assert _sums(frame) == totals
    assert frame["recorded_cost"].sum() == pytest.approx(recorded)
    assert (frame["cost_source"] == "recorded").sum() == (frame["recorded_cost"] > 0).sum()


def test_price_table_states_its_source_and_date_and_has_no_default() -> None:
    assert "anthropic.com/pricing" in PRICES_SOURCE and "openai.com" in PRICES_SOURCE
    assert len(PRICES_DATE) == 10 and PRICES_DATE[4] == "-"
    assert known_prices("claude-sonnet-4-20250514") is MODEL_PRICES["claude-sonnet-4"]
    assert known_prices("acme-9000") is None


# -- hand-made sessions ----------------------------------------------------------------------


def _pi_file(
    path: Path, replies: list[tuple[str, str, dict[str, Any]]], broken: bool = False
) -> Path:
    """A pi session of assistant replies (timestamp, model, usage); optionally a cut line."""
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": replies[0][0], "cwd": "/"}]
    parent = None
    for n, (ts, model, usage) in enumerate(replies):
        entry_id = f"e{n:02d}"
        full = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, **usage}
        full["totalTokens"] = sum(full[k] for k in ("input", "output", "cacheRead", "cacheWrite"))
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "model": model,
            "provider": "test",
            "usage": full,
        }
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": ts,
                "message": message,
            }
        )
        parent = entry_id
    text = "\n".join(json.dumps(r) for r in lines) + "\n"
    if broken:
        text += '{"type":"message","id":"cut","parentId":"e00","timest'
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_model_is_flagged_not_priced(tmp_path: Path) -> None:
    path = _pi_file(
        tmp_path / "s.jsonl",
        [
            ("2026-01-01T10:00:00.000Z", "claude-sonnet-4-5", {"input": 1000, "output": 100}),
            ("2026-01-01T10:01:00.000Z", "acme-9000", {"input": 1000, "output": 100}),
        ],
    )
    frame = usage_df(path, strict=True)
    assert frame["cost_source"].tolist() == ["priced", "unpriced"]
    assert frame["cost"].iloc[0] == pytest.approx((1000 * 3.0 + 100 * 15.0) / 1e6)
    assert pd.isna(frame["cost"].iloc[1])
    assert frame.attrs["unpriced_models"] == ["acme-9000"]
    report = usage_report(frame, "daily", per_model=False)
    assert report["unpriced"].tolist() == [1]
    assert report["input"].tolist() == [2000]


def test_truncated_line_is_reported_and_nothing_valid_is_lost(tmp_path: Path) -> None:
    replies = [("2026-01-01T10:00:00.000Z", "gpt-4o", {"input": 5, "output": 7})]
    path = _pi_file(tmp_path / "cut.jsonl", replies, broken=True)
    frame = usage_df(path)
    problems = problems_of(frame)
    assert len(frame) == 1 and int(frame["output"].sum()) == 7
    assert problems and problems[0].path.endswith("cut.jsonl") and problems[0].line == 3


def _ccusage_blocks(times: list[pd.Timestamp], hours: int = 5) -> list[pd.Timestamp]:
    """ccusage 18.0.11 identifySessionBlocks, restated: floor to the hour; a new block when
    more than `hours` after the block start or after the previous entry."""
    span = pd.Timedelta(hours=hours)
    out: list[pd.Timestamp] = []
    start = last = None
    for t in sorted(times):
        if start is None or t - start > span or t - last > span:
            start = t.replace(minute=0, second=0, microsecond=0, nanosecond=0)
        out.append(start)
        last = t
    return out


def test_billing_blocks_follow_ccusage_rule() -> None:
    times = pd.to_datetime(
        [
            "2026-01-01T09:59:00Z",  # block 09:00
            "2026-01-01T13:59:00Z",  # 4h59 after the start: same block
            "2026-01-01T14:00:01Z",  # 5h00m01 after 09:00: new block 14:00
            "2026-01-01T19:00:00Z",  # 5h exactly after the previous request: same block
            "2026-01-02T02:30:00Z",  # a gap over 5 h: new block 02:00
        ],
        utc=True,
    )
    series = pd.Series(times).sample(frac=1, random_state=3)  # order does not matter
    got = billing_blocks(series).sort_index()
    assert list(got) == _ccusage_blocks(list(times))
    assert got.nunique() == 3


def test_empty_folder_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = usage_df(tmp_path)
    problems = problems_of(frame)
    assert frame.empty and problems == []
    assert main(["usage", str(tmp_path)]) == 1
    assert "no billed requests found" in capsys.readouterr().err


def test_cli_json_report_options_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _pi_file(
        tmp_path / "s.jsonl",
        [
            ("2026-01-01T23:30:00.000Z", "gpt-4o", {"input": 10, "output": 1}),
            ("2026-01-02T00:30:00.000Z", "gpt-4o", {"input": 20, "output": 2}),
            ("2026-01-03T00:30:00.000Z", "acme-9000", {"input": 40, "output": 4}),
        ],
    )
    assert main(["usage", "daily", "--json", str(path), "--since", "20260102"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert [(r["key"], r["input"]) for r in document["rows"]] == [
        ("2026-01-02", 20),
        ("2026-01-03", 40),
    ]
    assert document["unpriced_models"] == ["acme-9000"]
    assert "no price for acme-9000" in captured.err
    # In UTC+2 the first reply falls on the 2nd too.
    assert main(["usage", "--json", "--timezone", "Europe/Athens", "--no-models", str(path)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["key"], r["requests"]) for r in rows] == [("2026-01-02", 2), ("2026-01-03", 1)]
    assert main(["usage", "blocks", str(path)]) == 0
    table = capsys.readouterr().out
    assert "2026-01-01T23:00:00Z" in table and "2026-01-03T00:00:00Z" in table


def test_a_request_without_an_entry_timestamp_uses_its_message_time(tmp_path: Path) -> None:
    path = _pi_file(tmp_path / "s.jsonl", [("2026-01-01T10:00:00.000Z", "gpt-4o", {"input": 3})])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    del records[1]["timestamp"]
    records[1]["message"]["timestamp"] = 1767261600000  # 2026-01-01T10:00:00Z
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    frame = usage_df(path)
    assert frame["timestamp"].tolist() == [pd.Timestamp("2026-01-01T10:00:00Z")]


def test_cli_bad_arguments_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", "hourly", str(SAMPLE)]) == 2
    assert "the reports are daily, weekly, monthly, session, blocks" in capsys.readouterr().err
    assert main(["usage", "--since", "2026-3-1", str(SAMPLE)]) == 2
    assert "YYYYMMDD" in capsys.readouterr().err
    assert main(["usage"]) == 2
    assert "at least one session file or folder" in capsys.readouterr().err


@needs_corpus
def test_codex_requests_without_an_assistant_item_are_billed_and_noted(tmp_path: Path) -> None:
    """A rollout cut down to its metadata, user messages and token_count events: no item
    answers any request, yet every request is a usage row (from its token_count event), and
    the report notes how many have no reply."""
    source = sorted((CORPUS / "codex").glob("*.jsonl"))[0]
    kept = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record["type"] != "response_item" or payload.get("role") == "user":
            kept.append(line)
    path = tmp_path / source.name
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    frame = usage_df(path)
    problems = problems_of(frame)
    expected = len(codex_cumulative_deltas(path))
    assert expected > 0
    assert len(frame) == expected
    assert _sums(frame) == codex_new_total_requests(path)
    [note] = [p for p in problems if p.kind == "usage-without-reply"]
    assert note.path == str(path)
    assert f"{expected} of {expected} Codex requests" in note.message
    assert len(usage_df(path, strict=True)) == expected


def test_gemini_cli_requests_are_priced_from_the_raw_token_counts() -> None:
    # The last record of each Gemini CLI message id is its final form (the CLI rewrites a
    # message by appending it again); Gemini's `input` includes the `cached` tokens, and
    # thoughts are billed as output. Prices: the google provider's in pi-ai 0.58.3's model
    # table (gemini-2.5-flash: 0.30 input, 0.075 cached, 2.50 output per million).
    folder = REPO_ROOT / "tests" / "data" / "gemini-cli-run"
    final: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.rglob("session-*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("type") == "gemini" and isinstance(record.get("tokens"), dict):
                final[record["id"]] = record
    assert final and {r["model"] for r in final.values()} == {"gemini-2.5-flash"}
    expected = 0.0
    for record in final.values():
        t = record["tokens"]
        uncached = t["input"] - t["cached"] + t.get("tool", 0)
        expected += (
            uncached * 0.30 + t["cached"] * 0.075 + (t["output"] + t["thoughts"]) * 2.5
        ) / 1e6
    frame = usage_df(folder)
    errors = problems_of(frame)
    assert errors == [] and len(frame) == len(final)
    assert set(frame["cost_source"]) == {"priced"}
    assert frame["cost"].sum() == pytest.approx(expected, rel=1e-12)

"""`usage` beyond the three agents (issue 29 item 8): SWE-agent's `info.model_stats` and
OpenHands' `accumulated_cost` are reported as the harness's own cost, and a `weekly` report
keyed as ccusage 18.0.11 keys it (`getDateWeek`: the latest week-start day on or before).

Expected values are read from the raw files with plain `json`; week starts are computed here
with `datetime`.
"""

from __future__ import annotations

import json
import math
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file
from test_usage import _pi_file

from musepi_lab.analysis import usage_df, usage_report
from musepi_lab.cli import main


def _traj(path: Path, stats: dict[str, Any]) -> Path:
    doc = {
        "trajectory": [],
        "history": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Looking.", "action": "ls"},
            {"role": "user", "content": "a.py"},
        ],
        "info": {"exit_status": "submitted", "model_stats": stats},
    }
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def test_a_swe_agent_trajectory_reports_its_model_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = {"instance_cost": 0.8125, "tokens_sent": 51_200, "tokens_received": 930, "api_calls": 7}
    path = _traj(tmp_path / "task.traj", stats)
    frame = usage_df(path, strict=True)
    (row,) = frame.to_dict(orient="records")
    assert row["cost_source"] == "harness" and row["cost"] == pytest.approx(0.8125)
    assert (row["input"], row["output"], row["requests"]) == (51_200, 930, 7)
    report = usage_report(frame, "session", per_model=False)
    assert report["requests"].tolist() == [7] and report["harness"].tolist() == [7]
    # Once "no billed requests" (exit 1); now the session's own figures.
    assert main(["usage", "session", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "$0.81" in out and "51,200" in out and "harness's own total" in err


def test_a_trajectory_that_records_nothing_adds_no_row(tmp_path: Path) -> None:
    stats = {"instance_cost": 0, "tokens_sent": 0, "tokens_received": 0, "api_calls": 13}
    frame = usage_df(_traj(tmp_path / "replayed.traj", stats), strict=True)
    assert frame.empty


def test_the_corpus_trajectory_with_cost() -> None:
    path = corpus_file("swe-agent", "gpt4__pydicom__pydicom-1458.traj")
    stats = json.loads(path.read_text(encoding="utf-8"))["info"]["model_stats"]
    (row,) = usage_df(path, strict=True).to_dict(orient="records")
    assert row["cost"] == pytest.approx(stats["instance_cost"])
    assert row["input"] == stats["tokens_sent"] and row["output"] == stats["tokens_received"]
    assert row["requests"] == stats["api_calls"]


def _openhands_copy(tmp_path: Path, cost: float) -> tuple[Path, dict[str, Any]]:
    source = corpus_file("openhands", "multi_swe_bench_examples_output.jsonl")
    first = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    first["metrics"]["accumulated_cost"] = cost
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(first) + "\n", encoding="utf-8")
    return path, first


def _response_usage(instance: dict[str, Any]) -> tuple[int, int]:
    """Prompt and completion tokens over the instance's distinct model responses."""
    seen: dict[str, tuple[int, int]] = {}
    for event in instance["history"]:
        meta = event.get("tool_call_metadata") if isinstance(event, dict) else None
        response = meta.get("model_response") if isinstance(meta, dict) else None
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            seen[response.get("id") or str(len(seen))] = (
                usage.get("prompt_tokens") or 0,
                usage.get("completion_tokens") or 0,
            )
    return sum(p for p, _ in seen.values()), sum(c for _, c in seen.values())


def test_openhands_accumulated_cost_is_the_sessions_cost_counted_once(tmp_path: Path) -> None:
    path, instance = _openhands_copy(tmp_path, 2.5)
    frame = usage_df(path, strict=True)
    assert set(frame["cost_source"]) == {"harness"}
    assert frame["cost"].sum() == pytest.approx(2.5)
    prompt, completion = _response_usage(instance)
    assert frame["input"].sum() + frame["cache_read"].sum() == prompt
    assert frame["output"].sum() == completion
    report = usage_report(frame, "session", per_model=False)
    assert report["cost"].tolist() == [pytest.approx(2.5)]
    assert report["harness"].tolist() == report["requests"].tolist() == [len(frame) - 1]


def test_openhands_with_no_recorded_cost_keeps_its_request_rows(tmp_path: Path) -> None:
    path, instance = _openhands_copy(tmp_path, 0.0)
    frame = usage_df(path, strict=True)
    assert "harness" not in set(frame["cost_source"])
    assert frame["requests"].tolist() == [1] * len(frame)
    assert frame["output"].sum() == _response_usage(instance)[1]


def _week_start(day: date, first: int) -> date:
    """`first` 0 = Sunday … 6 = Saturday (JavaScript's getDay numbering)."""
    js_day = (day.weekday() + 1) % 7
    return day - timedelta(days=(js_day - first) % 7)


def test_weekly_keys_are_the_weeks_first_day(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    days = ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02", "2026-03-09"]
    replies = [(f"{d}T10:00:00.000Z", "gpt-4o", {"input": 1000, "output": 10}) for d in days]
    frame = usage_df(_pi_file(tmp_path / "s.jsonl", replies), strict=True)
    for name, first in (("sunday", 0), ("monday", 1)):
        report = usage_report(frame, "weekly", per_model=False, start_of_week=name)
        expected: dict[str, int] = {}
        for d in days:
            key = _week_start(date.fromisoformat(d), first).isoformat()
            expected[key] = expected.get(key, 0) + 1
        assert dict(zip(report["key"], report["requests"], strict=True)) == expected
    assert main(["usage", "weekly", "--start-of-week", "monday", str(tmp_path)]) == 0
    assert "2026-02-23" in capsys.readouterr().out
    assert not math.isnan(float(frame["cost"].sum()))

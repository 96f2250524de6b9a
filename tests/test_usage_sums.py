"""The pandas-free usage sums (`analysis._usage_sums`, what `musepi-lab usage` prints) against
the pandas reports, the reference: `report_rows` of `usage_rows`' rows must equal
`report_records(usage_report(usage_df(...)))` (keys, models, every sum, exactly), for every
report and option, on every corpus folder with usage; and the command imports no pandas."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, REPO_ROOT, needs_corpus

from musepi_lab.analysis._problems import problems_of
from musepi_lab.analysis._usage import format_report, report_records, usage_df, usage_report
from musepi_lab.analysis._usage_read import usage_rows
from musepi_lab.analysis._usage_sums import SUMS, format_table, moment, report_rows
from musepi_lab.cli import main

FOLDERS = ("claude-code", "codex", "pi", "swe-agent", "openhands", "gemini-cli")
OPTIONS = [
    {},
    {"per_model": False},
    {"timezone": "Europe/Paris"},
    {"timezone": "America/Los_Angeles", "start_of_week": "monday"},
    {"since": "20250101", "until": "2026-12-31"},
]


def same_rows(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    """Equal rows; costs to the last bits of a double (fsum against pandas' Kahan sum)."""
    if [{**r, "cost": None} for r in got] != [{**r, "cost": None} for r in expected]:
        return False
    return all(
        math.isclose(a["cost"], b["cost"], rel_tol=1e-12, abs_tol=1e-15)
        for a, b in zip(got, expected, strict=True)
    )


@needs_corpus
@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("by", ["daily", "weekly", "monthly", "session", "blocks"])
def test_sums_equal_the_pandas_report(folder: str, by: str) -> None:
    path = CORPUS / folder
    if not path.is_dir():
        pytest.skip(f"no {path}")
    records, duplicates, problems = usage_rows(path)
    frame = usage_df(path)
    frame_problems = problems_of(frame)
    assert len(duplicates) == len(frame.attrs["duplicate_requests"])
    assert len(records) == len(frame)
    assert [str(p) for p in problems] == [str(p) for p in frame_problems]
    for options in OPTIONS:
        expected = report_records(usage_report(frame, by, **options))  # type: ignore[arg-type]
        assert same_rows(report_rows(records, by, **options), expected), options


@pytest.mark.parametrize(
    "text",
    ["2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05+02:00", "2026-01-02 03:04:05", "nope"],
)
def test_timestamps_read_as_pandas_reads_them(text: str) -> None:
    import pandas as pd

    expected = pd.to_datetime(pd.Series([text]), utc=True, format="ISO8601", errors="coerce")[0]
    got = moment(text)
    assert (got is None) == pd.isna(expected)
    if got is not None:
        assert pd.Timestamp(got) == expected


@needs_corpus
def test_command_json_and_table_are_the_pandas_ones(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "claude-code"
    assert main(["usage", "daily", "--json", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    frame = usage_df(path)
    assert same_rows(document["rows"], report_records(usage_report(frame, "daily")))
    assert document["duplicate_requests"] == len(frame.attrs["duplicate_requests"])
    assert main(["usage", "monthly", str(path)]) == 0
    assert capsys.readouterr().out.strip() == format_report(usage_report(frame, "monthly"))
    rows = report_rows(usage_rows(path)[0], "session", per_model=False)
    names = ["key", *SUMS]
    assert format_table(rows, names) == format_report(
        usage_report(frame, "session", per_model=False)
    )


@needs_corpus
def test_usage_command_imports_no_pandas(tmp_path: Path) -> None:
    code = (
        "import sys; from musepi_lab.cli import main; "
        f"code = main(['usage', '--json', {str(CORPUS / 'claude-code')!r}]); "
        "print('pandas' in sys.modules, code, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=120,
    )
    assert proc.stderr.strip().splitlines()[-1] == "False 0"
    assert json.loads(proc.stdout)["rows"]

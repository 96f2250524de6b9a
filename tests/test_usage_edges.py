"""`usage` on records and arguments it used to take silently (issue 26, items 11 and 12).

A negative token count or a negative recorded cost is a problem of that record (file and
line, counted here from the raw lines), never quietly read as 0 or replaced by a table
price; the rest of the frame is kept. `--timezone ''`, a day that does not exist and a
`--since` after `--until` end with one line naming the cause and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musepi_lab.analysis import problems_of, usage_df
from musepi_lab.cli import main
from musepi_lab.session import SessionReadError


def pi_file(path: Path, usages: list[dict]) -> Path:
    """A pi session of one assistant reply per usage (claude-sonnet-4-5, priced)."""
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T10:00:00Z"}]
    parent = None
    for n, usage in enumerate(usages):
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "model": "claude-sonnet-4-5",
            "provider": "anthropic",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, **usage},
        }
        entry = {"type": "message", "id": f"e{n}", "parentId": parent, "message": message}
        lines.append({**entry, "timestamp": f"2026-01-01T10:0{n}:00.000Z"})
        parent = f"e{n}"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def line_of(path: Path, entry_id: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, text in enumerate(lines, 1) if json.loads(text).get("id") == entry_id)


# -- item 11 ---------------------------------------------------------------------------------
def test_negative_counts_and_costs_are_problems_of_their_record(tmp_path: Path) -> None:
    path = pi_file(
        tmp_path / "s.jsonl",
        [
            {"input": 1000, "output": 100},
            {"input": -500, "output": 100},
            {"input": 1000, "output": 100, "cost": {"total": -0.25}},
            {"input": 2000, "output": 10, "cacheRead": -7},
        ],
    )
    frame = usage_df(path)
    problems = problems_of(frame)
    negative = [p for p in problems if p.kind == "negative-usage"]
    assert [(p.path, p.line) for p in negative] == [
        (str(path), line_of(path, "e1")),
        (str(path), line_of(path, "e2")),
        (str(path), line_of(path, "e3")),
    ]
    assert "input" in negative[0].message and "-500" in negative[0].message
    assert "cost" in negative[1].message and "-0.25" in negative[1].message
    assert "cacheRead" in negative[2].message
    assert len(frame) == 4  # every record kept, as read
    with pytest.raises(SessionReadError, match="negative"):
        usage_df(path, strict=True)


def test_the_usage_command_prints_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pi_file(tmp_path / "s.jsonl", [{"input": -5, "output": 3}, {"input": 9, "output": 1}])
    assert main(["usage", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"{path}:{line_of(path, 'e0')}" in err and "negative" in err


# -- item 12: usage arguments ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "cause"),
    [
        (["--timezone", ""], "time zone"),
        (["--timezone", "Mars/Olympus"], "time zone"),
        (["--since", "20261301"], "20261301"),
        (["--until", "2026-02-30"], "2026-02-30"),
        (["--since", "20260305", "--until", "20260301"], "after"),
    ],
    ids=["empty-zone", "unknown-zone", "month-13", "february-30", "since-after-until"],
)
def test_usage_arguments_that_keep_nothing_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], cause: str
) -> None:
    # The file holds a problem (negative usage) that a read would print: the arguments are
    # refused before anything is read, so the error is the only line.
    path = pi_file(tmp_path / "s.jsonl", [{"input": -5, "output": 3}, {"input": 9, "output": 1}])
    assert main(["usage", str(path), *options]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("musepi-lab: ") and cause in line

"""Frames are frames: every `*_df` returns the DataFrame, with one signature; the problems
met travel on it (`frame.attrs["problems"]`, `problems_of`); `strict=True` raises; a column
whose extractor fails gives a `column-error` problem instead of an exception.

Expected rows and problems come from the file written here (its lines counted by hand).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import musepi_lab as ml
from musepi_lab.analysis import (
    compactions_df,
    context_composition_df,
    entries_df,
    messages_df,
    problems_of,
    replay_composition_df,
    sessions_df,
    tool_calls_df,
    usage_df,
)
from musepi_lab.analysis._columns import ENTRY_COLUMNS, SESSION_COLUMNS, Column
from musepi_lab.probes import probes_df
from musepi_lab.session import ReadProblem, SessionReadError

FRAME_FUNCTIONS: list[Callable[..., Any]] = [
    entries_df,
    messages_df,
    tool_calls_df,
    compactions_df,
    sessions_df,
    usage_df,
    context_composition_df,
    replay_composition_df,
    probes_df,
]

BAD = (
    '{"type":"session","version":3,"id":"bad-1"}\n'
    '{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}\n'
    '{"type":"message","id":"u2",\n'
    '{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[]}}\n'
)


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text(BAD, encoding="utf-8")
    return path


@pytest.mark.parametrize("function", FRAME_FUNCTIONS, ids=lambda f: f.__name__)
def test_one_signature(function: Callable[..., Any]) -> None:
    """`(source, *, strict=False, ...)`: one positional source, everything else by keyword."""
    parameters = list(inspect.signature(function).parameters.values())
    assert parameters[0].name == "source"
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameters[1].name == "strict" and parameters[1].default is False
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:])


@pytest.mark.parametrize("function", FRAME_FUNCTIONS, ids=lambda f: f.__name__)
def test_every_frame_function_returns_the_frame_and_its_problems(
    function: Callable[..., Any], bad: Path
) -> None:
    frame = function(bad)
    assert isinstance(frame, pd.DataFrame)
    frame.head()  # the call the tuple made fail
    problems = problems_of(frame)
    assert [(p.path, p.line, p.kind) for p in problems] == [(str(bad), 3, "malformed-json")]
    with pytest.raises(SessionReadError, match=r"bad\.jsonl:3"):
        function(bad, strict=True)


def test_problems_survive_selection_copy_and_parquet(bad: Path, tmp_path: Path) -> None:
    frame = entries_df(bad)
    expected = problems_of(frame)
    assert len(expected) == 1
    assert problems_of(frame.head(1)) == expected
    assert problems_of(frame[frame["type"] == "message"]) == expected
    assert problems_of(frame[["entry_id"]].copy()) == expected
    frame.to_parquet(tmp_path / "entries.parquet")
    assert problems_of(pd.read_parquet(tmp_path / "entries.parquet")) == expected


def test_a_clean_read_has_an_empty_problem_list() -> None:
    sample = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"
    assert problems_of(sessions_df(sample)) == []
    assert problems_of(sessions_df(sample, strict=True)) == []


def test_a_frame_without_a_problems_record_is_refused() -> None:
    with pytest.raises(KeyError, match="no problems record"):
        problems_of(pd.DataFrame({"a": [1]}))
    with pytest.raises(TypeError, match="DataFrame"):
        problems_of(([], []))  # type: ignore[arg-type]


def _fails_on_a1(row: Any) -> Any:
    if row.entry.id == "a1":
        raise ValueError("no value here")
    return row.entry.id


FAILING = Column("checked", _fails_on_a1, "string")


@pytest.mark.parametrize("cache", [False, True], ids=["in-memory", "cached"])
def test_a_failing_column_is_a_problem_not_an_exception(
    bad: Path, tmp_path: Path, cache: bool
) -> None:
    cache_dir = tmp_path / "cache" if cache else None
    columns = [*ENTRY_COLUMNS, FAILING]
    frame = entries_df(bad, columns=columns, cache_dir=cache_dir)
    assert frame["entry_id"].tolist() == ["u1", "a1"]  # the row is kept
    assert frame["checked"].tolist()[0] == "u1"
    assert pd.isna(frame["checked"].tolist()[1])  # the failed cell is missing
    kinds = [(p.line, p.kind) for p in problems_of(frame)]
    assert kinds == [(3, "malformed-json"), (4, "column-error")]
    message = problems_of(frame)[1].message
    assert "'checked'" in message and "no value here" in message
    good = bad.parent / "good.jsonl"
    good.write_text("".join(BAD.splitlines(keepends=True)[i] for i in (0, 1, 3)))
    with pytest.raises(SessionReadError, match=r"good\.jsonl:3.*column 'checked'"):
        entries_df(good, columns=columns, strict=True, cache_dir=cache_dir)


def test_a_failing_session_column_names_the_file(bad: Path) -> None:
    def broken(view: Any) -> Any:
        raise RuntimeError("broken")

    frame = sessions_df(bad, columns=[*SESSION_COLUMNS, Column("x", broken)])
    problem = problems_of(frame)[-1]
    assert problem == ReadProblem(
        str(bad), None, "column-error", "column 'x' could not be extracted: RuntimeError: broken"
    )


def test_the_top_level_names() -> None:
    assert ml.problems_of is problems_of
    assert issubclass(ml.SessionReadError, ml.MusepiLabError)

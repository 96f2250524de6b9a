"""One shape for the frames: every `*_df` takes a Session, a file path, a folder or a list of
those, returns the frame (its problems on it, `problems_of`), and says what it expected when
given anything else.

Row counts are counted from the raw JSONL with plain `json`, independent of the readers.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from musepi_lab.analysis import (
    compactions_df,
    context_composition_df,
    entries_df,
    load_sessions,
    messages_df,
    problems_of,
    replay_composition_df,
    sessions_df,
    tool_calls_df,
    usage_df,
)
from musepi_lab.formats import read_session
from musepi_lab.probes import make_probes, probes_df, probes_frame
from musepi_lab.probes._make import probe_point
from musepi_lab.replay import replay_session
from musepi_lab.tokens._composition import COMPOSITION_KINDS

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
FILES = [SAMPLE / "sample-0001.jsonl", SAMPLE / "sample-0002.jsonl"]
EXPECTED = "expects a Session, a path to a session file or folder, or a list of those"


def raw_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def raw_entries(path: Path) -> int:
    return sum(1 for r in raw_records(path) if r.get("type") != "session")


def raw_messages(path: Path) -> int:
    kinds = {"message", "custom_message", "branch_summary", "compaction"}
    return sum(1 for r in raw_records(path) if r.get("type") in kinds)


def raw_tool_calls(path: Path) -> int:
    return sum(
        1
        for r in raw_records(path)
        if r.get("type") == "message" and r["message"].get("role") == "assistant"
        for block in r["message"].get("content") or []
        if isinstance(block, dict) and block.get("type") == "toolCall"
    )


def raw_compactions(path: Path) -> int:
    return sum(1 for r in raw_records(path) if r.get("type") == "compaction")


def raw_usage(path: Path) -> int:
    """Assistant replies that recorded a token count (what `usage_df` bills)."""
    keys = ("input", "output", "cacheRead", "cacheWrite")
    return sum(
        1
        for r in raw_records(path)
        if r.get("type") == "message"
        and r["message"].get("role") == "assistant"
        and any((r["message"].get("usage") or {}).get(k, 0) > 0 for k in keys)
    )


def header_id(path: Path) -> str:
    return str(raw_records(path)[0]["id"])


def composition_rows(path: Path) -> int:
    return 2 * len(COMPOSITION_KINDS)  # `before` and the one strategy asked, `none`


# (frame function, extra arguments, rows one session file gives)
FRAMES: list[tuple[Callable[..., Any], dict[str, Any], Callable[[Path], int]]] = [
    (entries_df, {}, raw_entries),
    (messages_df, {}, raw_messages),
    (tool_calls_df, {}, raw_tool_calls),
    (compactions_df, {}, raw_compactions),
    (sessions_df, {}, lambda _: 1),
    (context_composition_df, {"strategies": ["none"], "budget": 8000}, composition_rows),
    (usage_df, {}, raw_usage),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sessions")
    for file in FILES:  # with their planted facts, which probes read beside the file
        shutil.copy(file, out / file.name)
        facts = file.with_name(file.stem + ".facts.json")
        shutil.copy(facts, out / facts.name)
    return out


@pytest.mark.parametrize(
    ("function", "kwargs", "rows"), FRAMES, ids=lambda f: getattr(f, "__name__", "")
)
def test_every_input_shape_gives_the_same_rows(
    function: Callable[..., Any],
    kwargs: dict[str, Any],
    rows: Callable[[Path], int],
    folder: Path,
) -> None:
    one = FILES[0]
    session = read_session(one)
    by_session = function(session, **kwargs)
    errors = problems_of(by_session)
    assert errors == [] and len(by_session) == rows(one)
    by_path = function(one, **kwargs)
    by_str = function(str(one), strict=True, **kwargs)
    pd.testing.assert_frame_equal(by_session, by_path)
    pd.testing.assert_frame_equal(by_path, by_str)
    by_folder = function(folder, **kwargs)
    errors = problems_of(by_folder)
    assert errors == [] and len(by_folder) == sum(rows(f) for f in FILES)
    by_list = function([session, FILES[1]], **kwargs)
    assert len(by_list) == len(by_folder)
    if "session_id" in by_list:
        assert set(by_list["session_id"]) <= {header_id(f) for f in FILES}


@pytest.mark.parametrize(
    "function",
    [
        entries_df,
        messages_df,
        tool_calls_df,
        compactions_df,
        sessions_df,
        context_composition_df,
        probes_df,
        load_sessions,
    ],
    ids=lambda f: f.__name__,
)
def test_a_wrong_argument_type_says_what_was_expected(function: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match=f"^{function.__name__} {EXPECTED}; got int$"):
        function(42)
    with pytest.raises(TypeError, match=f"^{function.__name__} {EXPECTED}; got dict$"):
        function({"type": "session"})
    with pytest.raises(TypeError, match="whose item 1 is of type float"):
        function([FILES[0], 1.5])


def test_probes_df_makes_the_probes_of_each_session(folder: Path) -> None:
    session = read_session(FILES[0])
    frame = probes_df(session, budget=4000)
    errors = problems_of(frame)
    assert errors == [] and len(frame) > 0
    # The same probes `make_probes` gives at the default point, in the same order.
    from musepi_lab.compaction import CompactionSettings, prepare_compaction
    from musepi_lab.tokens import TokenCounter

    settings = CompactionSettings.musepi().copy_with(keep_recent_tokens=4000)
    prep = prepare_compaction(
        session, settings, TokenCounter("musepi"), leaf_id=probe_point(session)
    )
    assert prep is not None
    pd.testing.assert_frame_equal(frame, probes_frame(make_probes(session, prep)))
    by_path = probes_df(FILES[0], budget=4000, strict=True)
    pd.testing.assert_frame_equal(frame, by_path)
    by_folder = probes_df(folder, budget=4000)
    assert set(by_folder["session_id"]) == {header_id(f) for f in FILES}
    by_list = probes_df([session, FILES[1]], budget=4000)
    assert len(by_list) == len(by_folder)
    # The old form, a list of probes, is `probes_frame`; handing probes to probes_df says so.
    with pytest.raises(TypeError, match="probes_df expects"):
        probes_df(make_probes(session, prep))
    with pytest.raises(TypeError, match="probes_df makes the probes of sessions"):
        probes_frame([session])


def test_replay_composition_df_takes_replays_and_sessions(folder: Path) -> None:
    session = read_session(FILES[0])
    result = replay_session(session, "none", window=200_000)
    from_replay = replay_composition_df(result, max_requests=5)
    errors = problems_of(from_replay)
    assert errors == [] and set(from_replay["session_id"]) == {header_id(FILES[0])}
    # A session is replayed here with the strategy under its model's window (200,000 for
    # claude-sonnet-4-5): the same frame.
    from_session = replay_composition_df(session, strategy="none", max_requests=5)
    pd.testing.assert_frame_equal(from_replay, from_session)
    from_path = replay_composition_df(FILES[0], max_requests=5, strict=True)
    pd.testing.assert_frame_equal(from_replay, from_path)
    by_folder = replay_composition_df(folder, max_requests=5)
    assert set(by_folder["session_id"]) == {header_id(f) for f in FILES}
    two = replay_composition_df([result, result], max_requests=5)
    assert set(two["session_id"]) == {header_id(FILES[0]), header_id(FILES[0]) + "#2"}
    with pytest.raises(TypeError, match=r"expects a ReplayResult .* got int"):
        replay_composition_df(42)
    with pytest.raises(TypeError, match="mixing replays and Session"):
        replay_composition_df([result, session])

"""plot_context_timeline: what is drawn is what the replay's timeline and events say."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.text import Annotation

from musepi_lab.compaction._result import CompactionResult
from musepi_lab.plot._timeline import TRIGGER_COLORS, event_label, plot_context_timeline
from musepi_lab.replay._replay import CompactionEvent, ReplayResult
from musepi_lab.session._session import Session

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"


def _event(request: int, trigger: str, method: str, before: int, after: int) -> CompactionEvent:
    result = CompactionResult(summary="s", first_kept_entry_id="k", tokens_before=before)
    return CompactionEvent(
        request=request,
        trigger=trigger,
        entry_id=f"c{request}",
        method=method,
        tokens_before=before,
        tokens_after=after,
        cache_prefix_tokens=0,
        summarizer_input_tokens=0,
        summarizer_output_tokens=0,
        latency_s=0.0,
        result=result,
        context="",
    )


def _replay(
    context: list[int],
    recorded: list[int | None],
    events: list[CompactionEvent],
    *,
    recorded_compaction_at: int | None = None,
    window: int = 1000,
    threshold: int = 800,
) -> ReplayResult:
    timeline = pd.DataFrame(
        {
            "request": list(range(len(context))),
            "context_tokens": context,
            "agent_tokens": [c + 5 for c in context],
            "recorded_tokens": recorded,
            "recorded_compaction": [i == recorded_compaction_at for i in range(len(context))],
        }
    )
    return ReplayResult(
        timeline=timeline,
        events=tuple(events),
        session=Session({"type": "session"}, ()),
        window=window,
        threshold=threshold,
        strategy="truncate",
        profile="musepi",
    )


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend_labels(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def test_context_line_window_threshold_and_compaction_arrow():
    context = [100, 200, 900, 300, 400, 500]
    result = _replay(
        context, [110, 210, None, None, None, None], [_event(3, "threshold", "truncate", 900, 300)]
    )
    _fig, ax = plt.subplots()
    assert plot_context_timeline(result, ax=ax) is ax

    (step,) = [line for line in ax.get_lines() if line.get_label() == "context sent"]
    assert list(step.get_ydata()) == context
    assert list(step.get_xdata()) == [0, 1, 2, 3, 4, 5]

    flat = {line.get_label(): set(line.get_ydata()) for line in ax.get_lines()}
    assert flat["window 1,000"] == {1000}
    assert flat["threshold 800"] == {800}

    arrows = [a for a in ax.texts if isinstance(a, Annotation) and a.arrow_patch is not None]
    assert len(arrows) == 1
    assert arrows[0].xy == (3, 300)  # head at tokens after
    assert arrows[0].xyann == (3, 900)  # tail at tokens before
    labels = [a.get_text() for a in ax.texts if a.get_text()]
    assert labels == ["threshold · truncate\n900 → 300"]
    assert "compaction: threshold" in _legend_labels(ax)


def test_recorded_usage_points_only_where_recorded():
    result = _replay([100, 200, 300], [120, None, 330], [])
    ax = plot_context_timeline(result)
    (points,) = [c for c in ax.collections if c.get_label() == "recorded usage"]
    assert points.get_offsets().tolist() == [[0.0, 120.0], [2.0, 330.0]]


def test_no_recorded_usage_no_points_and_hidden_when_asked():
    none_recorded = plot_context_timeline(_replay([100, 200], [None, None], []))
    assert "recorded usage" not in _legend_labels(none_recorded)
    hidden = plot_context_timeline(_replay([100, 200], [150, 250], []), show_recorded=False)
    assert "recorded usage" not in _legend_labels(hidden)


def test_recorded_compaction_marked_at_its_request():
    ax = plot_context_timeline(
        _replay([100, 200, 50, 80], [None] * 4, [], recorded_compaction_at=2)
    )
    (line,) = [line for line in ax.get_lines() if line.get_label() == "recorded compaction"]
    assert set(line.get_xdata()) == {2}


def test_events_coloured_by_trigger_and_each_labelled():
    events = [
        _event(1, "mid-turn", "extractive", 5000, 1200),
        _event(3, "overflow", "truncate", 7000, 900),
    ]
    ax = plot_context_timeline(
        _replay([10, 5000, 1500, 7000, 950], [None] * 5, events, window=8000, threshold=6000)
    )
    markers = [
        c
        for c in ax.collections
        if isinstance(c, PathCollection) and c.get_label().startswith("compaction")
    ]
    assert [m.get_label() for m in markers] == ["compaction: mid-turn", "compaction: overflow"]
    assert [tuple(m.get_offsets()[0]) for m in markers] == [(1.0, 5000.0), (3.0, 7000.0)]
    expected = [matplotlib.colors.to_rgba(TRIGGER_COLORS[t]) for t in ("mid-turn", "overflow")]
    assert [tuple(m.get_facecolor()[0]) for m in markers] == expected
    texts = sorted(a.get_text() for a in ax.texts if a.get_text())
    assert texts == ["mid-turn · extractive\n5.0k → 1.2k", "overflow · truncate\n7.0k → 900"]


def test_event_label_rounds_to_thousands():
    assert (
        event_label(_event(0, "manual", "handoff", 38291, 16851))
        == "manual · handoff\n38.3k → 16.9k"
    )


def test_agent_view_line_on_request():
    result = _replay([100, 200], [None, None], [])
    ax = plot_context_timeline(result, show_agent_view=True)
    (agent,) = [line for line in ax.get_lines() if line.get_label() == "agent's view"]
    assert list(agent.get_ydata()) == [105, 205]


def test_real_replay_of_the_sample_draws_every_compaction():
    pytest.importorskip("musepi_lab.strategies._truncate")  # registers `truncate`
    from musepi_lab.formats._registry import read_session
    from musepi_lab.replay import replay_session

    path = SAMPLE / "sample-0001.jsonl"
    session = read_session(path)
    result = replay_session(session, "truncate", window=64_000)
    ax = plot_context_timeline(result)

    # One request per assistant message on the active path, counted from the raw file.
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    by_id = {r["id"]: r for r in records}
    node, path_records = records[-1], []
    while node is not None:
        path_records.append(node)
        node = by_id.get(node.get("parentId"))
    assistants = sum(
        1 for r in path_records if r["type"] == "message" and r["message"]["role"] == "assistant"
    )
    (step,) = [line for line in ax.get_lines() if line.get_label() == "context sent"]
    assert len(step.get_ydata()) == assistants
    arrows = [a for a in ax.texts if isinstance(a, Annotation) and a.arrow_patch is not None]
    # The generator makes the sample long enough for a 64k window to compact it.
    assert len(result.events) >= 1
    assert len(arrows) == len(result.events)
    assert all(a.xy[1] < a.xyann[1] for a in arrows)  # every compaction shrank the context

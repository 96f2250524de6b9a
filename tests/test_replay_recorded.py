"""`recorded`: replay follows the compactions the agent itself made (issue 10, item 3).

Expected points and summaries come from the raw files (compaction lines counted and read
with `json`), not from the readers.
"""

from __future__ import annotations

import json

import pytest
from _corpus import corpus_file

from musepi_lab import read_session
from musepi_lab.replay import replay_session
from musepi_lab.replay._calibration import calibration_rows
from musepi_lab.strategies import available, compact


def raw_records(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def raw_summaries(parts):
    """The recorded compaction summaries of a raw file, in file order."""
    records = raw_records(corpus_file(*parts))
    fmt = parts[0]
    if fmt == "pi":
        return [r["summary"] for r in records if r.get("type") == "compaction"]
    if fmt == "claude-code":
        texts = []
        for r in records:
            if r.get("isCompactSummary"):
                content = r["message"]["content"]
                texts.append(content if isinstance(content, str) else content[0]["text"])
        return texts
    return [None for r in records if r.get("type") == "compacted"]  # Codex: redacted text


SESSIONS = [
    ("pi", "before-compaction.jsonl"),
    ("claude-code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl"),
    ("claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"),
    ("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"),
    ("codex", "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"),
]


def test_recorded_is_registered():
    assert "recorded" in available()


@pytest.mark.parametrize("parts", SESSIONS, ids=["/".join(p) for p in SESSIONS])
def test_replay_follows_each_recorded_compaction_with_its_summary(parts):
    summaries = raw_summaries(parts)
    assert summaries  # the raw file holds compactions
    r = replay_session(read_session(corpus_file(*parts)), "recorded", window=10**9)
    assert len(r.events) == len(summaries)
    assert all(e.trigger == e.source == "recorded" for e in r.events)
    fired = r.timeline[r.timeline.compaction != ""]
    assert list(fired.request) == [e.request for e in r.events]
    assert set(fired.trigger) == {"recorded"}
    assert all(e.tokens_after < e.tokens_before for e in r.events)
    for event, summary in zip(r.events, summaries, strict=True):
        if summary is not None:
            assert summary.strip()[:200] in event.context
    # No trigger of its own: a small window changes nothing.
    small = replay_session(read_session(corpus_file(*parts)), "recorded", window=20_000)
    assert [e.request for e in small.events] == [e.request for e in r.events]


@pytest.mark.parametrize("parts", SESSIONS[:4], ids=["/".join(p) for p in SESSIONS[:4]])
def test_compact_recorded_at_a_point_gives_that_compaction(parts):
    session = read_session(corpus_file(*parts))
    points = [e for e in session.path() if e.type == "compaction"]
    for entry, summary in zip(points, raw_summaries(parts), strict=True):
        result = compact(session, "recorded", leaf_id=entry.parent_id)
        assert result is not None and result.summary.strip()[:200] == summary.strip()[:200]
        assert (
            0 < result.tokens_after < compact(session, "none", leaf_id=entry.parent_id).tokens_after
        )


def test_compact_recorded_gives_the_newest_recorded_summary_or_none():
    parts = ("pi", "before-compaction.jsonl")
    result = compact(read_session(corpus_file(*parts)), "recorded")
    assert result is not None and result.summary == raw_summaries(parts)[-1]
    assert compact(read_session(corpus_file("pi", "large-session.jsonl")), "recorded") is None


# Sessions in which the recorded agent compacted. How close a replay's bill comes to the
# recorded one is judged on the split (issue 23, `perf/calibration_judge.py`); what holds
# here is that `recorded` rebuilds the context the agent sent after its compactions.
COMPACTED = [
    ("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"),
    ("claude-code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl"),
    ("pi", "before-compaction.jsonl"),
    ("claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"),
    ("codex", "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"),
]


def prompt_drift(session, strategy):
    """log(median replayed / recorded prompt after the recorded compactions ÷ the same
    before them): the token ratio divides out, what is left is the context's change."""
    import math

    rows = calibration_rows(session, replay_session(session, strategy, window=10**9))
    parts = ("input", "cache_read", "cache_write")
    q = rows[[f"replayed_{p}" for p in parts]].sum(axis=1) / rows[
        [f"recorded_{p}" for p in parts]
    ].sum(axis=1)
    after = rows["after_recorded_compaction"]
    return math.log(q[after].median() / q[~after].median())


@pytest.mark.parametrize("parts", COMPACTED, ids="/".join)
def test_recorded_replay_sends_the_context_the_agent_sent_after_its_compactions(parts):
    session = read_session(corpus_file(*parts))
    followed, ignored = prompt_drift(session, "recorded"), prompt_drift(session, "none")
    import math

    assert ignored > math.log(2)  # `none` keeps the whole history: twice the prompt or more
    assert abs(followed) < ignored / 2

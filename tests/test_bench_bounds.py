"""Snapcompact scored both ways (issue 10 item 7): `retention_lower` counts the imaged pages
as unreadable, `retention_upper` as read perfectly. Expected values are counted here from
the raw strings: the planted facts, the compaction record's own text fields and the raw
lines of the entries the compaction keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _corpus import SAMPLES

import musepi_lab as ml
from musepi_lab.bench._score import score_compaction
from musepi_lab.compaction import CompactionSettings
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.datasets import read_facts
from musepi_lab.tokens import TokenCounter


def _raw_lines(path: Path) -> dict[str, str]:
    lines = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("id"), str):
            lines[record["id"]] = line
    return lines


def _in_raw(fact: str, line: str) -> bool:
    # A fact is one line of text; in the raw JSON line it appears JSON-escaped.
    return json.dumps(fact, ensure_ascii=False)[1:-1] in line


@pytest.mark.parametrize("path", SAMPLES[:2], ids=lambda p: p.stem)
@pytest.mark.parametrize("keep", [2000, 8000])
def test_snapcompact_lower_and_upper_bounds_match_an_independent_count(path, keep):
    session = ml.read_session(path)
    planted = read_facts(path)
    counter = TokenCounter("musepi")
    settings = CompactionSettings.musepi(keep_recent_tokens=keep)
    result = ml.compact(session, "snapcompact", settings=settings, counter=counter)
    row = score_compaction(session, result, settings=settings, counter=counter, planted=planted)

    prep = prepare_compaction(session, settings, counter)
    summarized = {*prep.summarize_entry_ids, *prep.turn_prefix_entry_ids}
    facts = [f.fact for f in planted if f.entry_id in summarized]
    archive = result.preserve_data["snapcompact"]
    text_read = "\n".join(
        [result.summary, archive.get("textHead", ""), archive.get("textTail", "")]
    )
    raw = _raw_lines(path)
    path_ids = [e.id for e in session.path()]
    kept_lines = [raw[i] for i in path_ids[path_ids.index(result.first_kept_entry_id) :]]
    lower = [f for f in facts if f in text_read or any(_in_raw(f, ln) for ln in kept_lines)]
    upper = [f for f in facts if f in lower or f in archive["text"]]

    assert row["facts"] == len(facts)
    assert row["retention_lower"] == pytest.approx(len(lower) / len(facts))
    assert row["retention_upper"] == pytest.approx(len(upper) / len(facts))
    assert row["retention_lower"] == row["fact_retention"]
    assert row["retention_upper"] > row["retention_lower"]  # the imaged pages hold facts


@pytest.mark.parametrize("name", ["truncate", "observation-masking", "extractive"])
def test_strategies_that_image_nothing_have_equal_bounds(name):
    path = SAMPLES[0]
    session = ml.read_session(path)
    counter = TokenCounter("musepi")
    settings = CompactionSettings.musepi(keep_recent_tokens=4000)
    result = ml.compact(session, name, settings=settings, counter=counter)
    row = score_compaction(
        session, result, settings=settings, counter=counter, planted=read_facts(path)
    )
    assert row["retention_lower"] == row["retention_upper"] == row["fact_retention"]


def test_replay_rows_carry_both_bounds():
    from musepi_lab.bench._score import _early_facts, score_replay
    from musepi_lab.metrics import context_text
    from musepi_lab.replay import replay_session
    from musepi_lab.session._messages import entry_to_message

    path = SAMPLES[0]
    session = ml.read_session(path)
    planted = read_facts(path)
    counter = TokenCounter("musepi")
    res = replay_session(session, "snapcompact", window=80_000, counter=counter)
    assert res.events, "snapcompact compacts the sample under an 80k window"
    row = score_replay(session, res, counter=counter, profile="musepi", planted=planted)

    path_text = context_text([m for e in session.path() if (m := entry_to_message(e)) is not None])
    facts = [f.text for f in _early_facts(session, res, planted, path_text)]
    last = res.events[-1]
    archive_text = last.result.preserve_data["snapcompact"]["text"]  # head + pages + tail
    lower = [f for f in facts if f in last.context]
    upper = [f for f in facts if f in last.context or f in archive_text]
    assert row["retention_lower"] == row["fact_retention"] == pytest.approx(len(lower) / len(facts))
    assert row["retention_upper"] == pytest.approx(len(upper) / len(facts))
    assert row["retention_upper"] > row["retention_lower"]

    truncated = replay_session(session, "truncate", window=32_000, counter=counter)
    row = score_replay(session, truncated, counter=counter, profile="musepi", planted=planted)
    assert row["retention_lower"] == row["retention_upper"] == row["fact_retention"]

"""Rich display: HTML in notebooks, plain text in terminals, with the numbers that matter."""

from __future__ import annotations

from pathlib import Path

import musepi_lab.strategies._truncate  # noqa: F401
from musepi_lab import prepare_compaction, read_session
from musepi_lab.compaction import CompactionSettings
from musepi_lab.replay import replay
from musepi_lab.strategies import compact

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"


def test_session_html_and_text():
    s = read_session(SAMPLE)
    html = s._repr_html_()
    assert "sample-0001" in html and f"{len(s.entries):,}" in html
    assert "<table>" in html
    assert repr(s).startswith("Session(id='sample-0001'")


def test_preparation_display_names_the_regions():
    s = read_session(SAMPLE)
    prep = prepare_compaction(s, CompactionSettings.musepi())
    text = repr(prep)
    assert prep.first_kept_entry_id in text
    assert f"{len(prep.messages_to_summarize)} messages" in text
    html = prep._repr_html_()
    for region in ("summarized", "turn prefix", "kept"):
        assert region in html
    assert "messages_to_summarize" not in text  # no raw dump of the message tuples


def test_result_and_replay_display():
    s = read_session(SAMPLE)
    result = compact(s, "truncate")
    assert "truncate" in repr(result) and "<details>" in result._repr_html_()
    r = replay(s, "truncate", window=40_000)
    html = r._repr_html_()
    assert f"{r.compactions}" in html and "peak context" in html
    assert html.count("<tr>") >= 1 + r.compactions

"""Rich display: HTML in notebooks, plain text in terminals, with the numbers that matter."""

from __future__ import annotations

from pathlib import Path

import musepi_lab.strategies._truncate  # noqa: F401
from musepi_lab import prepare_compaction, read_session
from musepi_lab.compaction import CompactionSettings
from musepi_lab.replay import replay_session
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
    r = replay_session(s, "truncate", window=40_000)
    html = r._repr_html_()
    assert f"{r.compactions}" in html and "peak context" in html
    assert html.count("<tr>") >= 1 + r.compactions


def test_preparation_says_why_the_keep_budget_shrank_and_which_count_is_which():
    s = read_session(SAMPLE)
    prep = prepare_compaction(s, CompactionSettings.musepi().copy_with(keep_recent_tokens=8000))
    # The sample records provider usage above the estimate (usage ratio > 1, spec §4.4).
    assert prep.usage_ratio is not None and prep.usage_ratio > 1
    assert prep.keep_recent_tokens < 8000
    text = repr(prep)
    assert f"{prep.keep_recent_tokens:,} (asked 8,000, divided by the usage ratio" in text
    assert f"{prep.usage_ratio:.2f}" in text
    assert "recorded by the provider for the last reply" in text and "Which count is which" in text
    assert "Which count is which" in prep._repr_html_()


def test_result_names_both_token_counts_and_replay_events_scroll():
    s = read_session(SAMPLE)
    result = compact(s, "truncate")
    text = repr(result)
    assert f"{result.context_tokens_before:,} → {result.tokens_after:,}" in text
    assert f"tokens before           {result.tokens_before:,} (the preparation's figure)" in text
    html = replay_session(s, "truncate", window=16_000)._repr_html_()
    assert "overflow:auto" in html and "max-height:320px" in html

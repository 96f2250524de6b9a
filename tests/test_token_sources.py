"""Every token figure a view shows says where it comes from, the cut bar adds up, and a
session whose text is not what the provider saw is flagged (issue 29, item 5).

Expected numbers come from the raw files (plain `json`): the recorded usage of the last
reply, the redaction markers of the sanitized Codex rollouts.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pytest
from _corpus import corpus_file

from musepi_lab.analysis._live import live_summary
from musepi_lab.compaction._token_sources import (
    BEYOND,
    ESTIMATED,
    RECORDED,
    context_figures,
    cut_bar_parts,
    growth_ratio,
)
from musepi_lab.formats._registry import read_session
from musepi_lab.widgets._cut import CutPointExplorer
from musepi_lab.widgets._explorer import SessionExplorer

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"
REDACTED = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
REDACTED_LONG = "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
READABLE = "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
WARNING = "recorded ≠ estimated"
NUMBER = r"(\d[\d,]*)"


def text_of(fragment: str) -> str:
    """What a person reads in an HTML fragment (tags out, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment)).replace("■", " ")


def as_int(text: str) -> int:
    return int(text.replace(",", ""))


def raw_last_reply(path: Path) -> dict[str, Any]:
    """The last assistant message record in file order (pi JSONL)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    replies = [
        r for r in records if r.get("type") == "message" and r["message"].get("role") == "assistant"
    ]
    return replies[-1]


def raw_last_reply_usage(path: Path) -> dict[str, Any]:
    """The usage of the last assistant message in file order (pi JSONL)."""
    return raw_last_reply(path)["message"]["usage"]


def bar_terms(bar_html: str) -> tuple[int, dict[str, int], str]:
    """The figure the cut bar stands beside, its parts, and the figure's source label."""
    text = " ".join(text_of(bar_html).split())
    head = re.search(
        rf"context {NUMBER} (recorded by the provider|estimated by the counter) = ", text
    )
    assert head, text
    after = text[head.end() :].split(" regions ")[0]
    parts = {
        name.strip(): as_int(n)
        for name, n in re.findall(rf"([a-z ]+?) {NUMBER}(?: \+|$)", after.strip())
    }
    return as_int(head.group(1)), parts, head.group(2)


# -- the cut bar ---------------------------------------------------------------------------
def test_the_cut_bar_adds_up_to_the_recorded_context_it_stands_beside():
    usage = raw_last_reply_usage(SAMPLE)
    explorer = CutPointExplorer(read_session(SAMPLE), plot=False)
    figure, parts, source = bar_terms(explorer.bar_view.value)
    # The sample ends on a reply: its recorded total is the whole context, nothing after it.
    assert source == RECORDED and figure == usage["totalTokens"]
    assert sum(parts.values()) == figure, parts
    assert {"summarized", "turn prefix", "kept", BEYOND} <= set(parts)
    # The regions are the counter's, and the bar says so.
    regions = explorer.regions
    assert [parts[k] for k in ("summarized", "turn prefix", "kept")] == [
        regions["summarized"],
        regions["turn prefix"],
        regions["kept"],
    ]
    assert f"regions {ESTIMATED} (musepi)" in text_of(explorer.bar_view.value)


def test_the_cut_bar_still_adds_up_when_the_keep_budget_moves():
    explorer = CutPointExplorer(read_session(SAMPLE), plot=False)
    for keep in (2_000, 8_000, 40_000, explorer.keep_slider.max):
        explorer.keep_slider.value = keep
        figure, parts, _ = bar_terms(explorer.bar_view.value)
        assert sum(parts.values()) == figure == explorer.context_tokens, (keep, parts)


def test_cut_bar_parts_when_the_provider_counted_less_than_the_regions():
    parts = cut_bar_parts({"summarized": 700, "turn prefix": 0, "kept": 400}, 1_000)
    assert parts[BEYOND] == 0 and sum(parts.values()) == 1_100


# -- labels in every view -------------------------------------------------------------------
def test_session_explorer_labels_both_figures_and_the_recorded_usage_of_a_reply():
    usage = raw_last_reply_usage(SAMPLE)
    explorer = SessionExplorer(SAMPLE, plot=False)
    context = text_of(explorer.context_view.value)
    assert f"{usage['totalTokens']:,} {RECORDED}" in context
    assert f"{explorer.context_tokens:,} {ESTIMATED} (musepi)" in context
    assert ESTIMATED in text_of(explorer.entry_list_head.value)
    # A reply's card shows what the provider recorded for it.
    explorer.select(raw_last_reply(SAMPLE)["id"])
    entry = text_of(explorer.entry_view.value)
    assert f"context {usage['totalTokens']:,} {RECORDED}" in entry
    assert f"input {usage['input']:,}" in entry and f"cache read {usage['cacheRead']:,}" in entry
    assert ESTIMATED in entry


def test_live_line_and_view_label_the_context_by_source():
    session = read_session(SAMPLE)
    summary = live_summary(session)
    line = summary.line()
    usage = raw_last_reply_usage(SAMPLE)
    assert f"context {usage['totalTokens']:,}/" in line and RECORDED in line
    assert re.search(rf"{NUMBER} {ESTIMATED} \(musepi\)", line)
    assert f"keeps {summary.tokens_kept:,} estimated" in line


def test_a_session_without_usage_is_all_estimated(tmp_path):
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    for record in records:
        if record.get("type") == "message":
            record["message"].pop("usage", None)
    bare = tmp_path / "no-usage.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    line = live_summary(read_session(bare)).line()
    assert ESTIMATED in line and RECORDED not in line


# -- the warning -------------------------------------------------------------------------------
def redacted_markers(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("[REDACTED_")


@pytest.mark.parametrize("name", [REDACTED, REDACTED_LONG])
def test_a_redacted_codex_rollout_is_flagged_in_every_view(name):
    path = corpus_file("codex", name)
    assert redacted_markers(path) > 100  # the premise: the text was replaced upstream
    session = read_session(path)
    summary = live_summary(session)
    assert summary.figures is not None and summary.figures.extreme
    assert summary.figures.growth_ratio >= 4
    assert "warning: the provider's count grew" in summary.line()
    cut = CutPointExplorer(session, plot=False)
    assert WARNING in text_of(cut.bar_view.value)
    explorer = SessionExplorer(session, plot=False)
    assert WARNING in text_of(explorer.context_view.value)


@pytest.mark.parametrize(
    ("parts", "markers"),
    [
        (("codex", READABLE), 0),
        # A few user names redacted in an otherwise readable session.
        (("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"), 21),
    ],
)
def test_a_readable_session_is_not_flagged(parts, markers):
    path = corpus_file(*parts)
    assert redacted_markers(path) == markers
    session = read_session(path)
    summary = live_summary(session)
    assert summary.figures is not None and not summary.figures.extreme
    assert "warning" not in summary.line()
    assert WARNING not in text_of(CutPointExplorer(session, plot=False).bar_view.value)


def test_growth_ignores_the_fixed_prompt_and_falls_across_a_compaction():
    def reply(total: int) -> dict[str, Any]:
        return {"role": "assistant", "content": [], "usage": {"totalTokens": total}}

    user = {"role": "user", "content": "x"}
    # 20,000 recorded before the first reply (the fixed prompt) never counts; the fall from
    # 90,000 to 30,000 (a compaction) is left out; the two rises of 5,000 and 3,000 count.
    messages = [user, reply(20_000), user, reply(25_000), user, reply(90_000), reply(30_000)]
    messages += [user, reply(33_000)]
    counts = [100, 50, 2_000, 500, 60_000, 0, 0, 1_000, 500]
    ratio = growth_ratio(messages, counts, profile="pi")
    assert ratio == pytest.approx((5_000 + 65_000 + 3_000) / (2_500 + 60_000 + 1_500))
    figures = context_figures(messages, counts, method="pi", profile="pi")
    assert figures.recorded == 33_000 and figures.trailing == 0 and not figures.extreme

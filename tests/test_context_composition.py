"""Context composition: the kinds of a context sum to its total, both counted from the raw
records with this file's own small estimator (spec §3.1 for pi, §3.4 for MusePi)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from musepi_lab import build_session_context, read_session, replay_session
from musepi_lab.analysis import context_composition_df, problems_of, replay_composition_df
from musepi_lab.analysis._composition import COMPOSITION_COLUMNS, context_composition
from musepi_lab.compaction import CompactionSettings
from musepi_lab.strategies import compact
from musepi_lab.tokens import TokenCounter
from musepi_lab.tokens._composition import COMPOSITION_KINDS, message_composition

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample" / "sample-0003.jsonl"


# -- an independent estimator over raw records ---------------------------------------------


def musepi_tokens(text: str) -> int:
    return (len(text.encode("utf-8")) + 3) >> 2


def js_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def raw_kinds(message: dict[str, Any]) -> dict[str, int]:
    """MusePi tokens of one raw message by kind, per fragment (spec §3.4)."""
    out: dict[str, int] = {}

    def add(kind: str, n: int) -> None:
        out[kind] = out.get(kind, 0) + n

    role = message["role"]
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for block in blocks:
        kind = block["type"]
        if kind == "image":
            add("images", 1200)
        elif role == "assistant" and kind == "text":
            add("assistant text", musepi_tokens(block["text"]))
        elif kind == "thinking":
            add("thinking", musepi_tokens(block["thinking"]))
            if "thinkingSignature" in block:
                add("thinking", musepi_tokens(block["thinkingSignature"]))
        elif kind == "toolCall":
            add("tool calls", musepi_tokens(block["name"]))
            add("tool calls", musepi_tokens(js_json(block.get("arguments", {}))))
        elif kind == "text":
            add("tool results" if role == "toolResult" else "user", musepi_tokens(block["text"]))
    return out


def raw_active_context(path: Path) -> list[dict[str, Any]]:
    """The context at the last line of a linear-ish pi session with one compaction: the
    summary, then the kept messages from `firstKeptEntryId` on (walked by parentId)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_id = {r["id"]: r for r in records if "id" in r}
    chain, node = [], records[-1]
    while node is not None:
        chain.append(node)
        node = by_id.get(node.get("parentId"))
    chain.reverse()
    cut = max(i for i, r in enumerate(chain) if r["type"] == "compaction")
    compaction = chain[cut]
    first = next(i for i, r in enumerate(chain) if r["id"] == compaction["firstKeptEntryId"])
    kept = [r for i, r in enumerate(chain) if i >= first and i != cut]
    summary = {"role": "compactionSummary", "summary": compaction["summary"]}
    return [summary, *(r["message"] for r in kept if r["type"] == "message")]


def raw_context_kinds(path: Path) -> dict[str, int]:
    messages = raw_active_context(path)
    totals = {kind: 0 for kind in COMPOSITION_KINDS}
    totals["summaries"] = musepi_tokens(messages[0]["summary"])
    for message in messages[1:]:
        for kind, n in raw_kinds(message).items():
            totals[kind] += n
    return totals


# -- the sample, against the raw count -----------------------------------------------------


def test_sample_context_by_kind_matches_an_independent_count() -> None:
    expected = raw_context_kinds(SAMPLE)
    got = context_composition(read_session(SAMPLE), counter=TokenCounter("musepi"))
    assert got == expected
    assert got["tool results"] > 0 and got["thinking"] > 0 and got["summaries"] > 0


def test_system_tokens_go_to_system_tools_only() -> None:
    session = read_session(SAMPLE)
    plain = context_composition(session)
    with_system = context_composition(session, system_tokens=1234)
    assert with_system["system/tools"] == plain["system/tools"] + 1234
    assert {k: v for k, v in with_system.items() if k != "system/tools"} == {
        k: v for k, v in plain.items() if k != "system/tools"
    }


# -- single messages: every kind, both estimators ------------------------------------------

USER_WITH_IMAGE = {
    "role": "user",
    "content": [
        {"type": "text", "text": "a" * 40},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ],
}
ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "b" * 21},
        {"type": "thinking", "thinking": "c" * 13, "thinkingSignature": "s" * 8},
        {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "x.py"}},
    ],
}
TOOL_RESULT = {
    "role": "toolResult",
    "toolCallId": "t1",
    "toolName": "read",
    "content": [
        {"type": "text", "text": "d" * 30},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ],
}


@pytest.mark.parametrize("message", [USER_WITH_IMAGE, ASSISTANT, TOOL_RESULT])
def test_musepi_kinds_of_one_message(message: dict[str, Any]) -> None:
    assert message_composition(message, TokenCounter("musepi")) == raw_kinds(message)


def test_pi_kinds_sum_to_pis_rounding_per_message() -> None:
    counter = TokenCounter("pi")
    # spec §3.1: user images count 0; thinking without its signature; tool results count an
    # image as 4800 chars. ceil(chars / 4) per message.
    user = message_composition(USER_WITH_IMAGE, counter)
    assert user == {"user": 10}
    assistant = message_composition(ASSISTANT, counter)
    call_chars = len("read") + len('{"path":"x.py"}')
    assert sum(assistant.values()) == math.ceil((21 + 13 + call_chars) / 4)
    assert assistant["thinking"] in (3, 4) and assistant["tool calls"] in (4, 5)
    result = message_composition(TOOL_RESULT, counter)
    assert result == {"tool results": 8, "images": 1200}  # 30 + 4800 chars → 1208 tokens


# -- before and after strategies -----------------------------------------------------------


def test_before_and_after_frames_sum_to_the_measured_contexts() -> None:
    session = read_session(SAMPLE)
    settings = CompactionSettings.musepi()
    counter = TokenCounter("musepi")
    frame = context_composition_df(
        session,
        strategies=["truncate", "snapcompact"],
        budget=4000,
        settings=settings,
        counter=counter,
    )
    errors = problems_of(frame)
    assert errors == []
    assert list(frame.columns) == list(COMPOSITION_COLUMNS)
    totals = frame.groupby(["stage", "strategy"])["tokens"].sum()
    assert totals[("before", "")] == sum(raw_context_kinds(SAMPLE).values())
    at_budget = settings.copy_with(keep_recent_tokens=4000)
    truncated = compact(session, "truncate", settings=at_budget, counter=counter)
    assert truncated is not None
    assert totals[("after", "truncate")] == truncated.tokens_after
    # snapcompact reports its own tokens_after (frames at the provider's image price); the
    # composition counts the rebuilt context with the counter (5024 per frame, spec §3.4).
    snap = compact(session, "snapcompact", settings=at_budget, counter=counter)
    assert snap is not None
    rebuilt = build_session_context(snap.apply(session, timestamp="1970-01-01T00:00:00.000Z"))
    assert totals[("after", "snapcompact")] == counter.count_messages(rebuilt.messages)
    after = frame[(frame["strategy"] == "snapcompact")].set_index("kind")["tokens"]
    assert after["images"] > 0  # snapcompact frames are images
    shares = frame.groupby(["stage", "strategy"])["share"].sum()
    assert shares.round(9).eq(1.0).all()


def test_replay_frame_shows_the_compactions_as_summaries() -> None:
    session = read_session(SAMPLE)
    result = replay_session(session, "truncate", window=16_000)
    assert result.compactions > 0
    frame = replay_composition_df(result, counter=TokenCounter("musepi"), max_requests=None)
    assert frame["request"].nunique() == len(result.timeline)
    by_request = frame.pivot_table(
        index="request", columns="kind", values="tokens", observed=False, aggfunc="sum"
    )
    first_compaction = result.events[0].request
    later = by_request.loc[by_request.index >= first_compaction, "summaries"]
    assert (later > 0).any()


# -- the plot ------------------------------------------------------------------------------


def test_plot_draws_one_bar_per_context_and_areas_along_a_replay() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from musepi_lab.plot import plot_context_composition
    from musepi_lab.plot._composition import composition_table

    session = read_session(SAMPLE)
    frame = context_composition_df(session, strategies=["none", "truncate"], budget=4000)
    table = composition_table(frame)
    assert list(table.index) == ["before", "none", "truncate"]
    assert list(table.columns) == list(COMPOSITION_KINDS)
    ax = plot_context_composition(frame)
    assert ax.get_title().endswith("at keep-recent 4,000 tokens")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["before", "none", "truncate"]
    assert len(ax.patches) == len(COMPOSITION_KINDS) * 3
    plt.close(ax.figure)

    ax = plot_context_composition(
        replay_session(session, "truncate", window=16_000), max_requests=20
    )
    assert ax.get_xlabel() == "request" and len(ax.collections) == len(COMPOSITION_KINDS)
    plt.close(ax.figure)

"""Replay's cache models and billing against the providers' documented rules and the
recorded bills (issues 10, 23, 27).

The cache models' rules are checked against the providers' documented behaviour; the
calibration summary against hand-counted rows. The fit on synthetic sessions is in
`test_replay_fit.py`, the corpus by source and its judgement in `test_replay_sources.py`,
streams, coverage and what the record says in `test_replay_streams.py`. The figures of the
real judgement (which targets hold) come from `perf/calibration_judge.py`, not from here.
"""

from __future__ import annotations

import pytest
from _corpus import corpus_file

from musepi_lab import read_session
from musepi_lab.formats._claude_code_blocks import usage_from_anthropic
from musepi_lab.metrics import prices_for
from musepi_lab.metrics._prices import DEFAULT_PRICES
from musepi_lab.replay import DEFAULT_CALIBRATION, replay_session
from musepi_lab.replay._cache import (
    ANTHROPIC,
    ANTHROPIC_1H,
    NEUTRAL,
    OPENAI,
    bill_cached,
    cache_model_for,
    current_turn_reasoning,
    declared_tokens,
    hidden_reasoning_tokens,
    redacted_extra_tokens,
    system_prompt_tokens,
    table_row,
    warm_prefix_tokens,
)
from musepi_lab.replay._calibration import (
    calibration_summary,
    recorded_bill,
    within,
)

MIN = 60_000.0  # ms in a minute
PRICES = {
    "input": 1.0,
    "cache_write": 1.25,
    "cache_write_1h": 2.0,
    "cache_read": 0.1,
    "output": 0.0,
}


def bill(model, cache, prompt, now_ms, model_id="m", reusable=None, warm=0):
    return bill_cached(
        model,
        cache,
        prompt=prompt,
        reusable=reusable,
        now_ms=now_ms,
        model_id=model_id,
        output_tokens=0,
        prices=PRICES,
        warm=warm,
    )


# -- the providers' documented rules ---------------------------------------------------------
def test_anthropic_reads_the_previous_prompt_within_five_minutes_and_writes_the_rest():
    first, cache = bill(ANTHROPIC, None, 10_000, 0.0)
    assert (first.cache_read, first.cache_write, first.input_tokens) == (0, 10_000, 0)
    warm, cache2 = bill(ANTHROPIC, cache, 12_000, 4 * MIN)
    assert (warm.cache_read, warm.cache_write) == (10_000, 2_000)
    assert warm.cost_usd == pytest.approx((10_000 * 0.1 + 2_000 * 1.25) / 1e6)
    # Each use refreshes the TTL; six idle minutes later the cache is gone.
    cold, _ = bill(ANTHROPIC, cache2, 13_000, 10 * MIN + 1)
    assert (cold.cache_read, cold.cache_write) == (0, 13_000)


def test_anthropic_one_hour_ttl_and_its_write_price():
    _, cache = bill(ANTHROPIC_1H, None, 10_000, 0.0)
    later, _ = bill(ANTHROPIC_1H, cache, 11_000, 50 * MIN)
    assert (later.cache_read, later.cache_write) == (10_000, 1_000)
    assert later.cost_usd == pytest.approx((10_000 * 0.1 + 1_000 * 2.0) / 1e6)


def test_a_model_change_or_a_changed_prefix_invalidates():
    _, cache = bill(ANTHROPIC, None, 10_000, 0.0, model_id="a")
    other, _ = bill(ANTHROPIC, cache, 10_500, MIN, model_id="b")
    assert other.cache_read == 0
    compacted, _ = bill(ANTHROPIC, cache, 6_000, MIN, model_id="a", reusable=2_500)
    assert (compacted.cache_read, compacted.cache_write) == (2_500, 3_500)


def test_anthropic_a_changed_thinking_level_invalidates_the_message_cache():
    # Anthropic: changing the thinking parameters invalidates the message cache breakpoints.
    def with_level(cache, prompt, now_ms, thinking, provider_model=ANTHROPIC):
        return bill_cached(
            provider_model,
            cache,
            prompt=prompt,
            reusable=None,
            now_ms=now_ms,
            model_id="m",
            output_tokens=0,
            prices=PRICES,
            thinking=thinking,
        )

    _, cache = with_level(None, 10_000, 0.0, "off")
    same, _ = with_level(cache, 10_500, MIN, "off")
    assert (same.cache_read, same.cache_write) == (10_000, 500)
    changed, after = with_level(cache, 10_500, MIN, "high")
    assert (changed.cache_read, changed.cache_write) == (0, 10_500)
    back, _ = with_level(after, 11_000, 2 * MIN, "high")  # cached under the new level
    assert back.cache_read == 10_500
    # OpenAI documents no such rule: its prefix cache does not look at the reasoning effort.
    _, openai_cache = with_level(None, 5_000, 0.0, "off", OPENAI)
    assert with_level(openai_cache, 5_300, MIN, "high", OPENAI)[0].cache_read == 4_992


def test_replay_follows_the_thinking_level_of_the_session(tmp_path):
    import json

    # A pi session whose user switches thinking on between two turns a minute apart:
    # the turn after the switch reads nothing from the conversation's cache.
    def line(kind, ts, **fields):
        return json.dumps({"type": kind, "timestamp": ts, **fields})

    def assistant(ts, text):
        usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
        return line(
            "message",
            ts,
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": 0,
            },
        )

    def user(ts, text):
        return line("message", ts, message={"role": "user", "content": text, "timestamp": 0})

    long_text = "word " * 2_000
    lines = [
        json.dumps({"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z",
                    "cwd": "/", "thinkingLevel": "off"}),
        user("2025-01-01T00:00:00.000Z", long_text),
        assistant("2025-01-01T00:00:01.000Z", "one"),
        user("2025-01-01T00:01:00.000Z", "again"),
        assistant("2025-01-01T00:01:01.000Z", "two"),
        line("thinking_level_change", "2025-01-01T00:01:30.000Z", thinkingLevel="high"),
        user("2025-01-01T00:02:00.000Z", "and again"),
        assistant("2025-01-01T00:02:01.000Z", "three"),
    ]  # fmt: skip
    path = tmp_path / "thinking.jsonl"
    path.write_text("\n".join(lines) + "\n")
    # The family line: the fixture's usage is made up, not a line to estimate one from.
    timeline = replay_session(read_session(path), "none", window=10**9, ratio="family").timeline
    reads = timeline["cache_read"].tolist()
    assert len(reads) == 3
    assert reads[0] == 0 and reads[1] > 2_000  # cold, then the first turn read back
    assert reads[2] == 0  # the level changed: the message cache is gone
    assert timeline["cache_write"].iloc[2] == timeline["prompt_tokens"].iloc[2]


def test_openai_caches_128_token_blocks_from_1024_and_bills_no_writes():
    _, cache = bill(OPENAI, None, 5_000, 0.0)
    warm, _ = bill(OPENAI, cache, 5_300, MIN)
    assert (warm.cache_read, warm.cache_write, warm.input_tokens) == (4_992, 0, 308)
    assert warm.cost_usd == pytest.approx((4_992 * 0.1 + 308 * 1.0) / 1e6)
    _, small = bill(OPENAI, None, 1_000, 0.0)
    assert bill(OPENAI, small, 1_100, MIN)[0].cache_read == 0  # under 1,024: never cached
    assert bill(OPENAI, cache, 5_300, 20 * MIN)[0].cache_read == 0  # evicted when idle


def test_neutral_never_expires():
    _, cache = bill(NEUTRAL, None, 5_000, 0.0)
    assert bill(NEUTRAL, cache, 6_000, 600 * MIN)[0].cache_read == 5_000


def test_cache_model_from_the_recorded_provider():
    assert cache_model_for({"provider": "anthropic", "api": "anthropic-messages"}) is ANTHROPIC
    assert cache_model_for({"provider": "openai", "api": "openai-responses"}) is OPENAI
    assert cache_model_for({}) is NEUTRAL


def test_prices_per_model():
    # Anthropic list prices (USD / Mtok): Sonnet 4.x 3 / 15, Opus 4.5 5 / 25; writes 1.25x,
    # 1-hour writes 2x, reads 0.1x. OpenAI: gpt-5.1-codex 1.25 in, 0.125 cached, 10 out.
    assert prices_for("claude-sonnet-4-20250514")["cache_write"] == pytest.approx(3.75)
    assert prices_for("claude-opus-4-5")["cache_read"] == pytest.approx(0.5)
    assert prices_for("claude-opus-4-5")["cache_write_1h"] == pytest.approx(10.0)
    assert prices_for("gpt-5.1-codex")["cache_read"] == pytest.approx(0.125)
    assert prices_for("unknown-model") == DEFAULT_PRICES


def test_redacted_text_counts_from_its_length():
    marker = "[REDACTED_TEXT len=4000 sha=036b7e47]"
    message = {"role": "user", "content": [{"type": "text", "text": marker}]}
    assert redacted_extra_tokens(message) == 1000 - len(marker) // 4
    assert redacted_extra_tokens({"role": "user", "content": "plain"}) == 0


def test_harness_tables_pick_the_newest_row_the_version_reaches():
    table = (
        ("claude-code@anthropic", (2, 1), 26_000),
        ("claude-code@anthropic", (1, 0), 15_000),
        ("claude-code:subagent@anthropic", (2, 1), 12_000),
        ("codex@openai", (0, 58), 9),
        ("pi@anthropic", (), 2_000),
    )

    def row(header, family="anthropic"):
        return table_row(table, header, family)

    assert row({"sourceFormat": "claude-code", "sourceVersion": "2.1.39"}) == (26_000, True)
    assert row({"sourceFormat": "claude-code", "sourceVersion": "2.2.0"}) == (26_000, False)
    assert row({"sourceFormat": "claude-code", "sourceVersion": "1.0.98"}) == (15_000, True)
    # Older than any fitted version: the oldest row, not the stream's own.
    assert row({"sourceFormat": "claude-code", "sourceVersion": "0.9"}) == (15_000, False)
    # A subagent's stream has its own rows, never the main harness's.
    sub = {"sourceFormat": "claude-code", "sourceVersion": "2.1.39", "subagentKind": "subagent"}
    assert row(sub) == (12_000, True)
    assert row({**sub, "sourceVersion": "1.0.98"}) == (12_000, False)
    assert row({"sourceFormat": "codex", "cliVersion": "0.104.0-alpha.1"}, "openai") == (9, False)
    # pi on OpenAI has no row of its own: pi on Anthropic's is nearer than nothing.
    assert row({"sourceFormat": "pi"}, "openai") == (2_000, False)
    assert row({"sourceFormat": "openhands"}) == (0, False)
    assert declared_tokens(table, {"sourceFormat": "pi"}, "anthropic") == 2_000
    # The shipped tables are what the calibration carries.
    header = {"sourceFormat": "claude-code", "sourceVersion": "2.1.39"}
    assert system_prompt_tokens(header) == DEFAULT_CALIBRATION.system_prompt_tokens(header)
    assert warm_prefix_tokens(header) == DEFAULT_CALIBRATION.warm_prefix_tokens(header)


def test_a_warm_static_prefix_is_read_even_on_a_cold_conversation():
    # Claude Code's tools and fixed system text are cached by the sessions before it: the
    # first request reads them; a later cold request (idle past the TTL) still does.
    first, cache = bill(ANTHROPIC, None, 30_000, 0.0, warm=17_800)
    assert (first.cache_read, first.cache_write) == (17_800, 12_200)
    cold, _ = bill(ANTHROPIC, cache, 31_000, 10 * MIN, warm=17_800)
    assert (cold.cache_read, cold.cache_write) == (17_800, 13_200)
    short, _ = bill(ANTHROPIC, None, 10_000, 0.0, warm=17_800)
    assert (short.cache_read, short.cache_write) == (10_000, 0)


def test_hidden_reasoning_counts_from_the_encrypted_length():
    # (length - 1,000) / 6 per encrypted item: 1,600 characters -> 100 tokens; a redacted
    # item counts from its `len=`; an item under the overhead hides nothing.
    def reply(*signatures, api="openai-responses"):
        blocks = [{"type": "thinking", "thinking": "", "thinkingSignature": s} for s in signatures]
        return {"role": "assistant", "api": api, "content": blocks}

    assert hidden_reasoning_tokens(reply("x" * 1_600)) == 100
    assert hidden_reasoning_tokens(reply("[REDACTED_ENCRYPTED_CONTENT len=2200 sha=ab]")) == 200
    assert hidden_reasoning_tokens(reply("x" * 900, "x" * 1_300)) == 50
    assert hidden_reasoning_tokens(reply("x" * 1_600, api="anthropic-messages")) == 0


def test_hidden_reasoning_is_input_until_the_next_user_message():
    def reasoning(chars):
        block = {"type": "thinking", "thinking": "", "thinkingSignature": "x" * chars}
        return {"role": "assistant", "api": "openai-responses", "content": [block]}

    user = {"role": "user", "content": "go"}
    # 1,600 and 2,200 characters hide 100 and 200 tokens; the first is from an old turn.
    context = [user, reasoning(1_600), user, reasoning(2_200), {"role": "toolResult"}]
    assert current_turn_reasoning(context) == 200
    assert current_turn_reasoning([reasoning(1_600), reasoning(2_200)]) == 300
    assert current_turn_reasoning([reasoning(1_600), user]) == 0


def test_codex_items_of_one_response_are_billed_as_one_request():
    import json

    path = corpus_file(
        "codex", "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
    )
    # Independent count: runs of consecutive output items (reasoning, tool calls,
    # assistant messages) among the raw `response_item` records.
    output_kinds = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}
    responses, in_run = 0, False
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") != "response_item":
            continue
        item = rec["payload"]
        is_output = item.get("type") in output_kinds or (
            item.get("type") == "message" and item.get("role") == "assistant"
        )
        responses += is_output and not in_run
        in_run = is_output
    timeline = replay_session(read_session(path), "none", window=10**9).timeline
    assert responses > 10
    assert len(timeline) == responses


def test_one_hour_cache_writes_keep_their_share_and_their_price():
    raw = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 1_200,
        "cache_read_input_tokens": 5_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 1_000},
        "output_tokens": 100,
    }
    usage = usage_from_anthropic(raw)
    assert (usage["cacheWrite"], usage["cacheWrite1h"]) == (1_200, 1_000)
    assert "cacheWrite1h" not in usage_from_anthropic({**raw, "cache_creation": {}})
    # Opus 4.6 list prices (USD / Mtok): input 5, 5-minute write 6.25, 1-hour write 10,
    # read 0.5, output 25.
    bill = recorded_bill({"model": "claude-opus-4-6", "usage": usage})
    assert bill is not None
    expected = 10 * 5 + 200 * 6.25 + 1_000 * 10 + 5_000 * 0.5 + 100 * 25
    assert bill["cost_usd"] == pytest.approx(expected / 1e6)


def test_one_hour_writes_of_a_corpus_session_match_the_raw_lines():
    import json

    path = corpus_file("claude-code", "spotter_subagent.jsonl")
    # Independent count: the last line of each main-thread reply (by message id) carries
    # the reply's usage; sum its `ephemeral_1h_input_tokens`.
    last: dict[str, int] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        message = rec.get("message") if rec.get("type") == "assistant" else None
        if not isinstance(message, dict) or rec.get("isSidechain") or "usage" not in message:
            continue
        split = message["usage"].get("cache_creation") or {}
        last[message["id"]] = split.get("ephemeral_1h_input_tokens", 0)
    session = read_session(path)
    recorded = [
        (e.message.get("usage") or {}).get("cacheWrite1h", 0)
        for e in session.entries
        if e.message is not None and e.message.get("role") == "assistant"
    ]
    assert sum(last.values()) > 0
    assert sum(recorded) == sum(last.values())


def test_calibration_summary_on_hand_counted_rows():
    import pandas as pd

    rows = pd.DataFrame(
        {
            "entry_id": ["a", "b"],
            "after_recorded_compaction": [False, False],
            # request a: a cold write; request b: a warm read
            "recorded_input": [0, 10],
            "replayed_input": [0, 0],
            "recorded_cache_read": [0, 900],
            "replayed_cache_read": [0, 1000],
            "recorded_cache_write": [1000, 90],
            "replayed_cache_write": [1100, 100],
            "recorded_output": [10, 10],
            "replayed_output": [10, 20],
            "recorded_cost_usd": [1.0, 1.0],
            "replayed_cost_usd": [1.0, 1.09],
        }
    )
    s = calibration_summary(rows)
    assert s["requests"] == 2
    # 2,000 recorded prompt tokens: read 900 → 1,000 is +5% of the prompt, write +6%.
    assert s["share_error_cache_read"] == pytest.approx(100 / 2000)
    assert s["share_error_cache_write"] == pytest.approx(110 / 2000)
    assert s["share_error_input"] == pytest.approx(-10 / 2000)
    assert s["error_output"] == pytest.approx(0.5)
    assert s["error_cost_usd"] == pytest.approx(0.045)
    # Prompts per request: 1,000 → 1,100 (+10%), 1,000 → 1,100 (+10%).
    assert s["prompt_error_median"] == pytest.approx(0.1)
    assert s["hit_agreement"] == 1.0
    assert s["unpredicted_misses"] == 0
    assert s["error_cost_usd_rest"] == pytest.approx(s["error_cost_usd"])
    assert not within(s)  # the write is 5.5% of the prompt off
    assert within({**s, "share_error_cache_write": 0.04})


def test_calibration_summary_separates_misses_the_replay_did_not_predict():
    import pandas as pd

    rows = pd.DataFrame(
        {
            "entry_id": ["a", "b", "c"],
            "after_recorded_compaction": [False, False, False],
            # a: both write cold; b: the replay reads, the provider missed (wrote it all);
            # c: both read.
            "recorded_input": [0, 0, 0],
            "replayed_input": [0, 0, 0],
            "recorded_cache_read": [0, 0, 1900],
            "replayed_cache_read": [0, 1000, 1900],
            "recorded_cache_write": [1000, 1100, 100],
            "replayed_cache_write": [1000, 100, 100],
            "recorded_output": [10, 10, 10],
            "replayed_output": [10, 10, 10],
            "recorded_cost_usd": [4.0, 4.4, 1.6],
            "replayed_cost_usd": [4.0, 0.7, 1.68],
        }
    )
    s = calibration_summary(rows)
    assert s["unpredicted_misses"] == 1  # only b: replay hit, record miss
    assert s["unpredicted_miss_cost_share"] == pytest.approx(4.4 / 10.0)
    # Over a and c: 5.6 recorded, 5.68 replayed.
    assert s["error_cost_usd_rest"] == pytest.approx(5.68 / 5.6 - 1)
    assert s["error_cost_usd"] == pytest.approx(6.38 / 10.0 - 1)
    assert s["hit_agreement"] == pytest.approx(2 / 3)

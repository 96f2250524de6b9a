"""Settings defaults, summary budgets and the compaction trigger (spec §3, §5.2, §5.7, §6.1).

Expected numbers are the spec's: pi `compaction.test.ts` (§8.1), oh-my-pi
`compaction.test.ts`@2ebae80e (§3.5, §8.2) and `compaction-summary-cap.test.ts` (§8.2),
or derived by hand from the formulas quoted in the test.
"""

from __future__ import annotations

import dataclasses

import pytest

from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.compaction._threshold import (
    ContextEstimate,
    adapt_keep_recent_tokens,
    async_lead_tokens,
    calculate_context_tokens,
    calculate_prompt_tokens,
    compaction_context_tokens,
    effective_reserve,
    estimate_context_tokens,
    get_last_assistant_usage,
    is_context_overflow,
    last_usage_index,
    resolve_budget_reserve_tokens,
    resolve_threshold_tokens,
    should_compact,
)
from musepi_lab.session._model import Entry
from musepi_lab.tokens._counter import TokenCounter


def mock_usage(inp: int, out: int, cache_read: int = 0, cache_write: int = 0) -> dict:
    """pi's `createMockUsage`: totalTokens is the sum of the four parts."""
    return {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": inp + out + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def user(text: str) -> dict:
    return {"role": "user", "content": text, "timestamp": 0}


def assistant(text: str, usage: dict | None = None, stop: str = "stop") -> dict:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "usage": usage if usage is not None else mock_usage(100, 50),
        "stopReason": stop,
        "timestamp": 0,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
    }


def chain(messages: list[dict]) -> list[Entry]:
    entries, parent = [], None
    for i, msg in enumerate(messages):
        entry_id = f"test-id-{i}"
        entries.append(
            Entry.from_record(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": msg,
                }
            )
        )
        parent = entry_id
    return entries


# -- defaults ---------------------------------------------------------------------------
def test_musepi_defaults_match_spec_6_1():
    s = CompactionSettings()
    assert s == CompactionSettings.musepi()
    assert s.profile == "musepi"
    assert s.enabled is True
    assert s.strategy == "context-full"
    assert s.method_order == ("remote", "snapcompact", "handoff", "shake", "soft")
    assert s.reserve_tokens is None  # unset: the provenance signal of §3.5
    assert s.keep_recent_tokens == 20000
    assert (s.threshold_percent, s.threshold_tokens) == (-1, -1)
    assert s.mid_turn_enabled is True
    assert s.auto_continue is True
    assert s.async_enabled is True
    assert s.remote_enabled is True
    assert s.remote_streaming_v2_enabled is True
    assert s.v2_retained_message_budget == 64000
    assert s.handoff_save_to_disk is False
    assert (s.idle_enabled, s.idle_threshold_tokens, s.idle_timeout_seconds) == (False, 200000, 300)
    assert s.supersede_reads is True and s.drop_useless is True
    assert s.branch_summary_enabled is False
    assert s.branch_summary_reserve_tokens == 16384
    assert s.branch_summary_max_tokens == 2048


def test_prune_policy_defaults_match_spec_6_3():
    s = CompactionSettings.musepi()
    assert s.prune_protect_tokens == 40000
    assert s.prune_minimum_savings == 20000
    assert s.prune_protected_tools == ("skill",)
    assert s.prune_useless is True
    assert s.prune_min_tokens == 50
    assert s.supersede_suffix_tokens == 8000
    # oh-my-pi 18.2.3 session-maintenance.ts: PRUNE_IDLE_FLUSH_MS = 90 * 60_000 and
    # PRUNE_CACHE_WARM_SUFFIX_TOKENS = 8_000; its maintenance passes no supersede key.
    assert s.supersede_idle_seconds == 90 * 60
    assert s.prune_cache_warm_suffix_tokens == 8000
    assert s.prune_supersede_reads is False
    assert s.reference == "oh-my-pi 18.2.3"


def test_pi_defaults_match_spec_3_3():
    s = CompactionSettings.pi()
    assert s.profile == "pi"
    assert s.enabled is True
    assert s.reserve_tokens == 16384
    assert s.keep_recent_tokens == 20000
    assert s.branch_summary_reserve_tokens == 16384
    assert s.branch_summary_skip_prompt is False
    # pi has no pruning, no mid-turn checks and no provider-native lanes.
    assert s.prune_enabled is False
    assert s.supersede_reads is False and s.drop_useless is False
    assert s.mid_turn_enabled is False
    assert s.remote_enabled is False


def test_settings_are_immutable_and_copy_with_changes_one_field():
    s = CompactionSettings.pi()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.keep_recent_tokens = 5  # type: ignore[misc]
    t = s.copy_with(keep_recent_tokens=5)
    assert t.keep_recent_tokens == 5 and s.keep_recent_tokens == 20000
    assert t.profile == "pi" and t.reserve_tokens == 16384


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"profile": "claude"}, ValueError),
        ({"strategy": "summarize"}, ValueError),
        ({"keep_recent_tokens": -1}, ValueError),
        ({"keep_recent_tokens": "20000"}, TypeError),
        ({"reserve_tokens": -5}, ValueError),
        ({"method_order": ("remote", "telepathy")}, ValueError),
        ({"method_order": "remote"}, TypeError),
        ({"threshold_percent": "90"}, TypeError),
        ({"prune_protected_tools": "skill"}, TypeError),
    ],
)
def test_bad_settings_raise_clear_errors(changes, error):
    with pytest.raises(error):
        CompactionSettings(**changes)


def test_for_profile_picks_the_profile_defaults():
    assert CompactionSettings.for_profile("pi") == CompactionSettings.pi()
    assert CompactionSettings.for_profile("musepi", keep_recent_tokens=7).keep_recent_tokens == 7
    with pytest.raises(ValueError):
        CompactionSettings.for_profile("omp")


# -- output budgets (§5.2, §5.7) --------------------------------------------------------
def test_pi_summary_budgets_with_default_reserve():
    s = CompactionSettings.pi()
    # §5.2: floor(0.8 · 16384) = 13107 and floor(0.5 · 16384) = 8192.
    assert s.summary_max_tokens == 13107
    assert s.turn_prefix_max_tokens == 8192
    assert s.short_summary_max_tokens is None  # pi writes no short summary


def test_pi_summary_budget_is_not_capped():
    # pi has no MAX_SUMMARY_TOKENS: floor(0.8 · 150000) = 120000.
    assert CompactionSettings.pi(reserve_tokens=150000).summary_max_tokens == 120000


def test_musepi_summary_cap_with_huge_reserve():
    # compaction-summary-cap.test.ts: reserve 150k → maxTokens 16384; the split-turn
    # budgets [short, history, prefix] are [512, 16384, 16384]:
    # min(512, floor(0.2·150000)=30000), min(120000, 16384), min(75000, 16384).
    s = CompactionSettings.musepi(reserve_tokens=150000)
    assert s.summary_max_tokens == 16384
    assert [s.short_summary_max_tokens, s.summary_max_tokens, s.turn_prefix_max_tokens] == [
        512,
        16384,
        16384,
    ]


def test_musepi_summary_budget_below_cap():
    # reserve 10000 → floor(0.8 · 10000) = 8000 (under the cap); prefix 5000; short
    # min(512, 2000) = 512.
    s = CompactionSettings.musepi(reserve_tokens=10000)
    assert s.summary_max_tokens == 8000
    assert s.turn_prefix_max_tokens == 5000
    assert s.short_summary_max_tokens == 512


def test_musepi_unset_reserve_uses_default_for_budgets():
    s = CompactionSettings.musepi()
    # reserve ?? 16384 → min(13107, 16384), min(8192, 16384), min(512, 3276).
    assert (s.summary_max_tokens, s.turn_prefix_max_tokens, s.short_summary_max_tokens) == (
        13107,
        8192,
        512,
    )


# -- usage (§3.2, §3.5) -----------------------------------------------------------------
@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_calculate_context_tokens_sums_usage(profile):
    assert calculate_context_tokens(mock_usage(1000, 500, 200, 100), profile=profile) == 1800
    assert calculate_context_tokens(mock_usage(0, 0, 0, 0), profile=profile) == 0


def test_calculate_context_tokens_without_total_sums_the_parts():
    usage = {"input": 10, "output": 20, "cacheRead": 30, "cacheWrite": 40}
    assert calculate_context_tokens(usage, profile="pi") == 100
    assert calculate_context_tokens(usage, profile="musepi") == 100


def test_musepi_context_tokens_prefers_provider_occupancy():
    usage = {**mock_usage(0, 0, 0, 0), "contextTokens": 120_000}
    assert calculate_context_tokens(usage, profile="musepi") == 120_000
    assert calculate_context_tokens({**usage, "contextTokens": -3}, profile="musepi") == 0
    # pi does not know the field.
    assert calculate_context_tokens(usage, profile="pi") == 0


def test_musepi_context_tokens_excludes_orchestration():
    usage = {
        **mock_usage(600, 200, 200, 0),
        "orchestration": {"input": 100, "output": 50, "cacheRead": 50},
    }
    # (totalTokens 1000) − (100 + 50 + 50) = 800; pi ignores orchestration.
    assert calculate_context_tokens(usage, profile="musepi") == 800
    assert calculate_context_tokens(usage, profile="pi") == 1000


def test_calculate_prompt_tokens():
    assert calculate_prompt_tokens(mock_usage(100, 999, 200, 300)) == 600  # input+cache
    assert calculate_prompt_tokens({**mock_usage(1, 1), "contextTokens": 42}) == 42
    # No prompt side at all: falls back to the context tokens (output only here).
    assert calculate_prompt_tokens(mock_usage(0, 29)) == 29


def test_get_last_assistant_usage_picks_latest():
    entries = chain(
        [
            user("Hello"),
            assistant("Hi", mock_usage(100, 50)),
            user("How are you?"),
            assistant("Good", mock_usage(200, 100)),
        ]
    )
    for profile in ("pi", "musepi"):
        assert get_last_assistant_usage(entries, profile=profile)["input"] == 200


def test_get_last_assistant_usage_skips_aborted_and_error():
    entries = chain(
        [
            user("Hello"),
            assistant("Hi", mock_usage(100, 50)),
            user("How are you?"),
            assistant("Aborted", mock_usage(300, 150), stop="aborted"),
            assistant("Failed", mock_usage(400, 150), stop="error"),
        ]
    )
    assert get_last_assistant_usage(entries, profile="pi")["input"] == 100
    assert last_usage_index(entries, profile="pi") == 1


def test_get_last_assistant_usage_none_without_assistants():
    assert get_last_assistant_usage(chain([user("Hello")])) is None
    assert last_usage_index(chain([user("Hello")])) == -1


def test_musepi_ignores_all_zero_usage():
    # §4.6: importers write all-zero usage when the source had none; MusePi skips it.
    entries = chain([assistant("a", mock_usage(100, 50)), assistant("b", mock_usage(0, 0))])
    assert get_last_assistant_usage(entries, profile="musepi")["input"] == 100
    assert get_last_assistant_usage(entries, profile="pi")["input"] == 0


def test_estimate_context_tokens_usage_plus_trailing():
    # pi estimator: ceil(chars / 4). "abcdefgh" is 2 tokens, "x" 1 token.
    messages = [
        user("abcdefgh"),
        assistant("reply", mock_usage(1000, 500)),
        user("x"),
        user("abcdefgh"),
    ]
    est = estimate_context_tokens(messages, counter=TokenCounter("pi"))
    assert est == ContextEstimate(
        tokens=1500 + 3, usage_tokens=1500, trailing_tokens=3, last_usage_index=1
    )


def test_estimate_context_tokens_without_usage_sums_estimates():
    est = estimate_context_tokens([user("abcdefgh"), user("abcd")], counter=TokenCounter("pi"))
    assert est == ContextEstimate(tokens=3, usage_tokens=0, trailing_tokens=3, last_usage_index=-1)


# -- thresholds -------------------------------------------------------------------------
def test_pi_should_compact():
    s = CompactionSettings.pi(reserve_tokens=10000)
    assert should_compact(95000, 100000, s) is True
    assert should_compact(89000, 100000, s) is False
    # strict ">": exactly window − reserve does not compact.
    assert should_compact(90000, 100000, s) is False
    assert should_compact(95000, 100000, s.copy_with(enabled=False)) is False


def test_musepi_reserve_floor_of_15_percent():
    # window 100000, reserve 10000 → effective max(15000, 10000) = 15000 → threshold 85000.
    s = CompactionSettings.musepi(reserve_tokens=10000)
    assert effective_reserve(100000, 10000) == 15000
    assert resolve_threshold_tokens(100000, s) == 85000
    assert should_compact(95000, 100000, s) is True
    assert should_compact(86000, 100000, s) is True
    assert should_compact(84000, 100000, s) is False


def test_musepi_unset_reserve_on_small_window_uses_proportional():
    # window 16385, reserve unset: effective 16384 ≥ 16385 − 2457 → proportional 2457,
    # threshold 16385 − 2457 = 13928.
    s = CompactionSettings.musepi()
    assert resolve_budget_reserve_tokens(16385, None) == 2457
    assert resolve_threshold_tokens(16385, s) == 13928
    assert should_compact(10000, 16385, s) is False
    assert should_compact(13929, 16385, s) is True


def test_musepi_explicit_default_reserve_is_honoured():
    s = CompactionSettings.musepi(reserve_tokens=16384)
    assert resolve_threshold_tokens(16385, s) == 1
    assert should_compact(2, 16385, s) is True


def test_musepi_large_configured_reserve():
    s = CompactionSettings.musepi(reserve_tokens=90000)
    assert resolve_threshold_tokens(100000, s) == 10000
    assert should_compact(10000, 100000, s) is False
    assert should_compact(10001, 100000, s) is True


def test_musepi_reserve_exceeding_window_falls_back_to_proportional():
    # effective 200000 ≥ window 100000 → proportional floor(15000) → threshold 85000.
    s = CompactionSettings.musepi(reserve_tokens=200000)
    assert resolve_budget_reserve_tokens(100000, 200000) == 15000
    assert resolve_threshold_tokens(100000, s) == 85000


def test_musepi_threshold_percent():
    s = CompactionSettings.musepi(threshold_percent=90, reserve_tokens=10000)
    assert resolve_threshold_tokens(100000, s) == 90000
    assert should_compact(89000, 100000, s) is False
    assert should_compact(90001, 100000, s) is True
    # clamped to [1, 99]
    assert resolve_threshold_tokens(100000, s.copy_with(threshold_percent=150)) == 99000
    assert resolve_threshold_tokens(100000, s.copy_with(threshold_percent=0.5)) == 1000


def test_musepi_reserve_rule_with_sentinel_percent():
    s = CompactionSettings.musepi(threshold_percent=-1, reserve_tokens=30000)
    assert resolve_threshold_tokens(100000, s) == 70000
    assert should_compact(70000, 100000, s) is False
    assert should_compact(70001, 100000, s) is True


def test_musepi_fixed_threshold_tokens_win_and_are_clamped():
    s = CompactionSettings.musepi(threshold_tokens=50000, threshold_percent=90)
    assert resolve_threshold_tokens(100000, s) == 50000
    assert resolve_threshold_tokens(40000, s) == 39999  # clamp to window − 1


def test_musepi_strategy_off_and_disabled_never_compact():
    s = CompactionSettings.musepi(strategy="off", threshold_percent=1, reserve_tokens=10000)
    assert should_compact(99000, 100000, s) is False
    d = CompactionSettings.musepi(enabled=False, reserve_tokens=10000)
    assert should_compact(95000, 100000, d) is False
    assert should_compact(95000, 0, CompactionSettings.musepi()) is False


def test_compaction_context_tokens_floor():
    assert compaction_context_tokens(20_000, 90_000) == 90_000
    assert compaction_context_tokens(85_000, 80_000) == 85_000
    assert compaction_context_tokens(-5, -10) == 0
    assert compaction_context_tokens(-5, 100) == 100
    s = CompactionSettings.musepi(reserve_tokens=10000)
    assert should_compact(20_000, 100_000, s) is False
    assert should_compact(compaction_context_tokens(20_000, 95_000), 100_000, s) is True


def test_async_lead_band():
    # clamp(floor(0.125 · threshold), 8192, 32000)
    assert async_lead_tokens(85000) == 10625
    assert async_lead_tokens(10000) == 8192
    assert async_lead_tokens(1_000_000) == 32000


def test_adaptive_keep_recent_tokens():
    # §4.4: ratio = prompt / estimated; shrink when > 1, never enlarge.
    assert adapt_keep_recent_tokens(20000, 150000, 100000) == 13333  # floor(20000 / 1.5)
    assert adapt_keep_recent_tokens(20000, 50000, 100000) == 20000
    assert adapt_keep_recent_tokens(20000, 50000, 0) == 20000
    assert adapt_keep_recent_tokens(1, 10**9, 1) == 1  # floored at 1


# -- overflow (§3.3) --------------------------------------------------------------------
@pytest.mark.parametrize(
    "error",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "input is too long for requested model",
        "Your input exceeds the context window of this model",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
        "Please reduce the length of the messages or completion",
        "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000",
        "prompt token count of 130000 exceeds the limit of 128000",
        "the request exceeds the available context size, try increasing it",
        "tokens to keep from the initial prompt is greater than the context length",
        "invalid params, context window exceeds limit",
        "Your request exceeded model token limit: 262144 (requested: 300000)",
        "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
        "model_context_window_exceeded",
        "CONTEXT_LENGTH_EXCEEDED",
        "too many tokens in request",
        "token limit exceeded",
        "400 status code (no body)",
        "413 (no body)",
    ],
)
def test_overflow_error_patterns(error):
    msg = {**assistant(""), "stopReason": "error", "errorMessage": error}
    assert is_context_overflow(msg, 200000) is True


@pytest.mark.parametrize(
    "error", ["429 status code (no body)", "rate limit reached", "internal server error"]
)
def test_other_errors_are_not_overflow(error):
    msg = {**assistant(""), "stopReason": "error", "errorMessage": error}
    assert is_context_overflow(msg, 200000) is False


def test_pattern_only_counts_on_error_stop():
    msg = {**assistant(""), "stopReason": "stop", "errorMessage": "prompt is too long"}
    assert is_context_overflow(msg) is False


def test_silent_overflow_by_usage():
    msg = assistant("ok", mock_usage(150000, 10, 60000, 0))
    assert is_context_overflow(msg, 200000) is True  # 150000 + 60000 > 200000
    assert is_context_overflow(msg, 250000) is False
    assert is_context_overflow(msg) is False  # no window: not checked

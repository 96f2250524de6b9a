"""`calibrate`, the bill's simulation and its intervals on synthetic sessions whose
recorded usage is generated from known parameters (issue 23).

A generated pi session: turns a minute apart (inside Anthropic's 5-minute TTL), each user
message 4,000 ASCII characters and each reply 400, so the counter's estimate of the
context before request k is `k * 1,100 + 1,000` tokens by spec §3.4 (`(bytes + 3) >> 2`
per fragment). Its recorded usage is made from a token ratio and a system prompt
(`prompt = system + round(ratio * estimate)`) and from a miss pattern: a request that
"hits" reads the previous prompt and writes the rest; a "miss" writes it all. The expected
values below come from that construction.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from musepi_lab import read_session
from musepi_lab.replay import (
    DEFAULT_CALIBRATION,
    Calibration,
    calibrate,
    cost_difference_interval,
    judge_session,
    replay,
)
from musepi_lab.replay._fit import UNIT_CALIBRATION

USER_CHARS, REPLY_CHARS = 4_000, 400
USER_TOKENS, REPLY_TOKENS = 1_000, 100  # (bytes + 3) >> 2
MODEL = "claude-sonnet-4-5"


def estimate_before(k: int) -> int:
    """The context of request k (0-based): k earlier turns and this user message."""
    return k * (USER_TOKENS + REPLY_TOKENS) + USER_TOKENS


def synthetic_session(tmp_path, name, *, ratio, system, misses, requests=41):
    """A pi session of `requests` turns whose recorded prompt is `system + ratio * estimate`
    and whose request k misses the cache when `k in misses` (k ≥ 1)."""

    def stamp(seconds):
        return f"2025-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"

    lines = [
        json.dumps({"type": "session", "id": name, "timestamp": stamp(0), "cwd": "/"}),
    ]
    previous = 0
    for k in range(requests):
        prompt = system + round(ratio * estimate_before(k))
        hit = k > 0 and k not in misses
        read = previous if hit else 0
        usage = {"input": 0, "cacheRead": read, "cacheWrite": prompt - read, "output": 100}
        user = {"role": "user", "content": "u" * USER_CHARS, "timestamp": 0}
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": "a" * REPLY_CHARS}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": MODEL,
            "usage": usage,
            "stopReason": "stop",
            "timestamp": 0,
        }
        lines.append(
            json.dumps({"type": "message", "timestamp": stamp(60 * k + 1), "message": user})
        )
        lines.append(
            json.dumps({"type": "message", "timestamp": stamp(60 * k + 2), "message": reply})
        )
        previous = prompt
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return read_session(path)


def every_fifth(requests=41):
    return {k for k in range(1, requests) if k % 5 == 0}  # 8 of the 40 requests that can hit


def test_calibrate_recovers_a_known_ratio_system_prompt_and_miss_rate(tmp_path):
    sessions = [
        synthetic_session(tmp_path, f"s{i}", ratio=1.3, system=3_000, misses=every_fifth())
        for i in range(2)
    ]
    fit = calibrate(sessions, fitted="2025-01-01")
    anthropic = fit.family("anthropic")
    assert anthropic.token_ratio == pytest.approx(1.3, rel=1e-3)
    assert fit.system_prompt_tokens(sessions[0].header) == pytest.approx(3_000, abs=5)
    # Every request after the first is a hit by the documented rules; 8 of 40 missed.
    assert anthropic.miss_rate == pytest.approx(8 / 40)
    assert anthropic.ratio_spread == pytest.approx(0.0, abs=1e-3)  # one ratio in both
    # Both sessions miss at the same rate: no more spread between them than chance.
    assert anthropic.miss_concentration == 0.0
    assert fit.warm_prefix_tokens(sessions[0].header) == 0  # first requests read nothing
    assert fit.sessions == ("s0", "s1") and fit.fitted == "2025-01-01"
    # The OpenAI parameters saw no session: the unit ratio and the documented middle TTL.
    assert fit.family("openai").token_ratio == 1.0
    assert fit.model("openai").ttl_seconds == 450.0


def test_calibrate_measures_the_spread_of_session_ratios(tmp_path):
    # Two sessions at 1.3 / 1.1 and 1.3 * 1.1: each deviates by log(1.1) from a line
    # between them, so the pooled spread over 2 - 1 degrees of freedom is about
    # sqrt(2) * log(1.1); a new session's spreads wider, by sqrt(1 + 1/2), and is drawn
    # from Student's t with that one degree of freedom.
    sessions = [
        synthetic_session(tmp_path, "low", ratio=1.3 / 1.1, system=3_000, misses=set()),
        synthetic_session(tmp_path, "high", ratio=1.3 * 1.1, system=3_000, misses=set()),
    ]
    fit = calibrate(sessions)
    assert fit.family("anthropic").token_ratio == pytest.approx(1.3, rel=0.02)
    assert fit.family("anthropic").ratio_spread == pytest.approx(
        math.sqrt(2) * math.log(1.1) * math.sqrt(1.5), rel=0.15
    )
    assert fit.family("anthropic").ratio_freedom == 1
    assert fit.family("anthropic").miss_rate == 0.0


def test_calibrate_measures_how_much_sessions_miss_rates_differ(tmp_path):
    # One session misses 4 of its 40 hits (10%), the other 16 (40%): pooled 25%. Each
    # deviates by 0.15 from it, where chance alone (binomial, 40 hits) gives a variance of
    # 0.25 * 0.75 / 40; the excess over m (1 - m), over 2 - 1 degrees of freedom, is rho,
    # and the beta concentration is 1 / rho - 1.
    few = {k for k in range(1, 41) if k % 10 == 0}
    many = set(range(1, 17))
    assert (len(few), len(many)) == (4, 16)
    sessions = [
        synthetic_session(tmp_path, "few", ratio=1.3, system=3_000, misses=few),
        synthetic_session(tmp_path, "many", ratio=1.3, system=3_000, misses=many),
    ]
    fit = calibrate(sessions)
    m = 20 / 80
    rho = 2 * (0.15**2 - m * (1 - m) / 40) / (m * (1 - m))
    assert fit.family("anthropic").miss_rate == pytest.approx(m)
    assert fit.family("anthropic").miss_concentration == pytest.approx(1 / rho - 1, rel=1e-6)


def test_calibrate_refuses_an_excluded_session_and_records_what_it_saw(tmp_path):
    session = synthetic_session(tmp_path, "judged", ratio=1.3, system=3_000, misses=set())
    with pytest.raises(ValueError, match="judged"):
        calibrate([session], exclude={"judged"})
    with pytest.raises(ValueError, match="at least one"):
        calibrate([])
    fit = calibrate([session, session])  # a copy enters once
    assert fit.sessions == ("judged",)
    with pytest.raises(ValueError, match="fitted on"):
        judge_session(session, fit)


def known(ratio=1.3, spread=0.1, miss=0.2, system=3_000) -> Calibration:
    fit = UNIT_CALIBRATION.with_family(
        "anthropic", token_ratio=ratio, ratio_spread=spread, miss_rate=miss
    )
    return fit.copy_with(system_prompt=(("pi", (), system),))


def test_prediction_intervals_cover_bills_drawn_from_the_model_at_their_level(tmp_path):
    # Sessions drawn from the model the calibration states: a ratio of 1.3 * exp(0.1 z)
    # and misses at 20%; the 90% interval should hold about 90% of their recorded bills.
    rng = np.random.default_rng(7)
    fit = known()
    inside = []
    for i in range(30):
        ratio = 1.3 * math.exp(0.1 * rng.standard_normal())
        misses = {k for k in range(1, 41) if rng.random() < 0.2}
        session = synthetic_session(tmp_path, f"d{i}", ratio=ratio, system=3_000, misses=misses)
        _, figures = judge_session(session, fit)
        inside.append(figures["inside"])
    assert 0.8 <= np.mean(inside) <= 1.0
    # Without the spread and the misses the interval collapses and covers almost nothing.
    narrow = known(spread=0.0, miss=0.0)
    _, figures = judge_session(
        synthetic_session(tmp_path, "x", ratio=1.45, system=3_000, misses={5, 9}), narrow
    )
    assert figures["cost_low"] == pytest.approx(figures["cost_high"])
    assert not figures["inside"]


def test_a_result_carries_its_expected_bill_and_interval(tmp_path):
    session = synthetic_session(tmp_path, "r", ratio=1.3, system=3_000, misses=set())
    exact = replay(session, "none", window=10**9, calibration=known(spread=0.0, miss=0.0))
    assert exact.cost == pytest.approx(exact.total_cost)
    assert exact.cost_interval == pytest.approx((exact.total_cost, exact.total_cost))
    r = replay(session, "none", window=10**9, calibration=known())
    low, high = r.cost_interval
    # Misses only add cost: the expected bill is above the documented-rule bill.
    assert r.total_cost < r.cost and low < r.cost < high
    # Each miss of a request turns its cache read (0.1x input) into a write (1.25x):
    # the mean added cost is about miss rate x sum of reads x (write - read price).
    prices = {"cache_read": 0.3, "cache_write": 3.75}  # Sonnet 4.5 list prices, USD / Mtok
    reads = float(r.timeline["cache_read"].sum())
    added = 0.2 * reads * (prices["cache_write"] - prices["cache_read"]) / 1e6
    assert r.cost - r.total_cost == pytest.approx(added, rel=0.1)
    assert r.calibration is not DEFAULT_CALIBRATION


def test_the_difference_of_two_replays_is_paired(tmp_path):
    session = synthetic_session(tmp_path, "p", ratio=1.3, system=3_000, misses=set())
    a = replay(session, "none", window=10**9, calibration=known())
    b = replay(session, "none", window=10**9, calibration=known())
    # The same session and draws: the difference is exactly 0, not two wide intervals.
    assert cost_difference_interval(a, b) == (0.0, 0.0, 0.0)
    low, high = a.cost_interval
    assert high - low > 0
    cheaper = replay(session, "none", window=10**9, calibration=known(), prices={"output": 0.0})
    mean, d_low, d_high = cost_difference_interval(a, cheaper)
    assert d_low == pytest.approx(d_high) == pytest.approx(mean)  # output cost is not drawn
    assert mean == pytest.approx(a.total_cost - cheaper.total_cost)


def test_a_calibration_needs_every_cache_model():
    with pytest.raises(ValueError, match="one model per name"):
        Calibration(models=DEFAULT_CALIBRATION.models[:2])
    assert DEFAULT_CALIBRATION.model("openai").provider == "openai"
    with pytest.raises(ValueError, match="unknown cache model"):
        DEFAULT_CALIBRATION.model("gemini")

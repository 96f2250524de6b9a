"""`calibrate`, each session's own line, the bill's distribution and its intervals on
synthetic sessions whose recorded usage is generated from known parameters (issues 23, 27).

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
    replay_session,
)
from musepi_lab.replay._fit import CONCENTRATIONS, UNIT_CALIBRATION
from musepi_lab.replay._judge import judge_session
from musepi_lab.replay._uncertainty import COST_SEED

USER_CHARS, REPLY_CHARS = 4_000, 400
USER_TOKENS, REPLY_TOKENS = 1_000, 100  # (bytes + 3) >> 2
MODEL = "claude-sonnet-4-5"


def estimate_before(k: int) -> int:
    """The context of request k (0-based): k earlier turns and this user message."""
    return k * (USER_TOKENS + REPLY_TOKENS) + USER_TOKENS


def synthetic_session(tmp_path, name, *, ratio, system, misses, requests=41, first_read=0):
    """A pi session of `requests` turns whose recorded prompt is `system + ratio * estimate`
    and whose request k misses the cache when `k in misses` (k ≥ 1); the first request
    reads `first_read` tokens (a prefix another session cached) and writes the rest."""

    def stamp(seconds):
        return f"2025-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"

    lines = [
        json.dumps({"type": "session", "id": name, "timestamp": stamp(0), "cwd": "/"}),
    ]
    previous = 0
    for k in range(requests):
        prompt = system + round(ratio * estimate_before(k))
        hit = k > 0 and k not in misses
        read = previous if hit else (first_read if k == 0 else 0)
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
    assert fit.system_prompt_tokens(sessions[0].header, "anthropic") == pytest.approx(3_000, abs=5)
    # Every request after the first reads its own cache by the documented rules; 8 of
    # each session's 40 missed: 16 of 80, and one pseudo-request at that same pooled rate.
    assert anthropic.miss_rate == pytest.approx(16.2 / 81)
    assert fit.rates(sessions[0].header, "anthropic") == pytest.approx((16.2 / 81, 0.0))
    # One line in both, exactly: no spread of ratio or system prompt, no scatter.
    assert anthropic.ratio_spread == pytest.approx(0.0, abs=1e-3)
    assert anthropic.system_spread == pytest.approx(0.0, abs=5)
    assert anthropic.noise == pytest.approx(0.0, abs=1e-3)
    # Both sessions miss at the same rate: the likeliest beta is the narrowest tried.
    assert anthropic.miss_concentration == max(CONCENTRATIONS)
    assert fit.warm_prefix_tokens(sessions[0].header, "anthropic") == 0
    assert fit.sessions == ("s0", "s1") and fit.fitted == "2025-01-01"
    # The OpenAI parameters saw no session: the unit ratio and the documented middle TTL.
    assert fit.family("openai").token_ratio == 1.0
    assert fit.model("openai").ttl_seconds == 450.0


def test_calibrate_measures_the_spread_of_session_ratios(tmp_path):
    # Two sessions at 1.3 / 1.1 and 1.3 * 1.1: each one's own line has its ratio exactly, so
    # each deviates by log(1.1) (in log) from a family ratio between them, and the pooled
    # spread over 2 - 1 degrees of freedom is sqrt(2) * log(1.1).
    sessions = [
        synthetic_session(tmp_path, "low", ratio=1.3 / 1.1, system=3_000, misses=set()),
        synthetic_session(tmp_path, "high", ratio=1.3 * 1.1, system=3_000, misses=set()),
    ]
    fit = calibrate(sessions)
    anthropic = fit.family("anthropic")
    assert anthropic.token_ratio == pytest.approx(1.3, rel=0.02)
    assert anthropic.ratio_spread == pytest.approx(math.sqrt(2) * math.log(1.1), rel=0.05)
    assert anthropic.system_spread == pytest.approx(0.0, abs=50)
    assert anthropic.miss_rate == 0.0


def _beta_binomial_loglik(counts, rate, k):
    """log P(misses | hits) of each (hits, misses) under a beta of mean `rate`, size `k`."""
    a, b = rate * k, (1 - rate) * k
    total = 0.0
    for n, x in counts:
        total += (
            math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1)
            + math.lgamma(x + a) + math.lgamma(n - x + b) - math.lgamma(n + k)
            - math.lgamma(a) - math.lgamma(b) + math.lgamma(k)
        )  # fmt: skip
    return total


def test_calibrate_measures_how_much_sessions_miss_rates_differ(tmp_path):
    # One session misses 4 of its 40 hits (10%), the other 16 (40%): the concentration is
    # the beta (mean at their pooled rate) under which those counts are likeliest.
    few = {k for k in range(1, 41) if k % 10 == 0}
    many = set(range(1, 17))
    assert (len(few), len(many)) == (4, 16)
    sessions = [
        synthetic_session(tmp_path, "few", ratio=1.3, system=3_000, misses=few),
        synthetic_session(tmp_path, "many", ratio=1.3, system=3_000, misses=many),
    ]
    fit = calibrate(sessions)
    rate = (20 + 0.25) / 81  # 20 of 80, one pseudo-request at the pooled 25%
    assert fit.family("anthropic").miss_rate == pytest.approx(rate)
    counts = [(40, 4), (40, 16)]
    best = max(CONCENTRATIONS, key=lambda k: _beta_binomial_loglik(counts, rate, k))
    assert fit.family("anthropic").miss_concentration == best
    assert best < max(CONCENTRATIONS)  # they differ beyond chance


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


def known(ratio=1.3, spread=0.1, miss=0.2, system=3_000, concentration=0.0) -> Calibration:
    fit = UNIT_CALIBRATION.with_family(
        "anthropic",
        token_ratio=ratio,
        ratio_spread=spread,
        system_spread=500.0 if spread else 0.0,
        noise=0.01 if spread else 0.0,
        miss_rate=miss,
        miss_concentration=concentration,
    )
    return fit.copy_with(system_prompt=(("pi@anthropic", (), system),))


def test_a_session_learns_its_own_line_from_its_requests(tmp_path):
    # The family says 1.3 and 3,000; the session's own line is 1.5 and 5,000. Replayed on
    # its own line (from all its recorded requests) the prompts are its own, to rounding;
    # on the family line they are the family's.
    session = synthetic_session(tmp_path, "own", ratio=1.5, system=5_000, misses=set())
    fit = known(miss=0.0)
    own = replay_session(session, "none", window=10**9, calibration=fit).timeline
    family = replay_session(session, "none", window=10**9, calibration=fit, ratio="family").timeline
    for k in (0, 20, 40):
        assert own["prompt_tokens"][k] == pytest.approx(5_000 + 1.5 * estimate_before(k), rel=2e-3)
        assert family["prompt_tokens"][k] == pytest.approx(3_000 + round(1.3 * estimate_before(k)))


def test_the_causal_line_of_a_request_sees_only_the_requests_before_it(tmp_path):
    session = synthetic_session(tmp_path, "c", ratio=1.5, system=5_000, misses=set())
    fit = known(miss=0.0)
    result = replay_session(session, "recorded", window=10**9, calibration=fit, ratio="causal")
    terms = result.streams[0].draws.terms
    # The first request has only the prior; the last ones know the session's own line.
    assert (terms[0].system, terms[0].ratio) == (3_000, 1.3)
    assert terms[40].ratio == pytest.approx(1.5, rel=1e-2)
    assert terms[40].system == pytest.approx(5_000, rel=2e-2)
    # A different record from request 30 on changes no line before request 31.
    other = synthetic_session(tmp_path, "c2", ratio=1.5, system=5_000, misses={30, 31, 32})
    changed = replay_session(other, "recorded", window=10**9, calibration=fit, ratio="causal")
    lines = [(t.system, t.ratio) for t in changed.streams[0].draws.terms]
    assert lines[:31] == [(t.system, t.ratio) for t in terms[:31]]
    with pytest.raises(ValueError, match="causal"):
        replay_session(session, "none", window=10**9, calibration=fit, ratio="causal")


def test_prediction_intervals_cover_bills_drawn_from_the_model_at_their_level(tmp_path):
    # Sessions drawn from the model the calibration states: a ratio of 1.3 * exp(0.1 z)
    # and misses at 20%; the 90% interval of the judged (causal) bill should hold about
    # 90% of their recorded bills.
    rng = np.random.default_rng(7)
    fit = known()
    inside, pits = [], []
    for i in range(30):
        ratio = 1.3 * math.exp(0.1 * rng.standard_normal())
        misses = {k for k in range(1, 41) if rng.random() < 0.2}
        session = synthetic_session(tmp_path, f"d{i}", ratio=ratio, system=3_000, misses=misses)
        _, figures = judge_session(session, fit)
        inside.append(figures["inside"])
        pits.append(figures["pit"])
    assert 0.8 <= np.mean(inside) <= 1.0
    assert 0.2 <= np.median(pits) <= 0.8  # not piled at one end
    # Without the spread and the misses the interval collapses and covers almost nothing.
    narrow = known(spread=0.0, miss=0.0)
    _, figures = judge_session(
        synthetic_session(tmp_path, "x", ratio=1.45, system=3_000, misses={5, 9}), narrow
    )
    assert figures["cost_high"] - figures["cost_low"] < 1e-9
    assert not figures["inside"]


def test_a_result_carries_its_exact_expected_bill_and_interval(tmp_path):
    session = synthetic_session(tmp_path, "r", ratio=1.3, system=3_000, misses=set())
    exact = replay_session(session, "none", window=10**9, calibration=known(spread=0.0, miss=0.0))
    assert exact.cost == pytest.approx(exact.total_cost)
    assert exact.cost_interval == pytest.approx((exact.total_cost, exact.total_cost))
    r = replay_session(session, "none", window=10**9, calibration=known())
    low, high = r.cost_interval
    assert r.total_cost < r.cost and low < r.cost < high
    # Each request that reads its own cache misses at the 20% (concentration 0: nothing
    # learned), a miss turning its read (0.1x input) into a write (1.25x): Sonnet 4.5 list
    # prices, USD / Mtok. The expectation is exact, not drawn.
    reads = float(r.timeline["cache_read"].iloc[1:].sum())
    added = 0.2 * reads * (3.75 - 0.3) / 1e6
    assert r.cost - r.total_cost == pytest.approx(added, rel=1e-9)
    assert r.calibration is not DEFAULT_CALIBRATION


def test_the_expected_bill_is_the_same_for_every_seed_and_the_draws_agree(tmp_path):
    from musepi_lab.replay._uncertainty import cost_draws

    session = synthetic_session(tmp_path, "s", ratio=1.35, system=3_000, misses=every_fifth())
    r = replay_session(session, "none", window=10**9, calibration=known(concentration=50.0))
    streams = [s.draws for s in r.streams]
    # The expectation is computed, not drawn: no seed enters it. The draws' mean agrees
    # within 1% (20,000 draws: their standard error is about 0.15% here).
    for seed in (COST_SEED, COST_SEED + 1, COST_SEED + 2, 7):
        draws = cost_draws(streams, seed=seed, draws=20_000)
        assert np.isfinite(draws).all()
        assert draws.mean() == pytest.approx(r.cost, rel=0.01)


def test_the_difference_of_two_replays_is_paired(tmp_path):
    session = synthetic_session(tmp_path, "p", ratio=1.3, system=3_000, misses=set())
    a = replay_session(session, "none", window=10**9, calibration=known())
    b = replay_session(session, "none", window=10**9, calibration=known())
    # The same session and draws: the difference is exactly 0, not two wide intervals.
    assert cost_difference_interval(a, b) == (0.0, 0.0, 0.0)
    low, high = a.cost_interval
    assert high - low > 0
    cheaper = replay_session(
        session, "none", window=10**9, calibration=known(), prices={"output": 0.0}
    )
    mean, d_low, d_high = cost_difference_interval(a, cheaper)
    assert d_low == pytest.approx(d_high) == pytest.approx(mean)  # output cost is not drawn
    assert mean == pytest.approx(a.total_cost - cheaper.total_cost)


def test_a_calibration_needs_every_cache_model():
    with pytest.raises(ValueError, match="one model per name"):
        Calibration(models=DEFAULT_CALIBRATION.models[:2])
    assert DEFAULT_CALIBRATION.model("openai").provider == "openai"
    with pytest.raises(ValueError, match="unknown cache model"):
        DEFAULT_CALIBRATION.model("gemini")


def test_the_keys_concentration_is_the_posterior_mode_under_the_hyperprior(tmp_path):
    # Two pi sessions, one harness key: its pooled count (16 misses of 80 hits) sits at the
    # family's rate, so the likelihood alone grows towards an infinite concentration; the
    # hyperprior k^-1.5 (Gelman et al.'s (a + b)^-5/2) makes its mode finite.
    sessions = [
        synthetic_session(tmp_path, f"k{i}", ratio=1.3, system=3_000, misses=every_fifth())
        for i in range(2)
    ]
    fit = calibrate(sessions)
    rate = 16.2 / 81
    counts = [(80, 16)]
    assert max(CONCENTRATIONS, key=lambda k: _beta_binomial_loglik(counts, rate, k)) == max(
        CONCENTRATIONS
    )
    mode = max(
        CONCENTRATIONS, key=lambda k: _beta_binomial_loglik(counts, rate, k) - 1.5 * math.log(k)
    )
    assert mode < max(CONCENTRATIONS)
    assert fit.family("anthropic").key_concentration == mode
    # The fit has a row for pi@anthropic: its streams keep the within-key concentration.
    header = sessions[0].header
    assert fit.concentration(header, "anthropic") == fit.family("anthropic").miss_concentration


def test_a_harness_the_fit_never_saw_learns_its_miss_rate_at_the_keys_concentration(tmp_path):
    # The family misses 2% and its streams are alike (10,000), but no row is for pi: a pi
    # stream's prior has the keys' concentration (10), so its causal rate at request 40 is
    # (0.02 * 10 + its 7 misses among requests 1-39) / (10 + 39 candidates).
    session = synthetic_session(tmp_path, "new", ratio=1.3, system=3_000, misses=every_fifth())
    fit = known(spread=0.0, miss=0.02, concentration=10_000.0)
    unseen = fit.with_family("anthropic", key_concentration=10.0)
    assert unseen.event_rates == ()
    assert unseen.concentration(session.header, "anthropic") == 10.0
    misses = replay_session(session, "recorded", window=10**9, calibration=unseen, ratio="causal")
    rate = misses.streams[0].draws.misses[40].mean
    assert rate == pytest.approx((0.02 * 10 + 7) / (10 + 39))
    # With a row for its key the stream keeps the within-key 10,000: it barely learns.
    seen = unseen.copy_with(event_rates=(("pi@anthropic", 0.02, 0.0),))
    assert seen.concentration(session.header, "anthropic") == 10_000.0
    kept = replay_session(session, "recorded", window=10**9, calibration=seen, ratio="causal")
    assert kept.streams[0].draws.misses[40].mean == pytest.approx((200 + 7) / (10_000 + 39))


def test_a_causal_judgements_draws_carry_each_requests_rate_uncertainty(tmp_path):
    from musepi_lab.replay._judge import _judged_replay, _kept
    from musepi_lab.replay._uncertainty import _rate_draws, cost_draws, expected_bill

    session = synthetic_session(tmp_path, "u", ratio=1.3, system=3_000, misses=every_fifth())
    fit = known(spread=0.0, miss=0.1, concentration=20.0)
    result = _judged_replay(session, fit, "causal")
    rates = result.streams[0].draws.misses
    # Request 40's posterior: 20 pseudo-requests at 10%, then the 39 candidates 1-39 of
    # which 7 (5, 10, ..., 35) missed.
    a, b = 0.1 * 20 + 7, 0.9 * 20 + 32
    assert (rates[40].alpha, rates[40].beta) == pytest.approx((a, b))
    drawn = _rate_draws(rates, np.random.default_rng(3), 50_000)
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert drawn[:, 40].mean() == pytest.approx(mean, rel=0.01)
    assert drawn[:, 40].var() == pytest.approx(var, rel=0.05)
    assert np.corrcoef(drawn[:, 20], drawn[:, 40])[0, 1] > 0.99  # one factor per draw
    # The expected bill is exact and the draws' mean agrees with it for every seed.
    streams = [_kept(s) for s in result.streams]
    for seed in (COST_SEED, COST_SEED + 2, 11):
        draws = cost_draws(streams, seed=seed, draws=20_000)
        assert draws.mean() == pytest.approx(expected_bill(streams), rel=0.01)


def test_a_first_request_the_rules_bill_as_a_miss_may_be_served_from_anothers_cache(tmp_path):
    # The first request of each session: nothing of its own is cached, so the rules bill
    # its 3,000-token system prompt as a write; one session's provider read it (another
    # session had cached it), the other's did not. Those two are the only hit candidates
    # (every later request reads its own live cache): 1 of 2 served, and one
    # pseudo-request at that pooled 50%.
    served = synthetic_session(
        tmp_path, "a", ratio=1.3, system=3_000, misses=set(), first_read=3_000
    )
    written = synthetic_session(tmp_path, "b", ratio=1.3, system=3_000, misses=set())
    fit = calibrate([served, written])
    assert fit.family("anthropic").hit_rate == pytest.approx(1.5 / 3)
    # Billed on a line known exactly: the first request's saving is its system prompt read
    # (0.1x input) instead of written (1.25x), at the 50%, and no draw is negative.
    line = known(spread=0.0, miss=0.0).with_family("anthropic", hit_rate=0.5)
    r = replay_session(written, "none", window=10**9, calibration=line)
    assert r.streams[0].draws.billed[0].expired == 3_000
    assert all(b.expired == 0 for b in r.streams[0].draws.billed[1:])
    assert r.cost - r.total_cost == pytest.approx(-0.5 * 3_000 * (3.75 - 0.3) / 1e6, rel=1e-9)
    low, high = r.cost_interval
    assert 0 < low < r.cost < high


def test_no_drawn_bill_is_negative_when_a_hit_saves_on_an_unsure_line(tmp_path):
    from musepi_lab.replay._own import Terms
    from musepi_lab.replay._uncertainty import cost_draws, expected_bill

    # One request whose system prompt is known only to +-3,000 tokens (about 70% of its
    # 4,300-token prompt), served from another's cache at 50%: a draw's saving is on the
    # drawn line, so no drawn bill falls below its output's (100 tokens at $15 / Mtok).
    session = synthetic_session(tmp_path, "one", ratio=1.3, system=3_000, misses=set(), requests=1)
    fit = known(spread=0.0, miss=0.0).with_family("anthropic", hit_rate=0.5)
    stream = replay_session(session, "none", window=10**9, calibration=fit).streams[0].draws
    unsure = stream._replace(terms=[Terms(3_000, 1.3, var_system=3_000.0**2)])
    draws = cost_draws([unsure], draws=20_000)
    assert draws.min() >= 100 * 15 / 1e6 - 1e-12
    assert draws.max() > expected_bill([unsure]) > draws.min()

"""Replay: checked against what the recorded sessions say, and each trigger on its own."""

from __future__ import annotations

import json

import pytest
from _corpus import corpus_file

import musepi_lab.strategies._none
import musepi_lab.strategies._truncate  # noqa: F401
from musepi_lab.compaction import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.replay import replay_session
from musepi_lab.session import Entry, Session
from musepi_lab.tokens import TokenCounter


def raw_assistants(path):
    """Assistant messages of a pi JSONL file, counted with plain json (independent)."""
    out = []
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        if rec.get("type") == "message" and rec["message"]["role"] == "assistant":
            out.append(rec["message"])
    return out


def usage_context(m):
    u = m["usage"]
    return u.get("totalTokens") or u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]


def usage_prompt(m):
    u = m["usage"]
    return u["input"] + u["cacheRead"] + u["cacheWrite"]


# -- against the recorded corpus ------------------------------------------------------------
@pytest.mark.parametrize("window", [120_000, 100_000])
def test_pi_threshold_fires_after_the_first_turn_whose_usage_crosses(window):
    path = corpus_file("pi", "large-session.jsonl")
    replies = raw_assistants(path)
    settings = CompactionSettings.pi()
    threshold = window - 16384  # spec §3.3: ctx > window − reserveTokens
    result = replay_session(read_session(path), "truncate", window=window, settings=settings)
    assert result.threshold == threshold
    # pi checks after agent_end: the first reply that ends a turn with usage over the threshold.
    first = next(
        i
        for i, m in enumerate(replies)
        if m["stopReason"] == "stop" and usage_context(m) > threshold
    )
    event = result.events[0]
    assert (event.request, event.trigger) == (first + 1, "threshold")


@pytest.mark.parametrize("window", [120_000, 90_000])
def test_musepi_mid_turn_fires_at_the_request_after_usage_crosses(window):
    path = corpus_file("pi", "large-session.jsonl")
    replies = raw_assistants(path)
    result = replay_session(
        read_session(path), "truncate", window=window, settings=CompactionSettings.musepi()
    )
    reserve = max(int(0.15 * window), 16384)  # spec §3.5 effective reserve
    assert result.threshold == window - reserve
    first = next(
        i
        for i, m in enumerate(replies)
        if m["stopReason"] not in ("aborted", "error")
        and any(m["usage"].values() if isinstance(m["usage"], dict) else ())
        and usage_context(m) > result.threshold
    )
    event = result.events[0]
    assert event.request == first + 1
    assert event.trigger in ("mid-turn", "threshold")


def test_context_tracks_recorded_usage_before_any_compaction():
    path = corpus_file("pi", "large-session.jsonl")
    replies = raw_assistants(path)
    result = replay_session(
        read_session(path), "none", window=10**9, settings=CompactionSettings.pi()
    )
    tl = result.timeline
    assert len(tl) == len(replies)
    recorded = [usage_prompt(m) for m in replies]
    # What the agent measures (last usage + estimated trailing messages) follows the usage
    # the provider recorded for the next request within 3% (estimates cover only the few
    # messages since the last reply).
    errors = [
        abs(tl.agent_tokens[k] - recorded[k]) / recorded[k]
        for k in range(1, len(recorded))
        if recorded[k] > 1000 and replies[k - 1]["stopReason"] not in ("aborted", "error")
    ]
    assert len(errors) > 300
    assert sorted(errors)[len(errors) // 2] < 0.03


def test_before_compaction_recorded_compactions_were_not_threshold_ones():
    """Spec §9: the recorded compactions come after usages 175,004 and 185,014. Under
    pi's threshold for the model's 200k window (183,616) the first could not have been an
    automatic threshold compaction, and the user's next message ("ok, i hope i haven't
    lobotimized you by compacting") says it was manual; the second came after a reply
    that stopped for a tool call with no result, i.e. an aborted turn, then /compact."""
    path = corpus_file("pi", "before-compaction.jsonl")
    session = read_session(path)
    result = replay_session(session, "truncate", window=200_000, settings=CompactionSettings.pi())
    tl = result.timeline
    recorded_at = tl.index[tl.recorded_compaction].tolist()
    assert len(recorded_at) == 2
    # Replaying without those two compactions, pi's own triggers fire elsewhere:
    assert result.events, "the context must outgrow the window without the recorded compactions"
    assert all(e.request not in recorded_at for e in result.events)
    # ...and nothing fires before the first recorded one (its context was under the threshold).
    assert result.events[0].request > recorded_at[0]
    # Replaying with manual compactions where the user ran them reproduces their positions.
    comp = [e for e in session.path() if e.type == "compaction"]
    before_ids = [session.path()[session.path().index(c) - 1].id for c in comp]
    manual = replay_session(
        session,
        "truncate",
        window=200_000,
        settings=CompactionSettings.pi(),
        triggers=("manual",),
        manual_at=before_ids,
    )
    assert [e.request for e in manual.events] == recorded_at
    assert {e.trigger for e in manual.events} == {"manual"}


# -- synthetic sessions, one trigger at a time -----------------------------------------------
TS = "2026-01-01T{h:02d}:{m:02d}:{s:02d}.000Z"


class Builder:
    def __init__(self):
        self.entries = []
        self.t = 0

    def add(self, role, text="x", *, stop="stop", usage=None, call=None, result=None, gap=1):
        self.t += gap
        h, rem = divmod(self.t, 3600)
        m, s = divmod(rem, 60)
        msg = {"role": role, "timestamp": self.t * 1000}
        if role == "assistant":
            content = [{"type": "text", "text": text}]
            if call:
                content.append(
                    {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "ls"}}
                )
            msg |= {
                "content": content,
                "stopReason": stop,
                "model": "m",
                "provider": "p",
                "api": "a",
            }
            if usage is not None:
                msg["usage"] = {
                    "input": usage,
                    "output": 10,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": usage + 10,
                }
            if stop == "error":
                msg["errorMessage"] = "prompt is too long: 250000 tokens > 200000 maximum"
        elif role == "toolResult":
            msg |= {
                "toolCallId": result,
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
                "isError": False,
            }
        else:
            msg["content"] = [{"type": "text", "text": text}]
        eid = f"e{len(self.entries):04d}"
        parent = self.entries[-1].id if self.entries else None
        self.entries.append(
            Entry.from_record(
                {
                    "type": "message",
                    "id": eid,
                    "parentId": parent,
                    "timestamp": TS.format(h=h, m=m, s=s),
                    "message": msg,
                }
            )
        )
        return eid

    def session(self):
        return Session({"type": "session", "id": "synthetic", "version": 3}, self.entries)


BIG = "word " * 2000  # 10,000 chars: 2,500 tokens (pi)


def turn(b, n_tools=2, *, stop="stop", usage=None, gap=1):
    b.add("user", "do it " + BIG, gap=gap)
    for _ in range(n_tools):
        cid = f"c{len(b.entries)}"
        b.add("assistant", "calling", stop="toolUse", call=cid)
        b.add("toolResult", BIG, result=cid)
    b.add("assistant", "done", stop=stop, usage=usage)


def counter():
    return TokenCounter("pi")


def replay_truncate(session, *, window, **kw):
    """`truncate` replayed with musepi settings keeping 3,000 recent tokens, counted as pi."""
    kw.setdefault("settings", CompactionSettings.musepi(keep_recent_tokens=3000))
    return replay_session(session, "truncate", window=window, counter=counter(), **kw)


def test_incomplete_output_triggers_recovery():
    b = Builder()
    turn(b)
    turn(b, stop="length")
    turn(b)
    r = replay_truncate(b.session(), window=10**6, triggers=("incomplete",))
    assert [e.trigger for e in r.events] == ["incomplete"]
    # It runs before the request that follows the cut reply (the next user turn's first).
    assert r.events[0].request == 6


def test_overflow_from_a_recorded_overflow_error():
    b = Builder()
    turn(b)
    turn(b, stop="error")
    turn(b)
    r = replay_truncate(b.session(), window=10**6, triggers=("overflow",))
    assert [e.trigger for e in r.events] == ["overflow"]


def test_overflow_when_a_request_would_not_fit():
    b = Builder()
    for _ in range(6):
        turn(b)
    r = replay_truncate(b.session(), window=30_000, triggers=("overflow",))
    assert r.events and all(e.trigger == "overflow" for e in r.events)
    assert r.peak_context <= 30_000 + 2 * 2600  # it compacts as soon as a request would overflow


def test_idle_gap_triggers_only_when_enabled():
    b = Builder()
    turn(b)
    turn(b, gap=3600)  # an hour passes before the second turn
    turn(b)
    s = b.session()
    settings = CompactionSettings.musepi(
        keep_recent_tokens=3000, idle_threshold_tokens=1000, idle_timeout_seconds=300
    )
    off = replay_session(s, "truncate", window=10**6, settings=settings, counter=counter())
    on = replay_session(
        s, "truncate", window=10**6, settings=settings, counter=counter(), triggers=("idle",)
    )
    assert off.events == ()
    assert [e.trigger for e in on.events] == ["idle"]


def test_manual_at_named_entries():
    b = Builder()
    turn(b)
    turn(b)
    marker = b.entries[-1].id
    turn(b)
    r = replay_truncate(b.session(), window=10**6, triggers=("manual",), manual_at=[marker])
    assert [(e.trigger, e.request) for e in r.events] == [("manual", 6)]


def test_threshold_vs_mid_turn():
    b = Builder()
    for _ in range(8):
        turn(b, n_tools=3)
    s = b.session()
    mid = replay_truncate(s, window=40_000, triggers=("threshold", "mid-turn"))
    post = replay_truncate(
        s,
        window=40_000,
        settings=CompactionSettings.musepi(keep_recent_tokens=3000, mid_turn_enabled=False),
        triggers=("threshold", "mid-turn"),
    )
    assert {e.trigger for e in mid.events} <= {"mid-turn", "threshold"} and "mid-turn" in {
        e.trigger for e in mid.events
    }
    assert {e.trigger for e in post.events} == {"threshold"}
    # Post-turn checks let a turn run past the threshold; mid-turn checks keep the peak lower.
    assert mid.peak_context <= post.peak_context


def test_billing_follows_the_prompt_cache_model():
    b = Builder()
    for _ in range(5):
        turn(b)
    r = replay_truncate(
        b.session(),
        window=25_000,
        prices={"cache_read": 1.0, "cache_write": 10.0, "output": 0.0, "input": 0.0},
        system_tokens=0,
    )
    tl = r.timeline
    assert (tl.cache_read + tl.cache_write == tl.context_tokens).all()
    for k in range(1, len(tl)):
        if not tl.compaction[k]:
            # Append-only between compactions: the whole previous request is a cache hit.
            assert tl.cache_read[k] == tl.context_tokens[k - 1]
    fired = [k for k in range(len(tl)) if tl.compaction[k]]
    assert fired
    for k in fired:
        # A truncation changes the first message: nothing of the old prefix is reused.
        assert tl.cache_read[k] == 0
    expected = (tl.cache_read * 1.0 + tl.cache_write * 10.0).sum() / 1e6
    assert r.total_cost == pytest.approx(expected)


def test_replay_rebuilds_the_context_once_per_compaction(monkeypatch):
    """Linear in length: contexts are rebuilt only when a compaction fires."""
    import importlib

    # The walk rebuilds contexts only inside a compaction (`_compaction`); reach it by name.
    mod = importlib.import_module("musepi_lab.replay._compaction")

    calls = []
    real = mod.build_session_context
    monkeypatch.setattr(
        mod, "build_session_context", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    b = Builder()
    for _ in range(20):
        turn(b)
    r = replay_truncate(b.session(), window=30_000)
    assert len(r.timeline) == 60
    assert len(calls) == 2 * len(r.events)  # before and after each compaction, nothing else


def test_replay_is_deterministic_and_leaves_the_input_alone():
    b = Builder()
    for _ in range(6):
        turn(b)
    s = b.session()
    before = [dict(e.record) for e in s.entries]
    a = replay_truncate(s, window=25_000)
    c = replay_truncate(s, window=25_000)
    assert a.timeline.equals(c.timeline)
    assert [e.entry_id for e in a.events] == [e.entry_id for e in c.events]
    assert [dict(e.record) for e in s.entries] == before
    assert [e.type for e in a.session.entries].count("compaction") == len(a.events)


# -- strategies get the replay's window and settings ------------------------------------------
def test_hybrid_gets_the_replay_window_and_settings():
    b = Builder()
    for _ in range(8):
        turn(b)
    window = 40_000
    r = replay_session(
        b.session(),
        "hybrid",
        window=window,
        settings=CompactionSettings.pi(keep_recent_tokens=3000),
        counter=counter(),
        summary="extractive",
    )
    assert r.events
    # Hybrid's default target is the compaction threshold for the window it is given
    # (pi, spec §3.3: window − reserveTokens 16,384), not its 200,000 fallback.
    assert {e.result.params["hybrid_target_tokens"] for e in r.events} == {window - 16_384}
    assert {e.result.profile for e in r.events} == {"pi"}
    # The label names what the user chose; the window is the replay's, not a parameter.
    assert r.strategy == "hybrid(summary='extractive')"


def test_a_strategy_window_that_contradicts_the_replay_is_refused():
    from musepi_lab.strategies import get

    b = Builder()
    turn(b)
    with pytest.raises(ValueError, match="window"):
        replay_session(b.session(), get("hybrid", window=32_000), window=64_000)
    # The same window as the replay's is fine.
    replay_session(b.session(), get("hybrid", window=64_000, summary="extractive"), window=64_000)


# -- the progress guard ------------------------------------------------------------------------
PADDING = "padding " * 25_000  # 200,000 chars: 50,000 tokens (pi), more than the window


def inflating_strategy():
    """A strategy whose summary is larger than anything it drops."""
    from dataclasses import dataclass
    from typing import ClassVar

    from musepi_lab.compaction import CompactionResult
    from musepi_lab.strategies import Strategy

    @dataclass(frozen=True)
    class Inflate(Strategy):
        name: ClassVar[str] = "inflate-for-test"

        def run(self, ctx):
            if ctx.preparation is None:
                return None
            return CompactionResult.from_preparation(ctx.preparation, PADDING, method="inflate")

    return Inflate()


def test_a_compaction_that_grows_the_context_is_a_failure_and_not_kept():
    b = Builder()
    for _ in range(6):
        turn(b)
    s = b.session()
    grown = replay_truncate(s, window=30_000, triggers=("overflow",))
    assert grown.events  # the same session does compact with a strategy that shrinks it
    r = replay_session(
        s,
        inflating_strategy(),
        window=30_000,
        settings=CompactionSettings.musepi(keep_recent_tokens=3000),
        counter=counter(),
        triggers=("overflow",),
    )
    assert r.events == ()
    assert r.failures
    assert all(f.method == "inflate" and f.tokens_after > f.tokens_before for f in r.failures)
    assert all(e.type != "compaction" for e in r.session.entries)
    # Nothing was kept: every request carries exactly what it carries with no compaction.
    baseline = replay_session(s, "none", window=30_000, counter=counter(), triggers=("overflow",))
    assert r.timeline.context_tokens.tolist() == baseline.timeline.context_tokens.tolist()
    failed_at = [k for k, m in enumerate(r.timeline.failed_compaction) if m]
    assert failed_at == [f.request for f in r.failures]
    # A failure backs off like a compaction with nothing to do: the next attempt waits
    # until the context grew by 5%.
    pairs = zip(r.failures, r.failures[1:], strict=False)
    assert all(b.tokens_before >= a.tokens_before * 1.05 for a, b in pairs)


def test_progress_guard_choice():
    from musepi_lab.replay._guard import choose, progress_band

    assert progress_band(10_000) == 8_000  # spec §6.5: about 80% of the threshold
    # The first attempt in the band wins; else the smallest that shrinks; else a failure.
    assert choose(9_000, [("", 8_500), ("max_frames=4", 7_900), ("x", 7_000)], 8_000) == (
        1,
        "max_frames=4",
    )
    assert choose(9_000, [("", 8_900), ("max_frames=4", 8_600)], 8_000) == (1, "max_frames=4")
    assert choose(9_000, [("", 9_000), ("max_frames=4", 9_400)], 8_000) is None


# -- recorded values the reader accepts ------------------------------------------------------
def test_infinite_usage_values_do_not_break_replay(tmp_path):
    """Issue 13 item 10: `1e400` (JSON for infinity) in a usage record."""
    lines = [
        '{"type":"session","version":3,"id":"inf","timestamp":"2026-01-01T00:00:00.000Z"}',
        '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hello there","timestamp":1}}',
        '{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"hi, what now"}],'
        '"stopReason":"stop","model":"m","provider":"p","api":"a","timestamp":2,'
        '"usage":{"input":1e400,"output":1e400,"cacheRead":1e400,"cacheWrite":0,'
        '"totalTokens":1e400}}}',
        '{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z",'
        '"message":{"role":"user","content":"go on","timestamp":3}}',
        '{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-01-01T00:00:04.000Z",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"done"}],'
        '"stopReason":"stop","model":"m","provider":"p","api":"a","timestamp":4,'
        '"usage":{"input":-1e400,"output":-1e400,"cacheRead":0,"cacheWrite":0,"totalTokens":0}}}',
    ]
    path = tmp_path / "inf.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    session = read_session(path)
    for strategy in ("none", "truncate"):
        for settings in (CompactionSettings.musepi(), CompactionSettings.pi()):
            r = replay_session(session, strategy, window=1000, settings=settings, counter=counter())
            tl = r.timeline
            assert len(tl) == 2
            numbers = tl[["context_tokens", "agent_tokens", "cache_read", "cache_write"]]
            assert numbers.map(lambda v: 0 <= v < 10**6).all().all()
            # An unusable output figure falls back to the estimate of the reply (pi: chars/4).
            assert tl.output_tokens.tolist() == [-(-len("hi, what now") // 4), 1]
            assert tl.cost_usd.map(lambda v: v == v and v < 1.0).all()


# -- linear in the session's length ----------------------------------------------------------
def count_strategy_work(monkeypatch, session, **kw):
    """Replay with the strategy seam wrapped: (passes, entries handed to strategies)."""
    import importlib

    mod = importlib.import_module("musepi_lab.replay._compaction")
    work = {"passes": 0, "entries": 0}
    real = mod.compact

    def counting(live, *args, **kwargs):
        work["passes"] += 1
        work["entries"] += len(live.entries)
        return real(live, *args, **kwargs)

    monkeypatch.setattr(mod, "compact", counting)
    result = replay_truncate(session, **kw)
    monkeypatch.setattr(mod, "compact", real)
    return result, work


def test_strategy_work_grows_linearly_with_the_session(monkeypatch):
    """A compaction sees the context, not the whole session: 4x the turns is 4x the work
    (a replay that handed the whole simulated session to each compaction would do ~16x)."""
    sizes = (15, 60)
    works = []
    for n in sizes:
        b = Builder()
        for _ in range(n):
            turn(b)
        result, work = count_strategy_work(monkeypatch, b.session(), window=30_000)
        assert result.compactions >= n // 4
        works.append(work)
    growth = sizes[1] / sizes[0]
    assert works[1]["passes"] <= growth * works[0]["passes"] * 1.15
    assert works[1]["entries"] <= growth * works[0]["entries"] * 1.15
    # Each pass sees at most about a window's worth of entries (a turn is 6 entries of
    # ~2,500 tokens; the window holds 12), plus the compaction entry and carried metadata.
    assert works[1]["entries"] / works[1]["passes"] <= 20


def test_the_live_window_builds_the_same_context_as_the_whole_path():
    from musepi_lab.compaction import CompactionResult
    from musepi_lab.context import build_session_context
    from musepi_lab.replay._log import SimulatedPath

    b = Builder()
    turn(b)
    turn(b)
    turn(b)
    meta = [
        Entry.from_record(
            {"type": "model_change", "id": "m0", "parentId": None, "timestamp": TS.format(
                h=0, m=0, s=0), "provider": "acme", "modelId": "big-1"}
        ),
        Entry.from_record(
            {"type": "thinking_level_change", "id": "t0", "parentId": "m0",
             "timestamp": TS.format(h=0, m=0, s=0), "thinkingLevel": "high"}
        ),
    ]  # fmt: skip
    log = SimulatedPath(Session({"type": "session", "id": "w", "version": 3}, ()))
    for entry in (*meta, *b.entries):
        log.append(entry)
    keep = b.entries[12].id  # the third turn's user message
    live = log.live_session()
    result = CompactionResult(summary="earlier turns", first_kept_entry_id=keep, tokens_before=1)
    after = result.apply(live, entry_id="c1", timestamp=TS.format(h=1, m=0, s=0))
    log.commit(live, after, None)
    for profile in ("musepi", "pi"):
        whole = build_session_context(log.session_copy(), profile=profile)
        window = build_session_context(log.live_session(), profile=profile)
        assert window.messages == whole.messages
        assert (window.model, window.thinking_level) == (whole.model, whole.thinking_level)
    # The live window starts at the kept entry (plus the two carried metadata entries).
    assert log.live_size == len(b.entries) - 12 + 1 + 2
    # The log keeps the real parents.
    assert [e.parent_id for e in log.entries[1:]] == [e.id for e in log.entries[:-1]]


# -- snapcompact's local rescue ----------------------------------------------------------------
def test_snapcompact_rescue_ladder_and_image_drop():
    from musepi_lab.compaction import CompactionResult
    from musepi_lab.replay._guard import rescue_ladder, without_images
    from musepi_lab.strategies import get

    frames = [{"data": "AAAA", "mimeType": "image/png", "cols": 10, "rows": 10, "chars": 100}] * 10
    archive = {"frames": frames, "totalChars": 1000, "truncatedChars": 7, "text": "all of it"}
    result = CompactionResult(
        summary="s", first_kept_entry_id="e1", tokens_before=1,
        preserve_data={"snapcompact": archive}, params={"frames": 10},
    )  # fmt: skip
    # Re-render with half the frames each time, down to one.
    ladder = rescue_ladder(get("snapcompact"), result)
    assert [label for label, _ in ladder] == ["max_frames=5", "max_frames=2", "max_frames=1"]
    assert [s.max_frames for _, s in ladder] == [5, 2, 1]
    assert rescue_ladder(get("truncate"), result) == ()
    # Dropping the images: no frames left, their characters counted as dropped, the full
    # archive text kept for a later re-render.
    slim = without_images(result)
    kept = slim.preserve_data["snapcompact"]
    assert kept["frames"] == [] and kept["truncatedChars"] == 7 + 10 * 100
    assert kept["text"] == "all of it"
    assert without_images(slim) is None


@pytest.mark.parametrize("name", ["large-session.jsonl", "before-compaction.jsonl"])
def test_snapcompact_replay_never_keeps_a_growing_compaction(name):
    """Issue 10: at a 64k window snapcompact used to keep compactions that grew the context
    and sent most requests over the window (large-session: 12 of 37 grew, peak 124,524
    tokens, 261 of 453 requests over)."""
    path = corpus_file("pi", name)
    r = replay_session(read_session(path), "snapcompact", window=64_000)
    assert r.events
    assert all(e.tokens_after < e.tokens_before for e in r.events)
    assert (r.timeline.context_tokens <= 64_000).all()

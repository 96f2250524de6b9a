"""Triggers from recorded data (issue 10, item 8): recorded provider errors in their real
formats, silent overflow, output cut by length, and the recovery guards (spec §3.3, §6.5)."""

from __future__ import annotations

import json

from musepi_lab import read_session
from musepi_lab.compaction import CompactionSettings
from musepi_lab.replay import replay_session
from musepi_lab.replay._triggers import INCOMPLETE_LIMIT_REACHED, OVERFLOW_RETRY_FAILED
from musepi_lab.tokens import TokenCounter

BIG = "word " * 2000  # 10,000 characters


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def replay_truncate(session, *, window=10**6, triggers=("overflow", "incomplete")):
    return replay_session(
        session,
        "truncate",
        window=window,
        settings=CompactionSettings.musepi(keep_recent_tokens=3000),
        counter=TokenCounter("pi"),
        triggers=triggers,
    )


# -- Claude Code: the synthetic "Prompt is too long" API error line ---------------------------
def cc_line(uuid, parent, kind, message, second, **extra):
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/w",
        "sessionId": "s1",
        "version": "2.1.39",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": f"2026-02-01T10:00:{second:02d}.000Z",
        **extra,
    }


def cc_reply(uuid, parent, text, second):
    message = {
        "id": f"msg_{uuid}",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 0, "output_tokens": 5},
    }
    return cc_line(uuid, parent, "assistant", message, second, requestId=f"req_{uuid}")


def test_claude_code_prompt_is_too_long_line_triggers_overflow(tmp_path):
    records = []
    parent = None
    for turn in range(4):
        user = f"u{turn}"
        records.append(
            cc_line(
                user, parent, "user", {"role": "user", "content": f"turn {turn} " + BIG}, 2 * turn
            )
        )
        records.append(cc_reply(f"a{turn}", user, "done " + BIG, 2 * turn + 1))
        parent = f"a{turn}"
    records.append(cc_line("u9", parent, "user", {"role": "user", "content": "more"}, 20))
    # As Claude Code writes it when the API refuses the prompt.
    records.append(
        cc_line(
            "a9",
            "u9",
            "assistant",
            {
                "id": "2f0c5b6e",
                "container": None,
                "model": "<synthetic>",
                "role": "assistant",
                "stop_reason": "stop_sequence",
                "stop_sequence": "",
                "type": "message",
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "content": [{"type": "text", "text": "Prompt is too long"}],
            },
            21,
            isApiErrorMessage=True,
            error="invalid_request",
            apiErrorStatus=400,
        )
    )
    records.append(cc_line("u10", "a9", "user", {"role": "user", "content": "again"}, 30))
    records.append(cc_reply("a10", "u10", "ok", 31))
    session = read_session(write_jsonl(tmp_path / "cc.jsonl", records))
    r = replay_truncate(session)
    assert [(e.trigger, e.source) for e in r.events] == [("overflow", "recorded-error")]
    # It compacts before the request that follows the error (the sixth reply).
    assert r.events[0].request == 5
    row = r.timeline.iloc[5]
    assert (row.trigger, row.trigger_source) == ("overflow", "recorded-error")


# -- pi records: an OpenAI context_length_exceeded error, silent overflow, length ------------
def pi_session(tmp_path, replies):
    """A pi v3 session: each reply a (stopReason, extra message fields) pair after a big
    user message (no user message before a reply whose fields hold `retry: True`, as the
    agent's automatic retry)."""
    records = [
        {
            "type": "session",
            "version": 3,
            "id": "t1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent = None
    for n, (stop, fields) in enumerate(replies):
        extra = {k: v for k, v in fields.items() if k != "retry"}
        turn = (("user", f"step {n} " + BIG), ("assistant", None))
        for role, content in turn[1:] if fields.get("retry") else turn:
            entry_id = f"e{len(records):03d}"
            message = {"role": role, "timestamp": 1_767_225_600_000 + len(records) * 1000}
            if role == "user":
                message["content"] = [{"type": "text", "text": content}]
            else:
                message |= {
                    "content": [{"type": "text", "text": "reply " + BIG}],
                    "stopReason": stop,
                    "provider": "openai",
                    "api": "openai-responses",
                    "model": "gpt-5.1-codex",
                    **extra,
                }
            records.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2026-01-01T00:{len(records) // 60:02d}:{len(records) % 60:02d}.000Z",
                    "message": message,
                }
            )
            parent = entry_id
    return read_session(write_jsonl(tmp_path / "pi.jsonl", records))


OPENAI_OVERFLOW = (
    '400 {"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded",'
    '"message":"Your input exceeds the context window of this model. Please adjust your input '
    'and try again.","param":"input"},"sequence_number":2}'
)


def test_openai_context_length_exceeded_triggers_overflow(tmp_path):
    replies = [("stop", {})] * 3 + [("error", {"errorMessage": OPENAI_OVERFLOW})] + [("stop", {})]
    r = replay_truncate(pi_session(tmp_path, replies))
    assert [(e.trigger, e.source, e.request) for e in r.events] == [
        ("overflow", "recorded-error", 4)
    ]


def test_silent_overflow_from_recorded_usage_above_the_window(tmp_path):
    usage = {"input": 70_000, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 70_010}
    replies = [("stop", {})] * 3 + [("stop", {"usage": usage})] + [("stop", {})]
    r = replay_truncate(pi_session(tmp_path, replies), window=60_000, triggers=("overflow",))
    assert [(e.trigger, e.source, e.request) for e in r.events] == [
        ("overflow", "recorded-usage", 4)
    ]


def test_the_simulated_overflow_is_labelled_as_such(tmp_path):
    r = replay_truncate(
        pi_session(tmp_path, [("stop", {})] * 6), window=12_000, triggers=("overflow",)
    )
    assert r.events
    assert {e.source for e in r.events} == {"simulated"}
    fired = r.timeline[r.timeline.trigger != ""]
    assert set(fired.trigger_source) == {"simulated"}


def test_a_second_overflow_in_a_row_is_one_compact_and_retry(tmp_path):
    error = ("error", {"errorMessage": OPENAI_OVERFLOW})
    retry = ("error", {"errorMessage": OPENAI_OVERFLOW, "retry": True})
    r = replay_truncate(pi_session(tmp_path, [("stop", {})] * 3 + [error, retry, ("stop", {})]))
    assert [(e.trigger, e.request) for e in r.events] == [("overflow", 4)]
    assert [(f.trigger, f.request, f.reason) for f in r.failures] == [
        ("overflow", 5, OVERFLOW_RETRY_FAILED)
    ]


def test_incomplete_recovery_stops_after_three_in_a_row(tmp_path):
    cut = ("length", {})
    r = replay_truncate(pi_session(tmp_path, [("stop", {})] * 2 + [cut] * 5 + [("stop", {})]))
    tried = [e.request for e in r.events] + [f.request for f in r.failures if f.attempts]
    refused = [(f.request, f.reason) for f in r.failures if not f.attempts]
    assert all(e.trigger == "incomplete" and e.source == "recorded-stop" for e in r.events)
    assert sorted(tried) == [3, 4, 5]
    assert refused == [(6, INCOMPLETE_LIMIT_REACHED), (7, INCOMPLETE_LIMIT_REACHED)]


# -- Codex: response.incomplete as the rollout records it ------------------------------------
def codex_record(second, kind, payload):
    return {"timestamp": f"2026-02-23T11:40:{second:02d}.000Z", "type": kind, "payload": payload}


def codex_usage(second, inp, cached, out):
    last = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }
    info = {"total_token_usage": last, "last_token_usage": last, "model_context_window": 258400}
    return codex_record(
        second, "event_msg", {"type": "token_count", "info": info, "rate_limits": None}
    )


def test_codex_incomplete_response_triggers_incomplete(tmp_path):
    def say(role, text, second):
        kind = "input_text" if role == "user" else "output_text"
        payload = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        return codex_record(second, "response_item", payload)

    records = [
        codex_record(
            0,
            "session_meta",
            {
                "id": "019c8a4c-0000-7000-8000-000000000001",
                "timestamp": "2026-02-23T11:40:00.000Z",
                "cwd": "/w",
                "originator": "codex_cli_rs",
                "cli_version": "0.104.0",
                "instructions": None,
                "source": "cli",
                "model_provider": "openai",
            },
        ),
        codex_record(1, "turn_context", {"cwd": "/w", "model": "gpt-5.3-codex", "summary": "auto"}),
    ]
    second = 2
    for n in range(3):
        records += [
            say("user", f"part {n} " + BIG, second),
            say("assistant", "ok " + BIG, second + 1),
        ]
        records.append(codex_usage(second + 1, 5000 * (n + 1), 0, 100))
        second += 2
    records += [say("user", "write a long essay", second), say("assistant", "Part one", second + 1)]
    records.append(codex_usage(second + 1, 20_000, 0, 4096))
    records.append(
        codex_record(
            second + 1,
            "event_msg",
            {
                "type": "error",
                "message": "stream disconnected before completion: Incomplete response "
                "returned, reason: max_output_tokens",
            },
        )
    )
    records += [say("user", "go on", second + 2), say("assistant", "Part two", second + 3)]
    session = read_session(write_jsonl(tmp_path / "rollout.jsonl", records))
    r = replay_truncate(session)
    assert [(e.trigger, e.source, e.request) for e in r.events] == [
        ("incomplete", "recorded-error", 4)
    ]


def test_a_request_answered_by_an_error_is_not_billed_and_keeps_the_cache(tmp_path):
    """Claude Code's synthetic error reply (model `<synthetic>`) neither costs anything nor
    counts as a model change that would empty the prompt cache."""
    records = []
    parent = None
    for turn in range(3):
        records.append(
            cc_line(
                f"u{turn}", parent, "user", {"role": "user", "content": f"t{turn} " + BIG}, 2 * turn
            )
        )
        records.append(cc_reply(f"a{turn}", f"u{turn}", "done", 2 * turn + 1))
        parent = f"a{turn}"
    error = {
        "id": "e1",
        "model": "<synthetic>",
        "role": "assistant",
        "stop_reason": "stop_sequence",
        "type": "message",
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "content": [{"type": "text", "text": "API Error: 529 Overloaded"}],
    }
    records.append(cc_line("a8", parent, "assistant", error, 10, isApiErrorMessage=True))
    records.append(cc_reply("a9", "a8", "ok", 12))
    session = read_session(write_jsonl(tmp_path / "cc.jsonl", records))
    # The family line: the fixture's usage is made up, not a line to estimate one from.
    tl = replay_session(session, "none", window=10**6, ratio="family").timeline
    assert tl.cost_usd[3] == 0 and tl.prompt_tokens[3] == 0
    assert tl.cache_read[4] == tl.prompt_tokens[2]  # the last billed prompt, still cached

"""The LLM context of a session: spec §2 (pi and MusePi profiles), convert_to_llm, the
provider layer, the display transcript, and the corpus figures of spec §9.

The buildSessionContext cases of pi's `compaction.test.ts` are ported with their data; the
MusePi cases follow spec §2.3 and oh-my-pi's `compaction.test.ts` (§8.2). Corpus figures
come from the spec and are re-counted here from the raw JSON lines.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab._prompts import PromptSet
from musepi_lab.context import _templates as tpl
from musepi_lab.context._build import SessionContext, build_session_context
from musepi_lab.context._llm import bash_execution_text, convert_to_llm, provider_messages
from musepi_lab.context._summaries import (
    FRAME_DATA_BYTES_BUDGET,
    snapcompact_archive,
    snapcompact_blocks,
)
from musepi_lab.context._transcript import TranscriptItem, render_transcript, transcript
from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

HEADER = {"type": "session", "version": 3, "id": "ctx", "timestamp": "2025-01-01T00:00:00Z"}


class Chain:
    """Builds a linear (or, with `parent=`, branching) list of v3 records."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None

    def add(self, kind: str, parent: str | bool | None = True, **fields: Any) -> str:
        entry_id = f"test-id-{len(self.records)}"
        rec = {
            "type": kind,
            "id": entry_id,
            "parentId": self.last if parent is True else parent,
            "timestamp": f"2025-01-01T00:00:{len(self.records):02d}.000Z",
            **fields,
        }
        self.records.append(rec)
        self.last = entry_id
        return entry_id

    def message(self, message: dict[str, Any], **kw: Any) -> str:
        return self.add("message", message=message, **kw)

    def user(self, text: str, **kw: Any) -> str:
        return self.message({"role": "user", "content": text, "timestamp": 1}, **kw)

    def assistant(
        self,
        *blocks: dict[str, Any] | str,
        stop: str = "stop",
        provider: str = "anthropic",
        model: str = "claude-sonnet-4-5",
        **extra: Any,
    ) -> str:
        content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        msg = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": provider,
            "model": model,
            "usage": {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 150},
            "stopReason": stop,
            "timestamp": 2,
            **extra,
        }  # fmt: skip
        return self.message(msg)

    def result(self, call_id: str, text: str = "ok", **extra: Any) -> str:
        msg = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 3,
            **extra,
        }
        return self.message(msg)

    def compaction(self, summary: str, first_kept: str, **extra: Any) -> str:
        return self.add(
            "compaction", summary=summary, firstKeptEntryId=first_kept, tokensBefore=10000, **extra
        )

    def session(self) -> Session:
        return Session(HEADER, [Entry.from_record(r) for r in self.records])


def call(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": "ls"}}


def roles(ctx: SessionContext | list[dict[str, Any]]) -> list[str]:
    messages = ctx.messages if isinstance(ctx, SessionContext) else ctx
    return [m["role"] for m in messages]


# =======================================================================================
# pi compaction.test.ts: buildSessionContext
# =======================================================================================
class TestPiCompactionCases:
    def test_all_messages_without_compaction(self) -> None:
        c = Chain()
        c.user("1"), c.assistant("a"), c.user("2"), c.assistant("b")
        ctx = build_session_context(c.records, profile="pi")
        assert len(ctx.messages) == 4
        assert ctx.thinking_level == "off"
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}

    def test_single_compaction(self) -> None:
        c = Chain()
        c.user("1"), c.assistant("a")
        u2 = c.user("2")
        c.assistant("b")
        c.compaction("Summary of 1,a,2,b", u2)
        c.user("3"), c.assistant("c")
        ctx = build_session_context(c.records, profile="pi")
        assert len(ctx.messages) == 5
        assert ctx.messages[0]["role"] == "compactionSummary"
        assert "Summary of 1,a,2,b" in ctx.messages[0]["summary"]
        assert ctx.messages[0]["tokensBefore"] == 10000
        # pi's summary message is exactly role, summary, tokensBefore, timestamp (spec §1.5).
        assert set(ctx.messages[0]) == {"role", "summary", "tokensBefore", "timestamp"}

    def test_multiple_compactions_only_latest_matters(self) -> None:
        c = Chain()
        u1 = c.user("1")
        c.assistant("a")
        c.compaction("First summary", u1)
        c.user("2"), c.assistant("b")
        u3 = c.user("3")
        c.assistant("c")
        c.compaction("Second summary", u3)
        c.user("4"), c.assistant("d")
        ctx = build_session_context(c.records, profile="pi")
        assert len(ctx.messages) == 5
        assert "Second summary" in ctx.messages[0]["summary"]

    def test_first_kept_is_first_entry_keeps_all(self) -> None:
        c = Chain()
        u1 = c.user("1")
        c.assistant("a")
        c.compaction("First summary", u1)
        c.user("2"), c.assistant("b")
        assert len(build_session_context(c.records, profile="pi").messages) == 5

    def test_model_and_thinking_level_changes(self) -> None:
        c = Chain()
        c.user("1")
        c.add("model_change", provider="openai", modelId="gpt-4")
        c.assistant("a")
        c.add("thinking_level_change", thinkingLevel="high")
        ctx = build_session_context(c.records, profile="pi")
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
        assert ctx.thinking_level == "high"

    def test_compaction_summary_timestamp_is_entry_time_in_ms(self) -> None:
        c = Chain()
        u = c.user("1")
        c.compaction("S", u)
        ctx = build_session_context(c.records, profile="pi")
        # The compaction is the 2nd record: 2025-01-01T00:00:01.000Z.
        assert ctx.messages[0]["timestamp"] == 1735689601000

    def test_custom_message_entry_becomes_custom_message(self) -> None:
        c = Chain()
        c.user("1")
        c.add("custom_message", customType="note", content="hello", display=False)
        c.add("custom", customType="state", data={"x": 1})
        ctx = build_session_context(c.records, profile="pi")
        assert roles(ctx) == ["user", "custom"]
        assert ctx.messages[1]["customType"] == "note"
        assert ctx.messages[1]["content"] == "hello"


# =======================================================================================
# MusePi profile (spec §2.3)
# =======================================================================================
class TestMusePiModel:
    def test_explicit_default_model_change_wins_over_later_assistants(self) -> None:
        c = Chain()
        c.user("1")
        c.add("model_change", model="openai/gpt-5", role="default")
        c.assistant("a", provider="anthropic", model="claude-x")
        ctx = build_session_context(c.records)
        assert ctx.model == {"provider": "openai", "modelId": "gpt-5"}
        assert ctx.models == {"default": "openai/gpt-5"}

    def test_last_assistant_sets_default_without_explicit_change(self) -> None:
        c = Chain()
        c.user("1")
        c.assistant("a", provider="openai", model="gpt-5")
        c.assistant("b", provider="anthropic", model="claude-x")
        ctx = build_session_context(c.records)
        assert ctx.models == {"default": "anthropic/claude-x"}

    def test_role_models_are_kept_apart(self) -> None:
        c = Chain()
        c.add("model_change", model="openai/gpt-mini", role="smol")
        c.assistant("a", provider="anthropic", model="claude-x")
        ctx = build_session_context(c.records)
        assert ctx.models == {"smol": "openai/gpt-mini", "default": "anthropic/claude-x"}
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-x"}

    def test_null_thinking_level_means_off(self) -> None:
        c = Chain()
        c.add("thinking_level_change", thinkingLevel="high")
        c.add("thinking_level_change", thinkingLevel=None)
        assert build_session_context(c.records).thinking_level == "off"


class TestMusePiResetBoundary:
    def test_boundary_after_compaction_hides_compaction_and_kept_tail(self) -> None:
        c = Chain()
        u1 = c.user("1")
        c.assistant("a")
        c.compaction("S", u1)
        c.user("2")
        c.add("reset_boundary")
        u3 = c.user("3")
        ctx = build_session_context(c.records)
        assert ctx.entry_ids == (u3,)
        assert ctx.compaction_id is None

    def test_boundary_before_compaction_is_superseded(self) -> None:
        c = Chain()
        c.user("1")
        c.add("reset_boundary")
        u2 = c.user("2")
        cid = c.compaction("S", u2)
        u3 = c.user("3")
        ctx = build_session_context(c.records)
        assert ctx.entry_ids == (cid, u2, u3)

    def test_pi_profile_ignores_reset_boundary(self) -> None:
        c = Chain()
        u1 = c.user("1")
        c.add("reset_boundary")
        u2 = c.user("2")
        assert build_session_context(c.records, profile="pi").entry_ids == (u1, u2)


class TestMusePiCompactionMessage:
    def test_metadata_is_carried(self) -> None:
        c = Chain()
        u = c.user("1")
        c.compaction("S", u, shortSummary="short", method="soft", tokensAfter=42, warning="w")
        summary = build_session_context(c.records).messages[0]
        assert {k: summary[k] for k in ("shortSummary", "method", "tokensAfter", "warning")} == {
            "shortSummary": "short",
            "method": "soft",
            "tokensAfter": 42,
            "warning": "w",
        }

    def test_openai_remote_payload_replaces_kept_region(self) -> None:
        history = [{"type": "message", "role": "user", "content": "kept"}]
        c = Chain()
        c.user("q1")
        a1 = c.assistant("a1")
        c.user("q2")
        cid = c.compaction(
            "S",
            "",
            providerReplayThroughEntryId=a1,
            preserveData={
                "openaiRemoteCompaction": {"provider": "openai", "replacementHistory": history}
            },
        )
        after = c.user("q3")
        ctx = build_session_context(c.records)
        # q2 comes after the replayed point, so it is re-sent; q1 and a1 are in the payload.
        assert ctx.entry_ids == (cid, "test-id-2", after)
        assert ctx.messages[0]["providerPayload"] == {
            "type": "openaiResponsesHistory",
            "provider": "openai",
            "items": history,
        }
        llm = convert_to_llm(ctx.messages)
        assert llm[0]["providerPayload"]["items"] == history

    def test_remote_payload_without_replay_point_sends_no_kept_turns(self) -> None:
        c = Chain()
        u1 = c.user("q1")
        preserve = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}
        cid = c.compaction("S", u1, preserveData=preserve)
        ctx = build_session_context(c.records)
        assert ctx.entry_ids == (cid,)
        # The pi profile knows nothing of remote payloads and re-emits the kept region.
        assert build_session_context(c.records, profile="pi").entry_ids == (cid, u1)

    def test_invalid_remote_payload_is_ignored(self) -> None:
        c = Chain()
        u1 = c.user("q1")
        preserve = {"openaiRemoteCompaction": {"provider": "", "replacementHistory": []}}
        cid = c.compaction("S", u1, preserveData=preserve)
        ctx = build_session_context(c.records)
        assert ctx.entry_ids == (cid, u1)
        assert "providerPayload" not in ctx.messages[0]


def frame(data: str, **extra: Any) -> dict[str, Any]:
    return {"data": data, "mimeType": "image/png", "cols": 10, "rows": 5, "chars": 50, **extra}


class TestSnapcompact:
    def test_frames_come_back_as_image_blocks(self) -> None:
        archive = {
            "frames": [frame("AAA", font="8x13"), frame("BBB", font="8x13", detail="original")],
            "totalChars": 100,
            "truncatedChars": 0,
            "textHead": "head text",
            "textTail": "tail text",
        }
        c = Chain()
        u = c.user("1")
        c.compaction("Archived.", u, method="snapcompact", preserveData={"snapcompact": archive})
        summary = build_session_context(c.records).messages[0]
        blocks = summary["blocks"]
        assert [b["type"] for b in blocks] == ["text", "image", "image", "text"]
        assert blocks[0]["text"].startswith("head text")
        assert [b["data"] for b in blocks if b["type"] == "image"] == ["AAA", "BBB"]
        assert blocks[2]["detail"] == "original"
        assert blocks[3]["text"].endswith("tail text")
        assert [b["data"] for b in summary["images"]] == ["AAA", "BBB"]
        # convert_to_llm sends the raw summary text, then the blocks (no context template).
        llm = convert_to_llm([summary])[0]
        assert llm["content"][0] == {"type": "text", "text": "Archived."}
        assert llm["content"][1:] == blocks

    def test_frames_over_the_byte_budget_drop_oldest_first(self) -> None:
        big = FRAME_DATA_BYTES_BUDGET // 2 + 1  # two of these do not fit together
        archive = {"frames": [frame("o" * big, font="f"), frame("n" * big, font="f")]}
        blocks = snapcompact_blocks(snapcompact_archive({"snapcompact": archive}))
        images = [b for b in blocks if b["type"] == "image"]
        assert [b["data"][0] for b in images] == ["n"]
        assert blocks[0]["type"] == "text"  # the notice stands where the oldest frame was
        assert "1 archived page image(s)" in blocks[0]["text"]

    def test_transcript_attaches_every_frame(self) -> None:
        big = FRAME_DATA_BYTES_BUDGET // 2 + 1
        archive = {"frames": [frame("o" * big, font="f"), frame("n" * big, font="f")]}
        c = Chain()
        u = c.user("1")
        c.compaction("S", u, preserveData={"snapcompact": archive})
        items = transcript(c.records)
        images = [b for b in items[-1].message["blocks"] if b["type"] == "image"]
        assert len(images) == 2

    def test_invalid_frames_and_empty_archives(self) -> None:
        assert snapcompact_archive({"snapcompact": {"frames": [{"data": 1}]}}) is None
        assert snapcompact_archive({"other": {}}) is None
        assert snapcompact_archive(None) is None
        text_only = snapcompact_archive({"snapcompact": {"frames": [], "textHead": "all"}})
        assert snapcompact_blocks(text_only) == [{"type": "text", "text": "all"}]

    def test_text_only_archive_with_dropped_middle(self) -> None:
        archive = snapcompact_archive(
            {"snapcompact": {"textHead": "H", "textTail": "T", "truncatedChars": 9}}
        )
        blocks = snapcompact_blocks(archive)
        assert len(blocks) == 1
        assert blocks[0]["text"] == "H" + tpl.SNAPCOMPACT_MIDDLE_DROPPED + "T"

    def test_legacy_oversized_archive_sends_no_frames(self) -> None:
        # Frames without shape metadata, 16 of them, and a large source text (spec §6.2).
        frames = [frame("x") for _ in range(16)]
        archive = {"frames": frames, "text": "t" * 10, "truncatedChars": 0}
        c = Chain()
        u = c.user("1")
        c.compaction("S", u, preserveData={"snapcompact": archive})
        blocks = build_session_context(c.records).messages[0]["blocks"]
        assert [b["type"] for b in blocks] == ["text"]
        assert "16 archived page image(s)" in blocks[0]["text"]


class TestMusePiSkipsAndPostPass:
    def test_retry_recovery_and_empty_error_turns_are_skipped(self) -> None:
        c = Chain()
        u = c.user("1")
        c.assistant("partial", retryRecovery=True)
        c.assistant(stop="error", errorMessage="413")
        c.assistant({"type": "text", "text": "   "}, stop="error")
        a = c.assistant("fine")
        assert build_session_context(c.records).entry_ids == (u, a)
        assert len(build_session_context(c.records, profile="pi").messages) == 5

    def test_unpaired_tool_call_is_stripped_and_signatures_cleared(self) -> None:
        c = Chain()
        c.user("1")
        a = c.assistant(
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
            {"type": "redactedThinking", "data": "opaque"},
            "let me look",
            call("paired"),
            call("lost"),
            stop="toolUse",
        )
        r = c.result("paired")
        ctx = build_session_context(c.records)
        assert ctx.entry_ids[1:] == (a, r)
        content = ctx.messages[1]["content"]
        assert [b["type"] for b in content] == ["thinking", "text", "toolCall"]
        assert content[0] == {"type": "thinking", "thinking": "hmm"}
        assert content[2]["id"] == "paired"
        # The session itself is unchanged.
        original = c.session().get(a).message["content"]
        assert len(original) == 5 and original[0]["thinkingSignature"] == "sig"

    def test_turn_left_empty_is_dropped(self) -> None:
        c = Chain()
        u = c.user("1")
        c.assistant(call("lost"), stop="toolUse")
        u2 = c.user("2")
        assert build_session_context(c.records).entry_ids == (u, u2)

    def test_failed_turn_and_its_results_are_dropped(self) -> None:
        c = Chain()
        u = c.user("1")
        c.assistant("trying", call("t1"), stop="aborted")
        c.result("t1", "partial")
        u2 = c.user("2")
        a = c.assistant("done")
        ctx = build_session_context(c.records)
        assert ctx.entry_ids == (u, u2, a)

    def test_failed_turn_followed_by_continuity_note_stays(self) -> None:
        c = Chain()
        c.user("1")
        a = c.assistant({"type": "thinking", "thinking": "half a thought"}, stop="aborted")
        note = c.add(
            "custom_message", customType="interrupted-thinking", content="...", display=False
        )
        ctx = build_session_context(c.records)
        assert ctx.entry_ids[1:] == (a, note)

    def test_prewalk_plan_and_malformed_custom_messages_are_skipped(self) -> None:
        c = Chain()
        u = c.user("1")
        c.add("custom_message", customType="prewalk-plan", content="plan", display=False)
        c.add("custom_message", customType="x", content={"not": "content"}, display=True)
        ok = c.add("custom_message", customType="x", content=[{"type": "text", "text": "t"}])
        assert build_session_context(c.records).entry_ids == (u, ok)
        assert len(transcript(c.records)) == 3  # the display keeps the plan, not the bad one

    def test_pi_profile_keeps_failed_turns_and_unpaired_calls(self) -> None:
        c = Chain()
        c.user("1")
        c.assistant("trying", call("t1"), stop="aborted")
        c.assistant(call("lost"), stop="toolUse")
        ctx = build_session_context(c.records, profile="pi")
        assert roles(ctx) == ["user", "assistant", "assistant"]
        assert ctx.messages[2]["content"][0]["id"] == "lost"


# =======================================================================================
# Corpus (spec §9)
# =======================================================================================
def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def raw_settings(lines: list[dict[str, Any]]) -> tuple[str, dict[str, str] | None, str | None]:
    """(last thinking level, pi model, last model_change as provider/id) from raw v1 lines."""
    level, model, explicit = "off", None, None
    for rec in lines:
        if rec.get("type") == "thinking_level_change":
            level = rec["thinkingLevel"]
        elif rec.get("type") == "model_change":
            model = {"provider": rec["provider"], "modelId": rec["modelId"]}
            explicit = f"{rec['provider']}/{rec['modelId']}"
        elif rec.get("type") == "message" and rec["message"]["role"] == "assistant":
            model = {"provider": rec["message"]["provider"], "modelId": rec["message"]["model"]}
    return level, model, explicit


def musepi_expected_count(pi_messages: tuple[Any, ...]) -> int:
    """What the MusePi post-pass removes from the pi context, counted by a plain scan."""
    result_ids = {m["toolCallId"] for m in pi_messages if m["role"] == "toolResult"}
    dropped = 0
    failed_calls: set[str] = set()
    for m in pi_messages:
        if m["role"] != "assistant":
            continue
        calls = [b["id"] for b in m["content"] if b["type"] == "toolCall"]
        if m["stopReason"] in ("aborted", "error"):
            dropped += 1
            failed_calls.update(calls)
        elif all(
            (b["type"] == "toolCall" and b["id"] not in result_ids)
            or b["type"] == "redactedThinking"
            for b in m["content"]
        ):
            dropped += 1  # nothing left once the unpaired calls are gone
    dropped += sum(
        1 for m in pi_messages if m["role"] == "toolResult" and m["toolCallId"] in failed_calls
    )
    return len(pi_messages) - dropped


def assert_well_paired(messages: tuple[Any, ...]) -> None:
    calls: set[str] = set()
    results: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            assert m["stopReason"] not in ("aborted", "error")
            assert m["content"], "empty assistant turn"
            calls.update(b["id"] for b in m["content"] if b["type"] == "toolCall")
        elif m["role"] == "toolResult":
            assert m["toolCallId"] in calls, "tool result before (or without) its call"
            results.add(m["toolCallId"])
    assert calls == results


@pytest.fixture(scope="module", params=["", "oh-my-pi"])
def large(request: pytest.FixtureRequest) -> tuple[Session, list[dict[str, Any]]]:
    path = corpus_file("pi", *filter(None, [request.param, "large-session.jsonl"]))
    return read_pi_jsonl(path), raw_lines(path)


@pytest.fixture(scope="module", params=["", "oh-my-pi"])
def before(request: pytest.FixtureRequest) -> tuple[Session, list[dict[str, Any]]]:
    path = corpus_file("pi", *filter(None, [request.param, "before-compaction.jsonl"]))
    return read_pi_jsonl(path), raw_lines(path)


class TestCorpus:
    def test_large_session_pi(self, large: tuple[Session, list[dict[str, Any]]]) -> None:
        session, lines = large
        ctx = build_session_context(session, profile="pi")
        # Spec §9: 914 messages; the file is linear v1, so every message line is on the path.
        assert len(ctx.messages) == 914
        assert len(ctx.messages) == sum(1 for r in lines if r.get("type") == "message")
        level, model, _ = raw_settings(lines)
        assert ctx.model == model
        assert ctx.thinking_level == level
        assert ctx.compaction_id is None

    def test_large_session_musepi(self, large: tuple[Session, list[dict[str, Any]]]) -> None:
        session, lines = large
        pi = build_session_context(session, profile="pi")
        ctx = build_session_context(session)
        assert len(ctx.messages) == musepi_expected_count(pi.messages)
        assert_well_paired(ctx.messages)
        _, _, explicit = raw_settings(lines)
        assert ctx.models["default"] == explicit

    def test_before_compaction_pi(self, before: tuple[Session, list[dict[str, Any]]]) -> None:
        session, lines = before
        ctx = build_session_context(session, profile="pi")
        assert len(ctx.messages) == 446  # spec §9: summary + kept + after
        last = max(i for i, r in enumerate(lines) if r.get("type") == "compaction")
        kept_from = lines[last]["firstKeptEntryIndex"]  # index into the lines, header = 0

        def is_message(r: dict[str, Any]) -> bool:
            return r.get("type") == "message"

        counted = (
            1
            + sum(map(is_message, lines[kept_from:last]))
            + sum(map(is_message, lines[last + 1 :]))
        )
        assert len(ctx.messages) == counted
        first = ctx.messages[0]
        assert first["role"] == "compactionSummary"
        assert first["tokensBefore"] == 185014
        assert first["summary"] == lines[last]["summary"]
        assert ctx.compaction_id == session.entries[last - 1].id
        level, model, _ = raw_settings(lines)
        assert (ctx.thinking_level, ctx.model) == (level, model)

    def test_before_compaction_musepi(self, before: tuple[Session, list[dict[str, Any]]]) -> None:
        session, lines = before
        pi = build_session_context(session, profile="pi")
        ctx = build_session_context(session)
        assert ctx.messages[0]["role"] == "compactionSummary"
        assert len(ctx.messages) == musepi_expected_count(pi.messages)
        assert_well_paired(ctx.messages)
        _, _, explicit = raw_settings(lines)
        assert ctx.models["default"] == explicit
        # entry_ids line up with messages: each is its entry's message, or a copy of it that
        # lost unpaired tool calls.
        rewritten = 0
        for message, entry_id in zip(ctx.messages[1:], ctx.entry_ids[1:], strict=True):
            original = session.get(entry_id).message
            if message is not original:
                rewritten += 1
                assert {k: v for k, v in message.items() if k != "content"} == {
                    k: v for k, v in original.items() if k != "content"
                }
                assert all(block in original["content"] for block in message["content"])
                assert len(message["content"]) < len(original["content"])
        unpaired_in_pi = sum(
            1
            for m in pi.messages
            if m["role"] == "assistant"
            and m["stopReason"] not in ("aborted", "error")
            and any(
                b["type"] == "toolCall"
                and b["id"] not in {r.get("toolCallId") for r in pi.messages}
                for b in m["content"]
            )
        )
        assert rewritten == unpaired_in_pi

    def test_before_compaction_transcript(
        self, before: tuple[Session, list[dict[str, Any]]]
    ) -> None:
        session, lines = before
        items = transcript(session)
        shown = [r for r in lines if r.get("type") in ("message", "compaction")]
        assert len(items) == len(shown)
        compactions = [i for i in items if i.entry_type == "compaction"]
        assert [i.superseded for i in compactions] == [True, False]
        assert compactions[0].message["summary"] == tpl.SUPERSEDED_COMPACTION_SUMMARY
        raw_compactions = [r for r in shown if r["type"] == "compaction"]
        assert compactions[1].message["summary"] == raw_compactions[-1]["summary"]
        order = {e.id: n for n, e in enumerate(session.entries)}
        assert [order[i.entry_id] for i in items] == sorted(order[i.entry_id] for i in items)

    def test_speed_before_compaction(self, before: tuple[Session, list[dict[str, Any]]]) -> None:
        session, _ = before
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            build_session_context(session)
            best = min(best, time.perf_counter() - start)
        assert best < 0.050


# =======================================================================================
# convert_to_llm (spec §2.2, §2.3)
# =======================================================================================
def bash(**fields: Any) -> dict[str, Any]:
    base = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a\nb",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 5,
    }
    return {**base, **fields}


class TestBashExecution:
    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            ({}, "Ran `ls`\n```\na\nb\n```"),
            ({"output": ""}, "Ran `ls`\n(no output)"),
            ({"cancelled": True, "exitCode": 1}, "Ran `ls`\n```\na\nb\n```\n\n(command cancelled)"),
            ({"exitCode": 2}, "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"),
            ({"exitCode": None}, "Ran `ls`\n```\na\nb\n```"),
            (
                {"truncated": True, "fullOutputPath": "/tmp/out.txt"},
                "Ran `ls`\n```\na\nb\n```\n\n[Output truncated. Full output: /tmp/out.txt]",
            ),
            ({"truncated": True}, "Ran `ls`\n```\na\nb\n```"),
        ],
        ids=[
            "output",
            "no-output",
            "cancelled",
            "exit-code",
            "no-exit-code",
            "full-path",
            "no-path",
        ],
    )
    def test_text(self, fields: dict[str, Any], expected: str) -> None:
        assert bash_execution_text(bash(**fields)) == expected

    @pytest.mark.parametrize("profile", ["pi", "musepi"])
    def test_becomes_user_message_or_is_dropped(self, profile: str) -> None:
        llm = convert_to_llm([bash(), bash(excludeFromContext=True)], profile=profile)
        assert len(llm) == 1
        assert llm[0]["role"] == "user"
        assert llm[0]["content"] == [{"type": "text", "text": "Ran `ls`\n```\na\nb\n```"}]
        assert llm[0]["timestamp"] == 5


class TestConvertPi:
    def test_core_roles_pass_unchanged_as_copies(self) -> None:
        messages = [
            {"role": "user", "content": "hi", "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "timestamp": 2},
            {"role": "toolResult", "toolCallId": "c", "content": [], "timestamp": 3},
        ]
        llm = convert_to_llm(messages, profile="pi")
        assert llm == messages
        assert all(a is not b for a, b in zip(llm, messages, strict=True))

    def test_custom_string_and_array_content(self) -> None:
        image = {"type": "image", "data": "QQ==", "mimeType": "image/png"}
        llm = convert_to_llm(
            [
                {"role": "custom", "customType": "x", "content": "note", "timestamp": 1},
                {"role": "custom", "customType": "x", "content": [image], "timestamp": 2},
            ],
            profile="pi",
        )
        assert [m["role"] for m in llm] == ["user", "user"]
        assert llm[0]["content"] == [{"type": "text", "text": "note"}]
        assert llm[1]["content"] == [image]

    def test_summaries_are_wrapped(self) -> None:
        llm = convert_to_llm(
            [
                {"role": "compactionSummary", "summary": "CS", "tokensBefore": 1, "timestamp": 1},
                {"role": "branchSummary", "summary": "BS", "fromId": "x", "timestamp": 2},
            ],
            profile="pi",
        )
        assert llm[0]["content"][0]["text"] == (
            tpl.COMPACTION_SUMMARY_PREFIX + "CS" + tpl.COMPACTION_SUMMARY_SUFFIX
        )
        assert llm[1]["content"][0]["text"] == (
            tpl.BRANCH_SUMMARY_PREFIX + "BS" + tpl.BRANCH_SUMMARY_SUFFIX
        )

    def test_roles_pi_does_not_know_are_dropped(self) -> None:
        llm = convert_to_llm(
            [{"role": "developer", "content": "x"}, {"role": "hookMessage", "content": "y"}],
            profile="pi",
        )
        assert llm == []


class TestPiTemplateStructure:
    @pytest.mark.parametrize(
        "prefix", [tpl.COMPACTION_SUMMARY_PREFIX, tpl.BRANCH_SUMMARY_PREFIX], ids=["cmp", "branch"]
    )
    def test_prefix_is_one_sentence_blank_line_summary_tag(self, prefix: str) -> None:
        sentence, rest = prefix.split("\n\n", 1)
        assert "\n" not in sentence
        assert sentence.endswith(".")
        assert rest == "<summary>\n"

    def test_suffixes(self) -> None:
        assert tpl.COMPACTION_SUMMARY_SUFFIX == "\n</summary>"
        assert tpl.BRANCH_SUMMARY_SUFFIX == "</summary>"


class TestConvertMusePi:
    def test_custom_becomes_developer(self) -> None:
        llm = convert_to_llm(
            [
                {"role": "custom", "customType": "memo", "content": "x", "timestamp": 1},
                {"role": "hookMessage", "customType": "memo", "content": "y", "timestamp": 2},
            ]
        )
        assert [m["role"] for m in llm] == ["developer", "developer"]
        assert llm[0]["content"] == [{"type": "text", "text": "x"}]
        assert "attribution" not in llm[0]

    @pytest.mark.parametrize(
        ("details", "role"),
        [({"messageRole": "user"}, "user"), ({"messageRole": "developer"}, "developer"),
         (None, "developer"), (["user"], "developer")],
    )  # fmt: skip
    def test_advisor_exception(self, details: Any, role: str) -> None:
        message = {"role": "custom", "customType": "advisor", "content": "c", "details": details}
        llm = convert_to_llm([message])[0]
        assert llm["role"] == role
        assert llm["attribution"] == "agent"

    def test_compaction_summary_template(self) -> None:
        llm = convert_to_llm([{"role": "compactionSummary", "summary": "SUM", "timestamp": 1}])[0]
        text = llm["content"][0]["text"]
        framing, wrapped = text.split("\n\n", 1)
        assert len(framing.splitlines()) == 2
        assert wrapped == "<summary>\nSUM\n</summary>"
        assert (llm["role"], llm["attribution"]) == ("user", "agent")

    def test_handoff_template(self) -> None:
        message = {"role": "compactionSummary", "summary": "DOC", "method": "handoff"}
        text = convert_to_llm([message])[0]["content"][0]["text"]
        assert text.endswith("<handoff>\nDOC\n</handoff>")
        assert "<summary>" not in text

    def test_images_follow_the_rendered_summary(self) -> None:
        image = {"type": "image", "data": "QQ==", "mimeType": "image/png"}
        message = {"role": "compactionSummary", "summary": "S", "images": [image]}
        content = convert_to_llm([message])[0]["content"]
        assert content[1:] == [image]
        assert content[0]["text"] == PromptSet.default().render(
            "compaction-summary-context", summary="S"
        )

    def test_branch_summary_template(self) -> None:
        llm = convert_to_llm([{"role": "branchSummary", "summary": "B", "fromId": "x"}])[0]
        assert llm["content"][0]["text"].endswith("<summary>\nB\n</summary>")
        assert llm["attribution"] == "agent"

    def test_attribution_defaults(self) -> None:
        llm = convert_to_llm(
            [
                {"role": "user", "content": "u"},
                {"role": "user", "content": "u", "attribution": "agent"},
                {"role": "developer", "content": "d"},
                {"role": "toolResult", "toolCallId": "c", "content": []},
                {"role": "assistant", "content": []},
            ]
        )
        assert [m.get("attribution") for m in llm] == ["user", "agent", "agent", "agent", None]

    def test_pruned_tool_result_collapses_to_one_text_block(self) -> None:
        image = {"type": "image", "data": "QQ==", "mimeType": "image/png"}
        content = [image, {"type": "text", "text": "a"}, image, {"type": "text", "text": "b"}]
        message = {"role": "toolResult", "toolCallId": "c", "content": content, "prunedAt": 7}
        llm = convert_to_llm([message])[0]
        assert llm["content"] == [image, {"type": "text", "text": "ab"}, image]
        unpruned = convert_to_llm([{**message, "prunedAt": None}])[0]
        assert unpruned["content"] == content

    def test_pruned_tool_result_without_text(self) -> None:
        image = {"type": "image", "data": "QQ==", "mimeType": "image/png"}
        message = {"role": "toolResult", "toolCallId": "c", "content": [image], "prunedAt": 7}
        assert convert_to_llm([message])[0]["content"] == [
            {"type": "text", "text": "[Output truncated]"},
            image,
        ]

    def test_python_execution(self) -> None:
        message = {"role": "pythonExecution", "code": "1+1", "output": "2", "exitCode": 0}
        text = convert_to_llm([message])[0]["content"][0]["text"]
        assert text == "Ran Python:\n```python\n1+1\n```\nOutput:\n```\n2\n```"

    def test_unknown_profile(self) -> None:
        with pytest.raises(ValueError, match="profile"):
            convert_to_llm([], profile="nope")


# =======================================================================================
# provider_messages (pi transform-messages.ts)
# =======================================================================================
def llm_assistant(*calls: str, stop: str = "toolUse", ts: int = 10) -> dict[str, Any]:
    return {"role": "assistant", "content": [call(c) for c in calls], "stopReason": stop,
            "timestamp": ts}  # fmt: skip


def llm_result(call_id: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "content": [],
            "isError": False}  # fmt: skip


class TestProviderMessages:
    def test_failed_assistants_are_skipped(self) -> None:
        out = provider_messages(
            [
                {"role": "user", "content": "u"},
                llm_assistant(stop="error"),
                llm_assistant(stop="aborted"),
            ]
        )
        assert roles(out) == ["user"]

    def test_missing_result_is_made_up_before_next_user_message(self) -> None:
        out = provider_messages(
            [llm_assistant("a", "b", ts=42), llm_result("a"), {"role": "user", "content": "u"}]
        )
        assert roles(out) == ["assistant", "toolResult", "toolResult", "user"]
        made_up = out[2]
        assert made_up == {
            "role": "toolResult",
            "toolCallId": "b",
            "toolName": "bash",
            "content": [{"type": "text", "text": "No result provided"}],
            "isError": True,
            "timestamp": 42,
        }

    def test_missing_result_is_made_up_before_next_assistant_turn(self) -> None:
        out = provider_messages([llm_assistant("a"), llm_assistant("b"), llm_result("b")])
        assert [(m["role"], m.get("toolCallId")) for m in out] == [
            ("assistant", None),
            ("toolResult", "a"),
            ("assistant", None),
            ("toolResult", "b"),
        ]

    def test_calls_of_a_skipped_turn_get_no_results(self) -> None:
        out = provider_messages(
            [llm_assistant("x", stop="aborted"), {"role": "user", "content": "u"}]
        )
        assert roles(out) == ["user"]

    def test_trailing_pending_call_is_left_alone(self) -> None:
        assert roles(provider_messages([llm_assistant("a")])) == ["assistant"]


# =======================================================================================
# Transcript
# =======================================================================================
class TestTranscript:
    def test_every_entry_in_order_with_compactions_inline(self) -> None:
        c = Chain()
        u1 = c.user("1")
        a1 = c.assistant("a", retryRecovery=True)
        c1 = c.compaction("First", u1, shortSummary="first short")
        u2 = c.user("2")
        c.add("label", targetId=u2, label="x")
        a2 = c.assistant("trying", stop="aborted")
        c2 = c.compaction("Second", u2, shortSummary="second short")
        items = transcript(c.records)
        assert [i.entry_id for i in items] == [u1, a1, c1, u2, a2, c2]
        assert all(isinstance(i, TranscriptItem) for i in items)
        first, second = items[2], items[5]
        assert (first.superseded, second.superseded) == (True, False)
        assert first.message["summary"] == tpl.SUPERSEDED_COMPACTION_SUMMARY
        assert first.message["shortSummary"] == tpl.SUPERSEDED_COMPACTION_SHORT_SUMMARY
        assert (second.message["summary"], second.message["shortSummary"]) == (
            "Second",
            "second short",
        )
        assert [i.role for i in items] == [
            "user", "assistant", "compactionSummary", "user", "assistant", "compactionSummary"
        ]  # fmt: skip

    def test_dangling_calls_are_marked_not_removed(self) -> None:
        c = Chain()
        c.user("1")
        a = c.assistant(call("lost"), stop="toolUse")
        items = transcript(c.records)
        assert items[-1].entry_id == a
        assert items[-1].message["content"] == []
        assert items[-1].message["strippedToolCalls"] == 1
        kept = transcript(c.records, keep_dangling_tool_calls=True)
        assert kept[-1].message["content"][0]["id"] == "lost"

    def test_null_leaf(self) -> None:
        c = Chain()
        c.user("1")
        assert transcript(c.records, None) == []

    def test_render_transcript(self) -> None:
        c = Chain()
        u = c.user("hello there")
        c.assistant("looking", call("c1"), stop="toolUse")
        c.result("c1", "file.txt")
        c.compaction("We listed files.", u)
        text = render_transcript(c.session())
        sections = text.rstrip("\n").split("\n\n")
        assert sections[0] == "-- user --\nhello there"
        assert sections[1].splitlines() == [
            "-- assistant (anthropic/claude-sonnet-4-5, toolUse) --",
            "looking",
            '-> bash({"command":"ls"})',
        ]
        assert sections[2] == "-- toolResult bash --\nfile.txt"
        assert sections[3] == "== compaction · 10,000 tokens before ==\nWe listed files."
        assert render_transcript([]) == ""

    def test_render_clips_long_text(self) -> None:
        c = Chain()
        c.user("x" * 50)
        text = render_transcript(c.session(), max_chars=10)
        assert "x" * 10 + "… [40 more chars]" in text
        assert "x" * 11 not in text


# =======================================================================================
# Templates
# =======================================================================================
class TestTemplates:
    def test_render_fills_placeholders_once(self) -> None:
        out = tpl.render("<s>{{summary}}</s>", summary="quote {{summary}} here")
        assert out == "<s>quote {{summary}} here</s>"

    def test_render_rejects_missing_placeholder(self) -> None:
        with pytest.raises(KeyError, match="summary"):
            tpl.render(PromptSet.default().text("compaction-summary-context"))

    def test_musepi_templates_wrap_the_summary(self) -> None:
        assert (
            PromptSet.default()
            .render("branch-summary-context", summary="Z")
            .endswith("\n\n<summary>\nZ\n</summary>")
        )
        handoff = PromptSet.default().render("handoff-summary-context", summary="Z")
        assert handoff.endswith("\n\n<handoff>\nZ\n</handoff>")

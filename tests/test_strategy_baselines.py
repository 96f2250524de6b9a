"""Research baselines (issue 4 item 7): observation-masking, truncate, prune, extractive,
none and hybrid, on hand-built sessions and on every pi corpus fixture and bundled sample.

Expected values are written from the rules (the placeholder wording, spec §6.3's notice,
the spec's threshold formulas) or counted from the raw records inside each test.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from _corpus import PI_FIXTURES, SAMPLES, corpus_file

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.formats._registry import read_session
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session, parse_timestamp_ms
from musepi_lab.strategies._base import CompactionContext, StrategyUnavailable, compact
from musepi_lab.strategies._extractive import Extractive
from musepi_lab.strategies._hybrid import Hybrid, hybrid_target
from musepi_lab.strategies._masking import ObservationMasking
from musepi_lab.strategies._none import NoCompaction
from musepi_lab.strategies._prune import Prune
from musepi_lab.strategies._truncate import Truncate
from musepi_lab.tokens._counter import TokenCounter

# -- building sessions ---------------------------------------------------------------------


class Build:
    """A linear pi v3 session built record by record (plain dicts, as read from JSON)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def _add(self, record: dict[str, Any]) -> str:
        n = len(self.records) + 1
        entry_id = f"e{n:07d}"
        parent = self.records[-1]["id"] if self.records else None
        record.update(
            id=entry_id,
            parentId=parent,
            timestamp=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
        )
        if "message" in record:
            record["message"]["timestamp"] = 1_767_225_600_000 + n * 1000
        self.records.append(record)
        return entry_id

    def user(self, text: str) -> str:
        message = {"role": "user", "content": [{"type": "text", "text": text}]}
        return self._add({"type": "message", "message": message})

    def say(self, text: str) -> str:
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        return self._add({"type": "message", "message": message})

    def step(
        self, *calls: tuple[str, dict[str, Any], Any] | tuple[str, dict[str, Any], Any, bool]
    ) -> tuple[str, list[str]]:
        """One assistant message calling tools, then one result per call.

        Each call is `(tool name, arguments, output, [is_error])`; output is a text or a
        content list.
        """
        n = len(self.records)
        blocks = [
            {"type": "toolCall", "id": f"c{n}_{i}", "name": c[0], "arguments": c[1]}
            for i, c in enumerate(calls)
        ]
        message = {"role": "assistant", "content": blocks, "stopReason": "toolUse"}
        assistant = self._add({"type": "message", "message": message})
        results = []
        for i, call in enumerate(calls):
            output = call[2]
            content = [{"type": "text", "text": output}] if isinstance(output, str) else output
            result = {
                "role": "toolResult",
                "toolCallId": f"c{n}_{i}",
                "toolName": call[0],
                "content": content,
                "isError": bool(call[3]) if len(call) > 3 else False,
            }
            results.append(self._add({"type": "message", "message": result}))
        return assistant, results

    def compaction(self, first_kept: str, summary: str = "old summary") -> str:
        return self._add(
            {
                "type": "compaction",
                "summary": summary,
                "firstKeptEntryId": first_kept,
                "tokensBefore": 1,
            }
        )

    def session(self) -> Session:
        header = {"type": "session", "version": 3, "id": "built", "cwd": "/w"}
        return Session(header, [Entry.from_record(json.loads(json.dumps(r))) for r in self.records])


def lines(n: int, word: str = "output") -> str:
    return "\n".join(f"{word} {i}" for i in range(n))


def settings_for(profile: str, **changes: Any) -> CompactionSettings:
    return CompactionSettings.for_profile(profile, **changes)


def context_for(
    session: Session,
    *,
    profile: str = "musepi",
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
) -> CompactionContext:
    settings = settings or settings_for(profile)
    counter = counter or TokenCounter("pi")
    return CompactionContext(
        session=session,
        preparation=prepare_compaction(session, settings, counter),
        settings=settings,
        counter=counter,
        summarizer=None,
        prompts=PromptSet.default(),
    )


def snapshot(session: Session) -> str:
    return json.dumps([dict(e.record) for e in session.entries], sort_keys=True, default=dict)


def context_tokens(session: Session, profile: str, counter: TokenCounter) -> int:
    return counter.count_messages(build_session_context(session, profile=profile).messages)


def assert_valid_context(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every tool result answers a tool call made earlier in the context."""
    calls: set[Any] = set()
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            calls.update(
                b.get("id")
                for b in content
                if isinstance(b, Mapping) and b.get("type") == "toolCall"
            )
        if message.get("role") == "toolResult":
            assert message.get("toolCallId") in calls, message.get("toolCallId")


def result_text(session: Session, entry_id: str) -> str:
    entry = session.get(entry_id)
    assert entry is not None and entry.message is not None
    content = entry.message["content"]
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


# -- CompactionResult: replacements and append_entry ---------------------------------------


def test_apply_substitutes_replacements_in_place_and_can_skip_the_entry() -> None:
    b = Build()
    b.user("go")
    _, (r1,) = b.step(("bash", {"command": "ls"}, "a\nb"))
    b.say("done")
    session = b.session()
    before = snapshot(session)
    record = {**session.get(r1).record, "message": {"role": "toolResult", "content": []}}

    only = CompactionResult("", "e0000001", 5, replacements={r1: record}, append_entry=False).apply(
        session
    )
    assert [e.id for e in only.entries] == [e.id for e in session.entries]
    assert only.get(r1).message == {"role": "toolResult", "content": []}
    assert [e.record for e in only.entries if e.id != r1] == [
        e.record for e in session.entries if e.id != r1
    ]
    both = CompactionResult("S", "e0000001", 5, replacements={r1: record}).apply(
        session, entry_id="cafe0001"
    )
    assert [e.id for e in both.entries] == [*[e.id for e in session.entries], "cafe0001"]
    assert both.get(r1).message == {"role": "toolResult", "content": []}
    assert snapshot(session) == before


def test_apply_rejects_replacements_for_unknown_or_mismatched_ids() -> None:
    b = Build()
    b.user("go")
    session = b.session()
    with pytest.raises(ValueError, match="not in the session"):
        CompactionResult("", "e0000001", 1, replacements={"zz": {"id": "zz"}}).apply(session)
    with pytest.raises(ValueError, match="carries id"):
        CompactionResult("", "e0000001", 1, replacements={"e0000001": {"id": "other"}})
    with pytest.raises(TypeError):
        CompactionResult("", "e0000001", 1, replacements={"e0000001": "record"})  # type: ignore[dict-item]


# -- observation-masking --------------------------------------------------------------------


def masking_session() -> tuple[Session, list[str], list[str]]:
    """One request and five tool steps; step k's output has 10·k lines."""
    b = Build()
    b.user("fix the bug")
    assistants, results = [], []
    for k in range(1, 6):
        a, (r,) = b.step(("bash", {"command": f"run {k}"}, lines(10 * k), k == 2))
        assistants.append(a)
        results.append(r)
    b.say("all done")
    return b.session(), assistants, results


def test_masking_replaces_outputs_older_than_the_last_n_steps() -> None:
    session, assistants, results = masking_session()
    before = snapshot(session)
    ctx = context_for(session)
    result = ObservationMasking(keep_turns=2).run(ctx)
    assert result is not None
    assert result.summary == ""
    assert result.method == "observation-masking"
    assert result.first_kept_entry_id == session.entries[0].id
    assert result.append_entry is False
    assert result.params["prompts"] == PromptSet.default().label
    assert sorted(result.replacements) == sorted(results[:3])

    after = result.apply(session)
    assert snapshot(session) == before  # the input is never changed
    assert [e.id for e in after.entries] == [e.id for e in session.entries]
    for k, rid in enumerate(results[:3], start=1):
        assert result_text(after, rid) == f"[Earlier tool output masked: {10 * k} lines omitted]"
        old, new = session.get(rid).message, after.get(rid).message
        for key in ("toolCallId", "toolName", "isError"):
            assert new[key] == old[key]
    for rid in results[3:]:
        assert after.get(rid).record == session.get(rid).record
    for aid in assistants:
        assert after.get(aid).record == session.get(aid).record

    counter = TokenCounter("pi")
    assert result.tokens_before == context_tokens(session, "musepi", counter)
    measured = compact(session, ObservationMasking(keep_turns=2), counter=counter)
    assert measured is not None
    assert measured.tokens_after == context_tokens(after, "musepi", counter)
    assert measured.tokens_after < result.tokens_before
    assert_valid_context(build_session_context(after).messages)


def test_masking_counts_a_multi_call_message_as_one_step() -> None:
    b = Build()
    b.user("go")
    _, old = b.step(("read", {"path": "a"}, lines(30)), ("read", {"path": "b"}, lines(30)))
    _, _newer = b.step(("read", {"path": "c"}, lines(30)), ("read", {"path": "d"}, lines(30)))
    session = b.session()
    result = ObservationMasking(keep_turns=1).run(context_for(session))
    assert result is not None
    assert sorted(result.replacements) == sorted(old)


def test_masking_with_nothing_old_enough_is_none() -> None:
    session, _, _ = masking_session()
    assert compact(session, "observation-masking", keep_turns=5) is None
    assert compact(session, "observation-masking") is None  # default 10 > 5 steps


def test_masking_zero_keeps_no_output_and_is_idempotent() -> None:
    session, _, results = masking_session()
    result = compact(session, "observation-masking", keep_turns=0)
    assert result is not None
    assert sorted(result.replacements) == sorted(results)
    masked = result.apply(session)
    assert compact(masked, "observation-masking", keep_turns=0) is None


def test_masking_leaves_what_the_model_no_longer_sees_and_tiny_outputs() -> None:
    b = Build()
    b.user("go")
    b.step(("bash", {"command": "one"}, lines(40)))
    b.step(("bash", {"command": "two"}, lines(40)))
    a3, (r3,) = b.step(("bash", {"command": "three"}, lines(40)))
    b.compaction(first_kept=a3)
    b.step(("bash", {"command": "four"}, "ok"))  # smaller than any placeholder
    _, (r5,) = b.step(("bash", {"command": "five"}, lines(40)))
    b.step(("bash", {"command": "six"}, lines(40)))
    session = b.session()
    for profile in ("musepi", "pi"):
        result = ObservationMasking(keep_turns=1).run(context_for(session, profile=profile))
        assert result is not None
        # Steps one and two sit before the kept region; four's output would not shrink;
        # six is the last step.
        assert sorted(result.replacements) == sorted([r3, r5]), profile


def test_masking_notes_images() -> None:
    b = Build()
    b.user("look")
    image = {"type": "image", "data": "AAAA" * 2000, "mimeType": "image/png"}
    _, (r1,) = b.step(("read", {"path": "p.png"}, [{"type": "text", "text": "a\nb\nc"}, image]))
    b.step(("bash", {"command": "x"}, "y"))
    session = b.session()
    result = compact(session, "observation-masking", keep_turns=1)
    assert result is not None
    assert result_text(result.apply(session), r1) == (
        "[Earlier tool output masked: 3 lines and 1 image omitted]"
    )


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), ("3", TypeError), (True, TypeError), (2.0, TypeError)]
)
def test_masking_rejects_bad_keep_turns(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        ObservationMasking(keep_turns=value)


# -- truncate -------------------------------------------------------------------------------


def long_session(steps: int = 12, chars: int = 400) -> tuple[Build, list[str]]:
    b = Build()
    users = []
    for k in range(steps):
        users.append(b.user(f"request number {k}"))
        b.step(("bash", {"command": f"make target{k}"}, "x" * chars))
        b.say(f"finished step {k}")
    return b, users


@pytest.mark.parametrize("profile", ["musepi", "pi"])
def test_truncate_drops_everything_before_the_cut_with_a_one_line_marker(profile: str) -> None:
    b, _ = long_session()
    session = b.session()
    settings = settings_for(profile, keep_recent_tokens=300)
    result = compact(session, "truncate", settings=settings, counter=TokenCounter("pi"))
    assert result is not None
    cut = result.first_kept_entry_id
    ids = [r["id"] for r in b.records]
    dropped = sum(1 for r in b.records[: ids.index(cut)] if r["type"] == "message")
    assert dropped > 0
    noun = "message was" if dropped == 1 else "messages were"
    assert result.summary == f"[{dropped} earlier {noun} dropped without a summary.]"
    assert "\n" not in result.summary
    assert result.method == "truncate"
    assert result.details is None

    after = result.apply(session)
    context = build_session_context(after, profile=profile)
    kept = set(ids[ids.index(cut) :])
    assert context.messages[0]["role"] == "compactionSummary"
    assert set(context.entry_ids[1:]) <= kept
    assert result.tokens_after == TokenCounter("pi").count_messages(context.messages)


def test_truncate_with_nothing_to_drop_is_none() -> None:
    b, _ = long_session(steps=2)
    assert compact(b.session(), "truncate") is None  # the default keep budget holds it all


# -- prune ----------------------------------------------------------------------------------


def test_prune_blanks_old_outputs_with_the_spec_notice() -> None:
    b = Build()
    b.user("go")
    results = []
    for k in range(20):
        _, (r,) = b.step(("bash", {"command": f"cat big{k}"}, "y" * 20000))
        results.append(r)
    b.say("done")
    session = b.session()
    result = compact(session, "prune", counter=TokenCounter("pi"))
    assert result is not None
    # 20000 chars are ceil(20000/4) = 5000 tokens; the newest 40000 tokens (8 results) are
    # protected, so the 12 oldest are blanked (savings far above 20000).
    tokens = math.ceil(20000 / 4)
    assert sorted(result.replacements) == sorted(results[:12])
    assert result.append_entry is False and result.method == "prune" and result.summary == ""
    after = result.apply(session)
    leaf_ms = parse_timestamp_ms(b.records[-1]["timestamp"])
    for rid in results[:12]:
        assert result_text(after, rid) == f"[Output truncated - {tokens} tokens]"
        assert after.get(rid).message["prunedAt"] == leaf_ms
    assert len(after.entries) == len(session.entries)
    assert result.tokens_before - result.tokens_after >= 20000


def test_prune_below_minimum_savings_is_none_and_params_override() -> None:
    b = Build()
    b.user("go")
    for k in range(6):
        b.step(("bash", {"command": f"c{k}"}, "z" * 20000))
    session = b.session()
    # 6 × 5000 tokens: nothing is older than the 40000-token protected window.
    assert compact(session, "prune") is None
    result = compact(session, "prune", protect_tokens=10000, minimum_savings=0)
    assert result is not None
    assert len(result.replacements) == 4  # newer output reaches 10000 after two results


@pytest.mark.parametrize("name", ["protect_tokens", "minimum_savings"])
def test_prune_rejects_bad_params(name: str) -> None:
    with pytest.raises(TypeError):
        Prune(**{name: "many"})
    with pytest.raises(ValueError):
        Prune(**{name: -5})


# -- extractive -----------------------------------------------------------------------------

HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]


def extractive_session() -> Build:
    b = Build()
    b.user("Please make the parser accept trailing commas.\nKeep the public API stable.")
    b.step(("read", {"path": "src/parser.py"}, lines(50, "source")))
    b.step(
        (
            "bash",
            {"command": "pytest tests/test_parser.py\n--maxfail=1"},
            "Traceback (most recent call last):\nsomething\nNo real problem here",
        )
    )
    b.step(("edit", {"path": "src/parser.py", "oldText": "a", "newText": "b"}, "ok"))
    b.step(("bash", {"command": "make lint"}, "lint failed badly\nsecond line", True))
    b.step(("bash", {"command": "python run.py"}, "start\nValueError: bad comma at 3\nend"))
    b.say("The parser now accepts trailing commas; lint still fails on line 3.")
    b.user("Also " + "very long request " * 100)
    b.say("Working on the long request.")
    for k in range(8):
        b.user(f"later request {k}")
        b.step(("bash", {"command": f"echo {k}"}, "x" * 800))
        b.say(f"answer {k}")
    return b


@pytest.mark.parametrize("profile", ["musepi", "pi"])
def test_extractive_copies_requests_commands_errors_state_and_files(profile: str) -> None:
    b = extractive_session()
    session = b.session()
    settings = settings_for(profile, keep_recent_tokens=400)
    result = compact(session, "extractive", settings=settings, counter=TokenCounter("pi"))
    assert result is not None
    summary = result.summary
    assert result.method == "extractive"

    positions = [summary.index(h) for h in HEADINGS]
    assert positions == sorted(positions)
    # Requests verbatim (continuation lines indented under the bullet), the long one capped.
    assert (
        "- Please make the parser accept trailing commas.\n  Keep the public API stable." in summary
    )
    long_request = next(  # requests are copied without surrounding whitespace
        r["message"]["content"][0]["text"].strip()
        for r in b.records
        if r["type"] == "message"
        and r["message"]["role"] == "user"
        and r["message"]["content"][0]["text"].startswith("Also ")
    )
    assert long_request[:600] in summary
    assert f"[…{len(long_request) - 600} more characters]" in summary
    assert long_request not in summary
    # Commands: first line of a multi-line command, marked as continued.
    assert "- [x] Ran `pytest tests/test_parser.py …`" in summary
    assert "- [x] Ran `make lint`" in summary
    # Errors: first line of the failed result; error-looking lines of other results.
    assert "- lint failed badly" in summary
    assert "second line" not in summary
    assert "- ValueError: bad comma at 3" in summary
    assert "- Traceback (most recent call last):" in summary
    assert "No real problem here" not in summary
    # Messages after the cut are not summarized.
    cut = [r["id"] for r in b.records].index(result.first_kept_entry_id)
    kept_requests = [
        r["message"]["content"][0]["text"]
        for r in b.records[cut:]
        if r["type"] == "message" and r["message"]["role"] == "user"
    ]
    assert kept_requests and all(f"- {t}\n" not in summary for t in kept_requests)
    # Files touched, as llm-summary appends them, and their details.
    assert result.details == {"readFiles": [], "modifiedFiles": ["src/parser.py"]}
    if profile == "musepi":
        assert summary.endswith("<files>\n# src/\nparser.py (RW)\n</files>")
    else:
        assert summary.endswith("\n\n<modified-files>\nsrc/parser.py\n</modified-files>")


def test_extractive_last_state_and_determinism() -> None:
    b = extractive_session()
    session = b.session()
    settings = settings_for("musepi", keep_recent_tokens=400)
    first = compact(session, "extractive", settings=settings)
    second = compact(session, "extractive", settings=settings)
    assert first is not None and second is not None
    assert first.summary == second.summary
    prep = prepare_compaction(session, settings, TokenCounter("musepi"))
    texts = [
        m["content"][0]["text"]
        for m in (*prep.messages_to_summarize, *prep.turn_prefix_messages)
        if m["role"] == "assistant" and m["content"] and m["content"][0]["type"] == "text"
    ]
    assert f"- [ ] Last state: {texts[-1]}" in first.summary


def test_extractive_caps_lists_and_carries_the_previous_summary() -> None:
    b = Build()
    b.user("start")
    b.step(("read", {"path": "a.py"}, "q" * 400))
    first_kept = b.user("continue")
    b.compaction(first_kept, summary="## Goal\nEarlier goal text\n\n<files>\na.py (Read)\n</files>")
    for k in range(30):
        b.step(("bash", {"command": f"step-{k:02d}"}, "q" * 400))
    for k in range(6):
        b.user(f"more {k}")
        b.step(("bash", {"command": f"late-{k}"}, "q" * 400))
    session = b.session()
    settings = settings_for("pi", keep_recent_tokens=200)
    result = compact(session, "extractive", settings=settings, max_items=3)
    assert result is not None
    assert "## Previous Summary\n## Goal\nEarlier goal text" in result.summary
    assert "a.py (Read)" not in result.summary  # the old file block is stripped
    done = result.summary.split("### Done\n", 1)[1].split("\n### In Progress", 1)[0]
    listed = [line for line in done.splitlines() if line.startswith("- [x] Ran")]
    assert len(listed) == 3
    assert done.splitlines()[0].endswith("earlier commands omitted)")


def test_extractive_with_nothing_to_summarize_is_none() -> None:
    b, _ = long_session(steps=2)
    assert compact(b.session(), "extractive") is None


@pytest.mark.parametrize("name", ["request_chars", "max_items", "state_chars"])
def test_extractive_rejects_bad_params(name: str) -> None:
    with pytest.raises(TypeError):
        Extractive(**{name: "10"})
    with pytest.raises(ValueError):
        Extractive(**{name: 0})


# -- none -----------------------------------------------------------------------------------


def test_none_changes_nothing_and_reports_equal_sizes() -> None:
    session, _, _ = masking_session()
    result = compact(session, "none", counter=TokenCounter("pi"))
    assert result is not None
    assert result.apply(session).entries == session.entries
    expected = context_tokens(session, "musepi", TokenCounter("pi"))
    assert result.tokens_before == result.tokens_after == expected
    assert result.method == "none" and result.append_entry is False


def test_none_on_an_empty_session_is_none() -> None:
    empty = Session({"type": "session", "id": "x"}, [])
    assert NoCompaction().run(context_for(empty)) is None


# -- hybrid ---------------------------------------------------------------------------------


def hybrid_session() -> tuple[Session, str]:
    b = Build()
    b.user("investigate the crash")
    _, (old,) = b.step(
        ("bash", {"command": "run old"}, lines(30) + "\nKeyError: distinctive_old_key")
    )
    for k in range(12):
        b.user(f"next {k}")
        b.step(("bash", {"command": f"run {k}"}, lines(60)))
        b.say(f"ok {k}")
    return b.session(), old


def test_hybrid_target_follows_the_spec_thresholds() -> None:
    session, _ = hybrid_session()
    # MusePi: reserve = max(floor(0.15 · 200000), 16384) = 30000 → 170000 (spec §3.5);
    # pi: 200000 − 16384 = 183616 (spec §3.3).
    assert hybrid_target(context_for(session), window=200_000) == 170_000
    assert hybrid_target(context_for(session, profile="pi"), window=200_000) == 183_616
    assert hybrid_target(context_for(session), window=1000, target_ratio=0.5) == 500
    assert hybrid_target(context_for(session), window=1000, target_tokens=7) == 7


def test_hybrid_masks_only_when_that_reaches_the_target() -> None:
    session, _ = hybrid_session()
    masked_only = compact(session, "observation-masking", keep_turns=3)
    result = compact(session, "hybrid", keep_turns=3, summary="extractive")
    assert result is not None and masked_only is not None
    assert result.append_entry is False
    assert dict(result.replacements) == dict(masked_only.replacements)
    assert result.tokens_after == masked_only.tokens_after


def test_hybrid_summarizes_the_masked_session_when_masking_is_not_enough() -> None:
    session, old = hybrid_session()
    settings = settings_for("musepi", keep_recent_tokens=600)
    masked_only = compact(session, "observation-masking", settings=settings, keep_turns=3)
    plain = compact(session, "extractive", settings=settings)
    assert masked_only is not None and plain is not None
    target = masked_only.tokens_after - 1
    result = compact(
        session, "hybrid", settings=settings, keep_turns=3, summary="extractive",
        target_tokens=target,
    )  # fmt: skip
    assert result is not None
    assert result.append_entry is True and result.method == "extractive"
    assert dict(result.replacements) == dict(masked_only.replacements)
    assert old in result.replacements
    # The summary was made from the masked session: the old error line is gone from it.
    assert "KeyError: distinctive_old_key" in plain.summary
    assert "KeyError: distinctive_old_key" not in result.summary
    after = result.apply(session)
    assert result_text(after, old).startswith("[Earlier tool output masked:")
    assert after.entries[-1].type == "compaction"
    counter = TokenCounter("musepi")
    assert result.tokens_after == context_tokens(after, "musepi", counter)


def test_hybrid_with_llm_summary_needs_a_summarizer() -> None:
    session, _ = hybrid_session()
    with pytest.raises(StrategyUnavailable, match="summarizer"):
        compact(session, "hybrid", keep_turns=3, target_tokens=10)


@pytest.mark.slow
def test_hybrid_with_llm_summary_over_the_loopback_server(tmp_path: Path) -> None:
    from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer
    from musepi_lab.testing import StubOpenAIServer

    session, old = hybrid_session()
    settings = settings_for("musepi", keep_recent_tokens=600)
    with StubOpenAIServer() as server:
        summarizer = OpenAICompatibleSummarizer(base_url=server.base_url, max_retries=0)
        result = compact(
            session, "hybrid", settings=settings, summarizer=summarizer, keep_turns=3,
            target_tokens=10,
        )  # fmt: skip
        bodies = [body for path, body in server.requests if path.endswith("/chat/completions")]
    assert result is not None and bodies
    assert result.summary.startswith("## Goal\nStub summary")
    prompt = json.dumps(bodies[0])
    assert "[Earlier tool output masked:" in prompt  # the model saw the masked session
    assert "distinctive_old_key" not in prompt
    assert old in result.replacements


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"summary": "hybrid"}, ValueError),
        ({"summary": 3}, TypeError),
        ({"target_ratio": 0}, ValueError),
        ({"target_ratio": 1.5}, ValueError),
        ({"target_ratio": "half"}, TypeError),
        ({"target_tokens": 1.5}, TypeError),
        ({"window": 0}, ValueError),
        ({"keep_turns": -2}, ValueError),
    ],
)
def test_hybrid_rejects_bad_params(params: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        Hybrid(**params)


def test_every_baseline_records_the_prompt_set() -> None:
    b, _ = long_session(steps=14)
    session = b.session()
    ctx = context_for(session, settings=settings_for("musepi", keep_recent_tokens=300))
    label = PromptSet.default().label
    for strategy in (
        ObservationMasking(keep_turns=2),
        Truncate(),
        Prune(protect_tokens=100, minimum_savings=0),
        Extractive(),
        NoCompaction(),
        Hybrid(keep_turns=2, summary="extractive", target_tokens=1),
    ):
        result = strategy.run(ctx)
        assert result is not None, strategy
        assert result.params["prompts"] == label, strategy


# -- acceptance: every pi corpus fixture and the bundled sample ------------------------------

ACCEPTANCE = [
    ("observation-masking", {}),
    ("truncate", {}),
    ("prune", {"protect_tokens": 2000, "minimum_savings": 0}),
    ("extractive", {}),
    ("hybrid", {"summary": "extractive", "target_ratio": 0.05}),
]


@functools.cache
def load(path: str) -> Session:
    return read_session(path)


def fixture_paths() -> list[Any]:
    params = [pytest.param(parts, id="/".join(parts)) for parts in PI_FIXTURES]
    params += [pytest.param(p, id=f"sample/{p.name}") for p in SAMPLES]
    return params


def resolve(source: Any) -> Path:
    return source if isinstance(source, Path) else corpus_file(*source)


def raw_bytes(path: Path) -> bytes:
    return path.read_bytes()


@pytest.mark.parametrize("profile", ["musepi", "pi"])
@pytest.mark.parametrize("source", fixture_paths())
def test_acceptance_every_baseline_applies_validly_and_shrinks(source: Any, profile: str) -> None:
    path = resolve(source)
    file_before = raw_bytes(path)
    session = load(str(path))
    records_before = snapshot(session)
    counter = TokenCounter("pi")
    settings = settings_for(profile)
    before = context_tokens(session, profile, counter)
    for name, params in ACCEPTANCE:
        result = compact(session, name, settings=settings, counter=counter, **params)
        assert result is not None, name
        after_session = result.apply(session)
        context = build_session_context(after_session, profile=profile)
        assert_valid_context(context.messages)
        after = counter.count_messages(context.messages)
        assert after < before, name
        assert result.tokens_after == after, name
    none = compact(session, "none", settings=settings, counter=counter)
    assert none is not None and none.tokens_after == none.tokens_before == before
    assert snapshot(session) == records_before
    assert raw_bytes(path) == file_before


def test_default_prune_saves_at_least_the_minimum_on_the_corpus() -> None:
    session = load(str(corpus_file("pi", "before-compaction.jsonl")))
    counter = TokenCounter("pi")
    result = compact(session, "prune", counter=counter)
    assert result is not None
    after = result.apply(session)
    assert_valid_context(build_session_context(after).messages)
    assert (
        context_tokens(session, "musepi", counter) - context_tokens(after, "musepi", counter)
        >= CompactionSettings.musepi().prune_minimum_savings
    )

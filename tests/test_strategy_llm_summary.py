"""`llm-summary` against a real OpenAI-compatible server on loopback (spec §5.1–5.7).

Expected prompts are written out by hand from the spec's rules (§5.1 serialization, §5.2 and
§5.7 prompt framing, §5.4 split-turn merge, §5.5–5.6 file blocks); prompt texts are read
straight from the `prompts/` folder; token caps are the spec's formulas worked out in the
comments. The corpus acceptance counts contexts with the same `TokenCounter` before and
after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, valid_pairing, words
from _corpus import PI_FIXTURES, SAMPLES, corpus_file

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.formats._registry import read_session
from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer, SummarizerError
from musepi_lab.session._session import Session
from musepi_lab.strategies import _llm_summary
from musepi_lab.strategies._base import CompactionContext, StrategyUnavailable, compact, get
from musepi_lab.strategies._llm_summary import LlmSummary
from musepi_lab.strategies._summary_input import (
    build_summary_prompt,
    fold_input_budget,
    pack_windows,
    reasoning_effort,
)
from musepi_lab.testing import Failure, StubOpenAIServer
from musepi_lab.tokens._counter import TokenCounter

SECRET = "sk-test-SECRET-do-not-leak-0123456789"
SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"


def chain() -> Chain:
    """A fresh chain whose assistant messages name a provider and model."""
    return Chain("llm", assistant_fields={"provider": "p", "model": "m"})


def parser_session(*, thinking_level: str | None = None, tagged: bool = False) -> Session:
    """One finished turn (read, edit) to summarize, then a long last turn that is kept.

    The sessions here end on their long user message: with keep 100 both profiles then cut
    there (pi crosses the budget on it; MusePi, as oh-my-pi 18.2.3, keeps the newest group
    even when it alone is over), so neither splits a turn.
    """
    c = chain()
    if thinking_level is not None:
        c.add("thinking_level_change", thinkingLevel=thinking_level)
    c.user("Fix the parser in src/parse.py" + (" </conversation> now" if tagged else ""))
    c.assistant("Reading it.", calls=(("c1", "read", {"path": "src/parse.py"}),))
    c.result("c1", "def parse(): pass")
    c.assistant(
        "Editing.",
        calls=(("c2", "edit", {"path": "src/parse.py", "old": "pass", "new": "return 1"}),),
    )
    c.result("c2", "ok")
    c.assistant("Done.")
    c.user(words(300, "k"))
    return c.session()


# The transcript of the first six entries by spec §5.1, written out by hand.
PARSER_TRANSCRIPT = (
    "[User]: Fix the parser in src/parse.py\n\n"
    "[Assistant]: Reading it.\n\n"
    '[Assistant tool calls]: read(path="src/parse.py")\n\n'
    "[Tool result]: def parse(): pass\n\n"
    "[Assistant]: Editing.\n\n"
    '[Assistant tool calls]: edit(path="src/parse.py", old="pass", new="return 1")\n\n'
    "[Tool result]: ok\n\n"
    "[Assistant]: Done."
)
# The same entries as the MusePi profile sends them to a model oh-my-pi 18.2.3 knows no dialect
# for ("m1": its `xml` fallback), written out by hand from the release's `xml` dialect:
# `\n\nHuman: ` / `\n\nAssistant: ` segments, bare `<invoke>` calls with JSON parameter
# values, results in `<tool_response>` blocks.
PARSER_XML_TRANSCRIPT = (
    "\n\nHuman: Fix the parser in src/parse.py"
    '\n\nAssistant: Reading it.<invoke name="read"><parameter name="path">"src/parse.py"'
    "</parameter></invoke>"
    "\n\nHuman: <tool_response>\ndef parse(): pass\n</tool_response>"
    '\n\nAssistant: Editing.<invoke name="edit"><parameter name="path">"src/parse.py"'
    '</parameter><parameter name="old">"pass"</parameter><parameter name="new">"return 1"'
    "</parameter></invoke>"
    "\n\nHuman: <tool_response>\nok\n</tool_response>"
    "\n\nAssistant: Done."
)
TRANSCRIPTS = {"pi": PARSER_TRANSCRIPT, "musepi": PARSER_XML_TRANSCRIPT}


def split_session(*, previous: str | None = None, history: bool = True) -> Session:
    """A last turn so long the cut falls inside it (entries e05.. are kept)."""
    c = chain()
    if previous is not None:
        # A compaction that kept nothing before it: everything after it is new.
        c.add("compaction", summary=previous, firstKeptEntryId="e00", tokensBefore=1000)
    if history:
        c.user("First task")
        c.assistant("First done.")
    c.user("Second task")
    c.assistant("Reading x.", calls=(("c1", "read", {"path": "x.py"}),))
    c.result("c1", words(200, "x"))
    c.assistant("Reading y.", calls=(("c2", "read", {"path": "y.py"}),))
    c.result("c2", words(200, "y"))
    c.assistant("Finished.")
    return c.session()


def by_role(body: dict[str, Any], role: str) -> str:
    (msg,) = [m for m in body["messages"] if m["role"] == role]
    return msg["content"]


def labelled(body: dict[str, Any]) -> str:
    """A responder: the turn-prefix request answers PREFIX, the short summary SHORT,
    anything else HISTORY, each with the request's max_tokens so answers are traceable."""
    user = by_role(body, "user")
    if user.endswith(prompt("compaction-turn-prefix")):
        return f"PREFIX {body['max_tokens']}"
    if user.endswith(prompt("compaction-short-summary")):
        return "SHORT one line"
    return f"HISTORY {body['max_tokens']}"


shared_server, server = stub_server_fixtures(labelled)


def summarizer(server: StubOpenAIServer, **kw: Any) -> OpenAICompatibleSummarizer:
    kw.setdefault("sleep", lambda s: None)
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key=SECRET, **kw)


def settings(profile: str, **kw: Any) -> CompactionSettings:
    return CompactionSettings.for_profile(profile, **kw)


# -- request shape -------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_first_summary_request_shape(server, profile):
    session = parser_session()
    result = compact(
        session,
        "llm-summary",
        settings=settings(profile, keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "m1"
    # Spec §5.2: floor(0.8 · 16384) = 13107 for both profiles with the default reserve.
    assert body["max_tokens"] == 13107
    assert body["messages"] == [
        {"role": "system", "content": prompt("summarization-system")},
        {
            "role": "user",
            "content": "<conversation>\n"
            + TRANSCRIPTS[profile]
            + "\n</conversation>\n\n"
            + prompt("compaction-summary"),
        },
    ]
    assert result.first_kept_entry_id == "e06"
    assert result.method is None


@pytest.mark.parametrize(
    ("profile", "summary_cap", "prefix_cap"),
    [
        # reserve 40000: pi floor(0.8·40000) = 32000 and floor(0.5·40000) = 20000 (§5.2);
        # MusePi caps both at MAX_SUMMARY_TOKENS = 16384 (§5.7).
        ("pi", 32000, 20000),
        ("musepi", 16384, 16384),
    ],
)
def test_max_tokens_per_profile(server, profile, summary_cap, prefix_cap):
    result = compact(
        split_session(),
        "llm-summary",
        settings=settings(profile, keep_recent_tokens=250, reserve_tokens=40000),
        summarizer=summarizer(server),
    )
    assert [b["max_tokens"] for _, b in server.requests] == [summary_cap, prefix_cap]
    assert result.summary.startswith(f"HISTORY {summary_cap}{SEPARATOR}PREFIX {prefix_cap}")


def test_default_turn_prefix_cap_is_8192(server):
    # Spec §5.2: floor(0.5 · 16384) = 8192.
    compact(
        split_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=250),
        summarizer=summarizer(server),
    )
    assert [b["max_tokens"] for _, b in server.requests] == [13107, 8192]


@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_split_turn_is_two_requests_merged(server, profile):
    result = compact(
        split_session(),
        "llm-summary",
        settings=settings(profile, keep_recent_tokens=250),
        summarizer=summarizer(server),
    )
    history, prefix = (by_role(b, "user") for _, b in server.requests)
    if profile == "pi":
        history_text = "[User]: First task\n\n[Assistant]: First done."
        prefix_text = (
            "[User]: Second task\n\n[Assistant]: Reading x.\n\n"
            f'[Assistant tool calls]: read(path="x.py")\n\n[Tool result]: {words(200, "x")}'
        )
    else:  # the release's xml dialect
        history_text = "\n\nHuman: First task\n\nAssistant: First done."
        prefix_text = (
            "\n\nHuman: Second task\n\nAssistant: Reading x."
            '<invoke name="read"><parameter name="path">"x.py"</parameter></invoke>'
            f"\n\nHuman: <tool_response>\n{words(200, 'x')}\n</tool_response>"
        )
    assert history == (
        f"<conversation>\n{history_text}\n</conversation>\n\n" + prompt("compaction-summary")
    )
    assert prefix == (
        f"<conversation>\n{prefix_text}\n</conversation>\n\n" + prompt("compaction-turn-prefix")
    )
    assert result.summary.startswith("HISTORY 13107" + SEPARATOR + "PREFIX 8192")
    assert result.first_kept_entry_id == "e05"


def test_pi_split_turn_without_history_loses_previous_summary(server):
    session = split_session(previous="PREVIOUS SUMMARY", history=False)
    result = compact(
        session,
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=250),
        summarizer=summarizer(server),
    )
    # Only the turn prefix is asked for; spec §5.4: pi writes "No prior history.".
    ((_, body),) = server.requests
    assert by_role(body, "user").endswith(prompt("compaction-turn-prefix"))
    assert "PREVIOUS SUMMARY" not in by_role(body, "user")
    assert result.summary.startswith("No prior history." + SEPARATOR + "PREFIX 8192")
    assert "PREVIOUS SUMMARY" not in result.summary


def test_musepi_split_turn_without_history_reuses_previous_summary(server):
    session = split_session(previous="PREVIOUS SUMMARY", history=False)
    result = compact(
        session,
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=250),
        summarizer=summarizer(server),
    )
    assert len(server.requests) == 1
    assert result.summary.startswith("PREVIOUS SUMMARY" + SEPARATOR + "PREFIX 8192")


def test_previous_summary_block_and_update_prompt(server):
    c = chain()
    c.user("Old request")
    c.assistant("Old answer")
    c.add("compaction", summary="Earlier: did X", firstKeptEntryId="e02", tokensBefore=500)
    c.user("New request")
    c.assistant("New answer")
    c.user(words(300))
    compact(
        c.session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    ((_, body),) = server.requests
    assert by_role(body, "user") == (
        "<conversation>\n[User]: New request\n\n[Assistant]: New answer\n</conversation>\n\n"
        "<previous-summary>\nEarlier: did X\n</previous-summary>\n\n"
        + prompt("compaction-update-summary")
    )


def test_additional_context_and_focus(server):
    compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server),
        additional_context=("memory: prefers pytest", "branch: main"),
        custom_instructions="the parser bug",
    )
    ((_, body),) = server.requests
    assert by_role(body, "user") == (
        "<conversation>\n" + PARSER_XML_TRANSCRIPT + "\n</conversation>\n\n"
        "<additional-context>\n- memory: prefers pytest\n- branch: main\n</additional-context>\n\n"
        + prompt("compaction-summary")
        + "\n\nAdditional focus: the parser bug"
    )


def test_focus_from_compact_custom_instructions(server):
    compact(
        parser_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server),
        custom_instructions="only the tests",
    )
    ((_, body),) = server.requests
    assert by_role(body, "user").endswith("\n\nAdditional focus: only the tests")


def test_build_summary_prompt_order():
    text = build_summary_prompt(
        "T",
        base_prompt="B",
        previous_summary="P",
        additional_context=["x"],
        custom_instructions="F",
    )
    assert text == (
        "<conversation>\nT\n</conversation>\n\n<previous-summary>\nP\n</previous-summary>\n\n"
        "<additional-context>\n- x\n</additional-context>\n\nB\n\nAdditional focus: F"
    )


def test_musepi_neutralizes_boundary_tags_pi_does_not(server):
    for profile in ("pi", "musepi"):
        compact(
            parser_session(tagged=True),
            "llm-summary",
            settings=settings(profile, keep_recent_tokens=100),
            summarizer=summarizer(server),
        )
    pi_body, musepi_body = (by_role(b, "user") for _, b in server.requests)
    assert "[User]: Fix the parser in src/parse.py </conversation> now" in pi_body
    assert "Human: Fix the parser in src/parse.py &lt;/conversation> now" in musepi_body
    assert musepi_body.count("</conversation>") == 1


def test_musepi_drops_useless_pairs(server):
    c = chain()
    c.user("Look around")
    c.assistant(
        "Checking.", calls=(("u1", "grep", {"pattern": "zzz"}), ("g1", "read", {"path": "a.py"}))
    )
    c.result("u1", "no matches", name="grep", useless=True)
    c.result("g1", "A = 1")
    c.assistant("Found A.")
    c.user(words(300))
    for profile in ("pi", "musepi"):
        compact(
            c.session(),
            "llm-summary",
            settings=settings(profile, keep_recent_tokens=100),
            summarizer=summarizer(server),
        )
    pi_body, musepi_body = (by_role(b, "user") for _, b in server.requests)
    assert 'grep(pattern="zzz"); read(path="a.py")' in pi_body
    assert "[Tool result]: no matches" in pi_body
    assert (
        'Checking.<invoke name="read"><parameter name="path">"a.py"</parameter></invoke>'
        "\n\nHuman: <tool_response>\nA = 1\n</tool_response>"
    ) in musepi_body
    assert "zzz" not in musepi_body and "no matches" not in musepi_body


# -- file operations -------------------------------------------------------------------------
def test_file_operations_pi_two_tags(server):
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    # read ∩ edited → modified only (spec §5.5).
    assert dict(result.details) == {"readFiles": [], "modifiedFiles": ["src/parse.py"]}
    assert result.summary == "HISTORY 13107\n\n<modified-files>\nsrc/parse.py\n</modified-files>"
    assert result.to_entry_record("e07", entry_id="x", timestamp="t")["details"] == {
        "readFiles": [],
        "modifiedFiles": ["src/parse.py"],
    }


def test_file_operations_musepi_files_block(server):
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    assert dict(result.details) == {"readFiles": [], "modifiedFiles": ["src/parse.py"]}
    # Spec §5.6: directory header, then the file with RW (modified and read).
    assert result.summary == "HISTORY 13107\n\n<files>\n# src/\nparse.py (RW)\n</files>"


# -- folding (§5.7) ----------------------------------------------------------------------------
def fold_session() -> Session:
    """Seven finished turns of 302 + 4 tokens each, then a kept last turn."""
    c = chain()
    for letter in "bcdefgh":
        c.user(words(300, letter))
        c.assistant("ok")
    c.user(words(300, "z"))
    return c.session()


def test_fold_budget_formula():
    # W = 2000: minimum = min(16384, max(1024, 250)) = 1024;
    # 0.8·2000 − 13107 − 16384 < 0, so the budget is the minimum.
    assert fold_input_budget(2000, 13107) == 1024
    # W = 200000: floor(160000) − 13107 − 16384 = 130509.
    assert fold_input_budget(200_000, 13107) == 130509


def test_folding_with_tiny_window(server):
    result = compact(
        fold_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server, context_window=2000),
    )
    # Each message is sized alone in the xml dialect (UTF-8 bytes / 4, rounded up):
    # "\n\nHuman: " + 1200 chars = 303 tokens, "\n\nAssistant: ok" = 4 tokens: three turns
    # (921 tokens) fit the 1024 budget, a fourth user message would not: windows of
    # turns b–d, e–g, h, each rendered whole.
    bodies = [by_role(b, "user") for _, b in server.requests]
    assert len(bodies) == 3
    for body, letters in zip(bodies, ["bcd", "efg", "h"], strict=True):
        for letter in "bcdefgh":
            assert (f"Human: {words(300, letter)}" in body) == (letter in letters)
    assert bodies[0].endswith(prompt("compaction-summary"))
    # Each later window carries the previous window's answer as the previous summary.
    for body in bodies[1:]:
        assert "<previous-summary>\nHISTORY 13107\n</previous-summary>\n\n" in body
        assert body.endswith(prompt("compaction-update-summary"))
    assert result.summary == "HISTORY 13107"


def test_no_folding_when_disabled(server):
    compact(
        fold_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server, context_window=2000),
        fold=False,
    )
    assert len(server.requests) == 1


def test_single_oversized_window_is_clipped(server):
    c = chain()
    c.user(words(2000, "q"))
    c.assistant("ok")
    c.user(words(300))
    compact(
        c.session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server, context_window=2000),
    )
    # The release's xml dialect: "\n\nHuman: " + 8000 chars = 8009 chars, 2003 tokens > 1024,
    # a window of its own, clipped to max(1024, floor(8009 · 1024 · 0.95 / 2003)) = 3889
    # chars plus the truncation marker.
    text = f"\n\nHuman: {words(2000, 'q')}"
    expected = text[:3889] + f"\n\n[... {8009 - 3889} more characters truncated]"
    bodies = [by_role(b, "user") for _, b in server.requests]
    assert bodies[0] == f"<conversation>\n{expected}\n</conversation>\n\n" + prompt(
        "compaction-summary"
    )


def test_pack_windows_keeps_order_and_skips_empty():
    assert pack_windows(["a", "", "b", "c"], [2, 0, 2, 2], 4) == ["a\n\nb", "c"]


# -- reasoning effort (§5.7) ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("level", "effort"), [(None, "high"), ("inherit", "high"), ("off", None), ("medium", "medium")]
)
def test_reasoning_effort_mapping(level, effort):
    assert reasoning_effort(level) == effort


@pytest.mark.parametrize(
    ("level", "expected"), [("medium", "medium"), ("off", None), (None, "high")]
)
def test_reasoning_effort_from_session_thinking_level(server, level, expected):
    compact(
        parser_session(thinking_level=level),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server, supports_reasoning=True),
    )
    ((_, body),) = server.requests
    assert body.get("reasoning_effort") == expected


def test_pi_reasoning_high_for_history_none_for_prefix(server):
    compact(
        split_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=250),
        summarizer=summarizer(server, supports_reasoning=True),
    )
    efforts = [b.get("reasoning_effort") for _, b in server.requests]
    assert efforts == ["high", None]


# -- short summary, cost ---------------------------------------------------------------------------
def test_short_summary_musepi_only(server):
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100, reserve_tokens=2000),
        summarizer=summarizer(server, supports_reasoning=True),
        short_summary=True,
    )
    assert len(server.requests) == 2
    _, body = server.requests[1]
    # Spec §5.7: min(512, floor(0.2 · 2000)) = 400.
    assert body["max_tokens"] == 400
    # oh-my-pi 18.2.3 (`generateShortSummary`): the kept messages as the conversation, in the
    # summarizer's dialect (xml for "m1"), then the summary just made (max_tokens
    # min(floor(0.8 · 2000), 16384) = 1600) as the previous summary, then the ask; the
    # reasoning effort of the summary (no thinking level on the path: "high"). Which entries
    # are kept is the cut rule's business: each kept entry's xml form is written out here.
    kept_xml = {"e06": f"\n\nHuman: {words(300, 'k')}", "e07": "\n\nAssistant: Sure."}
    ids = [e.id for e in parser_session().path()]
    kept = ids[ids.index(result.first_kept_entry_id) :]
    assert by_role(body, "user") == (
        f"<conversation>\n{''.join(kept_xml[i] for i in kept)}\n</conversation>\n\n"
        "<previous-summary>\nHISTORY 1600\n</previous-summary>\n\n"
        + prompt("compaction-short-summary")
    )
    assert body["reasoning_effort"] == "high"
    assert result.short_summary == "SHORT one line"
    assert result.to_entry_record("e07", entry_id="x", timestamp="t")["shortSummary"] == (
        "SHORT one line"
    )
    server.requests.clear()
    pi_result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server),
        short_summary=True,
    )
    assert len(server.requests) == 1
    assert pi_result.short_summary is None


def test_cost_summed_over_every_request(server):
    result = compact(
        split_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=250),
        summarizer=summarizer(server),
    )
    # The stub bills len(json(messages)) // 4 in and len(text) // 4 out per request.
    billed_in = sum(sum(len(json.dumps(m)) for m in b["messages"]) // 4 for _, b in server.requests)
    assert result.summarizer_input_tokens == billed_in
    assert result.summarizer_output_tokens == len("HISTORY 13107") // 4 + len("PREFIX 8192") // 4
    assert result.latency_s > 0


# -- the summarizer seam: retries, timeouts, cache, env, the key ---------------------------------
def test_retries_on_429_and_500(server):
    delays: list[float] = []
    server.fail_next(Failure(429), Failure(500))
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server, sleep=delays.append, backoff_s=0.25),
    )
    assert len(server.requests) == 3
    assert delays == [0.25, 0.5]
    assert result.summary.startswith("HISTORY 13107")


def test_timeout_then_success_and_timeout_gives_up(server):
    # A 1 s limit against a 4 s stall: the retry answers at once, with room for a loaded machine.
    server.fail_next(Failure(status=200, delay_s=4.0))
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("pi", keep_recent_tokens=100),
        summarizer=summarizer(server, timeout_s=1.0),
    )
    assert len(server.requests) == 2 and result.summary.startswith("HISTORY")
    server.fail_next(Failure(status=200, delay_s=4.0))
    with pytest.raises(SummarizerError, match="after 1 attempts: timeout"):
        compact(
            parser_session(),
            "llm-summary",
            settings=settings("pi", keep_recent_tokens=100),
            summarizer=summarizer(server, timeout_s=1.0, max_retries=0),
        )


def test_cache_hit_on_second_run_sends_nothing(server, tmp_path):
    run = {
        "settings": settings("musepi", keep_recent_tokens=250),
        "short_summary": True,
    }
    first = compact(
        split_session(), "llm-summary", summarizer=summarizer(server, cache_dir=tmp_path), **run
    )
    sent = len(server.requests)
    assert sent == 3
    again = compact(
        split_session(), "llm-summary", summarizer=summarizer(server, cache_dir=tmp_path), **run
    )
    assert len(server.requests) == sent
    assert again.summary == first.summary and again.short_summary == first.short_summary
    assert again.summarizer_input_tokens == first.summarizer_input_tokens


def test_key_never_written(server, tmp_path):
    session = split_session()
    result = compact(
        session,
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=250),
        summarizer=summarizer(server, cache_dir=tmp_path / "cache"),
        short_summary=True,
    )
    assert SECRET not in repr(result)
    written = tmp_path / "out.jsonl"
    result.apply(session).write(written)
    assert SECRET not in written.read_text(encoding="utf-8")
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()


def test_works_against_openai_base_url_env(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=OpenAICompatibleSummarizer(),
    )
    assert len(server.requests) == 1
    assert result is not None and result.summary.startswith("HISTORY 13107")


def test_needs_a_summarizer():
    with pytest.raises(StrategyUnavailable, match="llm-summary"):
        compact(parser_session(), "llm-summary")


def test_model_error_is_raised(server):
    server.fail_next(Failure(400))
    with pytest.raises(SummarizerError, match="HTTP 400"):
        compact(
            parser_session(),
            "llm-summary",
            settings=settings("pi", keep_recent_tokens=100),
            summarizer=summarizer(server),
        )


def test_strategy_value_and_registry():
    strat = get("llm-summary", short_summary=True)
    assert strat == LlmSummary(short_summary=True)
    assert strat.label == "llm-summary(short_summary=True)"  # only what differs from defaults
    assert hash(strat) == hash(LlmSummary(short_summary=True))


def test_nothing_to_summarize_is_none(server):
    c = chain()
    c.user("hi")
    c.assistant("hello")
    assert compact(c.session(), "llm-summary", summarizer=summarizer(server)) is None
    assert server.requests == []


# -- result fields, and the shared acceptance on real sessions -------------------------------
def check_acceptance(session: Session, result, profile: str) -> None:
    counter = TokenCounter(profile)
    before = counter.count_messages(build_session_context(session, profile=profile).messages)
    after_session = result.apply(session)
    assert len(after_session.entries) == len(session.entries) + 1
    context = build_session_context(after_session, profile=profile)
    assert context.messages[0]["role"] == "compactionSummary"
    assert valid_pairing(context.messages)
    after = counter.count_messages(context.messages)
    assert after < before
    assert result.tokens_after == after


def raw_entry_ids(path: Path) -> set[str]:
    """Entry ids as written in the file (v3 files only)."""
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") != "session" and "id" in record:
            ids.add(record["id"])
    return ids


@pytest.mark.corpus
@pytest.mark.parametrize("parts", PI_FIXTURES, ids=lambda p: "/".join(p[1:]))
@pytest.mark.parametrize("profile", ["musepi", "pi"])
def test_acceptance_on_pi_corpus(server, parts, profile):
    path = corpus_file(*parts)
    session = read_session(path)
    result = compact(
        session, "llm-summary", settings=settings(profile), summarizer=summarizer(server)
    )
    assert result is not None
    check_acceptance(session, result, profile)
    assert result.summarizer_input_tokens > 0
    # The first kept entry is a real message entry of the file's path.
    assert session.get(result.first_kept_entry_id).type == "message"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_acceptance_on_bundled_sample(server, path):
    session = read_session(path)
    result = compact(session, "llm-summary", summarizer=summarizer(server))
    assert result is not None
    check_acceptance(session, result, "musepi")
    assert result.first_kept_entry_id in raw_entry_ids(path)


def test_module_registers_llm_summary():
    assert _llm_summary.LlmSummary.name == "llm-summary"
    assert get("llm-summary").needs_summarizer


def test_result_params_carry_prompt_set_and_run_facts(server):
    session = split_session()
    run_settings = settings("musepi", keep_recent_tokens=250)
    counter = TokenCounter("musepi")
    ctx = CompactionContext(
        session=session,
        preparation=prepare_compaction(session, run_settings, counter),
        settings=run_settings,
        counter=counter,
        summarizer=summarizer(server),
        prompts=PromptSet.default(),
    )
    result = LlmSummary().run(ctx)
    assert result is not None
    assert result.params["prompts"] == PromptSet.default().label
    assert result.params["summarizer_model"] == "m1"
    assert result.params["summarizer_requests"] == 2
    assert SECRET not in json.dumps(dict(result.params))


def test_list_parameters_become_tuples():
    strat = get("llm-summary", additional_context=["memory: x"])
    assert strat.additional_context == ("memory: x",)
    assert hash(strat) == hash(LlmSummary(additional_context=("memory: x",)))


def test_previous_snapcompact_archive_is_folded_into_text(server):
    c = chain()
    c.add(
        "compaction",
        summary="HISTORY archived below",
        firstKeptEntryId="e00",
        tokensBefore=900,
        preserveData={
            "snapcompact": {"frames": [], "text": "¶user: old request█¶ai: old answer"},
            "other": {"kept": True},
        },
    )
    c.user("New request")
    c.assistant("New answer")
    c.user(words(300))
    result = compact(
        c.session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server),
    )
    ((_, body),) = server.requests
    archive = prompt("snapcompact-archive-context").replace(
        "{{archive}}", "¶user: old request█¶ai: old answer"
    )
    assert by_role(body, "user") == (
        "<conversation>\n\n\nHuman: New request\n\nAssistant: New answer\n</conversation>\n\n"
        f"<previous-summary>\n{archive}\n</previous-summary>\n\n"
        + prompt("compaction-update-summary")
    )
    # The archive's text now lives in the summary; other preserved data is carried on.
    assert dict(result.preserve_data) == {"other": {"kept": True}}


# -- dialect of the summary input (oh-my-pi 18.2.3) -------------------------------------------
def test_musepi_renders_for_the_summarizer_model(server):
    claude = OpenAICompatibleSummarizer(
        model="claude-sonnet-4-5", base_url=server.base_url, api_key=SECRET, sleep=lambda s: None
    )
    compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=claude,
    )
    compact(
        parser_session(),
        "llm-summary",
        settings=settings("musepi", keep_recent_tokens=100),
        summarizer=summarizer(server),
        dialect="harmony",
    )
    claude_body, harmony_body = (by_role(b, "user") for _, b in server.requests)
    # A Claude model gets the anthropic dialect: calls in a <function_calls> block.
    assert claude_body.startswith(
        "<conversation>\n\n\nHuman: Fix the parser in src/parse.py\n\nAssistant: Reading it."
        '<function_calls>\n<invoke name="read">'
    )
    # harmony, asked for by name, with its control tokens escaped.
    assert harmony_body.startswith(
        "<conversation>\n<\\|start\\|>user<\\|message\\|>Fix the parser in src/parse.py<\\|end\\|>"
    )


def test_summary_dialect_rule():
    from types import SimpleNamespace

    from musepi_lab.strategies._summary_input import summary_dialect

    c = Chain("d", assistant_fields={"provider": "anthropic", "model": "claude-sonnet-4-5"})
    c.user("x")
    c.assistant("y")
    path = c.session().path()
    # The summarizer's model first, then the session's default model (the release's own
    # summarizer), then the `xml` fallback; a named dialect wins; pi has none.
    assert summary_dialect(SimpleNamespace(model="gpt-5"), "musepi", path=path) == "harmony"
    assert summary_dialect(SimpleNamespace(model=None), "musepi", path=path) == "anthropic"
    assert summary_dialect(None, "musepi") == "xml"
    assert summary_dialect(None, "musepi", "glm", path=path) == "glm"
    assert summary_dialect(SimpleNamespace(model="gpt-5"), "pi", path=path) is None

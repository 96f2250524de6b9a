"""The seed's touchpoints as callbacks (`SessionHooks`), through `compact`, `replay` and
`navigate_tree`, against a loopback server. Expected request text follows the summary
request format of spec §5.2 (`<additional-context>` lines, the instruction last)."""

from __future__ import annotations

from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, words

from musepi_lab.compaction import BeforeCompact, Compacting, SessionHooks
from musepi_lab.compaction._hooks import BeforeTree
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer
from musepi_lab.navigation import TreeHooks, navigate_tree
from musepi_lab.replay import replay_session
from musepi_lab.strategies._base import compact

SUMMARY = "## Goal\nModel summary."


def answer(body: dict[str, Any]) -> str:
    return SUMMARY


shared_server, server = stub_server_fixtures(answer)


def summarizer(server: Any) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, sleep=lambda s: None)


def settings(profile: str = "musepi") -> CompactionSettings:
    return CompactionSettings.for_profile(profile, keep_recent_tokens=100)


def session() -> Any:
    c = Chain("hooks")
    c.user("Fix the parser")
    c.assistant("Fixed.")
    # Ends on the long user message: both profiles cut there without splitting a turn (pi
    # walks back to the message that crosses keep 100; MusePi keeps the newest group even
    # when it alone is over the budget).
    c.user(words(300, "k"))
    return c.session()


def test_before_compact_cancels(server):
    seen: list[Any] = []

    def cancel(prep):
        seen.append(prep.first_kept_entry_id)
        return BeforeCompact(cancel=True)

    hooks = SessionHooks(session_before_compact=cancel)
    got = compact(
        session(), "llm-summary", settings=settings(), summarizer=summarizer(server), hooks=hooks
    )
    assert got is None and server.requests == [] and len(seen) == 1


@pytest.mark.parametrize(("profile", "flag"), [("musepi", "fromExtension"), ("pi", "fromHook")])
def test_before_compact_supplies_the_summary(server, profile, flag):
    notified: list[Any] = []
    hooks = SessionHooks(
        session_before_compact=lambda prep: BeforeCompact(summary="EXT SUMMARY"),
        session_compact=notified.append,
    )
    s = session()
    # No summarizer: none is needed when the extension supplies the summary.
    result = compact(s, "llm-summary", settings=settings(profile), hooks=hooks)
    assert server.requests == []
    assert result.summary == "EXT SUMMARY" and result.from_extension
    assert notified == [result]
    entry = result.apply(s).leaf
    assert entry.type == "compaction" and entry.get(flag) is True
    # The cut is the engine's: the long user message (third entry) starts the kept region.
    assert entry.get("firstKeptEntryId") == s.entries[2].id


def test_compacting_changes_prompt_and_context(server):
    hooks = SessionHooks(
        session_compacting=lambda prep: Compacting(prompt="HOOK PROMPT", context=("line one",))
    )
    compact(
        session(), "llm-summary", settings=settings(), summarizer=summarizer(server), hooks=hooks
    )
    ((_, body),) = server.requests
    text = body["messages"][-1]["content"]
    assert text.endswith(
        "</conversation>\n\n<additional-context>\n- line one\n</additional-context>\n\nHOOK PROMPT"
    )
    assert prompt("compaction-summary") not in text


def test_default_prompt_without_hooks(server):
    compact(session(), "llm-summary", settings=settings(), summarizer=summarizer(server))
    ((_, body),) = server.requests
    assert body["messages"][-1]["content"].endswith(prompt("compaction-summary"))


def test_replay_tells_session_compact_once_per_kept_compaction(server):
    c = Chain("long")
    for i in range(4):
        c.user(words(400, "abcd"[i]))
        c.assistant(f"answer {i}")
    s = c.session()
    notified: list[Any] = []
    asked: list[Any] = []
    hooks = SessionHooks(
        session_before_compact=lambda prep: asked.append(prep) or None,
        session_compact=notified.append,
    )
    result = replay_session(
        s,
        "llm-summary",
        window=10**6,
        settings=settings(),
        summarizer=summarizer(server),
        triggers=("manual",),
        manual_at=(s.entries[3].id,),
        hooks=hooks,
    )
    (event,) = result.events
    assert notified == [event.result] and len(asked) == 1


def branched() -> Any:
    c = Chain("tree")
    c.user("start")
    root_answer = c.assistant("ok")
    c.user("try A")
    c.assistant("A done")
    s = c.session()
    # A second branch from the first answer.
    s = s.with_leaf(root_answer)
    s = s.append(
        {
            "type": "message",
            "id": "b1",
            "parentId": root_answer,
            "timestamp": "2026-01-01T00:10:00.000Z",
            "message": {"role": "user", "content": "try B", "timestamp": 0},
        }
    )
    return s, root_answer


def test_tree_hooks_are_session_hooks(server):
    assert TreeHooks is SessionHooks
    s, _ = branched()
    a_leaf = s.entries[3].id
    hooks = SessionHooks(session_before_tree=lambda prep: BeforeTree(summary="EXT BRANCH"))
    moved = navigate_tree(s, a_leaf, summarize=True, hooks=hooks)
    assert server.requests == []
    assert moved.summary_entry.get("summary") == "EXT BRANCH"
    assert moved.summary_entry.get("fromExtension") is True

"""The strategies users ask for (issue 16 item 4): `keep-user-messages`, `summarize-every-n`
and `oversized-output`, each registered, measured by `compact()` like the others, and run in
replay. Expected values come from constructed sessions and the raw sample lines."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _builders import Chain, prompt, stub_server_fixtures, valid_pairing
from _corpus import SAMPLES

from musepi_lab.compaction import CompactionSettings
from musepi_lab.context import build_session_context
from musepi_lab.formats import read_session
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.replay import replay_session
from musepi_lab.strategies import StrategyUnavailable, available, compact, get
from musepi_lab.tokens import TokenCounter

NEW = ("keep-user-messages", "summarize-every-n", "oversized-output")


def numbered_reply(body: dict[str, Any]) -> str:
    """A reply naming the length of the prompt it answers, so chained summaries show."""
    return f"SUMMARY-{len(body['messages'][-1]['content'])}"


shared_server, server = stub_server_fixtures(numbered_reply)


@pytest.fixture
def summarizer(server) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(base_url=server.base_url, model="stub")


def test_the_three_are_registered_values() -> None:
    for name in NEW:
        assert name in available()
        strategy = get(name)
        assert strategy.label == name and get(name, **strategy.params) == strategy
        assert json.loads(json.dumps(strategy.params)) == strategy.params
    assert get("summarize-every-n").params == {
        "n": 21,
        "keep_last_m_turns": 10,
        "keep_first_user": True,
    }
    with pytest.raises(ValueError):
        get("keep-user-messages", agent_content="drop")
    with pytest.raises(ValueError):
        get("summarize-every-n", n=0)
    with pytest.raises(ValueError):
        get("oversized-output", max_share=1.5)
    with pytest.raises(TypeError):
        get("oversized-output", max_tokens="10k")


# -- keep-user-messages --------------------------------------------------------------------
def _raw_user_texts_before(path, cut: str) -> list[str]:
    """User texts of the raw lines on the path up to the cut (parentId from the cut back)."""
    records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    by_id = {r["id"]: r for r in records}
    chain: list[dict] = []
    current = by_id[cut].get("parentId")
    while current is not None:
        chain.append(by_id[current])
        current = by_id[current].get("parentId")
    texts = []
    for record in reversed(chain):
        message = record.get("message") or {}
        if record["type"] == "message" and message.get("role") == "user":
            texts.append("\n".join(b["text"] for b in message["content"] if b["type"] == "text"))
    return texts


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_keep_user_messages_keeps_every_user_message_verbatim(path) -> None:
    session = read_session(path)
    counter = TokenCounter("musepi")
    settings = CompactionSettings.musepi().copy_with(keep_recent_tokens=2000)
    result = compact(session, "keep-user-messages", settings=settings, counter=counter)
    assert result is not None and result.method == "keep-user-messages"
    expected = _raw_user_texts_before(path, result.first_kept_entry_id)
    assert expected
    positions = [result.summary.find(text) for text in expected]
    assert -1 not in positions and positions == sorted(positions)  # verbatim, in order
    assert re.search(
        r"\[\d+ agent and tool messages were dropped without a summary\.\]", result.summary
    )
    after = result.apply(session)
    after_texts = json.dumps([m for m in build_session_context(after).messages], ensure_ascii=False)
    for text in expected:
        assert json.dumps(text, ensure_ascii=False)[1:-1] in after_texts
    # compact() measured it: the rebuilt context, counted with the run's counter.
    assert result.tokens_after == counter.count_messages(build_session_context(after).messages)
    assert result.tokens_after < result.context_tokens_before


def test_keep_user_messages_summarizes_only_agent_content(server, summarizer) -> None:
    chain = Chain("keep-user")
    chain.user("FIRST-REQUEST please fix the bug")
    for i in range(6):
        chain.assistant(f"AGENT-STEP-{i}", calls=((f"c{i}", "read", {"path": f"f{i}.py"}),))
        chain.result(f"c{i}", "x " * 400)
    chain.user("SECOND-REQUEST now add tests")
    chain.assistant("AGENT-LAST done")
    session = chain.session()
    settings = CompactionSettings.musepi().copy_with(keep_recent_tokens=50)
    with pytest.raises(StrategyUnavailable):
        compact(session, "keep-user-messages", settings=settings, agent_content="summarize")
    result = compact(
        session,
        "keep-user-messages",
        settings=settings,
        summarizer=summarizer,
        agent_content="summarize",
    )
    assert result is not None and len(server.requests) == 1
    body = server.requests[0][1]
    assert body["messages"][0] == {"role": "system", "content": prompt("summarization-system")}
    sent = body["messages"][-1]["content"]
    assert "AGENT-STEP-0" in sent and "FIRST-REQUEST" not in sent
    assert "FIRST-REQUEST please fix the bug" in result.summary
    assert result.summary.endswith(f"SUMMARY-{len(sent)}")


# -- summarize-every-n ---------------------------------------------------------------------
def turns_session(turns: int) -> tuple[Any, list[str]]:
    """A task, then `turns` (call, result) pairs; returns the session and each turn's id."""
    chain = Chain(f"turns-{turns}")
    chain.user("TASK: make the tests pass")
    starts = []
    for i in range(turns):
        starts.append(
            chain.assistant(f"step {i}", calls=((f"c{i}", "bash", {"command": f"run {i}"}),))
        )
        chain.result(f"c{i}", f"OUT-{i:03d}", name="bash")
    return chain.session(), starts


def test_summarize_every_n_does_nothing_below_n_plus_m(summarizer, server) -> None:
    session, _ = turns_session(30)  # 30 < 21 + 10
    assert compact(session, "summarize-every-n", summarizer=summarizer) is None
    assert server.requests == []


@pytest.mark.parametrize(("turns", "chunks"), [(31, 1), (51, 1), (52, 2), (73, 3)])
def test_summarize_every_n_summarizes_whole_chunks_of_n(summarizer, server, turns, chunks) -> None:
    session, starts = turns_session(turns)
    result = compact(session, "summarize-every-n", summarizer=summarizer)
    assert result is not None
    # Chunks of 21 turns while at least 21 + 10 remain; the next turn is the first kept.
    assert result.first_kept_entry_id == starts[21 * chunks]
    assert len(server.requests) == chunks
    for k, (_, body) in enumerate(server.requests):
        sent = body["messages"][-1]["content"]
        inside = {int(n) for n in re.findall(r"OUT-(\d{3})", sent)}
        assert inside == set(range(21 * k, 21 * (k + 1)))
        if k:  # each chunk is conditioned on the checkpoint before it
            previous = server.requests[k - 1][1]["messages"][-1]["content"]
            assert f"<previous-summary>\nSUMMARY-{len(previous)}\n</previous-summary>" in sent
    last = server.requests[-1][1]["messages"][-1]["content"]
    assert result.summary.startswith("The user's first message, word for word:\n\nTASK: make")
    assert result.summary.endswith(f"SUMMARY-{len(last)}")
    after = build_session_context(result.apply(session)).messages
    assert valid_pairing(after)
    kept_outputs = re.findall(r"OUT-(\d{3})", json.dumps(after))
    assert [int(n) for n in kept_outputs] == list(range(21 * chunks, turns))


# -- oversized-output -----------------------------------------------------------------------
def oversized_session() -> tuple[Any, str, str]:
    chain = Chain("oversized")
    chain.user("look at the log")
    chain.assistant(calls=(("c1", "bash", {"command": "cat small.log"}),))
    small = chain.result("c1", "small output", name="bash")
    chain.assistant(calls=(("c2", "bash", {"command": "cat huge.log"}),))
    text = "HEAD-OF-LOG\n" + "".join(f"line {i:05d} of the log\n" for i in range(4000)) + "TAIL"
    big = chain.result("c2", text, name="bash", isError=True)
    return chain.session(), small, big


def test_oversized_output_cuts_only_the_result_over_the_limit() -> None:
    session, small, big = oversized_session()
    counter = TokenCounter("musepi")
    result = compact(session, "oversized-output", counter=counter, max_tokens=1000)
    assert result is not None and result.append_entry is False
    assert set(result.replacements) == {big}
    after = result.apply(session)
    new, old = after.get(big).message, session.get(big).message
    text = new["content"][0]["text"]
    assert counter.count_message(new) <= 1000
    assert text.startswith("HEAD-OF-LOG\nline 00000") and text.endswith("TAIL")
    assert "of this tool output were cut here" in text
    assert {k: v for k, v in new.items() if k != "content"} == {
        k: v for k, v in old.items() if k != "content"
    }
    assert after.get(small).record == session.get(small).record
    assert result.tokens_after == counter.count_messages(build_session_context(after).messages)


def test_oversized_output_limit_from_the_window() -> None:
    session, _, big = oversized_session()
    # Default share: a result above half of the request's room is cut, none below.
    assert compact(session, "oversized-output", window=200_000) is None
    result = compact(session, "oversized-output", window=40_000)
    assert result is not None and set(result.replacements) == {big}


# -- replay ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NEW)
def test_the_new_strategies_run_in_replay(name, summarizer) -> None:
    session = read_session(SAMPLES[0])
    params = {"max_tokens": 1500} if name == "oversized-output" else {}
    result = replay_session(session, name, window=32_000, summarizer=summarizer, **params)
    assert len(result.timeline) > 0
    assert result.compactions >= 1
    assert {e.method for e in result.events} == {name}
    for event in result.events:
        assert event.tokens_after < event.tokens_before

"""Tree navigation with branch summaries (spec §7.1–7.2; the seed's branch pipeline),
against the loopback OpenAI-compatible server. Expected request bodies are written from the
spec's formats (§5.1 serialization, §5.2 framing, §5.5 file tags), not from our output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _builders import prompt, session_header

from musepi_lab import build_session_context, convert_to_llm, read_session
from musepi_lab.compaction._hooks import BeforeTree
from musepi_lab.llm import OpenAICompatibleSummarizer, SummarizerError
from musepi_lab.navigation import TreeHooks, generate_branch_summary, navigate_tree
from musepi_lab.navigation._summary import NOTHING_TO_SUMMARIZE
from musepi_lab.session import Entry, Session
from musepi_lab.testing import StubOpenAIServer

ANSWER = "## Goal\nTry the right-hand approach."


def _record(i: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"e{i:02d}",
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
        "message": {"timestamp": 0, **message},
    }


def _assistant(text: str, calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()) -> dict:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [{"type": "toolCall", "id": c, "name": n, "arguments": a} for c, n, a in calls]
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if calls else "stop"}


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


def branched_session() -> Session:
    """e00–e05: the left branch; e06–e09 branch off e02 and are last in file order, so the
    leaf is e09 (the right branch, the one being abandoned when navigating to e05)."""
    records = [
        _record(0, None, {"role": "user", "content": "Fix the parser."}),
        _record(1, "e00", _assistant("Reading it.", (("c1", "read", {"path": "src/parse.py"}),))),
        _record(2, "e01", _result("c1", "def parse(): ...")),
        _record(3, "e02", {"role": "user", "content": "Try the left approach."}),
        _record(4, "e03", _assistant("Left done.", (("c2", "edit", {"path": "src/left.py"}),))),
        _record(5, "e04", _result("c2", "edited")),
        _record(6, "e02", {"role": "user", "content": "Try the right approach instead."}),
        _record(
            7,
            "e06",
            _assistant(
                "Reading the lexer.",
                (("c3", "read", {"path": "src/lex.py"}), ("c4", "write", {"path": "src/right.py"})),
            ),
        ),
        _record(8, "e07", _result("c3", "tokens = []")),
        _record(9, "e08", _assistant("Right approach written.")),
    ]
    return Session(session_header("branchy"), [Entry.from_record(r) for r in records])


@pytest.fixture()
def server():
    with StubOpenAIServer(responder=lambda body: ANSWER) as stub:
        yield stub


def summarizer_for(server: StubOpenAIServer) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, api_key="sk-nav")


def test_pi_navigation_sends_the_branch_request_and_appends_the_summary(server) -> None:
    session = branched_session()
    before = session.to_jsonl()
    result = navigate_tree(
        session, "e05", summarize=True, summarizer=summarizer_for(server), profile="pi"
    )
    # §7.1: abandoned = old leaf back to the common ancestor e02 (exclusive), chronological.
    assert [e.id for e in result.abandoned] == ["e06", "e07", "e08", "e09"]
    assert result.common_ancestor_id == "e02"
    assert result.budget == 128_000 - 16_384
    # One request; pi skips tool results in pass 2; §5.1 serialization; §5.2 framing.
    assert len(server.requests) == 1
    path, body = server.requests[0]
    assert path.endswith("/chat/completions")
    conversation = "\n\n".join(
        [
            "[User]: Try the right approach instead.",
            "[Assistant]: Reading the lexer.",
            '[Assistant tool calls]: read(path="src/lex.py"); write(path="src/right.py")',
            "[Assistant]: Right approach written.",
        ]
    )
    assert body["messages"] == [
        {"role": "system", "content": prompt("summarization-system")},
        {
            "role": "user",
            "content": f"<conversation>\n{conversation}\n</conversation>\n\n"
            + prompt("branch-summary"),
        },
    ]
    assert body["max_tokens"] == 2048
    # The summary: preamble + answer + pi's file tags (§5.5): read-only vs modified.
    preamble = prompt("branch-summary-preamble")
    expected = (
        preamble
        + ANSWER
        + "\n\n<read-files>\nsrc/lex.py\n</read-files>\n\n<modified-files>\nsrc/right.py\n</modified-files>"
    )
    entry = result.summary_entry
    assert entry is not None and entry.type == "branch_summary"
    assert entry.get("summary") == expected
    assert entry.get("details") == {"readFiles": ["src/lex.py"], "modifiedFiles": ["src/right.py"]}
    # Attached at the new leaf (e05 is a tool result, so the leaf is e05 itself); pi's
    # quirk: fromId is that attachment point too.
    assert entry.parent_id == "e05" and entry.get("fromId") == "e05"
    assert result.session.leaf_id == entry.id
    # The context at the new leaf: the left path, then the branch summary message.
    ctx = build_session_context(result.session, profile="pi")
    roles = [m["role"] for m in ctx.messages]
    assert roles == [
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
        "toolResult",
        "branchSummary",
    ]
    assert ctx.messages[-1]["summary"] == expected
    llm = convert_to_llm(ctx.messages, profile="pi")
    # pi's form (§2.2): a user message, our framing sentence, then the summary tags (pi's
    # branch suffix has no newline before `</summary>`).
    assert llm[-1]["role"] == "user"
    assert llm[-1]["content"][0]["text"].endswith(f"\n\n<summary>\n{expected}</summary>")
    # The input is never changed.
    assert session.to_jsonl() == before and session.leaf_id == "e09"


def test_musepi_includes_tool_results_and_custom_instructions_replace_the_prompt(server) -> None:
    result = navigate_tree(
        branched_session(),
        "e05",
        summarize=True,
        summarizer=summarizer_for(server),
        custom_instructions="Only list the files.",
    )
    _, body = server.requests[0]
    user = body["messages"][1]["content"]
    # §7.2: tool results are included; custom instructions replace the branch prompt.
    # oh-my-pi 18.2.3 renders the branch in the summarizer model's dialect: `xml` for "m1"
    # (Human/Assistant segments, bare invokes with JSON values, `<tool_response>` results).
    conversation = (
        "\n\nHuman: Try the right approach instead."
        '\n\nAssistant: Reading the lexer.<invoke name="read"><parameter name="path">'
        '"src/lex.py"</parameter></invoke>\n<invoke name="write"><parameter name="path">'
        '"src/right.py"</parameter></invoke>'
        "\n\nHuman: <tool_response>\ntokens = []\n</tool_response>"
        "\n\nAssistant: Right approach written."
    )
    assert user == f"<conversation>\n{conversation}\n</conversation>\n\nOnly list the files."
    assert user.endswith("</conversation>\n\nOnly list the files.")
    assert prompt("branch-summary") not in user
    summary = result.summary_entry.get("summary")
    # oh-my-pi's `<files>` tree (seed: (Read) read-only, (Write) modified, never read).
    assert summary.endswith("<files>\n# src/\nlex.py (Read)\nright.py (Write)\n</files>")
    assert result.summary_entry.get("fromExtension") is None


def test_a_user_message_target_goes_back_to_the_editor_without_a_summary() -> None:
    session = branched_session()
    result = navigate_tree(session, "e03")
    # A user message: the leaf becomes its parent and its text goes back to the editor.
    assert result.new_leaf_id == "e02" and result.editor_text == "Try the left approach."
    assert result.summary_entry is None and result.session.leaf_id == "e02"
    assert len(result.session.entries) == len(session.entries)
    assert [e.id for e in result.session.path()] == ["e00", "e01", "e02"]
    # The next entry appended hangs off the new leaf.
    grown = result.session.append(
        {"type": "message", "id": "n1", "message": {"role": "user", "content": "x"}}
    )
    assert grown.get("n1").parent_id == "e02" and grown.leaf_id == "n1"


def test_navigating_to_the_leaf_changes_nothing() -> None:
    session = branched_session()
    result = navigate_tree(session, "e09", summarize=True)
    assert result.session is session and result.abandoned == ()


def test_summarize_needs_a_summarizer_and_the_target_must_exist() -> None:
    with pytest.raises(ValueError, match="summarizer"):
        navigate_tree(branched_session(), "e05", summarize=True)
    with pytest.raises(KeyError):
        navigate_tree(branched_session(), "nope")


def test_hooks_can_cancel_or_supply_the_summary_and_label() -> None:
    seen: list[Any] = []
    cancel = TreeHooks(session_before_tree=lambda prep: BeforeTree(cancel=True))
    cancelled = navigate_tree(branched_session(), "e05", hooks=cancel)
    assert cancelled.cancelled and cancelled.session.leaf_id == "e09"

    def supply(prep):
        seen.append(prep)
        return BeforeTree(summary="from an extension", label="tried-right")

    hooks = TreeHooks(session_before_tree=supply, session_tree=seen.append)
    result = navigate_tree(branched_session(), "e05", profile="pi", hooks=hooks)
    assert [e.id for e in seen[0].entries] == ["e06", "e07", "e08", "e09"]
    entry = result.summary_entry
    assert entry.get("summary") == "from an extension" and entry.get("fromHook") is True
    # The label goes on the summary entry; the label entry becomes the leaf.
    assert result.session.label(entry.id) == "tried-right"
    assert seen[-1] is not seen[0] and seen[-1].summary_entry is entry


def test_an_empty_answer_is_an_error_never_a_summary() -> None:
    with StubOpenAIServer(responder=lambda body: "") as stub, pytest.raises(SummarizerError):
        navigate_tree(branched_session(), "e05", summarize=True, summarizer=summarizer_for(stub))


def test_nothing_to_summarize_asks_no_model(server) -> None:
    entries = [branched_session().get("e08")]  # a lone tool result: pi skips it
    summary = generate_branch_summary(entries, summarizer_for(server), profile="pi")
    assert summary.summary == NOTHING_TO_SUMMARIZE and summary.request is None
    assert server.requests == []


def test_navigation_on_the_bundled_sample_branch(server, tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "datasets" / "sample"
    session = next(
        s for s in (read_session(p) for p in sorted(sample.glob("*.jsonl"))) if len(s.leaves) > 1
    )
    off_path = [leaf for leaf in session.leaves if leaf.id != session.leaf_id]
    target = off_path[0].id
    result = navigate_tree(session, target, summarize=True, summarizer=summarizer_for(server))
    # Independent count: abandoned = the old leaf's path minus the target's path.
    target_path = {e.id for e in session.path(target)}
    expected = [e.id for e in session.path() if e.id not in target_path]
    assert [e.id for e in result.abandoned] == expected
    assert result.summary_entry is not None and result.summary_entry.parent_id == result.new_leaf_id
    out = result.session.write(tmp_path / "navigated.jsonl")
    again = read_session(out)
    assert again.get(result.summary_entry.id).get("summary") == result.summary_entry.get("summary")


def test_the_navigate_command_writes_a_new_file_and_leaves_the_input_alone(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from musepi_lab.cli import main

    source = branched_session().write(tmp_path / "in.jsonl")
    before = source.read_bytes()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli")
    out = tmp_path / "out.jsonl"
    code = main(
        ["navigate", str(source), "e05", "--summarize", "--out", str(out), "--profile", "pi"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "4 entries abandoned (common ancestor e02)" in printed
    assert source.read_bytes() == before
    navigated = read_session(out)
    last = navigated.entries[-1]
    assert last.type == "branch_summary" and last.parent_id == "e05"
    assert len(server.requests) == 1
    assert main(["navigate", str(source), "missing"]) == 2

"""The branch generator and the branch bench. Expected counts come from the generator's
design (four planted facts per explored branch, one more on each nested fork) and from
counting the raw records, never from the bench's own output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _builders import stub_server_fixtures
from _corpus import corpus_file

from musepi_lab.bench._branch import (
    BranchCase,
    branch_facts,
    branch_points,
    branch_table,
    run_branch_bench,
)
from musepi_lab.datasets._branches import generate_branch_session
from musepi_lab.formats._registry import read_session
from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer

shared_server, server = stub_server_fixtures(lambda body: "## Goal\nNothing useful.")


def summarizer(server: Any) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, sleep=lambda s: None)


def test_generator_is_seeded():
    a, b = generate_branch_session(7, forks=3), generate_branch_session(7, forks=3)
    assert a.session.to_jsonl() == b.session.to_jsonl() and a.facts == b.facts
    assert generate_branch_session(8, forks=3).session.to_jsonl() != a.session.to_jsonl()


@pytest.mark.parametrize("forks", [1, 2, 4])
def test_generator_shape(forks):
    made = generate_branch_session(3, forks=forks)
    nested = forks // 2  # every other fork (the second, fourth, ...) nests one more leaf
    assert len(made.session.leaves) == 1 + forks + nested
    assert len(made.facts) == 4 * forks + nested
    raw = [json.loads(line) for line in made.session.to_jsonl().splitlines()[1:]]
    main = {e.id for e in made.session.path()}
    for fact in made.facts:
        holders = [r["id"] for r in raw if fact.fact in json.dumps(r["message"])]
        # Each fact is in exactly its own entry, off the main path.
        assert holders == [fact.entry_id] and fact.entry_id not in main


def test_bench_rows_and_floor(server):
    made = generate_branch_session(11, forks=2)
    case = BranchCase("gen", made.session, made.facts)
    frame = run_branch_bench([case], summarizer=summarizer(server))
    points = branch_points(made.session)
    assert len(points) == 3 and len(frame) == 3 * 3
    # Every planted fact is abandoned by exactly one branch point... except the explored
    # branch above a nested fork, whose facts both of its leaves abandon.
    assert frame[frame.strategy == "none"]["facts"].tolist() == [4, 4, 3]
    assert (frame[frame.strategy == "none"]["facts_kept"] == 0).all()
    table = branch_table(frame)
    assert table.loc["none", "retention"] == 0.0


def test_llm_request_carries_the_abandoned_facts(server):
    made = generate_branch_session(5, forks=1)
    case = BranchCase("gen", made.session, made.facts)
    run_branch_bench([case], strategies=("llm",), summarizer=summarizer(server))
    ((_, body),) = server.requests
    sent = body["messages"][-1]["content"]
    for fact in made.facts:
        assert fact.fact in sent


def test_pi_llm_keeps_read_paths_in_its_file_tags(server):
    # pi appends `<read-files>` with full paths (spec §5.5): the read path survives even
    # a summary that says nothing; MusePi's folded `<files>` tree does not hold it verbatim.
    made = generate_branch_session(5, forks=1)
    case = BranchCase("gen", made.session, made.facts)
    (path,) = [f.fact for f in made.facts if f.kind == "path"]
    pi = run_branch_bench([case], strategies=("llm",), summarizer=summarizer(server), profile="pi")
    assert pi["facts_kept"].tolist() == [1]
    ((_, body),) = server.requests[-1:]
    assert path in body["messages"][-1]["content"]


def test_recorded_facts_exclude_the_kept_path():
    made = generate_branch_session(2, forks=1)
    (leaf,) = branch_points(made.session)
    extracted = branch_facts(made.session, leaf, None)
    main_text = json.dumps([dict(e.record) for e in made.session.path()])
    planted = {f.fact for f in made.facts}
    # The extractor finds the planted strings (and maybe more), none of them on the main path.
    assert planted & {f.text for f in extracted}
    assert all(f.text not in main_text for f in extracted)


@pytest.mark.corpus
def test_corpus_sessions_with_real_branches():
    path = corpus_file("claude-code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    session = read_session(path)
    frame = run_branch_bench([BranchCase(path.name, session)], strategies=("extractive", "none"))
    assert len(branch_points(session)) == len(session.leaves) - 1 == 3
    assert set(frame.strategy) == {"extractive", "none"}
    assert (frame[frame.strategy == "none"]["facts_kept"] == 0).all()


def test_cli_branch_mode(server, tmp_path, monkeypatch, capsys):
    from musepi_lab.cli import main

    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    made = generate_branch_session(4, forks=2)
    made.session.write(tmp_path / "s.jsonl")
    out = tmp_path / "out"
    args = ["bench", str(tmp_path / "s.jsonl"), "--mode", "branch", "--generated", "1"]
    assert main([*args, "--out", str(out), "--no-cache"]) == 0
    import pandas as pd

    frame = pd.read_csv(out / "branch.csv")
    # The file (2 forks: 3 branch leaves) and one generated session (4 forks: 4 + 2 nested
    # leaves), each point with three strategies.
    assert len(frame) == (3 + 6) * 3 and set(frame.strategy) == {"llm", "extractive", "none"}
    assert "extractive" in capsys.readouterr().out


def test_navigating_back_from_a_nested_leaf_sends_its_text_exactly(server):
    # Spec §7.1 (pi): abandoned = the nested leaf back to the fork on the trunk; tool results
    # skipped; §5.1 serialization and §5.2 framing, written here from the generator's design.
    from _builders import prompt

    from musepi_lab.context._build import build_session_context
    from musepi_lab.navigation import navigate_tree

    made = generate_branch_session(9, forks=2)
    nested_leaf = branch_points(made.session)[-1]
    on_path = {e.id for e in made.session.path(nested_leaf)}
    # The nested leaf's path holds three planted facts: the helper, the read path, and the
    # nested fork's command (the explored branch's own command is on the other leaf).
    facts = {f.kind: f.fact for f in made.facts if f.entry_id in on_path}
    assert sorted(facts) == ["command", "identifier", "path"]
    helper, path, command = facts["identifier"], facts["path"], facts["command"]
    result = navigate_tree(
        made.session.with_leaf(nested_leaf),
        made.session.leaf_id,
        summarize=True,
        summarizer=summarizer(server),
        profile="pi",
    )
    conversation = "\n\n".join(
        [
            f"[User]: Try another way: start from the helper {helper} and see.",
            "[Assistant]: Reading it first.",
            f'[Assistant tool calls]: read(path="{path}")',
            "[Assistant]: Or first this.",
            f'[Assistant tool calls]: bash(command="{command}")',
            "[Assistant]: No better.",
        ]
    )
    ((_, body),) = server.requests
    assert body["messages"] == [
        {"role": "system", "content": prompt("summarization-system")},
        {
            "role": "user",
            "content": f"<conversation>\n{conversation}\n</conversation>\n\n"
            + prompt("branch-summary"),
        },
    ]
    assert len(result.abandoned) == 5
    context = build_session_context(result.session, profile="pi")
    assert context.messages[-1]["role"] == "branchSummary"
    assert context.messages[-1]["summary"].endswith(f"<read-files>\n{path}\n</read-files>")

"""Probe-based evaluation (issue 16): probes from the session, a reader and a judge on the
loopback OpenAI-compatible server, the score table for every strategy.

Expected values come from the raw JSONL lines (parsed here with `json`, not with the
package's readers), from the prompt files on disk, and from constructed inputs.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from _corpus import PI_FIXTURES, REPO_ROOT, SAMPLES, corpus_file

from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.formats import read_session
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.probes import ProbeLimits, make_probes, probe_score_table, probes_frame
from musepi_lab.probes._loopback import echo_reader, overlap_judge
from musepi_lab.probes._make import probe_point
from musepi_lab.probes._model import PROBE_KINDS
from musepi_lab.probes._run import probe_cells, run_probe_answers
from musepi_lab.strategies import available
from musepi_lab.testing import StubOpenAIServer
from musepi_lab.tokens import TokenCounter

PROMPTS = REPO_ROOT / "prompts"
SMALLEST, LARGER = 2000, 12000
LIMITS = ProbeLimits(recall_per_kind=2, file_states=1, decisions=1)
EXACT_SUBKINDS = {"files-modified", "files-read"}


def builtin_strategies() -> tuple[str, ...]:
    """The registered strategies less those other test modules register for themselves."""
    return tuple(n for n in available() if not n.startswith("test-"))


# -- independent readings of the raw files ---------------------------------------------------
def raw_records(path: Path) -> dict[str, dict[str, Any]]:
    """Entry records by id, straight from the JSONL lines (header skipped)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in records if r.get("type") != "session" and "id" in r}


def raw_chain(records: dict[str, dict[str, Any]], leaf: str, first: str) -> list[dict]:
    """The records from `first` to `leaf`, following parentId back from the leaf."""
    chain: list[dict] = []
    current: str | None = leaf
    while current is not None:
        record = records[current]
        chain.append(record)
        if current == first:
            return chain[::-1]
        current = record.get("parentId")
    raise AssertionError(f"{first} is not an ancestor of {leaf}")


def raw_kept(path: Path, leaf: str, first: str) -> list[dict[str, Any]]:
    """The raw records from the cut to the point: by parentId in files whose entries carry
    ids; by line in linear v1 files (whose ids the reader derives: only the two entries'
    line numbers are taken from it)."""
    records = raw_records(path)
    if records:
        return raw_chain(records, leaf, first)
    session = read_session(path)
    lines = path.read_text().splitlines()
    lo, hi = session.get(first).line, session.get(leaf).line
    return [json.loads(line) for line in lines[lo - 1 : hi] if line.strip()]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def visible_strings(record: dict[str, Any]) -> list[str]:
    """What a model is shown of a raw entry: message texts and tool-call arguments (not
    thinking, which providers are not sent back), branch summaries."""
    if record["type"] == "branch_summary":
        return [record["summary"]]
    if record["type"] != "message":
        return []
    content = record["message"].get("content")
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or []:
        if block.get("type") == "text":
            out.append(block["text"])
        elif block.get("type") == "toolCall":
            out.append(block["name"])
            out.extend(_strings(block.get("arguments")))
    return out


def prompt_file(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text().removesuffix("\n")


def expected_chat(record: dict[str, Any]) -> dict[str, Any] | None:
    """The Chat Completions message a raw entry becomes (see `to_chat_messages`)."""
    if record["type"] == "branch_summary":
        text = prompt_file("branch-summary-context").replace("{{summary}}", record["summary"])
        return {"role": "user", "content": text}
    if record["type"] != "message":
        return None
    message = record["message"]
    blocks = message["content"] if isinstance(message["content"], list) else []
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    if message["role"] == "user":
        return {"role": "user", "content": "\n".join(texts)}
    if message["role"] == "toolResult":
        text = "\n".join(texts)
        return {"role": "tool", "tool_call_id": message["toolCallId"], "content": text}
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if not texts and not calls:
        return None
    item: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        item["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"], separators=(",", ":")),
                },
            }
            for c in calls
        ]
    return item


# -- the loopback reader and judge ------------------------------------------------------------
def models(reader: StubOpenAIServer, judge: StubOpenAIServer, summarizer: StubOpenAIServer):
    def make(server: StubOpenAIServer, model: str) -> OpenAICompatibleSummarizer:
        return OpenAICompatibleSummarizer(base_url=server.base_url, model=model)

    return {
        "reader": make(reader, "stub-reader"),
        "judge": make(judge, "stub-judge"),
        "summarizer": make(summarizer, "stub-summarizer"),
    }


def run(paths: list[Path], strategies, budgets, limits=LIMITS, **kw):
    with (
        StubOpenAIServer(responder=echo_reader) as reader,
        StubOpenAIServer(responder=overlap_judge) as judge,
        StubOpenAIServer() as summarizer,
    ):
        given = {"limits": limits} if limits is not None else {}
        answers = run_probe_answers(
            paths,
            strategies,
            budgets,
            **given,
            **models(reader, judge, summarizer),
            **kw,
        )
        return answers, list(reader.requests), list(judge.requests)


# -- probes ------------------------------------------------------------------------------------
def _prep(path: Path, budget: int = SMALLEST):
    session = read_session(path)
    settings = CompactionSettings.musepi().copy_with(keep_recent_tokens=budget)
    leaf = probe_point(session)
    return session, prepare_compaction(session, settings, TokenCounter("musepi"), leaf_id=leaf)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_probes_are_deterministic_and_cover_every_kind(path: Path) -> None:
    session, prep = _prep(path)
    first, second = make_probes(session, prep), make_probes(session, prep)
    assert first == second
    ids = [p.probe_id for p in first]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)
    assert {p.kind for p in first} == set(PROBE_KINDS)
    kinds = [p.kind for p in first]
    assert kinds == sorted(kinds, key=["recall", "artifact", "decision", "continuation"].index)
    frame = probes_frame(first)
    assert list(frame["probe_id"]) == ids and set(frame["scoring"]) == {"exact", "judge"}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_recall_references_are_planted_facts_of_the_part_compacted_away(path: Path) -> None:
    session, prep = _prep(path)
    planted = json.loads(path.with_name(path.stem + ".facts.json").read_text())
    away = set(prep.summarize_entry_ids) | set(prep.turn_prefix_entry_ids)
    allowed = {f["fact"] for f in planted if f["entry_id"] in away}
    recall = [p for p in make_probes(session, prep) if p.kind == "recall"]
    assert recall
    for probe in recall:
        assert probe.source == "planted" and probe.exact == (probe.reference,)
        assert probe.reference in allowed
        assert probe.reference not in probe.question  # the cloze never gives it away
        assert "[BLANK]" in probe.question


def test_artifact_lists_are_the_files_of_the_raw_tool_calls() -> None:
    path = SAMPLES[0]
    session, prep = _prep(path)
    records = raw_records(path)
    away = [records[i] for i in (*prep.summarize_entry_ids, *prep.turn_prefix_entry_ids)]
    touched: dict[str, set[str]] = {"read": set(), "write": set(), "edit": set()}
    for record in away:
        message = record.get("message", {})
        for block in message.get("content") or [] if message.get("role") == "assistant" else []:
            if block.get("type") == "toolCall" and block["name"] in touched:
                touched[block["name"]].add(block["arguments"]["path"])
    modified = touched["write"] | touched["edit"]
    probes = {p.subkind: p for p in make_probes(session, prep) if p.kind == "artifact"}
    assert set(probes["files-modified"].exact) == modified
    assert set(probes["files-read"].exact) == touched["read"] - modified


def test_continuation_is_what_follows_the_point() -> None:
    path = SAMPLES[0]
    session, prep = _prep(path)
    records = raw_records(path)
    leaf = probe_point(session)
    following = [r for r in records.values() if r.get("parentId") == leaf]
    assert following and following[0]["message"]["role"] == "user"
    request = following[0]["message"]["content"][0]["text"]
    probes = {p.subkind: p for p in make_probes(session, prep) if p.kind == "continuation"}
    assert probes["next-user-request"].reference == request
    assert request in probes["next-tool-call"].question


# -- the probe run on the sample -----------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_run():
    return run(SAMPLES, builtin_strategies(), [SMALLEST, LARGER])


@pytest.mark.slow
def test_every_strategy_gets_a_score_table_row(sample_run) -> None:
    answers, reader_requests, judge_requests = sample_run
    cells = probe_cells(answers)
    assert cells["error"].isna().all(), cells[cells["error"].notna()][["label", "error"]]
    table = probe_score_table(cells)
    assert set(table.index) == {(s, b) for s in builtin_strategies() for b in (SMALLEST, LARGER)}
    assert list(table.columns) == ["all", *PROBE_KINDS]
    assert cells["probes"].gt(0).all()
    assert len(reader_requests) == len(answers)
    assert len(judge_requests) == int((answers["scoring"] == "judge").sum())
    # Costs are recorded per call, from the usage the endpoint reported.
    assert (answers["reader_input_tokens"] > 0).all() and (answers["cost_usd"] > 0).all()


@pytest.mark.slow
def test_none_keeps_every_exact_reference(sample_run) -> None:
    answers, _, _ = sample_run
    exact = answers[(answers["strategy"] == "none") & (answers["scoring"] == "exact")]
    assert set(exact["kind"]) == {"recall", "artifact"}
    assert set(exact.loc[exact["kind"] == "artifact", "subkind"]) <= EXACT_SUBKINDS
    assert (exact["score"] == 1.0).all()


def _independent_exact_scores(path: Path, answers, strategy: str, budget: int) -> None:
    """Each exact probe's score is the share of its references present in the raw text
    of the entries the compaction kept (plus its own summary)."""
    session = read_session(path)
    rows = answers[
        (answers["session_id"] == session.id)
        & (answers["strategy"] == strategy)
        & (answers["budget"] == budget)
        & (answers["scoring"] == "exact")
    ]
    assert len(rows)
    kept = raw_kept(path, rows.iloc[0]["point"], rows.iloc[0]["first_kept_entry_id"])
    text = "\n".join(s for r in kept for s in visible_strings(r))
    for _, row in rows.iterrows():
        references = list(row["exact"])
        expected = sum(1 for r in references if r in text) / len(references)
        assert row["score"] == pytest.approx(expected), row["question"]


@pytest.mark.slow
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_truncate_at_the_smallest_budget_scores_what_is_left(sample_run, path) -> None:
    answers, _, _ = sample_run
    _independent_exact_scores(path, answers, "truncate", SMALLEST)
    truncated = answers[(answers["strategy"] == "truncate") & (answers["budget"] == SMALLEST)]
    assert truncated.loc[truncated["kind"] == "recall", "score"].mean() < 1.0


def test_exact_request_bodies_of_reader_and_judge() -> None:
    path = SAMPLES[0]
    answers, reader_requests, judge_requests = run([path], ["truncate"], [SMALLEST])
    records = raw_records(path)
    first = answers.iloc[0]
    kept = raw_chain(records, first["point"], first["first_kept_entry_id"])
    route, body = reader_requests[0]
    assert route == "/v1/chat/completions"
    assert body["model"] == "stub-reader" and body["max_tokens"] == 512
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": prompt_file("probe-reader")}
    assert messages[-1] == {"role": "user", "content": first["question"]}
    summary = messages[1]["content"]
    marker = re.search(r"\[\d+ earlier messages were dropped without a summary\.\]", summary)
    assert marker is not None
    template = prompt_file("compaction-summary-context")
    assert summary == template.replace("{{summary}}", marker.group(0))
    expected = [m for m in (expected_chat(r) for r in kept) if m is not None]
    assert messages[2:-1] == expected
    # The judge: the rubric as the system prompt, question, reference and answer tagged.
    judged = answers[answers["scoring"] == "judge"].iloc[0]
    route, body = judge_requests[0]
    assert body["model"] == "stub-judge" and body["max_tokens"] == 300
    assert body["messages"] == [
        {"role": "system", "content": prompt_file("probe-judge")},
        {
            "role": "user",
            "content": f"<question>\n{judged['question']}\n</question>\n\n"
            f"<reference>\n{judged['reference']}\n</reference>\n\n"
            f"<answer>\n{judged['answer']}\n</answer>",
        },
    ]
    rubric = prompt_file("probe-judge")
    for dimension in ("correctness", "completeness", "specificity"):
        assert dimension in rubric and not math.isnan(judged[f"judge_{dimension}"])


# -- the pi corpus fixtures ------------------------------------------------------------------
CORPUS_LIMITS = ProbeLimits(recall_per_kind=1, file_states=1, decisions=1, max_paths=20)


@pytest.mark.slow
@pytest.mark.parametrize("parts", PI_FIXTURES, ids=lambda p: "/".join(p))
def test_pi_fixture_score_table(parts) -> None:
    path = corpus_file(*parts)
    answers, _, _ = run([path], builtin_strategies(), [SMALLEST], limits=CORPUS_LIMITS)
    cells = probe_cells(answers)
    assert cells["error"].isna().all(), cells[cells["error"].notna()][["label", "error"]]
    assert set(cells["strategy"]) == set(builtin_strategies())
    exact = answers[(answers["strategy"] == "none") & (answers["scoring"] == "exact")]
    assert len(exact) and (exact["score"] == 1.0).all()
    assert set(answers.loc[answers["source"] == "extracted", "kind"]) == {"recall"}
    _independent_exact_scores(path, answers, "truncate", SMALLEST)


def test_one_benchmark_cell_scores_like_the_grid() -> None:
    """`cell_probes` + `score_probes`: what `run_benchmark(evaluate="probes")` calls per cell."""
    from musepi_lab.probes import ProbeModels, score_probes
    from musepi_lab.probes._run import cell_probes
    from musepi_lab.strategies import compact

    path = SAMPLES[-1]
    session = read_session(path)
    counter = TokenCounter("musepi")
    settings = CompactionSettings.musepi().copy_with(keep_recent_tokens=SMALLEST)
    answers, _, _ = run([path], ["truncate"], [SMALLEST])
    grid_cell = probe_cells(answers).iloc[0]
    with (
        StubOpenAIServer(responder=echo_reader) as reader,
        StubOpenAIServer(responder=overlap_judge) as judge,
    ):
        leaf, probes = cell_probes(session, settings=settings, counter=counter, limits=LIMITS)
        result = compact(session, "truncate", settings=settings, counter=counter, leaf_id=leaf)
        made = models(reader, judge, reader)
        columns = score_probes(
            session,
            result,
            probes,
            leaf_id=leaf,
            models=ProbeModels(made["reader"], made["judge"]),
        )
    assert leaf == grid_cell["point"]
    for column in ("probes", "score", *(f"score_{k}" for k in PROBE_KINDS)):
        assert columns[column] == pytest.approx(grid_cell[column], nan_ok=True), column


def test_a_session_with_nothing_to_compact_keeps_its_cells() -> None:
    from musepi_lab.probes import run_probes
    from musepi_lab.session._model import Entry
    from musepi_lab.session._session import Session

    records = [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "timestamp": 2},
    ]
    entries = [
        Entry.from_record(
            {
                "type": "message",
                "id": f"t{n}",
                "parentId": f"t{n - 1}" if n else None,
                "timestamp": "2026-01-01T00:00:00Z",
                "message": message,
            }
        )
        for n, message in enumerate(records)
    ]
    session = Session({"type": "session", "id": "tiny"}, entries)
    with StubOpenAIServer(responder=echo_reader) as reader:
        made = models(reader, reader, reader)
        cells = run_probes(
            [session], ["none", "truncate"], [SMALLEST], reader=made["reader"], judge=made["judge"]
        )
        assert reader.requests == []
    assert list(cells["label"]) == ["none", "truncate"]
    assert (cells["probes"] == 0).all() and cells["score"].isna().all()


def test_probe_options_as_a_value_make_the_same_requests() -> None:
    path = SAMPLES[0]
    by_keywords, keyword_reads, keyword_judged = run([path], ["truncate"], [SMALLEST])
    # The same options as a value (`limits` moves into it, nothing else given).
    from musepi_lab.probes import ProbeOptions

    by_value, value_reads, value_judged = run(
        [path], ["truncate"], [SMALLEST], limits=None, options=ProbeOptions(limits=LIMITS)
    )
    assert [b["messages"] for _, b in value_reads] == [b["messages"] for _, b in keyword_reads]
    assert len(value_judged) == len(keyword_judged)
    assert by_value["question"].tolist() == by_keywords["question"].tolist()
    with pytest.raises(TypeError, match="run_probe_answers"):
        run([path], ["truncate"], [SMALLEST], limit=1)

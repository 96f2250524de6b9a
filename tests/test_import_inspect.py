"""Inspect AI logs as a session format: `.eval` archives and `.json` documents written by the
real `inspect_ai` (a small task run offline on `mockllm`, see `_inspect_logs.py`), read with
nothing lost. Expected counts come from this file's own small parser of the raw logs."""

from __future__ import annotations

import json
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _inspect_logs import CALLS_PER_SAMPLE, SAMPLES, write_inspect_logs

from musepi_lab import read_session, read_sessions
from musepi_lab.formats import detect_format, iter_session_files
from musepi_lab.session import SessionReadError

pytest.importorskip("inspect_ai")
# inspect_ai warns about its own use of a tenacity parameter; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_inspect_logs(tmp_path_factory.mktemp("inspect-logs"))


# -- an independent parser of the raw logs -------------------------------------------------


def raw_samples(path: Path) -> list[dict[str, Any]]:
    """The samples of a log, parsed with json (and `zipfile_zstd`, which `inspect_ai`
    installs, for the zstd members of an `.eval` archive)."""
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["samples"]
    import zipfile_zstd  # noqa: F401  (teaches zipfile ZIP method 93)

    with zipfile.ZipFile(path) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith("samples/"))
        return [json.loads(archive.read(n)) for n in names]


def raw_counts(sample: dict[str, Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for message in sample["messages"]:
        summary = (message.get("metadata") or {}).get("summary") is True
        counts["summaries" if summary else message["role"]] += 1
        counts["tool_calls"] += len(message.get("tool_calls") or [])
    counts["compactions"] = sum(1 for e in sample["events"] if e["event"] == "compaction")
    return counts


def session_counts(session: Any) -> Counter[str]:
    counts: Counter[str] = Counter()
    for entry in session.entries:
        if entry.type == "custom_message" and entry.record["customType"] == "inspect-ai:system":
            counts["system"] += 1
        elif entry.type == "custom" and entry.record["customType"] == "inspect-ai:compaction":
            counts["compactions"] += 1
        elif entry.type == "compaction":
            counts["summaries"] += 1
        elif entry.type == "message":
            message = entry.record["message"]
            role = {"toolResult": "tool"}.get(message["role"], message["role"])
            counts[role] += 1
            blocks = message["content"] if isinstance(message["content"], list) else []
            counts["tool_calls"] += sum(1 for b in blocks if b.get("type") == "toolCall")
    return counts


# -- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_detected_and_listed(logs: dict[str, Path], kind: str) -> None:
    assert detect_format(logs[kind]) == "inspect-ai"
    assert logs[kind] in list(iter_session_files(logs[kind].parent))


@pytest.mark.parametrize("kind", ["eval", "json", "summary"])
def test_one_session_per_sample_nothing_lost(logs: dict[str, Path], kind: str) -> None:
    raw = raw_samples(logs[kind])
    sessions = read_sessions(logs[kind])
    assert len(raw) == len(sessions) == SAMPLES
    for sample, session in zip(raw, sessions, strict=True):
        assert session.errors == ()
        assert session.source_format == "inspect-ai"
        assert session.header["sampleId"] == sample["id"]
        expected = raw_counts(sample)
        assert expected["tool_calls"] == CALLS_PER_SAMPLE and expected["compactions"] > 0
        assert session_counts(session) == expected


@pytest.mark.parametrize("kind", ["eval", "json", "summary"])
def test_tool_calls_and_results_are_paired(logs: dict[str, Path], kind: str) -> None:
    for session in read_sessions(logs[kind]):
        calls, results = [], []
        for entry in session.entries:
            if entry.type != "message":
                continue
            message = entry.record["message"]
            if message["role"] == "assistant":
                calls += [b["id"] for b in message["content"] if b["type"] == "toolCall"]
            elif message["role"] == "toolResult":
                results.append(message["toolCallId"])
        assert results and sorted(results) == sorted(calls)


def test_summary_compactions_become_compaction_entries(logs: dict[str, Path]) -> None:
    from musepi_lab import build_session_context

    sample = raw_samples(logs["summary"])[0]
    summaries = [m for m in sample["messages"] if (m.get("metadata") or {}).get("summary")]
    events = [e for e in sample["events"] if e["event"] == "compaction"]
    assert summaries and all(e["type"] == "summary" for e in events)
    session = read_sessions(logs["summary"])[0]
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert [c.record["summary"] for c in compactions] == [m["content"] for m in summaries]
    assert [c.record["tokensBefore"] for c in compactions] == [e["tokens_before"] for e in events]
    ids = [e.id for e in session.entries]
    for compaction in compactions:
        at = ids.index(compaction.id)
        assert compaction.record["firstKeptEntryId"] == ids[min(at + 1, len(ids) - 1)]
    # The context opens with the last summary and holds what the agent did after it.
    context = build_session_context(session)
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["summary"] == summaries[-1]["content"]
    after = sample["messages"][sample["messages"].index(summaries[-1]) + 1 :]
    assert len(context.messages) == 1 + len(after)


def test_usage_comes_from_the_model_events(logs: dict[str, Path]) -> None:
    sample = raw_samples(logs["json"])[0]
    by_message = {
        e["output"]["choices"][0]["message"]["id"]: e["output"]["usage"]
        for e in sample["events"]
        if e["event"] == "model"
    }
    session = read_sessions(logs["json"])[0]
    seen = 0
    for entry in session.entries:
        if entry.type == "message" and entry.record["message"]["role"] == "assistant":
            usage = by_message[entry.record["sourceId"]]
            assert entry.record["message"]["usage"]["input"] == usage["input_tokens"]
            assert entry.record["message"]["usage"]["output"] == usage["output_tokens"]
            seen += 1
    assert seen == raw_counts(sample)["assistant"]


def test_eval_and_json_logs_read_the_same(logs: dict[str, Path]) -> None:
    from_eval = read_sessions(logs["eval"])
    from_json = read_sessions(logs["json"])
    assert [s.id for s in from_eval] == [s.id for s in from_json]
    for a, b in zip(from_eval, from_json, strict=True):
        assert [e.record for e in a.entries] == [e.record for e in b.entries]


def test_write_and_read_back_keeps_every_count(logs: dict[str, Path], tmp_path: Path) -> None:
    for k, session in enumerate(read_sessions(logs["eval"])):
        out = tmp_path / f"s{k}.jsonl"
        session.write(out)
        again = read_session(out, strict=True)
        assert session_counts(again) == session_counts(session)


def test_read_session_gives_the_first_sample_and_says_there_are_more(
    logs: dict[str, Path],
) -> None:
    session = read_session(logs["json"])
    assert session.header["sampleId"] == raw_samples(logs["json"])[0]["id"]
    assert [p.kind for p in session.errors] == ["multiple-sessions"]
    with pytest.raises(SessionReadError, match="holds 3 samples"):
        read_session(logs["json"], strict=True)


# -- bad input -----------------------------------------------------------------------------


def test_zstd_archive_without_zstandard_names_the_member(
    logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import now raises ImportError
    session = read_sessions(logs["eval"])[0]
    problems = [p for p in session.errors if p.kind == "bad-member"]
    names = {p.message.split(":", 1)[0] for p in problems}
    assert "header.json" in names and any(n.startswith("samples/") for n in names)
    assert all("install `zstandard`" in p.message for p in problems)
    assert all(str(logs["eval"]) in str(p) for p in problems)


def test_a_zip_that_is_no_inspect_log(tmp_path: Path) -> None:
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    session = read_session(path)
    assert session.entries == ()
    assert [p.kind for p in session.errors] == ["not-an-inspect-log"]
    with pytest.raises(SessionReadError, match=r"no header\.json"):
        read_session(path, strict=True)


def test_convert_writes_every_sample_and_reads_back_the_same(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    from musepi_lab.formats._convert import plan_conversion, write_plan

    plan = plan_conversion(logs["eval"], tmp_path)
    assert plan.not_carried == () and len(plan.writes) == SAMPLES
    written = write_plan(plan)
    raw = raw_samples(logs["eval"])
    for sample, path in zip(raw, written, strict=True):
        assert session_counts(read_session(path, strict=True)) == raw_counts(sample)

"""Generated datasets at scale: deterministic, the format mix, read back with the counts an
independent parser finds in the raw lines, planted facts where they say, and the manifest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from _raw import codex_lines, codex_responses

from musepi_lab.cli import main
from musepi_lab.datasets import read_facts, write_scale_dataset
from musepi_lab.datasets._scale import SCALE_MANIFEST, draw_shape, generate_scale_file
from musepi_lab.formats._registry import read_session

N = 24


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale")
    manifest = write_scale_dataset(out, N, seed=11, workers=2)
    return out, manifest


# -- an independent count of the raw lines -------------------------------------------------


def _raw_counts(path: Path, fmt: str) -> dict[str, int]:
    """Messages, tool calls, compactions and images, counted from the file's JSON lines."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    messages = calls = compactions = images = 0
    if fmt == "pi":
        for rec in lines[1:]:
            compactions += rec["type"] == "compaction"
            if rec["type"] == "message":
                messages += 1
                content = rec["message"]["content"]
                calls += sum(b["type"] == "toolCall" for b in content)
                images += sum(b["type"] == "image" for b in content)
    elif fmt == "claude-code":
        replies = set()
        for rec in lines:
            if rec["type"] == "assistant":
                replies.add(rec["message"]["id"])
                calls += sum(b["type"] == "tool_use" for b in rec["message"]["content"])
            elif rec["type"] == "user" and rec.get("isCompactSummary"):
                compactions += 1
            elif rec["type"] == "user":
                blocks = rec["message"]["content"]
                results = sum(b["type"] == "tool_result" for b in blocks)
                messages += results or 1
                images += sum(b["type"] == "image" for b in blocks)
        messages += len(replies)
    else:
        for rec in lines:
            payload = rec["payload"]
            compactions += rec["type"] == "compacted"
            if rec["type"] != "response_item":
                continue
            kind = payload["type"]
            # User messages and tool results here; the model's turns are counted below.
            messages += kind == "function_call_output" or payload.get("role") == "user"
            calls += kind == "function_call"
            if kind == "message":
                images += sum(b["type"] == "input_image" for b in payload["content"])
        # One message per response: its reasoning, calls and text items together.
        messages += len(codex_responses(codex_lines(path)))
    return {"messages": messages, "calls": calls, "compactions": compactions, "images": images}


def _read_counts(path: Path) -> dict[str, int]:
    session = read_session(path)
    assert session.errors == (), f"{path}: {session.errors[:3]}"
    messages = [e.message for e in session.entries if e.type == "message" and e.message]
    blocks = [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]
    return {
        "messages": len(messages),
        "calls": sum(b.get("type") == "toolCall" for b in blocks),
        "compactions": sum(e.type == "compaction" for e in session.entries),
        "images": sum(b.get("type") == "image" for b in blocks),
    }


# -- tests ---------------------------------------------------------------------------------


def test_same_seed_same_bytes_and_another_seed_differs():
    shape = draw_shape(11, 3)
    assert generate_scale_file(shape) == generate_scale_file(draw_shape(11, 3))
    assert generate_scale_file(draw_shape(12, 3))[0] != generate_scale_file(shape)[0]


def test_the_pool_writes_what_one_process_writes(dataset, tmp_path):
    out, manifest = dataset
    serial = write_scale_dataset(tmp_path, N, seed=11, workers=1)
    assert serial["files"] == manifest["files"]
    assert (tmp_path / SCALE_MANIFEST).read_bytes() == (out / SCALE_MANIFEST).read_bytes()


def test_every_format_is_present_and_read_back_with_the_raw_counts(dataset):
    out, manifest = dataset
    formats = {info["format"] for info in manifest["files"].values()}
    assert formats == {"pi", "claude-code", "codex"}
    assert any(info["branch"] for info in manifest["files"].values())
    assert any(info["compaction"] for info in manifest["files"].values())
    for name, info in manifest["files"].items():
        path = out / name
        assert _read_counts(path) == _raw_counts(path, info["format"]), name


def test_other_formats_keep_the_pi_sessions_tool_calls():
    # A Claude Code file keeps the whole tree; a Codex rollout the leaf's path.
    shape = next(s for s in map(lambda i: draw_shape(5, i), range(200)) if s.config.with_branch)
    pi_data, _ = generate_scale_file(replace(shape, format="pi"))
    records = [json.loads(line) for line in pi_data.decode().splitlines()[1:]]
    by_id = {r["id"]: r for r in records}

    def calls(recs):
        return sum(
            b["type"] == "toolCall"
            for r in recs
            if r["type"] == "message"
            for b in r["message"]["content"]
        )

    path, node = [], records[-1]
    while node is not None:
        path.append(node)
        node = by_id.get(node["parentId"])
    for fmt, expected in (("claude-code", calls(records)), ("codex", calls(path))):
        data, _ = generate_scale_file(replace(shape, format=fmt))
        lines = [json.loads(line) for line in data.decode().splitlines()]
        if fmt == "claude-code":
            found = sum(
                b["type"] == "tool_use"
                for r in lines
                if r["type"] == "assistant"
                for b in r["message"]["content"]
            )
        else:
            found = sum(r["payload"].get("type") == "function_call" for r in lines)
        assert found == expected, fmt


def test_images_reach_every_format(tmp_path):
    shape = next(s for s in map(lambda i: draw_shape(2, i), range(400)) if s.with_image)
    for fmt in ("pi", "claude-code", "codex"):
        data, _ = generate_scale_file(replace(shape, format=fmt))
        path = tmp_path / f"{fmt}.jsonl"
        path.write_bytes(data)
        assert _read_counts(path)["images"] == _raw_counts(path, fmt)["images"] == 1, fmt


def test_planted_facts_name_the_entries_that_hold_them(dataset):
    out, manifest = dataset
    for name in manifest["files"]:
        session = read_session(out / name)
        facts = read_facts(out / name)
        assert facts, name
        for fact in facts:
            entry = session.entries[fact.index]
            assert entry.id == fact.entry_id
            assert json.dumps(fact.fact)[1:-1] in json.dumps(dict(entry.record)), (name, fact)


def test_manifest_lists_every_file_with_its_sha256(dataset):
    out, manifest = dataset
    assert (manifest["seed"], manifest["n"]) == (11, N)
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*.jsonl")}
    assert set(manifest["files"]) == on_disk
    for name, info in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == info["sha256"]
    per_folder = {
        fmt: len(list((out / fmt).glob("*.jsonl"))) for fmt in ("pi", "claude-code", "codex")
    }
    assert manifest["counts"]["formats"] == {k: v for k, v in per_folder.items() if v}
    assert json.loads((out / SCALE_MANIFEST).read_text()) == manifest


def test_cli_generate_writes_a_small_dataset(tmp_path, capsys):
    out = tmp_path / "gen"
    assert (
        main(
            ["datasets", "generate", "--n", "5", "--out", str(out), "--seed", "4", "--workers", "1"]
        )
        == 0
    )
    assert "wrote 5 sessions" in capsys.readouterr().out
    manifest = json.loads((out / SCALE_MANIFEST).read_text())
    assert manifest["n"] == 5 and len(manifest["files"]) == 5
    assert len(list(out.rglob("*.facts.json"))) == 5


def test_cli_generate_without_out_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["datasets", "generate", "--n", "5"]) == 2
    assert "--out" in capsys.readouterr().err

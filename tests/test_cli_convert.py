"""`musepi-lab inspect` and `convert` (issue 13): every session carried, failures said.

`convert` writes every session of a multi-session input and every linked subagent session,
and exits non-zero listing what it could not carry; `inspect` exits non-zero on files that
hold no session; neither prints a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file, needs_corpus

from musepi_lab.cli import main
from musepi_lab.formats._registry import iter_sessions, read_session

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def openhands_instance(instance_id: str, n_messages: int) -> dict[str, Any]:
    history = [
        {
            "id": k,
            "source": "user" if k % 2 == 0 else "agent",
            "action": "message",
            "args": {"content": f"message {k}"},
            "timestamp": "2026-01-01T00:00:00",
        }
        for k in range(n_messages)
    ]
    return {"instance_id": instance_id, "history": history, "metadata": {}, "metrics": {}}


@pytest.mark.parametrize("content", [b"", PNG], ids=["empty", "png"])
def test_inspect_exits_non_zero_on_a_file_that_holds_no_session(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "thing.jsonl"
    path.write_bytes(content)
    assert main(["inspect", str(path)]) == 1
    captured = capsys.readouterr()
    assert "no session" in captured.err
    assert "Traceback" not in captured.err + captured.out
    assert " pi " not in captured.out  # not called a pi session


def test_inspect_lists_every_session_of_a_multi_session_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "output.jsonl"
    rows = [openhands_instance(f"inst-{k}", 2 + k) for k in range(3)]
    path.write_text("\n".join(dumps(r) for r in rows) + "\n")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert all(f"inst-{k}" in out for k in range(3))


def test_convert_writes_every_instance_of_a_multi_session_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "output.jsonl"
    rows = [openhands_instance(f"inst-{k}", 2 + k) for k in range(3)]
    path.write_text("\n".join(dumps(r) for r in rows) + "\n")
    out_dir = tmp_path / "converted"
    assert main(["convert", str(path), str(out_dir)]) == 0
    written = sorted(out_dir.glob("*.jsonl"))
    assert [p.name for p in written] == ["inst-0.jsonl", "inst-1.jsonl", "inst-2.jsonl"]
    # Counted from the rows written above: 2, 3 and 4 events, each one message.
    assert [len(read_session(p).entries) for p in written] == [2, 3, 4]
    assert "wrote 3 sessions" in capsys.readouterr().out


def test_convert_of_several_sessions_to_a_jsonl_name_writes_one_file_each(
    tmp_path: Path,
) -> None:
    path = tmp_path / "output.jsonl"
    rows = [openhands_instance(f"inst-{k}", 2) for k in range(2)]
    path.write_text("\n".join(dumps(r) for r in rows) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(path), str(out)]) == 0
    names = sorted(p.name for p in tmp_path.glob("out.*.jsonl"))
    assert names == ["out.inst-0.jsonl", "out.inst-1.jsonl"]


@needs_corpus
def test_convert_of_the_openhands_corpus_writes_all_222_entries(tmp_path: Path) -> None:
    # The figure: three instances, 222 entries in all, 49 of them in the first.
    source = corpus_file("openhands", "multi_swe_bench_examples_output.jsonl")
    out_dir = tmp_path / "out"
    assert main(["convert", str(source), str(out_dir)]) == 0
    sessions = [read_session(p) for p in sorted(out_dir.glob("*.jsonl"))]
    raw_events = [
        len(json.loads(line)["history"])
        for line in source.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(sessions) == len(raw_events) == 3
    assert sorted(len(s.entries) for s in sessions) == sorted(raw_events)


@needs_corpus
def test_convert_writes_claude_code_subagent_sessions(tmp_path: Path) -> None:
    source = corpus_file("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    agents = sorted((source.with_suffix("") / "subagents").glob("agent-*.jsonl"))
    out_dir = tmp_path / "out"
    assert main(["convert", str(source), str(out_dir)]) == 0
    written = sorted(out_dir.rglob("*.jsonl"))
    assert len(written) == 1 + len(agents)
    ids = {read_session(p).id for p in written}
    stem = source.stem
    assert ids == {stem} | {f"{stem}/{a.stem}" for a in agents}
    for agent in agents:
        expected = read_session(agent)
        (copy,) = [p for p in written if read_session(p).id == expected.id]
        assert len(read_session(copy).entries) == len(expected.entries)


def test_convert_lists_what_it_could_not_carry_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z"}
    entry = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": None,
        "message": {"role": "user", "content": "x"},
    }
    path.write_text(dumps(header) + "\n{broken\n" + dumps(entry) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(path), str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2" in err and "malformed-json" in err
    assert len(read_session(out).entries) == 1  # what could be carried is written


def test_convert_over_its_own_input_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s"}
    entry = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": None,
        "message": {"role": "user", "content": "x"},
    }
    path.write_text(dumps(header) + "\n" + dumps(entry) + "\n")
    before = path.read_bytes()
    assert main(["convert", str(path), str(path)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "refusing" in captured.err
    assert path.read_bytes() == before
    unwritable = tmp_path / "file-not-folder"
    unwritable.write_text("x")
    assert main(["convert", str(path), str(unwritable / "out.jsonl")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_convert_of_an_empty_file_writes_nothing_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(path), str(out)]) == 1
    assert not out.exists()
    assert "no session" in capsys.readouterr().err


def test_iter_sessions_of_the_converted_folder_reads_them_all(tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    rows = [openhands_instance(f"inst-{k}", 2) for k in range(4)]
    path.write_text("\n".join(dumps(r) for r in rows) + "\n")
    assert main(["convert", str(path), str(tmp_path / "o")]) == 0
    assert len(list(iter_sessions(tmp_path / "o"))) == 4


def test_convert_of_a_folder_writes_every_session_in_it(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "output.jsonl").write_text(
        "\n".join(dumps(openhands_instance(f"inst-{k}", 2)) for k in range(2)) + "\n"
    )
    header = {"type": "session", "version": 3, "id": "solo"}
    entry = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": None,
        "message": {"role": "user", "content": "x"},
    }
    (source / "solo.jsonl").write_text(dumps(header) + "\n" + dumps(entry) + "\n")
    out_dir = tmp_path / "out"
    assert main(["convert", str(source), str(out_dir)]) == 0
    assert sorted(p.name for p in out_dir.glob("*.jsonl")) == [
        "inst-0.jsonl",
        "inst-1.jsonl",
        "solo.jsonl",
    ]

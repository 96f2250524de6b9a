"""The command line as a new user meets it (issue 29 items 4 and 7): help for every
argument, every error one line with a non-zero exit (never a traceback), the model endpoint
flags on every command that calls a model, `inspect` on folders, with `--json` and the entry
ids `navigate` takes, `datasets generate` as a subcommand, `convert IN OUT` writing OUT.

Expected values come from the files written here, read back with plain `json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from musepi_lab.cli import main
from musepi_lab.cli._parser import build_parser
from musepi_lab.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
SAMPLE_FILE = SAMPLE / "sample-0001.jsonl"


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _other_leaf(path: Path) -> str:
    """An entry id no other entry names as its parent, other than the last one: a leaf of
    another branch (counted from the raw records)."""
    records = [r for r in _records(path) if r.get("type") != "session"]
    parents = {r.get("parentId") for r in records}
    leaves = [r["id"] for r in records if r["id"] not in parents]
    return next(leaf for leaf in leaves if leaf != records[-1]["id"])


# -- help -------------------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found.extend(_parsers(child))
    return found


def test_every_argument_of_every_command_has_help() -> None:
    missing = [
        f"{p.prog} {action.dest}"
        for p in _parsers(build_parser())
        for action in p._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and not (action.help and action.help.strip())
    ]
    assert missing == []


def test_help_names_what_the_issue_found_unexplained(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["inspect"], ["report"], ["navigate"], ["bench"]):
        with pytest.raises(SystemExit) as done:
            main([*command, "--help"])
        assert done.value.code == 0
    text = capsys.readouterr().out
    for needle in ("--max-problems N", "TARGET_ID", "--mode", "--counter", "--facts", "DIR"):
        assert needle in text


# -- every error one line ------------------------------------------------------------------------


def _error_lines(err: str) -> list[str]:
    """stderr without the problem listing a command prints beside its error."""
    return [
        line
        for line in err.splitlines()
        if line and not line.startswith(("problem: ", "... and ", "bench:", "window "))
    ]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    folder = tmp_path / "folder"
    folder.mkdir()
    good = tmp_path / "good.jsonl"
    good.write_bytes(SAMPLE_FILE.read_bytes())
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    return {
        "bad": str(bad),
        "empty": str(empty),
        "folder": str(folder),
        "good": str(good),
        "missing": str(tmp_path / "missing.jsonl"),
        "leaf": _other_leaf(good),
        "under-a-file": str(blocker / "out.jsonl"),
        "out": str(tmp_path / "out"),
    }


FAILURES: list[list[str]] = [
    ["inspect", "{missing}"],
    ["inspect", "{bad}"],
    ["inspect", "{empty}"],
    ["inspect", "{good}", "--max-problems", "many"],
    ["convert", "{missing}", "{out}.jsonl"],
    ["convert", "{bad}", "{out}.jsonl"],
    ["convert", "{good}", "{under-a-file}"],
    ["convert", "{good}"],
    ["navigate", "{good}", "no-such-entry"],
    ["navigate", "{missing}", "x"],
    ["navigate", "{good}", "{leaf}", "--summarize"],
    ["navigate", "{good}", "{leaf}", "--summarize", "--api-key-env", "MUSEPI_TEST_UNSET"],
    ["navigate", "{good}", "{leaf}", "--out", "{under-a-file}"],
    ["report", "{folder}"],
    ["bench", "{missing}", "--out", "{out}"],
    ["bench", "{good}", "--strategy", "no-such", "--out", "{out}"],
    ["bench", "{good}", "--strategy", "llm-summary", "--out", "{out}", "--serial"],
    ["bench", "{good}", "--counter", "words", "--out", "{out}", "--serial"],
    ["bench", "{good}", "--budget", "-5", "--out", "{out}"],
    ["bench", "{good}"],
    ["demo", "--data", "{missing}", "--out", "{out}"],
    ["datasets", "generate"],
    ["datasets", "generate", "--n", "-1", "--out", "{out}"],
    ["datasets", "{missing}"],
    ["watch", "{missing}", "--once"],
    ["watch", "{folder}", "--once"],
    ["watch", "{good}", "--interval", "0"],
    ["usage", "{missing}"],
    ["usage", "weekly", "--start-of-week", "funday", "{good}"],
    ["usage"],
    ["conformance", "{missing}"],
    ["no-such-command"],
]


@pytest.mark.parametrize("argv", FAILURES, ids=lambda a: " ".join(a))
def test_every_failure_is_one_line_and_a_non_zero_exit(
    argv: list[str],
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MUSEPI_TEST_UNSET"):
        monkeypatch.delenv(name, raising=False)
    args = [a.format(**files) for a in argv]
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code not in (0, None), err
    lines = _error_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("musepi-lab"), err
    assert "Traceback" not in err


def test_an_unexpected_error_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from musepi_lab.cli import _sessions

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(_sessions, "session_summary", broken)
    monkeypatch.delenv("MUSEPI_LAB_TRACEBACK", raising=False)
    assert main(["inspect", str(SAMPLE_FILE)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "RuntimeError: something broke" in line and "MUSEPI_LAB_TRACEBACK=1" in line


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO), base.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "musepi_lab.cli", *argv],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=120,
        check=False,
    )


def test_navigate_summarize_without_an_endpoint_says_which_flags(tmp_path: Path) -> None:
    # The issue's case, as a user runs it: once a traceback ending in
    # SummarizerNotConfigured whose advice named a Python argument.
    done = _run("navigate", str(SAMPLE_FILE), _other_leaf(SAMPLE_FILE), "--summarize")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "--base-url" in line and "--api-key-env" in line and "base_url=" not in line


# -- the model endpoint flags -------------------------------------------------------------------


def test_navigate_calls_the_endpoint_its_flags_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-test-navigate")
    out = tmp_path / "navigated.jsonl"
    target = _other_leaf(SAMPLE_FILE)
    with StubOpenAIServer() as server:
        argv = ["navigate", str(SAMPLE_FILE), target, "--summarize", "--out", str(out)]
        argv += ["--base-url", server.base_url, "--model", "local-model-7b"]
        argv += ["--api-key-env", "MY_ENDPOINT_KEY"]
        assert main(argv) == 0
    (path, body), headers = server.requests[0], server.request_headers[0]
    assert path.endswith("/chat/completions") and body["model"] == "local-model-7b"
    assert headers["authorization"] == "Bearer sk-test-navigate"
    before = {r.get("id") for r in _records(SAMPLE_FILE)}
    added = [r for r in _records(out) if r.get("id") not in before]
    assert [r["type"] for r in added] == ["branch_summary"]
    assert "Stub summary" in added[0]["summary"]
    assert "sk-test-navigate" not in capsys.readouterr().out + out.read_text(encoding="utf-8")


def test_bench_runs_a_model_strategy_against_its_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with StubOpenAIServer() as server:
        argv = ["bench", str(SAMPLE_FILE), "--strategy", "llm-summary", "--budget", "8000"]
        argv += ["--out", str(tmp_path / "b"), "--serial", "--no-progress"]
        argv += ["--base-url", server.base_url, "--model", "local-model-7b"]
        assert main(argv) == 0
    assert server.requests and all(b["model"] == "local-model-7b" for _, b in server.requests)


# -- inspect, datasets generate, convert ------------------------------------------------------


def test_inspect_a_folder_as_json_with_the_entry_ids(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "broken.jsonl").write_text('{"type":"session"\n', encoding="utf-8")
    for f in sorted(SAMPLE.glob("sample-000[12].jsonl")):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    assert main(["inspect", str(tmp_path), "--json", "--entries"]) == 0
    document = json.loads(capsys.readouterr().out)
    by_file = {Path(s["file"]).name: s for s in document["sessions"]}
    assert sorted(by_file) == ["sample-0001.jsonl", "sample-0002.jsonl"]
    for name, summary in by_file.items():
        records = [r for r in _records(tmp_path / name) if r.get("type") != "session"]
        assert summary["entries"] == len(records)
        assert [e["id"] for e in summary["entries_list"]] == [r["id"] for r in records]
        current = [e["id"] for e in summary["entries_list"] if e["leaf"] == "current leaf"]
        assert current == [records[-1]["id"]]
    assert [Path(p["path"]).name for p in document["problems"]] == ["broken.jsonl"]


def test_inspect_entries_lists_the_ids_navigate_takes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(SAMPLE_FILE), "--entries"]) == 0
    out = capsys.readouterr().out
    target = _other_leaf(SAMPLE_FILE)
    (row,) = [line for line in out.splitlines() if line.startswith(target)]
    assert " leaf " in row


def test_datasets_generate_is_a_subcommand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    assert main(["datasets", "generate", "--n", "3", "--out", str(out), "--workers", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert sum(manifest["counts"]["formats"].values()) == 3
    with pytest.raises(SystemExit):
        main(["datasets", "generate", "--help"])
    assert "--seed" in capsys.readouterr().out


def test_convert_writes_out_with_subagents_beside_it_and_prints_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = "11111111-2222-3333-4444-555555555555"
    base = {"sessionId": session, "cwd": "/w", "version": "2.1.39", "isSidechain": False}
    main_file = tmp_path / f"{session}.jsonl"
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": "hello"}],
            },
        },
    ]
    main_file.write_text(
        "".join(json.dumps(r) + "\n" for r in lines) + '{"not json\n', encoding="utf-8"
    )
    agents = tmp_path / session / "subagents"
    agents.mkdir(parents=True)
    agent_line = {**lines[0], "isSidechain": True, "agentId": "a42", "uuid": "s1"}
    (agents / "agent-a42.jsonl").write_text(json.dumps(agent_line) + "\n", encoding="utf-8")
    out = tmp_path / "converted.jsonl"
    code = main(["convert", str(main_file), str(out)])
    printed = capsys.readouterr()
    assert code == 1  # the broken line is not in the output, and it says so
    assert out.is_file() and (tmp_path / "converted.agent-a42.jsonl").is_file()
    assert {r.get("id") for r in _records(out)} >= {"u1", "a1"}
    assert f"{main_file}:3" in printed.err and "malformed-json" in printed.err


# -- start-up ---------------------------------------------------------------------------------


def _loaded_after(code: str) -> set[str]:
    """The `musepi_lab` modules a fresh interpreter holds after running `code`."""
    probe = (
        f"import sys\n{code}\nprint(' '.join(m for m in sys.modules if m.startswith('musepi_lab')))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return set(done.stdout.split())


def test_import_and_help_load_no_command_code() -> None:
    # The time went into `display` and `replay` (the whole engine) at `import musepi_lab`,
    # and into pandas and the readers when `--help` built the parser (perf/bench_startup.py
    # times both against `python -c pass`).
    assert _loaded_after("import musepi_lab") == {
        "musepi_lab",
        "musepi_lab._repr",
        "musepi_lab._version",
    }
    helped = _loaded_after(
        "from musepi_lab.cli._parser import build_parser; build_parser().format_help()"
    )
    # The parser names the error family it catches: that base is a leaf module of a few lines.
    assert {m for m in helped if not m.startswith("musepi_lab.cli")} == {
        "musepi_lab",
        "musepi_lab._errors",
        "musepi_lab._repr",
        "musepi_lab._version",
    }


def test_the_replay_subpackage_is_a_module_and_cards_load_on_first_use() -> None:
    code = (
        "import types, musepi_lab as ml\n"
        "import musepi_lab.replay as rp\n"
        "from musepi_lab.replay import calibrate\n"
        f"s = ml.read_session({str(SAMPLE_FILE)!r})\n"
        "assert isinstance(rp, types.ModuleType) and rp.calibrate is calibrate\n"
        "assert 'mpl-card' in s._repr_html_()\n"
        "assert ml.replay_session(s, 'none').window == 200_000\n"
    )
    assert "musepi_lab.display" in _loaded_after(code)

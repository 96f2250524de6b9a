"""The `musepi-lab` command line, called through `main([...])`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from _corpus import CORPUS, needs_corpus

from musepi_lab.cli import main
from musepi_lab.cli._bench import DEMO_STRATEGIES, model_free_strategies
from musepi_lab.formats._registry import read_session

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
SMALL = SAMPLE / "sample-0004.jsonl"


def _raw_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


# -- inspect / convert --------------------------------------------------------------------
def test_inspect_prints_the_summary(capsys):
    assert main(["inspect", str(SMALL)]) == 0
    out = capsys.readouterr().out
    records = _raw_records(SMALL)
    header, rule, row = out.splitlines()[:3]
    values = dict(zip(header.split(), row.split(), strict=False))
    assert values["session"] == "sample-0004"
    assert int(values["entries"]) == len(records)
    assert set(rule) <= {"-", " "}


def test_inspect_of_a_missing_file_exits_2(capsys, tmp_path):
    assert main(["inspect", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_convert_writes_musepi_jsonl(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(SMALL), str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert len(read_session(out).entries) == len(_raw_records(SMALL))


# -- datasets -----------------------------------------------------------------------------
def test_datasets_lists_the_registry_and_the_users_sessions(tmp_path, capsys, monkeypatch):
    for name in ("PI_CODING_AGENT_DIR", "OMP_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    session = tmp_path / ".pi/agent/sessions/--home-me-proj--/2026-01-01_a.jsonl"
    session.parent.mkdir(parents=True)
    shutil.copy(SMALL, session)
    assert main(["datasets", "--home", str(tmp_path), "--verify", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    sample_line = next(line for line in out.splitlines() if line.startswith("sample "))
    assert "verified" in sample_line and "pi 4" in sample_line
    assert "shared-corpus" in out
    assert str(session) in out and "home-me-proj" in out
    assert str(SAMPLE / "sample-0001.jsonl") in out
    assert "facts.json" not in out


def test_datasets_with_no_sessions_found(tmp_path, capsys, monkeypatch):
    for name in ("PI_CODING_AGENT_DIR", "OMP_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert main(["datasets", "--home", str(tmp_path)]) == 0
    assert "(none found)" in capsys.readouterr().out


# -- bench / report -----------------------------------------------------------------------
def test_bench_on_a_file_writes_results_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "bench",
        str(SMALL),
        "--strategy",
        "none",
        "--strategy",
        "truncate",
        "--budget",
        "8000",
        "--budget",
        "20k",
        "--out",
        str(out),
        "--serial",
        "--no-progress",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "4 cells (4 computed, 0 cached, 0 failed)" in printed
    df = pd.read_parquet(out / "results.parquet")
    assert sorted(df["budget"].unique()) == [8000, 20000]
    assert set(df["strategy"]) == {"none", "truncate"}
    assert (df.loc[df.strategy == "none", "fact_retention"] == 1.0).all()
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["budgets"] == [8000, 20000] and config["mode"] == "compact"
    assert (out / "results.csv").is_file()
    # A second run finds every cell done.
    assert main(argv) == 0
    assert "4 cells (0 computed, 4 cached, 0 failed)" in capsys.readouterr().out


def test_bench_by_dataset_name_with_parameters_and_a_pool(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["bench", "sample", "--strategy", "observation-masking:keep_turns=2"]
    argv += ["--budget", "20000", "--out", str(out), "--workers", "2", "--no-progress"]
    assert main(argv) == 0
    df = pd.read_parquet(out / "results.parquet")
    assert sorted(df["session_id"]) == [f"sample-000{n}" for n in (1, 2, 3, 4)]
    assert (df["params"].map(json.loads).map(lambda p: p["keep_turns"]) == 2).all()
    assert (df["label"] == "observation-masking(keep_turns=2)").all()
    assert "observation-masking(keep_turns=2)" in capsys.readouterr().out


def test_bench_usage_errors_exit_2(tmp_path, capsys):
    assert main(["bench", "no-such-dataset", "--out", str(tmp_path)]) == 2
    assert "neither a file, a folder nor a dataset" in capsys.readouterr().err
    argv = ["bench", str(SMALL), "--strategy", "no-such", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "unknown strategy 'no-such'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", str(SMALL), "--budget", "0", "--out", str(tmp_path)])


def test_report_writes_plots_and_tables(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["bench", str(SMALL), "--strategy", "none", "--strategy", "truncate"]
    argv += ["--budget", "8000", "--out", str(out), "--serial", "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "truncate" in printed and "retention_upper" in printed and "8,000" in printed
    for name in ("summary.md", "summary.csv", "fact_retention.png", "tradeoff.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "fact_retention.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "not a benchmark result" in capsys.readouterr().err


def test_demo_runs_the_model_free_strategies_over_the_sample(tmp_path, capsys):
    assert model_free_strategies() == list(DEMO_STRATEGIES)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for name in DEMO_STRATEGIES:
        assert any(line.startswith(name) for line in printed.splitlines()), name
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 4 * len(DEMO_STRATEGIES) * 2
    assert df["error"].isna().all()
    assert (df.loc[df.strategy == "none", "fact_retention"] == 1.0).all()
    assert (out / "fact_retention.png").is_file() and (out / "summary.md").is_file()


@needs_corpus
def test_bench_over_the_shared_corpus_end_to_end(tmp_path, capsys):
    out = tmp_path / "corpus-run"
    argv = ["bench", str(CORPUS), "--strategy", "truncate", "--strategy", "extractive"]
    argv += ["--budget", "8000", "--out", str(out), "--workers", "2", "--no-progress"]
    assert main(argv) == 0
    df = pd.read_parquet(out / "results.parquet")
    assert df["error"].isna().all(), df["error"].dropna().tolist()[:3]
    assert df["tool_pairing_valid"].all()
    # One row per session and strategy: every top-level corpus file is there, and a Claude
    # Code subagent file whose session file is not (read alone).
    files = {
        str(p)
        for p in CORPUS.rglob("*")
        if p.is_file()
        and p.name != "PROVENANCE.md"
        and not (p.parent.name == "subagents" and p.parent.parent.with_suffix(".jsonl").exists())
    }
    # The corpus keeps one folder per agent format, named as the format is.
    assert set(df["format"]) == {Path(f).relative_to(CORPUS).parts[0] for f in files}
    assert {str(Path(s)) for s in df["source"]} == {str(Path(f).resolve()) for f in files}


# -- compare --------------------------------------------------------------------------------
def test_compare_prints_every_cell_and_writes_the_rows(tmp_path, capsys):
    session = SAMPLE / "sample-0002.jsonl"
    out = tmp_path / "rows.json"
    argv = ["compare", str(session), "--strategy", "none", "--strategy", "truncate"]
    assert main([*argv, "--budgets", "8000,30000", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["strategy"], r["budget"]) for r in rows] == [
        ("none", 8000),
        ("none", 30000),
        ("truncate", 8000),
        ("truncate", 30000),
    ]
    # `none` changes nothing (issue 5): the context before is the one after, every fact kept.
    none = rows[0]
    assert none["tokens_after"] == none["tokens_before"] and none["fact_retention"] == 1.0
    planted = json.loads((SAMPLE / "sample-0002.facts.json").read_text(encoding="utf-8"))
    assert 0 < none["facts"] <= len(planted)
    table = [line.split() for line in printed.splitlines() if line.startswith(("none", "trunc"))]
    assert [(cells[0], int(cells[1])) for cells in table] == [
        (r["strategy"], r["budget"]) for r in rows
    ]


def test_compare_with_an_unknown_strategy_exits_2(capsys):
    assert main(["compare", str(SMALL), "--strategy", "no-such-strategy"]) == 2
    assert "no-such-strategy" in capsys.readouterr().err

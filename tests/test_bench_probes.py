"""Probes in the benchmark (issue 16 item 3): `run_benchmark(..., evaluate="probes")` and
`musepi-lab bench --probes`, against the loopback reader (echoes its context) and judge
(word overlap)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _corpus import SAMPLES

from musepi_lab._prompts import PromptSet
from musepi_lab.bench import read_benchmark, run_benchmark
from musepi_lab.bench._probes import PROBE_COLUMNS
from musepi_lab.bench._score import COLUMNS, TIMING_COLUMNS
from musepi_lab.cli import main
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.probes import run_probes
from musepi_lab.probes._loopback import echo_reader, overlap_judge
from musepi_lab.testing import StubOpenAIServer

PATHS = SAMPLES[:1]
STRATEGIES = ["none", "truncate"]
BUDGETS = [2000]


@pytest.fixture(scope="module")
def servers():
    with (
        StubOpenAIServer(responder=echo_reader) as reader,
        StubOpenAIServer(responder=overlap_judge) as judge,
    ):
        yield reader, judge


def _models(servers):
    reader, judge = servers
    return (
        OpenAICompatibleSummarizer(base_url=reader.base_url, model="stub-reader"),
        OpenAICompatibleSummarizer(base_url=judge.base_url, model="stub-judge"),
    )


@pytest.fixture(scope="module")
def probed(servers):
    reader, judge = _models(servers)
    servers[0].requests.clear()
    df = run_benchmark(
        PATHS,
        STRATEGIES,
        BUDGETS,
        executor="serial",
        progress=False,
        evaluate="probes",
        reader=reader,
        judge=judge,
    )
    return df, list(servers[0].requests)


def test_probe_columns_sit_beside_unchanged_metrics(probed):
    df, _ = probed
    assert list(df.columns) == [*COLUMNS, *PROBE_COLUMNS]
    plain = run_benchmark(PATHS, STRATEGIES, BUDGETS, executor="serial", progress=False)
    stable = [c for c in COLUMNS if c not in TIMING_COLUMNS]
    pd.testing.assert_frame_equal(df[stable], plain[stable])
    assert df.attrs["config"]["evaluate"] == "probes"


def test_probe_scores_are_the_probe_runs_cells(probed, servers):
    df, _ = probed
    reader, judge = _models(servers)
    cells = run_probes(PATHS, STRATEGIES, BUDGETS, reader=reader, judge=judge)
    merged = df.set_index(["session_id", "label", "budget"])
    for _, cell in cells.iterrows():
        row = merged.loc[(cell["session_id"], cell["label"], cell["budget"])]
        assert row["probes"] == cell["probes"]
        for kind in ("recall", "artifact", "decision", "continuation"):
            assert row[f"probe_{kind}"] == pytest.approx(cell[f"score_{kind}"], nan_ok=True)
        assert row["probe_cost_usd"] == pytest.approx(cell["cost_usd"])


def test_none_keeps_every_recall_answer_and_truncate_loses_some(probed):
    df, _ = probed
    by = df.set_index(["label", "session_id"])
    assert (by.loc["none", "probe_recall"] == 1.0).all()
    assert (by.loc["truncate", "probe_recall"] < 1.0).all()
    assert (df["probes"] > 0).all()


def test_reader_requests_carry_the_rubric_prompt_and_the_question_last(probed):
    df, requests = probed
    assert len(requests) == int(df["probes"].sum())
    system = PromptSet.default().text("probe-reader")
    for route, body in requests:
        assert route.endswith("/chat/completions")
        messages = body["messages"]
        assert messages[0] == {"role": "system", "content": system}
        assert messages[-1]["role"] == "user" and messages[-1]["content"].strip()


def test_probe_evaluation_needs_its_models_and_compact_mode(servers):
    reader, judge = _models(servers)
    with pytest.raises(ValueError, match="reader= and judge="):
        run_benchmark(PATHS[:1], ["none"], BUDGETS, executor="serial", evaluate="probes")
    with pytest.raises(ValueError, match="compact mode"):
        run_benchmark(
            PATHS[:1],
            ["none"],
            [32000],
            executor="serial",
            mode="replay",
            evaluate="probes",
            reader=reader,
            judge=judge,
        )
    with pytest.raises(ValueError, match="unknown evaluation"):
        run_benchmark(PATHS[:1], ["none"], BUDGETS, executor="serial", evaluate="vibes")


def test_cli_bench_probes(tmp_path: Path, servers, capsys):
    reader, judge = servers
    out = tmp_path / "run"
    argv = ["bench", str(PATHS[0]), "--strategy", "none", "--budget", "2000", "--out", str(out)]
    argv += ["--serial", "--no-progress", "--probes", "--reader-url", reader.base_url]
    argv += ["--reader-model", "stub-reader", "--judge-url", judge.base_url]
    assert main(argv) == 0
    back = read_benchmark(out)
    assert back.loc[0, "probe_recall"] == 1.0 and back.loc[0, "probes"] > 0


def test_cli_bench_probes_without_an_endpoint_is_a_usage_error(tmp_path, monkeypatch, capsys):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MUSEPI_LAB_READER_URL"):
        monkeypatch.delenv(name, raising=False)
    argv = ["bench", str(PATHS[0]), "--strategy", "none", "--budget", "2000"]
    argv += ["--out", str(tmp_path / "run"), "--serial", "--no-progress", "--probes"]
    assert main(argv) == 2
    assert "no reader endpoint" in capsys.readouterr().err


def test_plot_probe_scores_reads_a_benchmark_frame(probed):
    import matplotlib

    matplotlib.use("Agg")
    from musepi_lab.plot import plot_probe_scores
    from musepi_lab.plot._probes import probe_score_matrix

    df, _ = probed
    matrix = probe_score_matrix(df, budget=2000)
    assert list(matrix.index) == STRATEGIES
    assert matrix.loc["none", "recall"] == 1.0
    assert matrix.loc["truncate", "recall"] == pytest.approx(
        df.loc[df["label"] == "truncate", "probe_recall"].mean()
    )
    ax = plot_probe_scores(df, budget=2000)
    assert ax.get_title() == "Probe scores by kind (budget 2000)"


def test_the_summary_of_a_probed_run_shows_the_probe_scores(probed):
    from musepi_lab.bench import summary_table

    df, _ = probed
    table = summary_table(df, resamples=100)
    none = table.loc[("none", 2000)]
    assert none["probe_recall"] == 1.0 and none["probe_recall_n"] == len(PATHS)
    assert table.loc[("truncate", 2000), "probe_score"] == pytest.approx(
        df.loc[df["label"] == "truncate", "probe_score"].mean()
    )

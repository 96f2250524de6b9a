"""The benchmark grid: cells, metrics against independent counts, executors, resuming, output."""

from __future__ import annotations

import csv
import json
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from _corpus import needs_corpus

from musepi_lab.bench import (
    read_benchmark,
    run_benchmark,
    session_refs,
    summary_table,
    table_markdown,
    write_benchmark,
)
from musepi_lab.bench._grid import make_cells, parse_strategy, resolve_strategy
from musepi_lab.bench._score import COLUMNS, TIMING_COLUMNS
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.plot import write_benchmark_report
from musepi_lab.plot._bench import REPLAY_REPORT_FIGURES
from musepi_lab.replay._streams import OFF_PATH
from musepi_lab.replay._uncertainty import COST_DRAWS
from musepi_lab.strategies._base import CompactionContext, Strategy, compact, register

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
SMALL = SAMPLE / "sample-0004.jsonl"  # the short session: no earlier compaction


# -- strategies defined here for the runner's own behaviour ------------------------------
@register
@dataclass(frozen=True)
class CountingCut(Strategy):
    """Drops everything before the engine's cut and appends a line to `log` per call."""

    name: ClassVar[str] = "test-bench-counting-cut"
    log: str = ""

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        if ctx.preparation is None:
            return None
        if self.log:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write("run\n")
        return CompactionResult.from_preparation(ctx.preparation, "earlier turns dropped")


@register
@dataclass(frozen=True)
class Broken(Strategy):
    """Always raises: a failing cell must become a row with an error."""

    name: ClassVar[str] = "test-bench-broken"

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        raise RuntimeError("this strategy is broken on purpose")


def _frame_for_compare(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)


# -- the raw-file view used for independent expectations ----------------------------------
def _records(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _raw_path(records: list[dict]) -> list[dict]:
    by_id = {r["id"]: r for r in records}
    node = records[-1]
    out = []
    while node is not None:
        out.append(node)
        node = by_id.get(node.get("parentId"))
    return out[::-1]


def _readable(record: dict) -> str:
    """Text blocks, string contents and tool-call arguments of a raw message record."""
    message = record.get("message") or {}
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "toolCall":
            parts.append(json.dumps(block.get("arguments"), ensure_ascii=False))
    return "\n".join(parts)


# -- grid building ------------------------------------------------------------------------
def test_parse_strategy_reads_names_and_json_values():
    assert parse_strategy("truncate") == ("truncate", {})
    assert parse_strategy("observation-masking:keep_turns=3") == (
        "observation-masking",
        {"keep_turns": 3},
    )
    assert parse_strategy('x:a=0.5,b=true,c=text, d="q"') == (
        "x",
        {"a": 0.5, "b": True, "c": "text", "d": "q"},
    )
    with pytest.raises(ValueError, match="not k=v"):
        parse_strategy("x:keep_turns")
    with pytest.raises(ValueError, match="empty name"):
        parse_strategy(":a=1")


def test_resolve_strategy_gives_clear_errors():
    with pytest.raises(KeyError, match="unknown strategy 'no-such'"):
        resolve_strategy("no-such")
    with pytest.raises(TypeError):
        resolve_strategy("test-bench-counting-cut:bogus=1")
    strat = resolve_strategy(("test-bench-counting-cut", {"log": "x"}))
    assert strat == CountingCut(log="x")
    assert strat.label == "test-bench-counting-cut(log='x')"
    assert CountingCut().label == "test-bench-counting-cut"


def test_session_refs_expand_folders_and_skip_sidecars(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(SMALL, folder / "a.jsonl")
    shutil.copy(SAMPLE / "sample-0004.facts.json", folder / "a.facts.json")
    (folder / "manifest-like.json").write_text(
        json.dumps({"name": "x", "root": ".", "files": []}), encoding="utf-8"
    )
    refs = session_refs([folder])
    assert [Path(r.path).name for r in refs] == ["a.jsonl"]
    assert refs[0].facts_path == str((folder / "a.facts.json").resolve())
    # A session read from a file is sent as its path; one built in memory is refused.
    assert session_refs([read_session(folder / "a.jsonl")]) == refs
    in_memory = read_session(folder / "a.jsonl").copy_with(source_path=None)
    with pytest.raises(TypeError, match="not read from a file"):
        session_refs([in_memory])
    with pytest.raises(FileNotFoundError, match="nope"):
        session_refs([tmp_path / "nope"])


def test_cell_key_follows_every_input(tmp_path):
    copy = tmp_path / "s.jsonl"
    shutil.copy(SMALL, copy)
    refs = session_refs([copy])
    strat = CountingCut()
    base = make_cells(refs, [strat], [8000])[0]
    assert base.key == make_cells(refs, [strat], [8000])[0].key
    others = [
        make_cells(refs, [strat], [9000])[0],
        make_cells(refs, [CountingCut(log="x")], [8000])[0],
        make_cells(refs, [strat], [8000], settings=CompactionSettings.pi())[0],
        make_cells(refs, [strat], [8000], counter_method="pi")[0],
        make_cells(refs, [strat], [8000], mode="replay")[0],
    ]
    keys = {base.key, *(c.key for c in others)}
    assert len(keys) == 1 + len(others)
    with copy.open("ab") as fh:  # the same path with other bytes is another cell
        fh.write(b"\n")
    assert make_cells(session_refs([copy]), [strat], [8000])[0].key != base.key
    with pytest.raises(ValueError, match="positive"):
        make_cells(refs, [strat], [0])
    with pytest.raises(ValueError, match="mode"):
        make_cells(refs, [strat], [8000], mode="nope")


# -- metrics against the raw files ---------------------------------------------------------
def test_none_keeps_everything_and_truncate_scores_what_it_kept():
    df = run_benchmark(SMALL, ["none", "truncate"], [8000], executor="serial", progress=False)
    assert list(df.columns) == list(COLUMNS)
    assert df["error"].isna().all()
    none = df[df.strategy == "none"].iloc[0]
    trunc = df[df.strategy == "truncate"].iloc[0]

    # The part scored is what the engine's cut summarizes: the planted facts whose entry
    # lies before the first kept entry on the active path.
    settings = CompactionSettings.musepi(keep_recent_tokens=8000)
    first_kept = compact(read_session(SMALL), "truncate", settings=settings).first_kept_entry_id
    path = _raw_path(_records(SMALL))
    ids = [r["id"] for r in path]
    before_cut = set(ids[: ids.index(first_kept)])
    planted = json.loads((SAMPLE / "sample-0004.facts.json").read_text(encoding="utf-8"))
    scored = [f for f in planted if f["entry_id"] in before_cut]
    assert 0 < len(scored) < len(planted)

    assert none["fact_source"] == "planted"
    assert none["facts"] == len(scored) and none["fact_retention"] == 1.0
    assert none["tokens_after"] == none["tokens_before"] and none["token_reduction"] == 0.0
    assert not none["compacted"] and none["cache_prefix_kept"] == 1.0

    kept_text = "\n".join(_readable(r) for r in path[ids.index(first_kept) :])
    expected = sum(f["fact"] in kept_text for f in scored) / len(scored)
    assert trunc["facts"] == len(scored)
    assert trunc["fact_retention"] == pytest.approx(expected)
    assert trunc["compacted"] and trunc["tokens_after"] < trunc["tokens_before"]
    assert trunc["token_reduction"] == pytest.approx(
        1 - trunc["tokens_after"] / trunc["tokens_before"]
    )
    for row in (none, trunc):
        assert row["tool_pairing_valid"] and row["tool_pairing_problems"] == 0
        assert row["summarizer_input_tokens"] == 0 and row["summarizer_cost_usd"] == 0.0
        assert row["session_id"] == "sample-0004" and row["budget"] == 8000


def test_first_request_survives_only_where_it_is_kept():
    df = run_benchmark(SMALL, ["none", "truncate"], [8000], executor="serial", progress=False)
    path = _raw_path(_records(SMALL))
    first_user = next(r for r in path if r.get("message", {}).get("role") == "user")
    planted = json.loads((SAMPLE / "sample-0004.facts.json").read_text(encoding="utf-8"))
    standing = {first_user["message"]["content"][0]["text"].strip()}
    standing |= {f["fact"] for f in planted if f["kind"] == "instruction"}
    by = df.set_index("strategy")
    assert by.loc["none", "instructions"] == len(standing)
    assert by.loc["none", "instruction_survival"] == 1.0
    # truncate drops the start of the session (the cut is far later) with no summary: an
    # instruction survives exactly when its text is in a raw record from the cut onwards.
    settings = CompactionSettings.musepi(keep_recent_tokens=8000)
    first_kept = compact(read_session(SMALL), "truncate", settings=settings).first_kept_entry_id
    ids = [r["id"] for r in path]
    assert ids.index(first_user["id"]) < ids.index(first_kept)
    kept_text = "\n".join(json.dumps(r, ensure_ascii=False) for r in path[ids.index(first_kept) :])
    survived = sum(json.dumps(s, ensure_ascii=False)[1:-1] in kept_text for s in standing)
    assert first_user["message"]["content"][0]["text"].strip() not in kept_text
    assert by.loc["truncate", "instruction_survival"] == pytest.approx(survived / len(standing))


def test_a_failing_cell_is_a_row_with_its_error_and_is_not_cached(tmp_path):
    df = run_benchmark(
        SMALL,
        ["test-bench-broken", "test-bench-counting-cut"],
        [8000],
        executor="serial",
        cache_dir=tmp_path / "cells",
        progress=False,
    )
    broken = df[df.strategy == "test-bench-broken"].iloc[0]
    assert "broken on purpose" in broken["error"]
    assert pd.isna(broken["fact_retention"])
    assert df[df.strategy == "test-bench-counting-cut"]["error"].isna().all()
    again = run_benchmark(
        SMALL,
        ["test-bench-broken", "test-bench-counting-cut"],
        [8000],
        executor="serial",
        cache_dir=tmp_path / "cells",
        progress=False,
    )
    assert again.attrs["cells_computed"] == 1 and again.attrs["cells_cached"] == 1


def test_extracted_facts_when_no_facts_file(tmp_path):
    copy = tmp_path / "plain.jsonl"
    shutil.copy(SMALL, copy)  # no facts.json beside it
    df = run_benchmark(copy, ["truncate"], [8000], executor="serial", progress=False)
    row = df.iloc[0]
    assert row["fact_source"] == "extracted"
    assert row["facts"] > 0 and 0.0 <= row["fact_retention"] < 1.0
    planted = run_benchmark(
        copy, ["truncate"], [8000], executor="serial", progress=False, facts="extracted"
    )
    assert planted.iloc[0]["facts"] == row["facts"]
    with pytest.raises(ValueError, match="fact source"):
        run_benchmark(copy, ["truncate"], [8000], executor="serial", facts="nope")


# -- executors -----------------------------------------------------------------------------
GRID_SESSIONS = [SAMPLE / "sample-0004.jsonl", SAMPLE / "sample-0002.jsonl"]
GRID_STRATEGIES = ["none", "truncate", "extractive"]
GRID_BUDGETS = [8000, 20000]


@pytest.fixture(scope="module")
def serial_grid() -> pd.DataFrame:
    return run_benchmark(
        GRID_SESSIONS, GRID_STRATEGIES, GRID_BUDGETS, executor="serial", progress=False
    )


def test_serial_grid_is_in_grid_order(serial_grid):
    assert len(serial_grid) == 12
    assert serial_grid["error"].isna().all()
    expected = [
        (f"sample-000{n}", s, b) for n in (4, 2) for s in GRID_STRATEGIES for b in GRID_BUDGETS
    ]
    got = list(serial_grid[["session_id", "strategy", "budget"]].itertuples(index=False))
    assert [tuple(t) for t in got] == expected


def test_process_pool_gives_the_serial_frame(serial_grid):
    with ProcessPoolExecutor(max_workers=2) as pool:
        pooled = run_benchmark(
            GRID_SESSIONS, GRID_STRATEGIES, GRID_BUDGETS, executor=pool, progress=False
        )
    pd.testing.assert_frame_equal(_frame_for_compare(pooled), _frame_for_compare(serial_grid))
    default = run_benchmark(
        GRID_SESSIONS, GRID_STRATEGIES, GRID_BUDGETS, max_workers=2, progress=False
    )
    pd.testing.assert_frame_equal(_frame_for_compare(default), _frame_for_compare(serial_grid))


def _sessions_cached_here() -> int:
    from musepi_lab.bench._cell import _load_session

    return _load_session.cache_info().currsize


def test_dask_distributed_executor_gives_the_serial_frame(serial_grid):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        frame = run_benchmark(
            GRID_SESSIONS,
            GRID_STRATEGIES,
            GRID_BUDGETS,
            executor=client.get_executor(),
            progress=False,
        )
        # The cells ran in the cluster's worker processes: each one read sessions.
        sessions_read = client.run(_sessions_cached_here)
        assert len(sessions_read) == 2 and sum(sessions_read.values()) >= len(GRID_SESSIONS)
    pd.testing.assert_frame_equal(_frame_for_compare(frame), _frame_for_compare(serial_grid))


def test_bad_executor_value_is_refused():
    with pytest.raises(ValueError, match="executor"):
        run_benchmark(
            SMALL, ["test-bench-counting-cut"], [8000, 9000], executor="threads", progress=False
        )


# -- resuming ------------------------------------------------------------------------------
def test_rerun_recomputes_only_the_cells_whose_files_were_deleted(tmp_path):
    log = tmp_path / "calls.log"
    cache = tmp_path / "cells"
    strategies = [("test-bench-counting-cut", {"log": str(log)})]
    sessions = [SAMPLE / "sample-0004.jsonl", SAMPLE / "sample-0002.jsonl"]
    budgets = [4000, 8000, 12000, 20000]
    first = run_benchmark(
        sessions, strategies, budgets, executor="serial", cache_dir=cache, progress=False
    )
    cells = sorted(cache.rglob("*.json"))
    calls = log.read_text().count("run")
    assert len(cells) == len(first) == 8
    assert calls == 8

    deleted = cells[::2]
    for path in deleted:
        path.unlink()
    recomputed: list[str] = []
    second = run_benchmark(
        sessions,
        strategies,
        budgets,
        executor="serial",
        cache_dir=cache,
        progress=False,
        on_computed=lambda cell, row: recomputed.append(cell.key),
    )
    assert log.read_text().count("run") == calls + len(deleted)
    assert sorted(recomputed) == sorted(p.stem for p in deleted)
    assert second.attrs["cells_computed"] == len(deleted)
    pd.testing.assert_frame_equal(_frame_for_compare(second), _frame_for_compare(first))


def test_progress_bar_on_stderr_and_off_when_asked(capsys):
    run_benchmark(SMALL, ["test-bench-counting-cut"], [8000], executor="serial", progress=True)
    assert "bench" in capsys.readouterr().err
    run_benchmark(SMALL, ["test-bench-counting-cut"], [8000], executor="serial", progress=False)
    assert "bench" not in capsys.readouterr().err


# -- replay cells --------------------------------------------------------------------------
def test_replay_cells_walk_every_request():
    df = run_benchmark(
        SMALL, ["none", "truncate"], [24000], executor="serial", progress=False, mode="replay"
    )
    assert df["error"].isna().all()
    assistants = sum(
        1 for r in _raw_path(_records(SMALL)) if r.get("message", {}).get("role") == "assistant"
    )
    assert (df["requests"] == assistants).all()
    by = df.set_index("strategy")
    assert by.loc["none", "compactions"] == 0 and pd.isna(by.loc["none", "fact_retention"])
    assert by.loc["truncate", "compactions"] >= 1
    assert by.loc["truncate", "peak_context"] < by.loc["none", "peak_context"]
    decay = json.loads(by.loc["truncate", "decay"])
    assert len(decay) == by.loc["truncate", "compactions"]
    assert by.loc["truncate", "retention_first"] == decay[0]
    assert by.loc["truncate", "fact_retention"] == decay[-1]
    table = summary_table(df)
    assert table.loc[("truncate", 24000), "compactions"] == by.loc["truncate", "compactions"]
    assert "replay_cost_usd" in table.columns
    # The bill's prediction interval (issue 23): the draws behind it, their mean, the
    # difference from `none` paired draw by draw.
    for _, row in df.iterrows():
        draws = np.array(json.loads(row["replay_cost_draws"]))
        assert len(draws) == COST_DRAWS
        # The expected bill is exact (issue 27); the draws' mean agrees within their error.
        error = 4 * draws.std() / np.sqrt(len(draws)) + 1e-12
        assert abs(row["replay_cost_expected"] - draws.mean()) <= error
        assert row["replay_cost_low"] <= row["replay_cost_expected"] <= row["replay_cost_high"]
    # Every recorded request of the session is in the bill or counted with its reason
    # (issue 27): an independent count of the replies with usage, on the path and off it.

    def billed(records):
        keys = ("input", "output", "cacheRead", "cacheWrite")
        return sum(
            1
            for r in records
            if r.get("message", {}).get("role") == "assistant"
            and any((r["message"].get("usage") or {}).get(k) for k in keys)
        )

    on_path, every = billed(_raw_path(_records(SMALL))), billed(_records(SMALL))
    assert (df["requests_recorded"] == every).all() and (df["requests_covered"] == on_path).all()
    off = {OFF_PATH: every - on_path} if every > on_path else {}
    assert all(json.loads(v) == off for v in df["requests_left_out"])
    assert (df["streams"] == 1).all()
    assert (df["requests_estimated"] == assistants - on_path).all()
    assert table.loc[("none", 24000), "cost_difference"] == 0.0
    assert table.loc[("truncate", 24000), "cost_baseline"] == "none"


@pytest.mark.filterwarnings("ignore:No artists with labels")  # `none` has no retention to draw
def test_a_replay_report_draws_the_cost_with_its_interval(tmp_path):
    df = run_benchmark(SMALL, ["none"], [24000], executor="serial", progress=False, mode="replay")
    written = write_benchmark_report(tmp_path, df)
    assert set(REPLAY_REPORT_FIGURES) <= set(written)
    assert (tmp_path / "replay_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- output --------------------------------------------------------------------------------
def test_write_and_read_benchmark_round_trip(tmp_path, serial_grid):
    out = write_benchmark(serial_grid, tmp_path / "run")
    back = read_benchmark(out)
    pd.testing.assert_frame_equal(back, serial_grid, check_dtype=False)
    config = back.attrs["config"]
    assert config["budgets"] == GRID_BUDGETS
    assert [s["name"] for s in config["strategies"]] == GRID_STRATEGIES
    assert [Path(s["path"]).name for s in config["sessions"]] == [p.name for p in GRID_SESSIONS]
    assert config["settings"]["profile"] == "musepi"
    assert config["prompts"].startswith("default@")
    assert {"musepi_lab", "python", "pandas"} <= set(config["versions"])
    with (out / "results.csv").open(encoding="utf-8") as fh:
        assert sum(1 for _ in csv.DictReader(fh)) == len(serial_grid)
    with pytest.raises(FileNotFoundError, match="not a benchmark result"):
        read_benchmark(tmp_path / "empty")


def test_summary_table_means_match_the_csv(tmp_path, serial_grid):
    out = write_benchmark(serial_grid, tmp_path / "run")
    sums: dict[tuple[str, int], list[float]] = {}
    with (out / "results.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["fact_retention"]:
                sums.setdefault((row["label"], int(row["budget"])), []).append(
                    float(row["fact_retention"])
                )
    table = summary_table(serial_grid, ["fact_retention"])
    for (label, budget), values in sums.items():
        assert table.loc[(label, budget), "fact_retention"] == pytest.approx(
            sum(values) / len(values)
        )
        assert table.loc[(label, budget), "fact_retention_n"] == len(values)
    assert (table["cells"] == len(GRID_SESSIONS)).all()
    markdown = table_markdown(table)
    assert markdown.count("\n") == 2 + len(table)
    assert "| fact_retention |" in markdown


def test_write_report_writes_tables_and_png_plots(tmp_path, serial_grid):
    out = write_benchmark(serial_grid, tmp_path / "run")
    written = write_benchmark_report(out)
    assert set(written) == {
        "summary.md",
        "summary.csv",
        "fact_retention.png",
        "retention_upper.png",
        "token_reduction.png",
        "tradeoff.png",
    }
    for name, path in written.items():
        assert path.is_file() and path.stat().st_size > 0
        if name.endswith(".png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| truncate |" in (out / "summary.md").read_text(encoding="utf-8")


def test_the_figures_moved_to_the_plot_layer_and_the_old_names_say_where():
    import musepi_lab.bench as bench

    with pytest.raises(AttributeError, match=r"musepi_lab\.plot\.write_benchmark_report"):
        bench.write_report  # noqa: B018
    with pytest.raises(AttributeError, match=r"musepi_lab\.plot\.plot_benchmark"):
        bench.plot_benchmark  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bench.nope  # noqa: B018


@needs_corpus
def test_openhands_evaluation_file_gives_one_ref_per_instance(corpus_dir):
    path = corpus_dir / "openhands" / "multi_swe_bench_examples_output.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    refs = session_refs([path])
    assert [r.index for r in refs] == list(range(len(lines)))


# -- layers ----------------------------------------------------------------------------------
def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function-local imports included), with
    relative imports resolved against `musepi_lab.bench`."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ["musepi_lab", "bench"][: max(0, 2 - node.level + 1)] if node.level else []
            names.add(".".join([*base, node.module or ""]).strip("."))
    return names


def test_bench_draws_nothing_imports_no_layer_above_and_stays_small():
    import ast

    bench_dir = Path(__file__).resolve().parents[1] / "musepi_lab" / "bench"
    above = ("matplotlib", "ipywidgets", "IPython", "musepi_lab.plot", "musepi_lab.widgets")
    for path in sorted(bench_dir.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        bad = sorted(m for m in _imported_modules(path) if m.startswith(above))
        assert not bad, f"{path.name} imports {bad}"
        assert len(text.splitlines()) <= 600, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                length = node.end_lineno - node.lineno + 1
                assert length <= 80, f"{path.name}: {node.name} has {length} lines"

# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: musepi_lab,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   musepi_lab:
#     requires:
#       modules:
#       - matplotlib
#       - pyarrow
#       - dask
#       - distributed
# ---

# %% [markdown]
# # 8 · At scale: a generated dataset on a Dask cluster
#
# A research group's grid: many sessions (generated with the corpus's mix of shapes and
# formats), model-free strategies × budgets, run on a `dask.distributed` cluster, one task
# per session, each task writing its rows as a Parquet part (`results/part-*.parquet`)
# with a manifest at the end, so the client never holds the rows and a rerun resumes from
# the parts written. Then the session frames through the Parquet cache (and as a
# `dask.dataframe`), the summary with its intervals, and plots.
#
# The defaults are the small CI configuration. For the figure, from the repository
# root (`bench-output/` is gitignored):
#
# ```
# musepi-lab datasets generate --n 10000 --out bench-output/scale
# papermill notebooks/08-at-scale.ipynb bench-output/08.ipynb \
#     -p n_sessions 10000 -p dataset_dir bench-output/scale -p output_dir bench-output/08
# ```
#
# Parameters: `n_sessions` (generated when `dataset_dir` holds no manifest), `seed`,
# `dataset_dir` (empty: a fresh temporary folder), `strategies`, `budgets`, `scheduler`
# (empty: a `LocalCluster` of `workers` processes; else a scheduler address such as
# `tcp://127.0.0.1:8786`), `workers`, `output_dir` (empty: a fresh temporary folder).

# %% tags=["parameters"]
n_sessions = 24
seed = 0
dataset_dir = ""
strategies = ["truncate", "observation-masking", "extractive", "prune"]
budgets = [2000, 8000, 20000]
scheduler = ""
workers = 2
output_dir = ""

# %%
import json
import tempfile
from pathlib import Path

from musepi_lab.datasets import write_scale_dataset

data = Path(dataset_dir) if dataset_dir else Path(tempfile.mkdtemp(prefix="musepi-scale-"))
out = Path(output_dir) if output_dir else Path(tempfile.mkdtemp(prefix="musepi-scale-out-"))
manifest_file = data / "manifest.json"
if manifest_file.is_file():
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
else:
    manifest = write_scale_dataset(data, n_sessions, seed=seed, workers=workers)
print(f"{manifest['n']} sessions in {data}")
counts = manifest["counts"]
print("per format:", counts["formats"])
print({k: counts[k] for k in ("branch", "compaction", "image", "tasks_median", "tasks_max")})
assert manifest["n"] == len(manifest["files"])

# %% [markdown]
# ## The session frames, through the cache
#
# `sessions_df(folder, cache_dir=...)` reads each file once and keeps its rows as a
# Parquet part keyed by the file's content hash: a second call reads the cache. For a
# folder larger than memory, `dask_frame` gives the same frame as a `dask.dataframe`.

# %%
import time

import musepi_lab as ml
from musepi_lab.analysis import dask_frame

frames = out / "frames"
started = time.perf_counter()
sessions = ml.sessions_df(data, cache_dir=frames)
problems = ml.problems_of(sessions)
first = time.perf_counter() - started
started = time.perf_counter()
again = ml.sessions_df(data, cache_dir=frames)
second = time.perf_counter() - started
print(f"first read {first:.2f} s, from the cache {second:.2f} s; {len(problems)} problems")
lazy, _ = dask_frame("sessions", data, cache_dir=frames)
assert again.equals(sessions)
assert len(lazy.compute()) == len(sessions) == manifest["n"]
sessions.groupby("format")[["entries", "messages", "tool_calls", "compactions"]].sum()

# %% [markdown]
# ## The grid on Dask
#
# One task per session runs all its cells; each task writes its part atomically under a
# name derived from its cells, so a task rerun after a worker dies replaces its part
# instead of doubling it. The client holds a bounded window of futures, not rows.

# %%
from pprint import pprint

from musepi_lab.bench import read_benchmark, run_benchmark

grid = dict(
    executor="dask",
    address=scheduler or None,
    max_workers=workers,
    out=out / "bench",
    progress=False,
)
results = run_benchmark([data], strategies, budgets, **grid)
pprint(results.attrs["dask"], width=100, sort_dicts=False)
parts = sorted((out / "bench" / "results").glob("part-*.parquet"))
print(f"{len(results)} rows in {len(parts)} parts")
assert len(results) == manifest["n"] * len(strategies) * len(budgets)
assert len(parts) == manifest["n"]
assert results["error"].isna().all(), results.loc[results["error"].notna(), "error"].head()
assert read_benchmark(out / "bench").shape == results.shape

# %% [markdown]
# A second run finds every part written and computes nothing.

# %%
rerun = run_benchmark([data], strategies, budgets, **grid)
assert rerun.attrs["cells_computed"] == 0
assert rerun.attrs["cells_cached"] == len(results)

# %% [markdown]
# ## Summary with intervals
#
# Per strategy and budget: the cells averaged, how many compacted and carried facts, each
# metric's mean where defined with a seeded bootstrap 95% interval across sessions.

# %%
from musepi_lab.bench import summary_table, table_text

summary = summary_table(results)
print(table_text(summary))
assert (summary["cells"] == manifest["n"]).all()
by_format = (
    results.assign(fmt=results["source"].map(lambda s: Path(s).parent.name))
    .groupby(["fmt", "strategy"])["token_reduction"]
    .mean()
    .unstack()
)
by_format

# %%
import matplotlib.pyplot as plt

from musepi_lab.plot import plot_strategy_comparison, plot_tradeoff

fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5), layout="constrained")
plot_strategy_comparison(results, ax=left)
plot_tradeoff(results, ax=right)
fig.savefig(out / "at-scale.png", dpi=100)
assert (out / "at-scale.png").stat().st_size > 0
print("results in", out)

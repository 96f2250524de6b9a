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
# ---

# %% [markdown]
# # 4 · Benchmarking a dataset
#
# The grid sessions × strategies × budgets as one tidy DataFrame (`run_benchmark`), written
# to an output folder with its configuration (`write_benchmark`), then a summary table and
# plots. With papermill, from the repository root (`bench-output/` is gitignored):
#
# ```
# mkdir -p bench-output
# papermill notebooks/04-benchmark-dataset.ipynb bench-output/04-pi.ipynb \
#     -p dataset ../shared/corpus/pi -p output_dir bench-output/pi -p parallel True \
#     -y 'strategies: [truncate, extractive, none]' -y 'budgets: [8000, 20000]'
# ```
#
# Parameters: `dataset`, `strategies`, `budgets`, `output_dir` (empty: a fresh temporary
# folder), `parallel` (a process pool instead of running inline), `mode` (`compact`, budget
# = keep-recent tokens; `replay`, budget = context window), `recorded_formats` (shared-corpus
# folders whose sessions' own compactions are compared with `model_free` strategies; empty:
# skip that section).

# %% tags=["parameters"]
dataset = "datasets/sample"
strategies = ["truncate", "observation-masking", "extractive", "none"]
budgets = [4000, 16000]
output_dir = ""
parallel = False
mode = "compact"
recorded_formats = ["pi", "claude-code", "codex"]
model_free = ["truncate", "observation-masking", "extractive", "snapcompact", "prune", "none"]

# %%
import json
import tempfile
from pathlib import Path

import pandas as pd

from musepi_lab.bench import read_benchmark, run_benchmark, session_refs, write_benchmark
from musepi_lab.datasets import find_up

dataset_dir = find_up(dataset)
out_dir = (
    Path(output_dir).resolve() if output_dir else Path(tempfile.mkdtemp(prefix="musepi-bench-"))
)
refs = session_refs([dataset_dir])
print(f"{len(refs)} sessions × {len(strategies)} strategies × {len(budgets)} budgets → {out_dir}")
assert strategies and refs

# %% [markdown]
# ## Run the grid
#
# Each finished cell is cached under `out_dir/cache`, so an interrupted run resumes where it
# stopped.

# %%
results = run_benchmark(
    [dataset_dir],
    strategies,
    budgets,
    executor=None if parallel else "serial",
    cache_dir=out_dir / "cache",
    progress=False,
    mode=mode,
)
written = write_benchmark(results, out_dir, results.attrs.get("config"))
results[
    ["session_id", "strategy", "budget", "tokens_before", "tokens_after", "fact_retention", "error"]
].head(12)

# %%
assert len(results) == len(refs) * len(strategies) * len(budgets)
assert results["error"].isna().all(), results.loc[results["error"].notna(), "error"].tolist()
for name in ("results.parquet", "results.csv", "config.json"):
    assert (out_dir / name).is_file(), name
config = json.loads((out_dir / "config.json").read_text(encoding="utf-8"))
assert config, "the run's configuration is written beside the results"
again = read_benchmark(out_dir)
assert len(again) == len(results)
assert sorted(again["strategy"].unique()) == sorted(results["strategy"].unique())

# %% [markdown]
# ## Summary
#
# Per strategy and budget: how many cells, how many compacted, how many carried facts, and
# each metric's mean over the cells where it is defined (token reduction only where the
# strategy compacted, retention only where there were facts) with a seeded bootstrap 95%
# interval across sessions. `retention_lower` counts snapcompact's imaged pages as
# unreadable, `retention_upper` as read perfectly.

# %%
from musepi_lab.bench import summary_table, table_text

summary = summary_table(results)
print(table_text(summary))
assert (summary["cells"] == len(refs)).all()

# %%
if "none" in strategies and mode == "compact":
    none = results[results["strategy"] == "none"]
    assert (none["token_reduction"] == 0).all()
    assert (none["fact_retention"].dropna() == 1.0).all()

# %%
from musepi_lab.plot import plot_comparison

# The cost panel appears only when a cell cost something (model-free strategies cost 0).
fig = plot_comparison(results)
fig.savefig(out_dir / "comparison.png", dpi=100)

# %%
assert (out_dir / "comparison.png").stat().st_size > 0
print("results in", out_dir)

# %% [markdown]
# ## The agent's own compactions against the model-free strategies
#
# `recorded` is what the real agent did: its own compactions with their recorded summaries
# (pi/MusePi compaction entries, Claude Code's `compact_boundary` and summary, Codex's
# `compacted`). At each point where a corpus session compacted, every model-free strategy
# compacts the same context (`compact(session, name, leaf_id=<the entry before it>)`), and
# all are measured the same way: `before` is the context rebuilt at that point (what `none`
# leaves), `after` what each result leaves, and retention the share of the facts readable
# before (fixed rules on the records of the path so far, `facts_of_entries`, kept when their
# text is in the context `none` leaves) that are still readable after. Codex's compaction is provider-native: its replacement history is opaque
# (and this corpus redacts it), so its `after` is only the placeholder the reader writes.

# %%
from musepi_lab.context import build_session_context
from musepi_lab.datasets import corpus_path
from musepi_lab.formats import read_session
from musepi_lab.metrics import context_text, fact_retention, facts_of_entries
from musepi_lab.strategies import compact

corpus_root = corpus_path()
points = []
for folder in recorded_formats if corpus_root is not None else []:
    for file in sorted((corpus_root / folder).glob("*.jsonl")):
        session = read_session(file)
        path = session.path()
        for number, entry in enumerate(e for e in path if e.type == "compaction"):
            leaf = entry.parent_id
            prefix = [e.id for e in path[: path.index(entry)] if e.id is not None]
            before = compact(session, "none", leaf_id=leaf)
            readable = context_text(list(build_session_context(session, leaf).messages))
            facts = [f for f in facts_of_entries(session, prefix) if f.text in readable]
            for name in ["recorded", *model_free]:
                result = compact(session, name, leaf_id=leaf)
                if result is None:
                    points.append(
                        {
                            "session": f"{folder}/{file.stem[:24]}",
                            "point": number + 1,
                            "strategy": name,
                            "compacted": False,
                        }
                    )
                    continue
                applied = result.apply(session)
                # A rewrite (masking, pruning, none) stays at the point; an appended
                # compaction entry is the new session leaf.
                after = (
                    build_session_context(applied).messages
                    if result.append_entry
                    else build_session_context(applied, leaf).messages
                )
                points.append(
                    {
                        "session": f"{folder}/{file.stem[:24]}",
                        "point": number + 1,
                        "strategy": name,
                        "compacted": True,
                        "before": before.tokens_after if before else None,
                        "after": result.tokens_after,
                        "reduction": 1 - result.tokens_after / before.tokens_after
                        if before and before.tokens_after
                        else None,
                        # Undefined without facts (the redacted Codex session has none).
                        "retention": fact_retention(facts, context_text(list(after)))
                        if facts
                        else None,
                        "facts": len(facts),
                    }
                )
points = pd.DataFrame(points)
(
    points.set_index(["session", "point", "strategy"])[
        ["compacted", "before", "after", "reduction", "retention", "facts"]
    ].round(3)
    if len(points)
    else points
)

# %%
if len(points):
    done = points[points["compacted"]]
    recorded = done[done["strategy"] == "recorded"]
    assert len(recorded) == len(points[["session", "point"]].drop_duplicates())
    assert (done["after"] > 0).all()
    none = done[done["strategy"] == "none"]
    assert (none["reduction"].abs() < 1e-9).all()
    assert (none["retention"].dropna() == 1.0).all()

"""Write the numbered notebooks from the cell sources below (run: `python notebooks/_build.py`).

Notebooks are generated so they stay clean and reviewable: no outputs, no execution counts,
stable cell ids, the first code cell tagged `parameters` (papermill injects after it), and
`metadata.musepi_lab.requires` naming what `notebooks/conftest.py` checks before running
one under nbval (modules to import, strategies to be registered).

Every notebook finds its data by walking up from the working directory (`find_up`), so it
runs the same from `notebooks/` (nbval, JupyterLab) and from the repository root
(`papermill notebooks/04-benchmark-dataset.ipynb out.ipynb`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


FIND_UP = '''\
def find_up(relative):
    """`relative` under the working directory or its nearest parent that has it: notebooks
    run from notebooks/ (nbval, JupyterLab) and from the repository root (papermill)."""
    if not relative:
        raise FileNotFoundError("empty path")
    for base in (Path.cwd(), *Path.cwd().parents):
        candidate = base / relative
        if candidate.exists():
            return candidate.resolve()
    raise FileNotFoundError(f"{relative} not found under {Path.cwd()} or its parents")'''


@dataclass
class Notebook:
    """One notebook: a file name, a title, and its cells as `(kind, source)`."""

    name: str
    cells: list[tuple[str, str]]
    modules: list[str] = field(default_factory=list)
    strategies: list[str] = field(default_factory=list)


def md(text: str) -> tuple[str, str]:
    return ("markdown", text.strip("\n"))


def code(text: str) -> tuple[str, str]:
    return ("code", text.strip("\n"))


# -- 01 ----------------------------------------------------------------------------------------
NB01 = Notebook(
    "01-sessions-and-dataframes.ipynb",
    modules=["pandas", "ipywidgets"],
    cells=[
        md("""
# 1 · Sessions and DataFrames

Load a folder of agent sessions into pandas: one frame per kind of thing (sessions, entries,
messages, tool calls, compactions), joinable on `session_id` and `entry_id`. Then browse one
session with `SessionExplorer`.

Parameters: `dataset` (a folder or file of sessions, any supported format) and
`token_method` (`pi`, `musepi`, `o200k_base`, `cl100k_base`).
"""),
        code("""
dataset = "datasets/sample"
token_method = "pi"
"""),
        code(f"""
from pathlib import Path

from musepi_lab.analysis import (
    compactions_df,
    entries_df,
    load_sessions,
    messages_df,
    sessions_df,
    tool_calls_df,
)
from musepi_lab.tokens import TokenCounter


{FIND_UP}


dataset_dir = find_up(dataset)
counter = TokenCounter(token_method)  # shared: every frame reuses its per-entry counts
dataset_dir
"""),
        md("""
## Sessions

`load_sessions` reads leniently: problems come back beside the sessions, each naming its
file and line, and every valid record is kept.
"""),
        code("""
sessions, problems = load_sessions(dataset_dir)
sessions_frame, _ = sessions_df(sessions, counter=counter)
print(f"{len(sessions)} sessions, {len(problems)} read problems")
sessions_frame[
    [
        "session_id",
        "format",
        "entries",
        "messages",
        "tool_calls",
        "compactions",
        "branches",
        "tokens",
    ]
]
"""),
        code("""
assert len(sessions_frame) == len(sessions) > 0
assert sessions_frame["entries"].sum() == sum(len(s.entries) for s in sessions)
# Independent count for pi JSONL files: one entry per line after the header.
for s in sessions:
    if s.source_format == "pi" and s.source_path and not s.errors:
        lines = Path(s.source_path).read_text(encoding="utf-8").splitlines()
        assert len(s.entries) == len(lines) - 1, s.source_path
"""),
        md("""
## Entries and messages

`entries_df` has every entry (metadata too); `messages_df` only those that put a message in
the model's context, with their text, tokens and recorded usage.
"""),
        code("""
entries, _ = entries_df(sessions, counter=counter)
messages, _ = messages_df(sessions, counter=counter)
by_role = messages.groupby("role", dropna=False)["tokens"].agg(["count", "sum", "median"])
by_role.sort_values("sum", ascending=False)
"""),
        code("""
entries["type"].value_counts()
"""),
        code("""
assert len(entries) == sessions_frame["entries"].sum()
assert set(messages["entry_id"]) <= set(entries["entry_id"])
assert messages["tokens"].sum() > 0
# Message counts agree between the two frames.
per_session = messages.groupby("session_id").size()
assert (
    per_session.reindex(sessions_frame["session_id"]).fillna(0).to_numpy()
    == sessions_frame["messages"].to_numpy()
).all()
"""),
        md("""
## Tool calls

One row per call, joined to its result; `useless` marks results a pruner could drop.
"""),
        code("""
calls, _ = tool_calls_df(sessions, counter=counter)
calls.groupby("tool_name").agg(
    calls=("call_id", "size"), result_tokens=("result_tokens", "sum"), errors=("is_error", "sum")
).sort_values("calls", ascending=False)
"""),
        code("""
answered = calls[calls["has_result"].fillna(False).astype(bool)]
assert answered["result_entry_id"].isin(entries["entry_id"]).all()
assert len(calls) == sessions_frame["tool_calls"].sum()
"""),
        md("""
## Compactions

Each compaction entry with its first kept entry; joined back to the entries frame to see
where each one cut.
"""),
        code("""
compactions, _ = compactions_df(sessions, counter=counter)
first_kept = entries[["session_id", "entry_id", "type", "role"]].rename(
    columns={"entry_id": "first_kept_entry_id", "type": "kept_type", "role": "kept_role"}
)
kept = compactions.merge(first_kept, on=["session_id", "first_kept_entry_id"], how="left")
kept[
    [
        "session_id",
        "entry_id",
        "tokens_before",
        "summary_tokens",
        "first_kept_entry_id",
        "kept_type",
        "kept_role",
    ]
]
"""),
        code("""
assert len(compactions) == sessions_frame["compactions"].sum()
# Every first kept entry is an entry of its session.
assert kept["kept_type"].notna().all()
"""),
        md("""
## Browse one session

Pick a file, a branch (leaf) and an entry: the explorer shows its content, its tokens and
what the LLM would see if the session ended there.
"""),
        code("""
from musepi_lab.widgets import SessionExplorer

explorer = SessionExplorer(dataset_dir, counter=TokenCounter(token_method))
explorer
"""),
        code("""
assert explorer.session.id in set(sessions_frame["header_id"])
assert explorer.selected_entry is not None and explorer.context is not None
"""),
    ],
)

# -- 02 ----------------------------------------------------------------------------------------
NB02 = Notebook(
    "02-tree-and-cut-points.ipynb",
    modules=["matplotlib", "ipywidgets"],
    cells=[
        md("""
# 2 · The entry tree and cut points

A session is a tree of entries: the active path from the root to the leaf, and branches.
`plot_tree` draws it; `prepare_compaction` decides where a compaction would cut for a given
keep-recent budget; `CutPointExplorer` moves the budget live.

Parameters: `session_file`, `keep_recent_tokens` (budgets to sweep), `window`, `profile`.
"""),
        code("""
session_file = "datasets/sample/sample-0001.jsonl"
keep_recent_tokens = [2000, 8000, 20000]
window = 128000
profile = "musepi"
"""),
        code(f"""
from pathlib import Path

import pandas as pd

from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.plot import plot_tree
from musepi_lab.session import read_session
from musepi_lab.tokens import TokenCounter


{FIND_UP}


session = read_session(find_up(session_file))
counter = TokenCounter("pi" if profile == "pi" else "musepi")
session
"""),
        md("""
## The tree

Colours are entry kinds, the active path is bold, branches fan out below it, compactions
(diamonds) point at their first kept entry, and the bars underneath are tokens per node.
"""),
        code("""
ax = plot_tree(session, counter=counter)
"""),
        code("""
assert ax.get_title().startswith(session.id)
assert len(ax.collections) > 0  # nodes were drawn
"""),
        md("""
## Where would a compaction cut?

A smaller keep-recent budget keeps less, so the cut moves later along the path. When the
cut falls inside a turn, the turn's start is summarized separately (a *split turn*).
"""),
        code("""
preparations = {
    budget: prepare_compaction(
        session, CompactionSettings.for_profile(profile, keep_recent_tokens=budget), counter
    )
    for budget in sorted(keep_recent_tokens)
}
cuts = pd.DataFrame(
    [
        {
            "keep_recent_tokens": budget,
            "cut_index": prep.cut_index if prep else None,
            "first_kept_entry_id": prep.first_kept_entry_id if prep else None,
            "split_turn": prep.is_split_turn if prep else None,
            "summarized_messages": len(prep.messages_to_summarize) if prep else 0,
            "kept_messages": len(prep.recent_messages) if prep else 0,
            "kept_tokens": counter.count_messages(prep.recent_messages) if prep else 0,
        }
        for budget, prep in preparations.items()
    ]
)
cuts
"""),
        code("""
indices = [i for i in cuts["cut_index"] if i is not None and i == i]
assert indices == sorted(indices, reverse=True), "a larger budget never cuts later"
path_ids = {e.id for e in session.path()}
for prep in preparations.values():
    if prep is not None:
        assert prep.first_kept_entry_id in path_ids
"""),
        code("""
budget = sorted(keep_recent_tokens)[len(keep_recent_tokens) // 2]
ax = plot_tree(
    session,
    cut=preparations[budget],
    counter=counter,
    title=f"cut at keep_recent_tokens={budget:,}",
)
"""),
        md("""
## Explore the cut live

Move *keep recent* and the cut moves; *reserve* and *window* set the threshold shown on the
token bar; switch the profile or the token method.
"""),
        code("""
from musepi_lab.widgets import CutPointExplorer

explorer = CutPointExplorer(
    session, window=window, settings=CompactionSettings.for_profile(profile)
)
explorer.keep_slider.value = sorted(keep_recent_tokens)[0]
explorer
"""),
        code("""
expected = preparations[sorted(keep_recent_tokens)[0]]
assert (explorer.preparation is None) == (expected is None)
if expected is not None:
    assert explorer.preparation.first_kept_entry_id == expected.first_kept_entry_id
    assert ("split turn" in explorer.cut_view.value) == expected.is_split_turn
assert explorer.png is not None and explorer.png.startswith(b"\\x89PNG")
"""),
    ],
)

# -- 03 ----------------------------------------------------------------------------------------
NB03 = Notebook(
    "03-compare-strategies.ipynb",
    modules=["matplotlib", "ipywidgets"],
    strategies=["none", "truncate"],
    cells=[
        md("""
# 3 · Comparing strategies on one session

Every strategy gets the same session, settings and token counter and returns a
`CompactionResult`; here they run at several keep-recent budgets and are compared on what
they leave (tokens after) and what they keep (facts of the part summarized away). Then one
strategy is replayed over the whole session under a context window.

Parameters: `session_file`, `strategies`, `budgets`, `window` (for the replay),
`replay_strategy`.
"""),
        code("""
session_file = "datasets/sample/sample-0001.jsonl"
strategies = ["truncate", "observation-masking", "extractive", "none"]
budgets = [4000, 8000, 16000]
window = 64000
replay_strategy = "extractive"
"""),
        code(f"""
from pathlib import Path

import pandas as pd

from musepi_lab.compaction import CompactionSettings
from musepi_lab.session import build_session_context, read_session
from musepi_lab.strategies import available, compact
from musepi_lab.tokens import TokenCounter


{FIND_UP}


session = read_session(find_up(session_file))
missing = [s for s in strategies if s not in available()]
strategies = [s for s in strategies if s in available()]
print("available:", ", ".join(available()))
print("left out (not registered):", missing or "none")
assert strategies, "no strategy to compare"
"""),
        md("""
## One compaction per strategy and budget

`compact(session, name, settings=...)` runs the engine's preparation and the strategy; the
session itself never changes. `tokens_after` is the context the model would see after the
compaction (the context before it is `context_before`).
"""),
        code("""
counter = TokenCounter("musepi")
context_before = counter.count_messages(build_session_context(session).messages)
rows = []
for name in strategies:
    for budget in budgets:
        result = compact(
            session,
            name,
            settings=CompactionSettings.musepi(keep_recent_tokens=budget),
            counter=counter,
        )
        rows.append(
            {
                "strategy": name,
                "budget": budget,
                "method": result.method if result else None,
                "tokens_after": result.tokens_after if result else None,
                "summary_chars": len(result.summary) if result else 0,
            }
        )
plain = pd.DataFrame(rows)
plain
"""),
        code("""
assert len(plain) == len(strategies) * len(budgets)
done = plain.dropna(subset=["tokens_after"])
assert (done["tokens_after"] <= context_before).all(), "no strategy grows the context"
"""),
        md("""
## Side by side, with fact retention

`StrategyComparer` runs the same grid with a progress bar and scores each cell the way the
benchmark does: the share of the facts of the summarized part (planted facts for the
generated sample) still present in the new context. The summaries appear side by side.
"""),
        code("""
from musepi_lab.widgets import StrategyComparer

comparer = StrategyComparer(session, strategies=strategies, budgets=budgets, counter=counter)
frame = comparer.run()
comparer
"""),
        code("""
assert set(comparer.results) == {(s, b) for s in strategies for b in budgets}
assert not comparer.errors, comparer.errors
if "none" in strategies:
    none = frame[frame["strategy"] == "none"]
    assert (none["tokens_after"] == none["tokens_before"]).all()
    assert (none["fact_retention"].dropna() == 1.0).all()
frame[["strategy", "budget", "tokens_after", "token_reduction", "fact_retention"]]
"""),
        code("""
from musepi_lab.plot import plot_strategy_comparison

ax = plot_strategy_comparison(frame)
"""),
        md("""
## Replay: the whole session under a window

`replay` walks the session forward as the agent lived it and compacts where MusePi's
triggers fire; the timeline shows the context of every request, the window, the threshold
and each compaction.
"""),
        code("""
from musepi_lab.plot import plot_context_timeline
from musepi_lab.replay import replay

chosen = replay_strategy if replay_strategy in available() else strategies[0]
replayed = replay(session, chosen, window=window)
ax = plot_context_timeline(replayed)
replayed
"""),
        code("""
assert len(replayed.timeline) > 0
# Either something fired, or the context never needed it.
assert replayed.compactions >= 1 or replayed.timeline["agent_tokens"].max() <= replayed.threshold
for event in replayed.events:
    assert event.tokens_after < event.tokens_before
"""),
    ],
)

# -- 04 ----------------------------------------------------------------------------------------
NB04 = Notebook(
    "04-benchmark-dataset.ipynb",
    modules=["matplotlib", "pyarrow", "musepi_lab.bench"],
    strategies=["none", "truncate"],
    cells=[
        md("""
# 4 · Benchmarking a dataset

The grid sessions × strategies × budgets as one tidy DataFrame (`run_benchmark`), written
to an output folder with its configuration (`write_benchmark`), then a summary table and
plots. With papermill:

```
papermill notebooks/04-benchmark-dataset.ipynb out.ipynb \\
    -p dataset ../shared/corpus/pi -p output_dir bench-out -p parallel True \\
    -y 'strategies: [truncate, extractive, none]' -y 'budgets: [8000, 20000]'
```

Parameters: `dataset`, `strategies`, `budgets`, `output_dir` (empty: a fresh temporary
folder), `parallel` (a process pool instead of running inline), `mode` (`compact`, budget
= keep-recent tokens; `replay`, budget = context window).
"""),
        code("""
dataset = "datasets/sample"
strategies = ["truncate", "observation-masking", "extractive", "none"]
budgets = [4000, 16000]
output_dir = ""
parallel = False
mode = "compact"
"""),
        code(f"""
import json
import tempfile
from pathlib import Path

from musepi_lab.bench import read_benchmark, run_benchmark, session_refs, write_benchmark
from musepi_lab.strategies import available


{FIND_UP}


dataset_dir = find_up(dataset)
out_dir = (
    Path(output_dir).resolve() if output_dir else Path(tempfile.mkdtemp(prefix="musepi-bench-"))
)
strategies = [s for s in strategies if s.split(":")[0] in available()]
refs = session_refs([dataset_dir])
print(f"{{len(refs)}} sessions × {{len(strategies)}} strategies × {{len(budgets)}} budgets → {{out_dir}}")
assert strategies and refs
"""),
        md("""
## Run the grid

Each finished cell is cached under `out_dir/cache`, so an interrupted run resumes where it
stopped.
"""),
        code("""
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
"""),
        code("""
assert len(results) == len(refs) * len(strategies) * len(budgets)
assert results["error"].isna().all(), results.loc[results["error"].notna(), "error"].tolist()
for name in ("results.parquet", "results.csv", "config.json"):
    assert (out_dir / name).is_file(), name
config = json.loads((out_dir / "config.json").read_text(encoding="utf-8"))
assert config, "the run's configuration is written beside the results"
again = read_benchmark(out_dir)
assert len(again) == len(results)
assert sorted(again["strategy"].unique()) == sorted(results["strategy"].unique())
"""),
        md("""
## Summary

Mean over sessions per strategy and budget.
"""),
        code("""
summary = results.pivot_table(
    index="strategy", columns="budget", values=["token_reduction", "fact_retention"], aggfunc="mean"
)
summary.round(3)
"""),
        code("""
if "none" in strategies and mode == "compact":
    none = results[results["strategy"] == "none"]
    assert (none["token_reduction"] == 0).all()
    assert (none["fact_retention"].dropna() == 1.0).all()
"""),
        code("""
import matplotlib.pyplot as plt

from musepi_lab.plot import plot_cost, plot_strategy_comparison

fig, (left, right) = plt.subplots(
    1, 2, figsize=(13, 4.5), width_ratios=(3, 2), layout="constrained"
)
plot_strategy_comparison(results, ax=left)
plot_cost(results, ax=right)
fig.savefig(out_dir / "comparison.png", dpi=100)
"""),
        code("""
assert (out_dir / "comparison.png").stat().st_size > 0
print("results in", out_dir)
"""),
    ],
)

# -- 05 ----------------------------------------------------------------------------------------
NB05 = Notebook(
    "05-estimator-accuracy.ipynb",
    modules=["matplotlib", "tiktoken"],
    strategies=["none"],
    cells=[
        md("""
# 5 · Estimator accuracy against recorded usage

Compaction triggers compare a context size with a threshold, and between provider replies
that size is an *estimate*. How good are the estimators? For every request whose provider
usage was recorded (and up to the first compaction, where the recorded context is still
the one replayed), compare the estimated context (`replay` with strategy `none`, so nothing
changes) with the prompt tokens the provider billed (`input + cacheRead + cacheWrite`).

The recorded number includes the system prompt and tool definitions, which are not in the
session file: a linear fit `recorded ≈ slope · estimate + intercept` separates the
tokenizer's scale (slope) from that fixed overhead (intercept).

Parameters: `dataset` (the bundled sample), `corpus` (a folder of real pi sessions;
empty: `shared/corpus/pi` when present), `methods`.
"""),
        code("""
dataset = "datasets/sample"
corpus = ""
methods = ["pi", "musepi", "o200k_base"]
"""),
        code(f"""
from pathlib import Path

import numpy as np
import pandas as pd

from musepi_lab.replay import replay
from musepi_lab.session import iter_session_files, read_session
from musepi_lab.tokens import TokenCounter


{FIND_UP}


def optional(relative):
    try:
        return find_up(relative)
    except FileNotFoundError:
        return None


sources = {{"sample": find_up(dataset)}}
corpus_dir = find_up(corpus) if corpus else optional("shared/corpus/pi")
if corpus_dir is not None:
    sources["corpus"] = corpus_dir
sources
"""),
        md("""
## Estimate against recorded, request by request
"""),
        code("""
rows = []
for source, folder in sources.items():
    for file in iter_session_files(folder):
        session = read_session(file)
        for method in methods:
            timeline = replay(
                session, "none", window=10**9, triggers=(), counter=TokenCounter(method)
            ).timeline
            recorded = timeline.dropna(subset=["recorded_tokens"])
            for request, estimate, billed in zip(
                recorded["request"],
                recorded["context_tokens"],
                recorded["recorded_tokens"],
                strict=True,
            ):
                rows.append(
                    {
                        "source": source,
                        "session": file.name,
                        "method": method,
                        "request": int(request),
                        "estimate": int(estimate),
                        "recorded": int(billed),
                    }
                )
points = pd.DataFrame(rows)
points.groupby(["source", "method"]).size().unstack("method")
"""),
        code("""
assert not points.empty, "no recorded usage found"
assert set(points["method"]) == set(methods)
assert (points["recorded"] > 0).all()
"""),
        md("""
## Error per method

`ratio` is recorded / estimate (median); `abs_error` the median of |estimate − recorded| /
recorded. After the fit, `residual` is the same error once scale and overhead are taken out.
"""),
        code("""
def accuracy(group):
    x = group["estimate"].to_numpy(float)
    y = group["recorded"].to_numpy(float)
    slope, intercept = (
        np.polyfit(x, y, 1) if len(x) > 1 and np.ptp(x) > 0 else (float("nan"), float("nan"))
    )
    fitted = slope * x + intercept
    return pd.Series(
        {
            "requests": len(x),
            "ratio": float(np.median(y / np.maximum(x, 1))),
            "abs_error": float(np.median(np.abs(x - y) / y)),
            "slope": float(slope),
            "intercept": float(intercept),
            "r": float(np.corrcoef(x, y)[0, 1]) if len(x) > 1 and np.ptp(x) > 0 else float("nan"),
            "residual": float(np.median(np.abs(fitted - y) / y)),
        }
    )


table = points.groupby(["source", "method"])[["estimate", "recorded"]].apply(accuracy)
table.round(3)
"""),
        code("""
sample = table.loc["sample"]
assert set(sample.index) == set(methods)
# Every estimator tracks the billed context closely once the fixed overhead is fitted...
assert (sample["r"] > 0.9).all(), sample["r"]
# ...and the fit explains most of the raw error.
assert (sample["residual"] <= sample["abs_error"] + 1e-9).all()
"""),
        code("""
import matplotlib.pyplot as plt

fig, axes = plt.subplots(
    1, len(sources), figsize=(6 * len(sources), 4.5), squeeze=False, layout="constrained"
)
for ax, (source, group) in zip(axes[0], points.groupby("source", sort=False), strict=False):
    for method, part in group.groupby("method"):
        ax.scatter(part["estimate"], part["recorded"], s=6, label=method, alpha=0.6)
    top = max(group["estimate"].max(), group["recorded"].max())
    ax.plot([0, top], [0, top], color="black", lw=0.8, ls="--", label="recorded = estimate")
    ax.set_title(f"{source}: estimate vs recorded prompt tokens")
    ax.set_xlabel("estimated context (tokens)")
    ax.set_ylabel("recorded prompt tokens")
    ax.legend(fontsize=8)
"""),
    ],
)

NOTEBOOKS = (NB01, NB02, NB03, NB04, NB05)


def build(spec: Notebook) -> nbformat.NotebookNode:
    """The notebook of a spec: no outputs, stable ids, the first code cell tagged."""
    slug = spec.name.split("-")[0]
    cells = []
    tagged = False
    for index, (kind, source) in enumerate(spec.cells):
        cell_id = f"nb{slug}-{index:02d}"
        if kind == "markdown":
            cells.append(new_markdown_cell(source, id=cell_id))
            continue
        cell = new_code_cell(source, id=cell_id)
        if not tagged:
            cell.metadata["tags"] = ["parameters"]
            tagged = True
        cells.append(cell)
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["musepi_lab"] = {
        "requires": {"modules": spec.modules, "strategies": spec.strategies}
    }
    nbformat.validate(nb)
    return nb


def write_all(folder: Path = HERE) -> list[Path]:
    """Write every notebook into `folder`; returns the paths."""
    written = []
    for spec in NOTEBOOKS:
        target = folder / spec.name
        target.write_text(nbformat.writes(build(spec)) + "\n", encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)

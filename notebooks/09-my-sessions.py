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
# ---

# %% [markdown]
# # 9 · My sessions: what my agents used and cost
#
# Researchers start with their own sessions. This notebook finds the sessions your agents
# keep on this machine (pi and MusePi, oh-my-pi, Claude Code, Codex: `discover_sessions`
# knows their folders and the environment variables that move them), falls back to the
# shared corpus or the bundled sample when there are none, and reports the usage the agents
# recorded: per day, per session and per 5-hour billing block, per model.
#
# Costs are the ones the harness recorded (pi and MusePi write `usage.cost`), else the tokens
# priced with the package's one price table (`musepi_lab.metrics.PRICES_SOURCE`,
# `PRICES_DATE`). A model without a price is listed, never priced with a default. Nothing is
# fetched. The same reports come from the command line:
#
# ```
# musepi-lab usage daily ~/.claude/projects ~/.codex/sessions
# musepi-lab usage blocks --json ~/.pi/agent/sessions
# ```
#
# Parameters: `own` (look for your own sessions first), `home` (the home folder to look in;
# empty: yours), `fallback` (a folder read when no own session is found: the corpus if it is
# there, else this), `max_sessions` (the newest this many files), `timezone` (for the days).

# %% tags=["parameters"]
own = True
home = ""
fallback = "datasets/sample"
max_sessions = 12
timezone = "UTC"

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from musepi_lab.analysis import billing_blocks, format_report, problems_of, usage_df, usage_report
from musepi_lab.datasets import discover_sessions, find_up
from musepi_lab.metrics import PRICES_DATE, PRICES_SOURCE

found = discover_sessions(home or None) if own else []
found = sorted(found, key=lambda s: s.modified, reverse=True)[:max_sessions]
if found:
    source = "your own sessions"
    paths = [s.path for s in found]
else:
    corpus = (
        Path(os.environ.get("MUSEPI_LAB_CORPUS", ""))
        if os.environ.get("MUSEPI_LAB_CORPUS")
        else None
    )
    folders = [corpus] if corpus is not None and corpus.is_dir() else []
    folders = [
        f / kind for f in folders for kind in ("claude-code", "codex", "pi") if (f / kind).is_dir()
    ]
    paths = folders or [find_up(fallback)]
    source = "the shared corpus" if folders else f"the bundled sample ({fallback})"
print(f"reading {source}: {len(paths)} path(s)")
print(f"prices as of {PRICES_DATE}: {PRICES_SOURCE}")

# %% [markdown]
# ## One row per billed request
#
# `usage_df` reads leniently: the problems travel on the frame (`problems_of`), each naming
# its file and line, and every valid request is kept.

# %%
requests = usage_df(paths)
problems = problems_of(requests)
print(
    f"{len(requests)} billed requests in {requests['session_id'].nunique()} sessions; "
    f"{len(problems)} read problems"
)
for problem in problems[:5]:
    print("  ", problem)
unpriced = requests.attrs["unpriced_models"]
print("models without a price:", ", ".join(unpriced) if unpriced else "none")
requests[
    [
        "session_id",
        "timestamp",
        "model",
        "input",
        "output",
        "cache_read",
        "cache_write",
        "cost",
        "cost_source",
    ]
].head()

# %%
assert len(requests) > 0, "no billed request found"
kinds = ["input", "output", "cache_read", "cache_write"]
assert (requests[kinds] >= 0).all().all()
assert (requests["total_tokens"] == requests[kinds].sum(axis=1)).all()
# A request whose session cost is the harness's own total (SWE-agent, OpenHands) has none.
costed = ~requests["cost_source"].isin(["unpriced", "harness"])
assert requests.loc[costed, "cost"].ge(0).all()
assert requests.loc[requests["cost_source"] == "unpriced", "cost"].isna().all()

# %% [markdown]
# ## Per day, per session, per billing block

# %%
daily = usage_report(requests, "daily", timezone=timezone)
print(format_report(daily))

# %%
sessions = usage_report(requests, "session", per_model=False)
print(format_report(sessions.sort_values("cost", ascending=False).head(10)))

# %% [markdown]
# Billing blocks follow ccusage's rule: the first request opens a block at its hour; a request
# more than 5 hours after the block's start, or after the previous request, opens the next.

# %%
blocks = usage_report(requests, "blocks", per_model=False)
print(format_report(blocks))
starts = billing_blocks(requests["timestamp"])
span = requests["timestamp"] - starts
assert span.dropna().le(pd.Timedelta(hours=5)).all(), "a request lies outside its block"
assert (span.dropna() >= pd.Timedelta(0)).all()

# %%
for report in (daily, sessions, blocks):  # every report sums to the requests
    assert report["requests"].sum() == len(requests)
    for kind in kinds:
        assert report[kind].sum() == requests[kind].sum()
    assert abs(report["cost"].sum() - requests["cost"].sum()) < 1e-6

# %% [markdown]
# ## Plots: cost per day and model, tokens by kind

# %%
per_day = daily.pivot_table(
    index="key", columns="model", values="cost", aggfunc="sum", fill_value=0
)
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
per_day.plot.bar(stacked=True, ax=left)
left.set(title="Cost per day and model", xlabel="day", ylabel="USD")
left.legend(fontsize="small")
totals = requests[kinds].sum()
right.bar(totals.index, totals.to_numpy() / 1e6)
right.set(title="Tokens by kind", ylabel="million tokens")
fig.tight_layout()
assert abs(per_day.to_numpy().sum() - requests["cost"].sum()) < 1e-6

# %% [markdown]
# ## Live view
#
# `SessionExplorer(path, live=True)` follows a session file while an agent is still writing
# it: it reads only the bytes appended since the last look (a half-written last line waits
# for its newline; a truncated, rotated or atomically replaced file is read anew), and
# updates the tree, the context size against the model's window, where the next compaction
# would cut and the cost so far, within a second of each write. In a terminal:
# `musepi-lab watch PATH`.
#
# Here a writer thread plays the agent: it appends a pi session to a scratch file in
# pieces, the last one cut in the middle of a line.

# %%
import shutil
import tempfile
import threading
import time

from musepi_lab import read_session
from musepi_lab.analysis import live_summary
from musepi_lab.widgets import SessionExplorer

sample = find_up("datasets/sample") / "sample-0001.jsonl"
scratch = Path(tempfile.mkdtemp(prefix="musepi-live-")) / "running.jsonl"
data = sample.read_bytes()
first = data.index(b"\n", len(data) // 3) + 1
scratch.write_bytes(data[:first])

explorer = SessionExplorer(scratch, live=True, interval=0.2)
explorer


# %%
def agent_writes(cut: int) -> None:
    with open(scratch, "ab") as out:
        for start in range(first, cut, 4096):
            out.write(data[start : min(start + 4096, cut)])
            out.flush()
            time.sleep(0.01)


middle = data.index(b"\n", 2 * len(data) // 3) + 1 + 40  # 40 bytes into a line
writer = threading.Thread(target=agent_writes, args=(middle,))
writer.start()
writer.join()
deadline = time.monotonic() + 5
while explorer.live_summary.entries < len(read_session(scratch).entries):
    assert time.monotonic() < deadline, "the live view did not catch up"
    time.sleep(0.05)
summary = explorer.live_summary
print(summary.line())

# %% [markdown]
# What the view shows equals a full read of the same bytes (the half line aside, which the
# view holds as pending and a full read reports as a truncated line).

# %%
complete = scratch.with_name("complete.jsonl")
complete.write_bytes(data[: data.rindex(b"\n", 0, middle) + 1])
full = live_summary(read_session(complete))
assert (summary.entries, summary.leaf_id) == (full.entries, full.leaf_id)
assert summary.context_tokens == full.context_tokens
assert abs(summary.cost_usd - full.cost_usd) < 1e-9
assert (summary.cut_entry_id, summary.tokens_to_threshold) == (
    full.cut_entry_id,
    full.tokens_to_threshold,
)
assert summary.pending_bytes == 40
explorer.stop()
shutil.rmtree(scratch.parent)

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
#       - ipywidgets
# ---

# %% [markdown]
# # 3 · Comparing strategies on one session
#
# Every strategy gets the same session, settings and token counter and returns a
# `CompactionResult`; here they run at several keep-recent budgets and are compared on what
# they leave (tokens after) and what they keep (facts of the part summarized away). Then one
# strategy is replayed over the whole session under a context window.
#
# Parameters: `session_file`, `strategies`, `budgets`, `window` (for the replay),
# `replay_strategy`.

# %% tags=["parameters"]
session_file = "datasets/sample/sample-0001.jsonl"
strategies = ["truncate", "observation-masking", "extractive", "none"]
budgets = [4000, 8000, 16000]
window = 64000
replay_strategy = "extractive"

# %%
import pandas as pd

from musepi_lab.compaction import CompactionSettings
from musepi_lab.context import build_session_context
from musepi_lab.datasets import find_up
from musepi_lab.formats import read_session
from musepi_lab.strategies import available, compact
from musepi_lab.tokens import TokenCounter

session = read_session(find_up(session_file))
print("available:", ", ".join(available()))
assert strategies, "no strategy to compare"

# %% [markdown]
# ## One compaction per strategy and budget
#
# `compact(session, name, settings=...)` runs the engine's preparation and the strategy; the
# session itself never changes. `tokens_after` is the context the model would see after the
# compaction (the context before it is `context_before`).

# %%
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

# %%
assert len(plain) == len(strategies) * len(budgets)
done = plain.dropna(subset=["tokens_after"])
assert (done["tokens_after"] <= context_before).all(), "no strategy grows the context"

# %% [markdown]
# ## Side by side, with fact retention
#
# `StrategyComparer` runs the same grid with a progress bar and scores each cell the way the
# benchmark does: the share of the facts of the summarized part (planted facts for the
# generated sample) still present in the new context. The summaries appear side by side.

# %%
from musepi_lab.widgets import StrategyComparer

comparer = StrategyComparer(session, strategies=strategies, budgets=budgets, counter=counter)
frame = comparer.run()
comparer

# %%
assert set(comparer.results) == {(s, b) for s in strategies for b in budgets}
assert not comparer.errors, comparer.errors
if "none" in strategies:
    none = frame[frame["strategy"] == "none"]
    assert (none["tokens_after"] == none["tokens_before"]).all()
    assert (none["fact_retention"].dropna() == 1.0).all()
frame[["strategy", "budget", "tokens_after", "token_reduction", "fact_retention"]]

# %%
from musepi_lab.plot import plot_strategy_comparison

ax = plot_strategy_comparison(frame)

# %% [markdown]
# ## Replay: the whole session under a window
#
# `replay_session` walks the session forward as the agent lived it and compacts where MusePi's
# triggers fire; the timeline shows the context of every request, the window, the threshold
# and each compaction.

# %%
from musepi_lab.plot import plot_context_timeline
from musepi_lab.replay import replay_session

replayed = replay_session(session, replay_strategy, window=window)
ax = plot_context_timeline(replayed)
replayed

# %%
assert len(replayed.timeline) > 0
# Either something fired, or the context never needed it.
assert replayed.compactions >= 1 or replayed.timeline["agent_tokens"].max() <= replayed.threshold
for event in replayed.events:
    assert event.tokens_after < event.tokens_before

# %% [markdown]
# ## What the context holds
#
# The same comparison by kind: system/tools, user, assistant text, thinking, tool calls,
# tool results, summaries and images, before compacting and after each model-free strategy
# at one budget, then along the replay above (its compactions show up as summaries).

# %%
from musepi_lab.analysis import context_composition_df, replay_composition_df
from musepi_lab.plot import plot_context_composition

composition = context_composition_df(session, budget=sorted(budgets)[0], counter=counter)
ax = plot_context_composition(composition)

# %%
along = replay_composition_df(replayed, counter=counter, max_requests=60)
ax = plot_context_composition(along)

# %%
totals = composition.groupby(["stage", "strategy"], observed=True)["tokens"].sum()
before_total = totals[("before", "")]
assert before_total == counter.count_messages(build_session_context(session).messages)
assert totals[("after", "none")] == before_total  # `none` changes nothing
assert len(along) > 0

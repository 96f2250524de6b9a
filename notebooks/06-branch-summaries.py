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
# # 6 · Branch summaries on tree navigation
#
# Leaving a branch of the session tree (the agent's `/tree`) abandons the entries from the
# old leaf back to the common ancestor. MusePi can summarize them and attach a
# `branch_summary` entry where the leaf moves to, so the returning context still knows what
# was tried. This notebook navigates a session with real branches, summarizes with a model
# (a loopback stub by default; any OpenAI-compatible endpoint by parameter), shows the
# context before and after, and measures what each branch-summary strategy brings back.
#
# Parameters: `session_file`, `endpoint` (None: the loopback stub), `model`, `profile`,
# `generated_sessions` and `forks` (the branch bench's generated data).

# %% tags=["parameters"]
session_file = "datasets/sample/sample-0001.jsonl"
endpoint = None
model = "stub-model"
profile = "musepi"
generated_sessions = 2
forks = 3

# %%
import pandas as pd

from musepi_lab.bench import BranchCase, branch_table, run_branch_bench
from musepi_lab.context import build_session_context
from musepi_lab.datasets import find_up, generate_branch_session
from musepi_lab.formats import read_session
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.navigation import navigate_tree
from musepi_lab.plot import plot_tree
from musepi_lab.testing import StubOpenAIServer

stub = StubOpenAIServer().start() if endpoint is None else None
summarizer = OpenAICompatibleSummarizer(
    model=model, base_url=stub.base_url if stub is not None else endpoint
)
session = read_session(find_up(session_file))
session

# %% [markdown]
# ## The tree and a branch to go back to
#
# The active path is bold; branches fan out below it. We navigate from the session leaf to
# the tip of the first branch off the active path.

# %%
main = {e.id for e in session.path()}
target = next(leaf.id for leaf in session.leaves if leaf.id not in main)
ax = plot_tree(session)
target

# %%
assert target not in main

# %% [markdown]
# ## The context before
#
# What the model sees at the session leaf, one row per message.


# %%
def context_frame(s):
    ctx = build_session_context(s, profile=profile)
    return pd.DataFrame(
        {
            "role": [m.get("role") for m in ctx.messages],
            "entry": list(ctx.entry_ids),
            "text": [str(m.get("content") or m.get("summary") or "")[:80] for m in ctx.messages],
        }
    )


before = context_frame(session)
before.tail(8)

# %% [markdown]
# ## Navigate, summarizing what is left behind
#
# The abandoned entries, the token budget of the summary request, the messages prepared
# within it, and the summary the model wrote (with the file operations appended).

# %%
result = navigate_tree(session, target, summarize=True, summarizer=summarizer, profile=profile)
print(f"{len(result.abandoned)} entries abandoned; budget {result.budget:,} tokens; ")
print(f"{len(result.preparation.messages)} messages prepared; new leaf {result.new_leaf_id}")
print(result.summary.summary)

# %%
expected = [e.id for e in session.path() if e.id not in {x.id for x in session.path(target)}]
assert [e.id for e in result.abandoned] == expected
assert result.summary_entry.parent_id == result.new_leaf_id

# %% [markdown]
# ## The context after
#
# The returning context ends with the branch summary, rendered for the model.

# %%
after = context_frame(result.session)
after.tail(8)

# %%
assert after["role"].iloc[-1] == "branchSummary"
assert result.summary.summary.startswith(after["text"].iloc[-1][:40])

# %%
ax = plot_tree(result.session)

# %% [markdown]
# ## What each strategy brings back
#
# Generated sessions with nested branches hold planted facts (a file read, a command, its
# error, a helper named by the user) on every abandoned side; the trunk later needs them.
# From every branch leaf we navigate back to the trunk with each strategy and count the
# planted facts in the returning context. `none` is the floor (0 by construction); with the
# stub, `llm` measures the plumbing (file lists), not a model's quality.

# %%
cases = [
    BranchCase(f"generated-{seed}", made.session, made.facts)
    for seed in range(generated_sessions)
    for made in [generate_branch_session(seed, forks=forks)]
]
frame = run_branch_bench(cases, summarizer=summarizer, profile=profile)
table = branch_table(frame)
table.round(3)

# %%
assert set(table.index) == {"llm", "extractive", "none"}
assert table.loc["none", "facts_kept"] == 0

# %% [markdown]
# ## Explore and navigate interactively
#
# Pick a branch and an entry, then "preview: navigate here" (what would be abandoned) or
# "navigate here" (the summary and the resulting tree). The explorer opens on the branch tip
# we navigated to above. (The loopback stub keeps serving it while the kernel runs.)

# %%
from musepi_lab.widgets import SessionExplorer

explorer = SessionExplorer(session, summarizer=summarizer, profile=profile)
explorer.select(target)
explorer

# %%
assert explorer.selected_entry.id == target

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
# # 2 · The entry tree and cut points
#
# A session is a tree of entries: the active path from the root to the leaf, and branches.
# `plot_tree` draws it; `prepare_compaction` decides where a compaction would cut for a given
# keep-recent budget; `CutPointExplorer` moves the budget live.
#
# Parameters: `session_file`, `keep_recent_tokens` (budgets to sweep), `window`, `profile`.

# %% tags=["parameters"]
session_file = "datasets/sample/sample-0001.jsonl"
keep_recent_tokens = [2000, 8000, 20000]
window = 128000
profile = "musepi"

# %%
import pandas as pd

from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.datasets import find_up
from musepi_lab.formats import read_session
from musepi_lab.plot import plot_tree
from musepi_lab.tokens import TokenCounter

session = read_session(find_up(session_file))
counter = TokenCounter("pi" if profile == "pi" else "musepi")
session

# %% [markdown]
# ## The tree
#
# Colours are entry kinds, the active path is bold, branches fan out below it, compactions
# (diamonds) point at their first kept entry, and the bars underneath are tokens per node.

# %%
ax = plot_tree(session, counter=counter)

# %%
assert ax.get_title().startswith(session.id)
assert len(ax.collections) > 0  # nodes were drawn

# %% [markdown]
# ## Where would a compaction cut?
#
# A smaller keep-recent budget keeps less, so the cut moves later along the path. When the
# cut falls inside a turn, the turn's start is summarized separately (a *split turn*).

# %%
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

# %%
indices = [i for i in cuts["cut_index"] if i is not None and i == i]
assert indices == sorted(indices, reverse=True), "a larger budget never cuts later"
path_ids = {e.id for e in session.path()}
for prep in preparations.values():
    if prep is not None:
        assert prep.first_kept_entry_id in path_ids

# %%
budget = sorted(keep_recent_tokens)[len(keep_recent_tokens) // 2]
ax = plot_tree(
    session,
    cut=preparations[budget],
    counter=counter,
    title=f"cut at keep_recent_tokens={budget:,}",
)

# %% [markdown]
# ## Explore the cut live
#
# Move *keep recent* and the cut moves; *reserve* and *window* set the threshold shown on the
# token bar; switch the profile or the token method.

# %%
from musepi_lab.widgets import CutPointExplorer

explorer = CutPointExplorer(
    session, window=window, settings=CompactionSettings.for_profile(profile)
)
explorer.keep_slider.value = sorted(keep_recent_tokens)[0]
explorer

# %%
expected = preparations[sorted(keep_recent_tokens)[0]]
assert (explorer.preparation is None) == (expected is None)
if expected is not None:
    assert explorer.preparation.first_kept_entry_id == expected.first_kept_entry_id
    assert ("split turn" in explorer.cut_view.value) == expected.is_split_turn
assert explorer.png is not None and explorer.png.startswith(b"\x89PNG")

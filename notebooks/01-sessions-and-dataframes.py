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
#       - pandas
#       - ipywidgets
# ---

# %% [markdown]
# # 1 · Sessions and DataFrames
#
# Load a folder of agent sessions into pandas: one frame per kind of thing (sessions, entries,
# messages, tool calls, compactions), joinable on `session_id` and `entry_id`. Then browse one
# session with `SessionExplorer`.
#
# Parameters: `dataset` (a folder or file of sessions, any supported format) and
# `token_method` (`pi`, `musepi`, `o200k_base`, `cl100k_base`).

# %% tags=["parameters"]
dataset = "datasets/sample"
token_method = "pi"

# %%
from pathlib import Path

from musepi_lab.analysis import (
    compactions_df,
    entries_df,
    load_sessions,
    messages_df,
    sessions_df,
    tool_calls_df,
)
from musepi_lab.datasets import find_up
from musepi_lab.tokens import TokenCounter

dataset_dir = find_up(dataset)
counter = TokenCounter(token_method)  # shared: every frame reuses its per-entry counts
dataset_dir

# %% [markdown]
# ## Sessions
#
# `load_sessions` reads leniently: problems come back beside the sessions, each naming its
# file and line, and every valid record is kept.

# %%
sessions, problems = load_sessions(dataset_dir)
sessions_frame = sessions_df(sessions, counter=counter)
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

# %%
assert len(sessions_frame) == len(sessions) > 0
assert sessions_frame["entries"].sum() == sum(len(s.entries) for s in sessions)
# Independent count for pi JSONL files: one entry per line after the header.
for s in sessions:
    if s.source_format == "pi" and s.source_path and not s.errors:
        lines = Path(s.source_path).read_text(encoding="utf-8").splitlines()
        assert len(s.entries) == len(lines) - 1, s.source_path

# %% [markdown]
# ## Entries and messages
#
# `entries_df` has every entry (metadata too); `messages_df` only those that put a message in
# the model's context, with their text, tokens and recorded usage.

# %%
entries = entries_df(sessions, counter=counter)
messages = messages_df(sessions, counter=counter)
by_role = messages.groupby("role", dropna=False)["tokens"].agg(["count", "sum", "median"])
by_role.sort_values("sum", ascending=False)

# %%
entries["type"].value_counts()

# %%
assert len(entries) == sessions_frame["entries"].sum()
assert set(messages["entry_id"]) <= set(entries["entry_id"])
assert messages["tokens"].sum() > 0
# Message counts agree between the two frames.
per_session = messages.groupby("session_id").size()
assert (
    per_session.reindex(sessions_frame["session_id"]).fillna(0).to_numpy()
    == sessions_frame["messages"].to_numpy()
).all()

# %% [markdown]
# ## Tool calls
#
# One row per call, joined to its result; `useless` marks results a pruner could drop.

# %%
calls = tool_calls_df(sessions, counter=counter)
calls.groupby("tool_name").agg(
    calls=("call_id", "size"), result_tokens=("result_tokens", "sum"), errors=("is_error", "sum")
).sort_values("calls", ascending=False)

# %%
answered = calls[calls["has_result"].fillna(False).astype(bool)]
assert answered["result_entry_id"].isin(entries["entry_id"]).all()
assert len(calls) == sessions_frame["tool_calls"].sum()

# %% [markdown]
# ## Compactions
#
# Each compaction entry with its first kept entry; joined back to the entries frame to see
# where each one cut.

# %%
compactions = compactions_df(sessions, counter=counter)
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

# %%
assert len(compactions) == sessions_frame["compactions"].sum()
# Every first kept entry is an entry of its session.
assert kept["kept_type"].notna().all()

# %% [markdown]
# ## Browse one session
#
# Pick a file, a branch (leaf) and an entry: the explorer shows its content, its tokens and
# what the LLM would see if the session ended there.

# %%
from musepi_lab.widgets import SessionExplorer

explorer = SessionExplorer(dataset_dir, counter=TokenCounter(token_method))
explorer

# %%
assert explorer.session.id in set(sessions_frame["header_id"])
assert explorer.selected_entry is not None and explorer.context is not None

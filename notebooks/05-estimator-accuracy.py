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
#       - tiktoken
# ---

# %% [markdown]
# # 5 · Estimator accuracy against recorded usage
#
# Compaction triggers compare a context size with a threshold, and between provider replies
# that size is an *estimate*. How good are the estimators? For every request whose provider
# usage was recorded (and up to the first compaction, where the recorded context is still
# the one replayed), compare the estimated context (`replay` with strategy `none`, so nothing
# changes) with the prompt tokens the provider billed (`input + cacheRead + cacheWrite`).
#
# The recorded number includes the system prompt and tool definitions, which are not in the
# session file: a linear fit `recorded ≈ slope · estimate + intercept` separates the
# tokenizer's scale (slope) from that fixed overhead (intercept).
#
# Parameters: `dataset` (the bundled sample), `corpus` (a folder of real pi sessions;
# empty: the shared corpus's `pi` folder, `../shared/corpus/pi` or `$MUSEPI_LAB_CORPUS/pi`,
# when present), `methods`.

# %% tags=["parameters"]
dataset = "datasets/sample"
corpus = ""
methods = ["pi", "musepi", "o200k_base"]

# %%
import numpy as np
import pandas as pd

from musepi_lab.datasets import corpus_path, find_up
from musepi_lab.formats import iter_session_files, read_session
from musepi_lab.replay import replay
from musepi_lab.tokens import TokenCounter

sources = {"sample": find_up(dataset)}
corpus_dir = find_up(corpus) if corpus else corpus_path("pi")
if corpus_dir is not None:
    sources["corpus"] = corpus_dir
sources

# %% [markdown]
# ## Estimate against recorded, request by request

# %%
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

# %%
assert not points.empty, "no recorded usage found"
assert set(points["method"]) == set(methods)
assert (points["recorded"] > 0).all()


# %% [markdown]
# ## Error per method
#
# `ratio` is recorded / estimate (median); `abs_error` the median of |estimate − recorded| /
# recorded. After the fit, `residual` is the same error once scale and overhead are taken out.


# %%
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

# %%
sample = table.loc["sample"]
assert set(sample.index) == set(methods)
# Every estimator tracks the billed context closely once the fixed overhead is fitted...
assert (sample["r"] > 0.9).all(), sample["r"]
# ...and the fit explains most of the raw error.
assert (sample["residual"] <= sample["abs_error"] + 1e-9).all()

# %%
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

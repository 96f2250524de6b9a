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
# when present), `methods`, `judge_corpus` (fit and judge the replay's calibration on the
# shared corpus when present).

# %% tags=["parameters"]
dataset = "datasets/sample"
corpus = ""
methods = ["pi", "musepi", "o200k_base"]
judge_corpus = True

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

# %% [markdown]
# ## Calibration: fitted by source, judged on the sources it never saw
#
# `replay` bills every request under its provider's documented prompt-cache rules
# (Anthropic: 5-minute or 1-hour TTL as each reply recorded its writes, writes at their own
# price; OpenAI: automatic 128-token prefix caching, no write charge; gaps from the recorded
# timestamps). A session is billed as the sum of its request streams: its main path, inline
# sidechains, linked subagent sessions (each with its own harness prefix) and, under the
# `recorded` strategy, the agent's own compaction runs. Where a reply carries usage its
# output tokens are the recorded ones, under every strategy.
#
# What the rules leave open is each stream's *line*: its system prompt and its token ratio
# (provider tokens per counter token). The family fit (`replay.calibrate`) gives the prior:
# a ratio per tokenizer family, a system prompt and warm prefix per harness, stream kind and
# version, their spreads between sessions, the scatter of requests around a session's line,
# the providers' unpredicted misses and hits. Each stream then estimates its own line from
# its recorded requests.
#
# The judgement is by source (the upstream repository or user, from each corpus folder's
# `PROVENANCE.md`): for each source, the prior is fitted on every *other* source, and each of
# its sessions is replayed under `recorded` twice: on the family fit alone (the **rules
# bill**) and on each stream's own line learned request by request, request k from the
# requests before it (the **calibrated bill**, the expected value of a distribution whose
# 90% interval and PIT value, the share of simulated bills at or below the recorded one, are
# reported). The package's defaults (`replay.DEFAULT_CALIBRATION`) are the fit on every
# source; `perf/calibration_judge.py --write-defaults` refits them and a test holds them equal.
#
# Parameters: `judge_corpus` (run this section on the shared corpus when present).

# %%
from musepi_lab.replay import (
    CALIBRATION_SPLIT,
    DEFAULT_CALIBRATION,
    REQUEST_CLASSES,
    judge_sources,
    read_split,
)

corpus_root = corpus_path() if judge_corpus else None
manifest = pd.DataFrame(
    [(e.source, e.path, e.why) for e in CALIBRATION_SPLIT], columns=["source", "file", "why"]
)
manifest.groupby("source").size().rename("sessions").to_frame()

# %%
pd.Series(DEFAULT_CALIBRATION.parameters()).round(4)

# %%
requests = sessions_judged = None
if corpus_root is not None:
    entries = read_split(corpus_root)
    requests, sessions_judged = judge_sources(entries)
    sessions_judged["harness"] = [str(i).split("/")[0] for i in sessions_judged.index]
    requests["harness"] = requests["session"].str.split("/").str[0]
    assert not set(sessions_judged["session_id"]) - {e.session_id for e in CALIBRATION_SPLIT}
    assert (sessions_judged["judged_requests"] <= sessions_judged["recorded_requests"]).all()
"corpus not found: nothing judged" if requests is None else f"{len(requests)} requests judged"

# %% [markdown]
# ## Every judged session: the rules bill, the calibrated bill, which is closer
#
# `recorded_requests` counts the session's recorded requests (main path, sidechains,
# subagents, compaction runs), `judged_requests` those billed and compared; any other is
# named in `left_out` with its reason.

# %%
columns = [
    "source", "recorded_requests", "judged_requests", "left_out", "recorded_cost_usd",
    "rules_cost_usd", "calibrated_cost_usd", "closer", "cost_low", "cost_high", "inside",
    "pit", "documented_cost_error_median", "rules_cost_error_median",
]  # fmt: skip
sessions_judged[columns].round(4) if sessions_judged is not None else None

# %% [markdown]
# ## Per harness: the targets' figures
#
# The median per-request |error| of the documented-rule requests (the replay and the record
# agree on whether most of the prompt was read from cache; targets: at most 3% for Claude
# Code and pi, 8% for Codex), the share of sessions whose calibrated bill is closer than the
# rules bill (target 80%), and whose 90% interval holds the recorded bill (target 85%).

# %%
harnesses = None
if requests is not None:
    rows = []
    for harness, part in requests.groupby("harness"):
        judged = sessions_judged[sessions_judged["harness"] == harness]
        documented = part[part["request_class"] == "documented"]
        rows.append(
            {
                "harness": harness,
                "sessions": len(judged),
                "requests": len(part),
                "documented": len(documented),
                "error_median": documented["cost_error"].abs().median(),
                "rules_error_median": documented["rules_cost_error"].abs().median(),
                "calibrated_closer": (judged["closer"] == "calibrated").mean(),
                "inside": judged["inside"].mean(),
                "covered": judged["judged_requests"].sum() / judged["recorded_requests"].sum(),
            }
        )
    harnesses = pd.DataFrame(rows).set_index("harness")
harnesses.round(3) if harnesses is not None else None

# %%
if requests is not None:
    assert set(requests["request_class"]) <= set(REQUEST_CLASSES)
    assert ((sessions_judged["pit"] >= 0) & (sessions_judged["pit"] <= 1)).all()
    assert (sessions_judged["cost_low"] <= sessions_judged["cost_high"]).all()

# %% [markdown]
# ## PIT values and per-request errors
#
# A calibrated interval puts the recorded bill anywhere in its distribution: the PIT values
# of the judged sessions should spread over [0, 1], not pile at its ends (piled low: the
# bills are overestimated; high: underestimated).

# %%
if requests is not None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    axes[0].hist(sessions_judged["pit"], bins=10, range=(0, 1), edgecolor="black")
    axes[0].set_title(f"PIT of the recorded bill, {len(sessions_judged)} judged sessions")
    axes[0].set_xlabel("share of simulated bills at or below the recorded bill")
    for harness, part in requests[requests["request_class"] == "documented"].groupby("harness"):
        errors = part["cost_error"].dropna().clip(-0.5, 0.5)
        axes[1].hist(errors, bins=40, alpha=0.5, label=f"{harness} ({len(errors)})")
    axes[1].axvline(0, color="black", lw=0.8)
    axes[1].set_title("documented-rule requests: calibrated / recorded cost - 1")
    axes[1].set_xlabel("relative error (clipped to ±50%)")
    axes[1].legend(fontsize=8)

# %%
if sessions_judged is not None:
    fig, ax = plt.subplots(figsize=(9, 7), layout="constrained")
    scale = sessions_judged["recorded_cost_usd"]
    y = range(len(sessions_judged))
    ax.errorbar(
        sessions_judged["calibrated_cost_usd"] / scale,
        y,
        xerr=[
            (sessions_judged["calibrated_cost_usd"] - sessions_judged["cost_low"]) / scale,
            (sessions_judged["cost_high"] - sessions_judged["calibrated_cost_usd"]) / scale,
        ],
        fmt="o",
        label="calibrated bill, 90% interval",
    )
    ax.scatter(sessions_judged["rules_cost_usd"] / scale, y, marker="x", label="rules bill")
    ax.axvline(1.0, color="red", lw=0.8, label="recorded")
    ax.set_yticks(list(y), [str(i)[:40] for i in sessions_judged.index], fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("bill / recorded bill")
    ax.legend(fontsize=8)

# %% [markdown]
# ## What these figures can and cannot show
#
# Measured when this section was written (`python perf/calibration_judge.py`: 31 sessions of
# 9 sources, 2,311 recorded requests, every one judged; leave one source out):
#
# | harness | sessions | median per-request error, documented (target) | rules' | calibrated closer | intervals holding |
# |---|---|---|---|---|---|
# | Claude Code | 11 | 1.4% (≤ 3%) | 16.9% | 7 of 11 | 10 of 11 |
# | Codex | 13 | 5.2% (≤ 8%) | 24.3% | 9 of 13 | 13 of 13 |
# | pi | 6 | 2.4% (≤ 3%) | 9.4% | 5 of 6 | 2 of 6 |
# | Gemini CLI | 1 | 6.8% | 67.6% | 1 of 1 | 0 of 1 |
#
# The per-request targets hold. The calibrated bill is closer than the rules bill on 22 of
# 31 sessions (71%, target 80%): 4 are ties (a single request, before which the session has
# recorded nothing to learn from), and it loses on 5, among them pi/before-compaction
# ($38.75 against the rules' $40.67, recorded $42.60) and four sessions of a few requests
# where the rules' prior happens to be nearer. The intervals hold 25 of 31 recorded bills
# (81%, target 85%), with PIT values spread but heavy at both ends. The misses carry the
# error: pi/large-session's provider served 30 of its 428 cached requests as full rewrites
# ($13.1 of its $30.3, against $1.1 the rules expect for them), which no other source's
# sessions do (the fit a judged source never sees gives Claude Code under 1%), and
# pi/before-compaction's 9 misses likewise; the tiny sessions of a harness version no other
# source recorded (Codex 0.40 to 0.42, Claude Code 2.1's one-request session, pi on OpenAI,
# Gemini CLI) start from another version's system prompt and, with one to three requests,
# have almost nothing of their own to learn from. With 9 sources, most of them one harness
# and a few sessions, the figures say where the error lives, not how the next folder fares.

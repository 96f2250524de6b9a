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
# the one replayed), compare the estimated context (`replay_session` with strategy `none`, so nothing
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
from musepi_lab.replay import replay_session
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
            timeline = replay_session(
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
# `replay_session` bills every request under its provider's documented prompt-cache rules
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
# | Claude Code | 11 | 1.4% (≤ 3%) | 16.9% | 8 of 11 | 10 of 11 |
# | Codex | 13 | 5.2% (≤ 8%) | 24.3% | 13 of 13 | 13 of 13 |
# | pi | 6 | 2.4% (≤ 3%) | 9.4% | 5 of 6 | 4 of 6 |
# | Gemini CLI | 1 | 6.8% | 67.6% | 1 of 1 | 0 of 1 |
#
# The calibrated bill is closer than the rules bill on 27 of 31 sessions (87%, target 80%)
# and the 90% intervals hold 27 of 31 recorded bills (87%, target 85%); the PIT values, in
# deciles, are [1, 3, 3, 5, 3, 3, 1, 4, 1, 7]. Where the calibrated bill loses: one tie
# (claude-code/spotter_short, a single request of a Claude Code version no other source
# recorded: nothing before it to learn from, and its provider missed the warm prefix) and
# three sessions the rules bill is nearer: pi/before-compaction ($39.13 against the rules'
# $40.67, recorded $42.60: its 9 misses no rule predicts come after 174 requests that all
# read their cache, so a rate learned request by request has fallen by then; the rules'
# overestimate of the other requests, +$3.7, happens to offset them),
# claude-code/1af7fc5e ($0.069 against $0.070, recorded $0.093) and claude-code/agtrace
# ($0.067 against $0.061, recorded $0.060), of 7 and 6 requests. The intervals miss
# four: spotter_short (PIT 1.00), Gemini CLI's one session (0.98), elithrar's 14-request
# pi session (0.96: one miss costs a quarter of its bill) and earendil's 3-request fixture
# (0.01: prompts of 10 to 45 tokens, against the 3,325-token pi system prompt the other
# sources give it).
#
# Three changes behind these figures were **chosen after seeing the judged figures** of the
# first pass (22 of 31 closer, 25 of 31 intervals), from a profile of which sessions missed
# and which requests carried the error; none is fitted on a judged session (every
# parameter is still fitted leave one source out):
#
# - the two pi sessions of badlogic/pi-mono missed because with that source out no fitted
#   stream is pi on Anthropic, the family's rate came from Claude Code (0.5%) and the
#   concentration fitted to 10,000, so a stream missing 7% learned nothing; a harness the
#   fit never saw now takes the concentration of the harness keys around their family
#   (`CacheModel.key_concentration`: a beta-binomial over keys, under the hyperprior
#   `k^-1.5` of Gelman et al.'s `(a + b)^-5/2`: over two to four keys the likelihood alone
#   is flat up to an infinite concentration);
# - a causal judgement's draws took each request's miss rate as its posterior mean; they
#   now carry the posterior's uncertainty (one mean-one factor per draw, as the
#   whole-stream draws do), the expected bill unchanged;
# - the first request of all 9 Codex sessions of Python-AI-Solutions (and of agtrace's),
#   and of 3 of 10 Claude Code subagents, read its system prompt from a cache another
#   session or sibling wrote (the provider caches by prefix, across sessions), which the
#   rules bill (that version's warm prefix unknown) as a write of the whole of it;
#   a stream's first request the rules bill as a miss is now a candidate for an
#   unpredicted hit at the stream's hit rate (fitted on the other sources, first requests
#   included), and a drawn hit's saving is on the drawn line, so no drawn bill is negative.
#
# Tried and measured, not kept: counting the cached prefix at each request's new line
# (the prefix's system prompt, or all of it) lowers the per-request error (pi 2.4% to
# 1.2%, Codex 5.2% to 4.6%) but the bills fall below the record on the sessions whose
# first requests the prior underestimates (27 to 22 intervals holding): the write the
# prior missed at request 0 is in fact paid once, which the stale prefix bills at the next
# request; a log-normal line factor (same mean and variance) instead of the clipped normal
# one: 19 of 31 intervals. With 9 sources, most of them one harness and a few sessions,
# the figures say where the error lives, not how the next folder fares.

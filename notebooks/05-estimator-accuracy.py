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
# when present), `methods`, `calibration_formats` (the corpus folders replayed against their
# recorded bills; empty: none).

# %% tags=["parameters"]
dataset = "datasets/sample"
corpus = ""
methods = ["pi", "musepi", "o200k_base"]
calibration_formats = ["pi", "claude-code", "codex"]

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
# ## Replay against the recorded bill
#
# `replay` bills every request under its provider's prompt-cache model (Anthropic: 5-minute
# TTL, writes at their own price; OpenAI: automatic 128-token prefix caching, no write
# charge; gaps from the recorded timestamps), with the context in the provider's tokens and
# the harness's declared system prompt. Recorded usage is never an input: here it is what
# the replay is checked against. For every corpus session that records usage (pi, Claude
# Code, Codex), `none` replays the session as recorded; `recorded` also follows the
# compactions the agent itself made, so sessions that compacted are only comparable with it.
#
# Token errors are shares of the recorded prompt tokens (so Anthropic's few uncached input
# tokens do not dominate); the cost error is relative. The target is 5%. Codex sessions whose
# text the corpus redacts count each text from the length its marker keeps.
#
# Measured when this section was last updated (tokens: recorded / replayed; errors of cache
# read and cache write as shares of the recorded prompt, output and cost relative):
#
# | session | strategy | requests | cache read | cache write | output | cost | read | write | output | cost |
# |---|---|---|---|---|---|---|---|---|---|---|
# | cc/1af7fc5e-8455-4414-9cc | none | 7 | 103,219 / 100,633 | 12,698 / 12,178 | 953 / 1,388 | $0.09 / $0.10 | -2.2% | -0.4% | +45.6% | +3.8% |
# | cc/258c7280-ae70-4798-800 | none | 152 | 14,771,617 / 21,542,350 | 349,474 / 380,515 | 38,899 / 46,715 | $11.85 / $14.32 | +44.8% | +0.2% | +20.1% | +20.8% |
# | cc/258c7280-ae70-4798-800 | recorded | 152 | 14,771,617 / 14,828,472 | 349,474 / 248,767 | 38,899 / 46,715 | $11.85 / $10.14 | +0.4% | -0.7% | +20.1% | -14.5% |
# | cc/ae4a77f8-aedd-4bc1-888 | none | 217 | 16,553,628 / 20,450,958 | 237,121 / 265,025 | 49,467 / 58,929 | $5.32 / $8.35 | +23.2% | +0.2% | +19.1% | +57.1% |
# | cc/ae4a77f8-aedd-4bc1-888 | recorded | 217 | 16,553,628 / 13,906,336 | 237,121 / 181,120 | 49,467 / 58,929 | $5.32 / $4.56 | -15.8% | -0.3% | +19.1% | -14.3% |
# | cc/fa812bfe-b295-4cca-9c2 | none | 157 | 15,373,675 / 19,716,823 | 260,212 / 193,058 | 36,256 / 44,176 | $10.23 / $12.17 | +27.8% | -0.4% | +21.8% | +19.0% |
# | cc/fa812bfe-b295-4cca-9c2 | recorded | 157 | 15,373,675 / 15,558,086 | 260,212 / 198,321 | 36,256 / 44,176 | $10.23 / $10.12 | +1.2% | -0.4% | +21.8% | -1.0% |
# | cc/fe5e1c67-53e7-4862-81a | none | 9 | 161,313 / 157,882 | 6,672 / 18,841 | 2,636 / 4,212 | $0.11 / $0.18 | -2.0% | +7.2% | +59.8% | +58.8% |
# | cc/spotter_short | none | 1 | 11,515 / 17,800 | 13,835 / 8,014 | 13 / 138 | $0.14 / $0.06 | +24.8% | -23.0% | +961.5% | -56.8% |
# | cc/spotter_subagent | none | 12 | 427,286 / 457,852 | 25,842 / 29,322 | 1,586 / 5,625 | $0.52 / $0.55 | +6.7% | +0.8% | +254.7% | +6.4% |
# | cc/spotter_tool_heavy | none | 4 | 88,231 / 95,789 | 17,696 / 9,754 | 212 / 344 | $0.23 / $0.12 | +7.1% | -7.5% | +62.3% | -48.2% |
# | codex/2025-11-17T15-30 | none | 39 | 1,027,328 / 1,053,056 | 0 / 0 | 22,305 / 23,004 | $0.44 / $0.43 | +2.3% | +0.0% | +3.1% | -2.5% |
# | codex/2026-02-23T12-40 | none | 81 | 6,836,352 / 8,084,736 | 0 / 0 | 36,075 / 32,769 | $2.34 / $2.03 | +17.3% | +0.0% | -9.2% | -13.4% |
# | codex/2026-02-23T12-54 | none | 286 | 31,621,504 / 62,621,056 | 0 / 0 | 133,999 / 88,934 | $11.24 / $13.54 | +91.7% | +0.0% | -33.6% | +20.5% |
# | codex/2026-02-23T12-54 | recorded | 286 | 31,621,504 / 36,250,880 | 0 / 0 | 133,999 / 88,934 | $11.24 / $8.47 | +13.7% | +0.0% | -33.6% | -24.6% |
# | pi/before-compaction | none | 471 | 54,693,675 / 148,108,728 | 1,685,320 / 938,295 | 187,895 / 217,693 | $42.60 / $85.36 | +165.7% | -1.3% | +15.9% | +100.4% |
# | pi/before-compaction | recorded | 471 | 54,693,675 / 63,863,014 | 1,685,320 / 791,558 | 187,895 / 217,693 | $42.60 / $42.32 | +16.3% | -1.6% | +15.9% | -0.6% |
# | pi/prompt-cache-replay-session | none | 3 | 32 / 0 | 0 / 0 | 47 / 37 | $0.00 / $0.00 | -27.4% | +0.0% | -21.3% | +18.3% |
# | pi/large-session | none | 439 | 43,229,469 / 50,517,562 | 4,296,232 / 1,014,993 | 83,156 / 78,993 | $30.33 / $20.15 | +15.3% | -6.9% | -5.0% | -33.6% |
#
# What changed the figures (each a rule of the provider or the harness, never the record):
# Claude Code's 1-hour cache writes are kept apart (`cacheWrite1h`) and the recorded bill
# prices them at twice the input price (it priced them as 5-minute writes, so the recorded
# cost of 258c7280 and the spotter sessions was too low); Claude Code's static prefix (tools
# and fixed system text, 17,800 tokens in 2.x) is already cached when a session starts, as
# every Claude Code session in the corpus shows (`WARM_PREFIX_TOKENS`); a Codex response's
# items (reasoning, message, tool calls: one record each) are one request; OpenAI's hidden
# reasoning is output, counted from the encrypted reasoning's length, and input for the rest
# of its turn; a changed thinking level invalidates Anthropic's message cache. Before these:
# 1af7fc5e cost +21.2%, Codex 2025-11-17 cost -67.1% (output -90.5%), pi/large-session
# -40.8%.
#
# Within 5%: `none` on cc/1af7fc5e and codex/2025-11-17 (median prompt error 3.2% and 1.1%),
# `recorded` on cc/fa812bfe. What the model does not predict: the provider misses pi's whole
# cache on 30 new user turns of pi/large-session with the same model, thinking level and
# prefix, some 0 to 26 seconds after the reply of the request that cached it; Claude Code new
# turns that find only the system prompt cached (258c7280 at 2.5 minutes, spotter_tool_heavy);
# which TTL Claude Code asked for (the same author's sessions used 1-hour writes until
# 2026-02-11 and 5-minute writes from 2026-02-12: an account setting the transcript does not
# hold; `replay(cache="anthropic-1h")` when known); a session's first request finding the
# previous session's prompt cached (fe5e1c67); each session's tokens per estimated token
# (1.10 to 1.88 for Anthropic) around the one declared ratio. Claude Code writes a reply's
# usage mid-stream, so its recorded output is often the count at the first block (1 on
# replies with whole tool calls): the output and cost errors of its sessions are partly the
# record's.
#
# The last three columns measure that first limit: `unpredicted_misses` counts the requests the
# replay read mostly from cache while the provider recorded a miss, `unpredicted_miss_cost_share`
# is their share of the recorded cost, and `error_cost_usd_rest` is the cost error over the
# other requests. On pi/large-session, 30 such misses carry 43% of the recorded cost; some
# come 0 to 26 seconds after the reply of a request that cached the prefix they extend, while
# others are still read after 4 minutes (`python perf/calibration_table.py`). No rule of context, timestamps and provider predicts them, and
# the model does not copy them from the record. These columns are diagnostics: the 5% check
# uses the whole-session errors.

# %%
from musepi_lab.replay import calibration_rows, calibration_summary

corpus_root = corpus_path()
calibration = []
if corpus_root is not None:
    for folder in calibration_formats:
        if not (corpus_root / folder).is_dir():
            continue
        for file in sorted((corpus_root / folder).glob("*.jsonl")):
            session = read_session(file)
            compacted = any(e.type == "compaction" for e in session.path())
            for strategy in ("none", "recorded") if compacted else ("none",):
                result = replay(session, strategy, window=10**9)
                summary = calibration_summary(calibration_rows(session, result))
                if summary["requests"]:
                    calibration.append(
                        {"session": f"{folder}/{file.stem[:24]}", "strategy": strategy, **summary}
                    )
calibration = pd.DataFrame(calibration)
columns = [
    "requests",
    "recorded_cost_usd",
    "replayed_cost_usd",
    "share_error_input",
    "share_error_cache_read",
    "share_error_cache_write",
    "error_output",
    "error_cost_usd",
    "prompt_error_median",
    "hit_agreement",
    "unpredicted_misses",
    "unpredicted_miss_cost_share",
    "error_cost_usd_rest",
]
calibration.set_index(["session", "strategy"])[columns].round(3) if len(
    calibration
) else calibration

# %%
if len(calibration):
    assert (calibration["requests"] > 0).all()
    assert np.isfinite(calibration["error_cost_usd"]).all()
    within = calibration[
        (calibration[[c for c in columns if c.startswith("share_error")]].abs() <= 0.05).all(axis=1)
        & (calibration["error_cost_usd"].abs() <= 0.05)
    ]
    print(f"{len(within)} of {len(calibration)} replays within 5%:", list(within["session"]))

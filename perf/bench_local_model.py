"""The local model's cost on this machine (issue 28): seconds per summary, the server's
tokens per second, and the share of the test suite its tests take.

Starts `LocalModelServer` (SmolLM2-135M-Instruct on llama-cpp-python, `--n-ctx`), then:

1. Throughput, in the same run: one request with a long prompt and a one-token answer
   (prompt tokens per second) and one with a short prompt and a `--answer-cap` answer
   (generated tokens per second), `--repeat` times interleaved, medians. The token counts
   are the server's own usage.
2. Seconds per summary: `llm-summary` on the smallest `--sessions` sample sessions at each
   `--budgets` budget (folded window by window into the server's context, spec §5.7), with
   the model-free strategies in the same `run_benchmark` (extractive, observation-masking,
   truncate) for their seconds per cell; requests, server tokens and seconds per summary.
   `--cache-dir` reuses answers (then the seconds are the cache's, say so).
3. `--suite-seconds S`: the wall time of `tests/test_local_model.py` (run here, in a fresh
   pytest) over S, the time of the whole suite measured by `make test` on this machine.

    python perf/bench_local_model.py --sessions 1 --budgets 2000,8000 --suite-seconds 900
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _harness import REPO

from musepi_lab.bench import run_benchmark, session_refs, summary_table
from musepi_lab.llm import LocalModelServer, SummaryRequest

MODEL_FREE = ("extractive", "observation-masking", "truncate")


def throughput(server: LocalModelServer, repeat: int, cap: int) -> dict[str, float]:
    """Prompt and generated tokens per second, medians of interleaved runs."""
    model = server.summarizer(temperature=0.0)
    long_prompt = " ".join(f"line {i}: the parser keeps field {i}." for i in range(120))
    prompt_rates, gen_rates = [], []
    for i in range(repeat):
        started = time.perf_counter()
        answer = model.summarize(
            SummaryRequest(
                system_prompt="Reply with one word.", prompt=f"{i} {long_prompt}", max_tokens=1
            )
        )
        prompt_rates.append(answer.input_tokens / (time.perf_counter() - started))
        started = time.perf_counter()
        answer = model.summarize(
            SummaryRequest(
                system_prompt="You write long answers.",
                prompt=f"{i}: describe a parser in detail.",
                max_tokens=cap,
            )
        )
        gen_rates.append(answer.output_tokens / (time.perf_counter() - started))
    return {
        "prompt_tok_s": statistics.median(prompt_rates),
        "gen_tok_s": statistics.median(gen_rates),
    }


def summaries(server: LocalModelServer, args: argparse.Namespace):
    """The benchmark frame of llm-summary and the model-free strategies."""
    refs = session_refs([REPO / "datasets" / "sample"])
    refs = sorted(refs, key=lambda r: Path(r.path).stat().st_size)[: args.sessions]
    model = server.summarizer(
        temperature=0.0, max_output_tokens=args.summary_cap, cache_dir=args.cache_dir
    )
    return run_benchmark(
        refs,
        ["llm-summary", *MODEL_FREE],
        args.budgets,
        executor="serial",
        progress=False,
        summarizer=model,
        cell_timeout=None,
    )


def suite_share(suite_seconds: float) -> float:
    """Wall seconds of the local-model tests, in a fresh pytest."""
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_local_model.py",
        ],
        cwd=REPO,
        check=True,
    )
    return time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--sessions", type=int, default=1, help="0: the throughput only")
    p.add_argument("--budgets", type=lambda s: [int(b) for b in s.split(",")], default=[2000, 8000])
    p.add_argument(
        "--summary-cap", type=int, default=256, help="max_tokens of each summary request"
    )
    p.add_argument("--answer-cap", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--suite-seconds", type=float, default=None)
    args = p.parse_args()
    with LocalModelServer(n_ctx=args.n_ctx) as server:
        rates = throughput(server, args.repeat, args.answer_cap)
        print(
            f"server: prompt {rates['prompt_tok_s']:.0f} tok/s, generation {rates['gen_tok_s']:.1f} tok/s (median of {args.repeat})"
        )
        if args.sessions <= 0:
            return 0
        df = summaries(server, args)
    llm = df[df["label"] == "llm-summary"]
    print(
        f"\nllm-summary, {len(llm)} summaries (n_ctx {args.n_ctx}, answers capped at {args.summary_cap}):"
    )
    for _, row in df.iterrows():
        print(
            f"  {row['label']:<20} {row['session_id']:<12} budget {row['budget']:>6}: "
            f"{row['compact_seconds']:8.2f} s, in {row['summarizer_input_tokens']:>7} out "
            f"{row['summarizer_output_tokens']:>6} tokens, retention {row['fact_retention']:.3f}"
        )
    total = llm["compact_seconds"].sum()
    out_tokens = llm["summarizer_output_tokens"].sum()
    print(
        f"  seconds per summary: {total / max(1, len(llm)):.1f}; end-to-end {(llm['summarizer_input_tokens'].sum() + out_tokens) / total:.0f} tok/s"
    )
    table = summary_table(df, ["fact_retention", "token_reduction", "compact_seconds"])
    print("\n" + table.round(3).to_string())
    if args.suite_seconds:
        seconds = suite_share(args.suite_seconds)
        print(
            f"\ntests/test_local_model.py: {seconds:.0f} s = {seconds / args.suite_seconds:.1%} of a {args.suite_seconds:.0f} s suite"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: scoring (fact extraction + retention) against the strategies' own work.

One run over the pi corpus fixtures and the bundled sample, every model-free strategy at
each budget, as a `compact`-mode benchmark grid does. Each cell is timed in three parts:

- `compact`: the strategy's work (`musepi_lab.compact`, its preparation included);
- `rebuild`: what the bench does around it that is not scoring (apply the result, rebuild
  the contexts before and after, convert them for the provider — the bench needs those
  for tool pairing and the cache prefix —, count tokens);
- `scoring`: the facts of the summarized part and their retention, two ways:
  - `per-cell` (how the bench scored before issue 10): `extract_facts` of the summarized
    messages in every cell (planted facts for the sample), the readable text before and
    after built per cell, one substring scan per fact and text;
  - `once` (how `bench/_score.py` scores now): facts extracted once per session (`metrics.entry_facts`,
    cached by session fingerprint) and assembled per cell (`facts_of_entries`); one
    `metrics.session_scorer` per session finds them with one Aho–Corasick pass per
    message and remembers each message's answer, so only messages a strategy wrote are
    scanned again; the upper bound (snapcompact's imaged pages read) is scored too. Both ways must count the same facts and kept facts in every cell
    (checked; disagreements are printed).

Printed: seconds per part and the share of scoring in a bench run,
`scoring / (compact + rebuild + scoring)`, for both ways. Target (issue 10, issue 14 §4):
scoring ≤ 25% of the run.

    python perf/bench_scoring.py [--quick] [--check]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _harness import CORPUS, REPO, bench_parser

from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.datasets import read_facts
from musepi_lab.formats._registry import read_session
from musepi_lab.metrics import Fact, context_text, extract_facts, facts_of_entries
from musepi_lab.metrics._archive import session_archives
from musepi_lab.metrics._facts import FACT_KINDS
from musepi_lab.metrics._scoring import clear_scorers, session_scorer
from musepi_lab.metrics._session_facts import clear_fact_cache, entry_facts
from musepi_lab.session._session import Session, timestamp_after
from musepi_lab.strategies import compact
from musepi_lab.tokens import TokenCounter

STRATEGIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("none", {}),
    ("truncate", {}),
    ("prune", {}),
    ("observation-masking", {}),
    ("extractive", {}),
    ("snapcompact", {}),
    ("hybrid", {"summary": "extractive"}),
)
BUDGETS = (8000, 20000, 40000)
TARGET_SHARE = 0.25
CORPUS_FILES = (
    ("pi", "large-session.jsonl"),
    ("pi", "before-compaction.jsonl"),
    ("pi", "oh-my-pi", "large-session.jsonl"),
    ("pi", "oh-my-pi", "before-compaction.jsonl"),
)


@dataclass
class Times:
    """Seconds per part, summed over cells."""

    parts: dict[str, float] = field(default_factory=dict)
    cells: int = 0

    def add(self, part: str, seconds: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + seconds


def timed(times: Times, part: str, function: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = function()
    times.add(part, time.perf_counter() - start)
    return value


def _readable(runtime: Sequence[Any], llm: Sequence[Any]) -> str:
    return context_text(runtime) + "\n" + context_text(llm)


def _score_per_cell(
    prep: Any, planted: Sequence[Any] | None, before: Any, after: Any
) -> tuple[int, int]:
    """Today's bench scoring: extract per cell, texts per cell, one scan per fact.

    `before` and `after` are `(runtime messages, provider messages)`.
    """
    before_text, after_text = _readable(*before), _readable(*after[:2])
    if planted is not None:
        ids = set(prep.summarize_entry_ids) | set(prep.turn_prefix_entry_ids)
        facts = [Fact(f.fact, f.kind) for f in planted if f.entry_id in ids]
    else:
        facts = list(extract_facts([*prep.messages_to_summarize, *prep.turn_prefix_messages]))
    facts = [f for f in facts if f.text in before_text]
    kept = sum(1 for f in facts if f.text in after_text)
    for kind in FACT_KINDS:
        of_kind = [f for f in facts if f.kind == kind]
        sum(1 for f in of_kind if f.text in after_text)
    return len(facts), kept


def _universe(session: Session, planted: Sequence[Any] | None) -> list[str]:
    if planted is not None:
        return [f.fact for f in planted]
    return list(dict.fromkeys(f.text for fs in entry_facts(session).values() for f in fs))


def _score_once(
    session: Session, prep: Any, planted: Sequence[Any] | None, before: Any, after: Any
) -> tuple[int, int]:
    """This issue's scoring: facts once per session, each message scanned once (one
    Aho–Corasick pass) and remembered, a context's facts the union of its messages'."""
    scorer = session_scorer(session, _universe(session, planted))
    ids = [*prep.summarize_entry_ids, *prep.turn_prefix_entry_ids]
    if planted is not None:
        wanted = set(ids)
        facts: Sequence[Fact] = [Fact(f.fact, f.kind) for f in planted if f.entry_id in wanted]
    else:
        facts = facts_of_entries(session, ids)
    present_before = scorer.found(before[0])
    facts = [f for f in facts if f.text in present_before]
    present_after = scorer.found(after[0])
    kept = sum(1 for f in facts if f.text in present_after)
    # The upper bound too (snapcompact's imaged pages read), as the bench will report it.
    scorer.bounds([f.text for f in facts], after[0], session_archives(after[2]))
    for kind in FACT_KINDS:
        sum(1 for f in facts if f.kind == kind and f.text in present_after)
    return len(facts), kept


def run_session(path: Path, times: Times, budgets: Sequence[int]) -> list[tuple[Any, ...]]:
    """Every strategy × budget cell of one session, each part timed; returns the cells
    where the two ways disagree (none expected)."""
    clear_fact_cache()
    clear_scorers()
    session = timed(times, "read", lambda: read_session(path))
    facts_file = path.with_name(path.name.removesuffix(".jsonl") + ".facts.json")
    planted = read_facts(path) if facts_file.exists() else None
    counter = TokenCounter("musepi")

    def rebuild_before() -> tuple[Any, Any]:
        runtime = build_session_context(session).messages
        return runtime, convert_to_llm(runtime)

    before = timed(times, "rebuild", rebuild_before)
    disagree = []
    for budget in budgets:
        settings = CompactionSettings.musepi(keep_recent_tokens=budget)
        for name, params in STRATEGIES:
            times.cells += 1

            def run(
                name: str = name, params: dict[str, Any] = params, settings: Any = settings
            ) -> Any:
                prep = prepare_compaction(session, settings, counter)
                result = compact(session, name, settings=settings, counter=counter, **params)
                return prep, result

            prep, result = timed(times, "compact", run)
            if prep is None:
                continue

            def rebuild(result: Any = result) -> tuple[Any, Any, Session]:
                after_session = (
                    result.apply(session, timestamp=timestamp_after(session.leaf))
                    if result is not None
                    else session
                )
                runtime = build_session_context(after_session).messages
                counter.count_messages(runtime)
                counter.count_messages(before[0])
                return runtime, convert_to_llm(runtime), after_session

            after = timed(times, "rebuild", rebuild)
            cell = (prep, planted, before, after)
            old = timed(times, "score_per_cell", lambda cell=cell: _score_per_cell(*cell))
            new = timed(times, "score_once", lambda cell=cell: _score_once(session, *cell))
            if old != new:
                disagree.append((path.name, name, budget, old, new))
    return disagree


def report(label: str, times: Times) -> dict[str, float]:
    """Print one block of figures; return the two scoring shares."""
    p = times.parts
    work = p.get("compact", 0.0) + p.get("rebuild", 0.0)
    shares = {}
    print(f"\n{label}: {times.cells} cells")
    for part in ("read", "compact", "rebuild", "score_per_cell", "score_once"):
        print(f"  {part:15} {p.get(part, 0.0):8.3f} s")
    for way in ("score_per_cell", "score_once"):
        share = p.get(way, 0.0) / (work + p.get(way, 0.0))
        shares[way] = share
        ratio = p.get(way, 0.0) / p["compact"] if p.get("compact") else float("nan")
        print(f"  {way:15} {100 * share:5.1f}% of a bench run; {ratio:.2f}x the strategies' work")
    return shares


def main() -> int:
    args = bench_parser(__doc__ or "").parse_args()
    budgets = BUDGETS[:2] if args.quick else BUDGETS
    corpus = [CORPUS.joinpath(*parts) for parts in CORPUS_FILES]
    groups = {
        "corpus (pi fixtures)": [p for p in corpus if p.exists()],
        "sample": sorted((REPO / "datasets" / "sample").glob("*.jsonl")),
    }
    if args.quick:
        groups = {k: v[:1] for k, v in groups.items()}
    shares = {}
    for label, paths in groups.items():
        if not paths:
            print(f"\n{label}: no files")
            continue
        times = Times()
        disagree = []
        for path in paths:
            disagree += run_session(path, times, budgets)
        shares[label] = report(label, times)
        print(f"  cells where the two ways disagree: {disagree or 'none'}")
    worst = max((s["score_once"] for s in shares.values()), default=0.0)
    print(
        f"\ntarget: scoring <= {100 * TARGET_SHARE:.0f}% of a bench run; worst {100 * worst:.1f}%"
    )
    return 1 if args.check and worst > TARGET_SHARE * 1.5 else 0


if __name__ == "__main__":
    raise SystemExit(main())

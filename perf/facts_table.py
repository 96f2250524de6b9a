"""Per-kind fact retention of every model-free strategy on the bundled sample.

For each sample session, strategy and budget (keep-recent tokens of one compaction at the
session's leaf), the scored facts are the planted, current facts of the part the engine's
cut summarizes away (`prepare_compaction`) that are present in the context before; a fact
is kept when its exact text is in the rebuilt context after (`metrics.context_text`).
`lower` counts snapcompact's imaged pages as unreadable, `upper` as perfectly read (the
two agree for every other strategy). Counts are pooled over the sessions.

    python perf/facts_table.py [--budgets 8000 20000] [--by-place]

The done-means rule of issue 10 (checked by tests/test_fair_facts.py): no model-free
strategy keeps 100% of a fact kind (lower bound) unless its context is the whole context.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._result import derived_entry_id
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import UNSET, build_session_context
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.datasets import read_facts
from musepi_lab.formats._registry import read_session
from musepi_lab.metrics import context_text
from musepi_lab.metrics._archive import session_archives
from musepi_lab.metrics._facts import FACT_KINDS
from musepi_lab.metrics._match import found_in
from musepi_lab.session._session import Session, timestamp_after
from musepi_lab.strategies import compact
from musepi_lab.tokens import TokenCounter

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "datasets" / "sample"
BUDGETS: tuple[int, ...] = (8000, 20000)
STRATEGIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("none", {}),
    ("truncate", {}),
    ("prune", {}),
    ("observation-masking", {}),
    ("extractive", {}),
    ("snapcompact", {}),
    ("hybrid", {"summary": "extractive"}),
)
"""The model-free strategies (hybrid with its model-free summary)."""


def label(name: str, params: dict[str, Any]) -> str:
    """`name` or `name:key=value,...`."""
    return name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


@dataclass
class Tally:
    """Kept (lower, upper) and scored facts per kind, pooled over sessions."""

    kept_lower: dict[str, int] = field(default_factory=dict)
    kept_upper: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    by_place: dict[str, list[int]] = field(default_factory=dict)
    sessions: int = 0
    whole_context: int = 0

    def add(self, kind: str, lower: bool, upper: bool, place: str = "") -> None:
        kept_total = self.by_place.setdefault(place, [0, 0])
        kept_total[0] += lower
        kept_total[1] += 1
        self.total[kind] = self.total.get(kind, 0) + 1
        self.kept_lower[kind] = self.kept_lower.get(kind, 0) + lower
        self.kept_upper[kind] = self.kept_upper.get(kind, 0) + upper

    def share(self, kind: str, bound: str = "lower") -> float | None:
        total = self.total.get(kind, 0)
        kept = (self.kept_lower if bound == "lower" else self.kept_upper).get(kind, 0)
        return kept / total if total else None


def _readable(messages: Sequence[Any], profile: str, archives: Sequence[Any] = ()) -> str:
    llm = convert_to_llm(messages, profile=profile)
    return context_text(messages, archives=archives) + "\n" + context_text(llm)


def score_cell(
    session: Session,
    planted: Sequence[Any],
    name: str,
    params: dict[str, Any],
    budget: int,
    counter: TokenCounter,
    tally: Tally,
) -> None:
    """Run one strategy at one budget on one session and add its facts to `tally`."""
    settings = CompactionSettings.musepi(keep_recent_tokens=budget)
    prep = prepare_compaction(session, settings, counter)
    if prep is None:
        return
    result = compact(session, name, settings=settings, counter=counter, **params)
    before_msgs = build_session_context(session, profile="musepi").messages
    if result is None:
        after, leaf = session, UNSET
    else:
        after = result.apply(
            session,
            timestamp=timestamp_after(session.leaf),
            entry_id=derived_entry_id(session, f"{name}:{budget}"),
        )
        leaf = UNSET
    after_msgs = build_session_context(after, leaf, profile="musepi").messages
    before = _readable(before_msgs, "musepi")
    lower = _readable(after_msgs, "musepi")
    upper = lower + "\n" + _readable(after_msgs, "musepi", session_archives(after))
    summarized = set(prep.summarize_entry_ids) | set(prep.turn_prefix_entry_ids)
    facts = [f for f in planted if f.current and f.entry_id in summarized]
    texts = [f.fact for f in facts]
    in_before, in_lower, in_upper = (found_in(texts, t) for t in (before, lower, upper))
    tally.sessions += 1
    if convert_to_llm(after_msgs, profile="musepi") == convert_to_llm(before_msgs):
        tally.whole_context += 1
        # The context is the whole context: nothing compacted, every fact counts as kept.
    for fact in facts:
        if fact.fact in in_before:
            tally.add(fact.kind, fact.fact in in_lower, fact.fact in in_upper, fact.place)


def retention_table(
    paths: Iterable[Path] | None = None,
    strategies: Sequence[tuple[str, dict[str, Any]]] = STRATEGIES,
    budgets: Sequence[int] = BUDGETS,
) -> dict[tuple[str, int], Tally]:
    """`{(strategy label, budget): Tally}` over the sample sessions."""
    files = sorted(paths) if paths is not None else sorted(SAMPLE.glob("*.jsonl"))
    table: dict[tuple[str, int], Tally] = {
        (label(n, p), b): Tally() for n, p in strategies for b in budgets
    }
    for path in files:
        session = read_session(path)
        planted = read_facts(path)
        counter = TokenCounter("musepi")
        for name, params in strategies:
            for budget in budgets:
                tally = table[(label(name, params), budget)]
                score_cell(session, planted, name, params, budget, counter, tally)
    return table


def full_retention(table: dict[tuple[str, int], Tally]) -> list[tuple[str, int, str]]:
    """`(strategy, budget, kind)` where a strategy that changed the context somewhere kept
    every scored fact of a kind (lower bound): what the done-means rule forbids."""
    out = []
    for (strategy, budget), tally in table.items():
        if tally.whole_context == tally.sessions:
            continue
        for kind in FACT_KINDS:
            if tally.total.get(kind) and tally.share(kind) == 1.0:
                out.append((strategy, budget, kind))
    return out


def _cell(tally: Tally, kind: str) -> str:
    total = tally.total.get(kind, 0)
    if not total:
        return "–"
    lower, upper = tally.kept_lower.get(kind, 0), tally.kept_upper.get(kind, 0)
    text = f"{100 * lower / total:.0f}% ({lower}/{total})"
    return text + (f" ↑{100 * upper / total:.0f}%" if upper != lower else "")


def render(table: dict[tuple[str, int], Tally]) -> str:
    """A Markdown table: one row per (strategy, budget), one column per kind."""
    head = "| strategy | budget | " + " | ".join(FACT_KINDS) + " | whole context |"
    rule = "|---|---:|" + "---|" * len(FACT_KINDS) + "---|"
    rows = [head, rule]
    for (strategy, budget), tally in table.items():
        cells = " | ".join(_cell(tally, k) for k in FACT_KINDS)
        whole = f"{tally.whole_context}/{tally.sessions}"
        rows.append(f"| {strategy} | {budget} | {cells} | {whole} |")
    return "\n".join(rows)


def render_by_place(table: dict[tuple[str, int], Tally]) -> str:
    """A Markdown table of lower-bound retention per place where facts were planted."""
    places = sorted({p for t in table.values() for p in t.by_place})
    rows = ["| strategy | budget | " + " | ".join(places) + " |"]
    rows.append("|---|---:|" + "---:|" * len(places))
    for (strategy, budget), tally in table.items():
        cells = []
        for place in places:
            kept, total = tally.by_place.get(place, (0, 0))
            cells.append(f"{100 * kept / total:.0f}%" if total else "–")
        rows.append(f"| {strategy} | {budget} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--by-place", action="store_true", help="also retention per place")
    args = parser.parse_args(argv)
    table = retention_table(budgets=args.budgets)
    print(render(table))
    if args.by_place:
        print("\nLower-bound retention by the place a fact was planted:\n")
        print(render_by_place(table))
    bad = full_retention(table)
    print("\nfull retention (rule broken):", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The branch bench: navigate back from every abandoned leaf with each branch-summary
strategy, and score what the returning context still holds of the abandoned side.

A branch point is a leaf of the session off its main path (the path to the session leaf,
the last entry in file order; leaves below the main leaf abandon nothing). From there the agent navigates to the main leaf, abandoning the entries from the
branch leaf back to the common ancestor. The facts scored are the planted ones on those
entries (generated sessions) or, for recorded sessions, `extract_facts` of their messages;
either way only facts absent from the main path's own context count, so the score is what
the summary brought back. Strategies:

- `llm`: `navigate_tree(..., summarize=True)` with the summarizer (the branch request);
- `extractive`: a model-free summary copied from the abandoned messages, supplied through
  the `session_before_tree` hook, as an extension would;
- `none`: navigation without a summary (the floor: 0 by construction).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compaction._hooks import BeforeTree, SessionHooks, TreePreparation
from ..context._build import build_session_context
from ..datasets._tasks import PlantedFact
from ..llm._summarizer import Summarizer
from ..metrics._facts import Fact, context_text, extract_facts, retained
from ..navigation._navigate import NavigationResult, navigate_tree
from ..session._messages import entry_to_message
from ..session._session import Session
from ..strategies._extractive import extract, render_extractive_summary
from ..tokens._counter import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

BRANCH_STRATEGIES: tuple[str, ...] = ("llm", "extractive", "none")
"""The branch-summary strategies the bench compares."""

BRANCH_COLUMNS: tuple[str, ...] = (
    "session",
    "branch_leaf",
    "strategy",
    "abandoned",
    "facts",
    "facts_kept",
    "retention",
    "summary_tokens",
    "context_tokens",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
)
"""Every column of a branch-bench frame, in order."""


@dataclass(frozen=True)
class BranchCase:
    """One session of the branch bench.

    Attributes:
        name: The name in the table (a file name).
        session: The session; its leaf is the main leaf.
        planted: Planted facts (generated sessions), or None to extract facts.
    """

    name: str
    session: Session
    planted: tuple[PlantedFact, ...] | None = None


def branch_points(session: Session) -> tuple[str, ...]:
    """The leaves off the main path (not the main leaf, nor below it), in file order."""
    main = session.leaf_id
    points: list[str] = []
    for leaf in session.leaves:
        if leaf.id is None or leaf.id == main:
            continue
        if main not in {e.id for e in session.path(leaf.id)}:
            points.append(str(leaf.id))
    return tuple(points)


def abandoned_ids(session: Session, branch_leaf: str) -> frozenset[str]:
    """Ids on the branch leaf's path that are not on the main path (counted here from the
    two paths, independently of the navigation code)."""
    main = {e.id for e in session.path()}
    return frozenset(str(e.id) for e in session.path(branch_leaf) if e.id not in main)


def branch_facts(
    session: Session, branch_leaf: str, planted: Sequence[PlantedFact] | None
) -> list[Fact]:
    """The facts only the abandoned side holds: planted on its entries (or extracted from
    its messages), and absent from the main path's context."""
    gone = abandoned_ids(session, branch_leaf)
    if planted is not None:
        facts = [Fact(f.fact, f.kind) for f in planted if f.entry_id in gone]
    else:
        entries = [e for e in session.path(branch_leaf) if e.id in gone]
        messages = [m for m in (entry_to_message(e) for e in entries) if m is not None]
        facts = list(extract_facts(messages))
    kept_text = context_text(build_session_context(session).messages)
    present, _ = retained(facts, kept_text)
    already = set(present)
    return [f for f in facts if f.text not in already]


def extractive_branch_summary(ask: TreePreparation) -> BeforeTree:
    """A `session_before_tree` answer supplying a model-free summary of the abandoned
    entries (the `extractive` strategy's rendering)."""
    messages = [m for m in (entry_to_message(e) for e in ask.entries) if m is not None]
    return BeforeTree(summary=render_extractive_summary(extract(messages)))


def navigate_back(
    session: Session,
    branch_leaf: str,
    strategy: str,
    *,
    summarizer: Summarizer | None = None,
    profile: str = "musepi",
) -> NavigationResult:
    """Navigate from `branch_leaf` to the main leaf with a branch-summary strategy.

    Raises:
        ValueError: An unknown strategy, or `llm` without a summarizer.
    """
    target = session.leaf_id
    if target is None:
        raise ValueError("an empty session has no branch points")
    start = session.with_leaf(branch_leaf)
    if strategy == "none":
        return navigate_tree(start, target, profile=profile)
    if strategy == "extractive":
        hooks = SessionHooks(session_before_tree=extractive_branch_summary)
        return navigate_tree(start, target, summarize=True, hooks=hooks, profile=profile)
    if strategy == "llm":
        if summarizer is None:
            raise ValueError("the llm branch strategy needs a summarizer")
        return navigate_tree(start, target, summarize=True, summarizer=summarizer, profile=profile)
    raise ValueError(f"unknown branch strategy {strategy!r}; expected one of {BRANCH_STRATEGIES}")


def score_branch_point(
    case: BranchCase,
    branch_leaf: str,
    strategy: str,
    *,
    summarizer: Summarizer | None,
    counter: TokenCounter,
    profile: str,
) -> dict[str, Any]:
    """One row: navigate back with `strategy` and count the facts in the returning context."""
    facts = branch_facts(case.session, branch_leaf, case.planted)
    moved = navigate_back(
        case.session, branch_leaf, strategy, summarizer=summarizer, profile=profile
    )
    messages = build_session_context(moved.session, profile=profile).messages
    kept, _ = retained(facts, context_text(messages))
    summary = moved.summary
    response = summary.response if summary is not None else None
    return {
        "session": case.name,
        "branch_leaf": branch_leaf,
        "strategy": strategy,
        "abandoned": len(moved.abandoned),
        "facts": len(facts),
        "facts_kept": len(kept),
        "retention": len(kept) / len(facts) if facts else None,
        "summary_tokens": counter.count_text(summary.summary) if summary is not None else 0,
        "context_tokens": counter.count_messages(messages),
        "summarizer_input_tokens": response.input_tokens if response is not None else 0,
        "summarizer_output_tokens": response.output_tokens if response is not None else 0,
    }


def run_branch_bench(
    cases: Iterable[BranchCase],
    *,
    strategies: Sequence[str] = BRANCH_STRATEGIES,
    summarizer: Summarizer | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
) -> pd.DataFrame:
    """Every branch point of every case with every strategy: one row each (`BRANCH_COLUMNS`).

    `llm` is skipped when no summarizer is given.
    """
    import pandas as pd

    counter = counter or TokenCounter.for_profile(profile)
    chosen = [s for s in strategies if s != "llm" or summarizer is not None]
    rows = [
        score_branch_point(
            case, leaf, strategy, summarizer=summarizer, counter=counter, profile=profile
        )
        for case in cases
        for leaf in branch_points(case.session)
        for strategy in chosen
    ]
    return pd.DataFrame(rows, columns=list(BRANCH_COLUMNS))


def branch_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Retention per strategy over the branch points that abandoned facts: points, facts,
    facts kept, pooled retention (kept / facts) and the mean per point."""
    scored = frame[frame["facts"] > 0]
    grouped = scored.groupby("strategy", sort=False)
    table = grouped.agg(
        points=("branch_leaf", "size"),
        facts=("facts", "sum"),
        facts_kept=("facts_kept", "sum"),
        mean_retention=("retention", "mean"),
        summary_tokens=("summary_tokens", "mean"),
    )
    table.insert(3, "retention", table["facts_kept"] / table["facts"])
    return table

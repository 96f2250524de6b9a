"""Field-by-field comparison of a reference document with our profile's: one row per measure.

A *comparison* is a function `compare_x(reference: dict, session: Session, budgets) ->
list[MeasureRow]`; `COMPARISONS` lists those `compare_all` runs, in order. Another comparison
(summarizer input per dialect, snapcompact archive and frames, ...) is added by appending its
function to `COMPARISONS`, one line. Each row counts cases (one per file, per budget, per entry
or per pruning pass, as the measure says), how many agreed, and describes the first that did not.

Where the seed speaks and the release does otherwise, the profile follows the seed by default:
the field-by-field rows are then computed with the release's rule (a setting), and
`compare_seed_boundary` adds rows marked `seed_difference` that show how the profile's default
differs from the release; those never fail the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session._session import Session
from ._ours import our_budgets, our_document
from ._rows import MeasureRow
from ._texts import compare_dialects, compare_pi_summarizer_input

Comparison = Callable[[Mapping[str, Any], Session, Sequence[int]], "list[MeasureRow]"]


def first_difference(ours: Any, theirs: Any, where: str = "") -> str | None:
    """The first place two JSON values differ, as `where: ours X, release Y`; None if equal."""
    if ours == theirs:
        return None
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in sorted(set(ours) | set(theirs), key=str):
            found = first_difference(ours.get(key), theirs.get(key), f"{where}.{key}")
            if found:
                return found
    if isinstance(ours, list) and isinstance(theirs, list):
        for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return f"{where}: length ours {len(ours)}, release {len(theirs)}"
    if isinstance(ours, str) and isinstance(theirs, str):
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
            min(len(ours), len(theirs)),
        )
        return (
            f"{where}: text differs at character {at} "
            f"(ours {ours[at : at + 40]!r}, release {theirs[at : at + 40]!r})"
        )
    return f"{where}: ours {_short(ours)}, release {_short(theirs)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


@dataclass(slots=True)
class _Tally:
    # Mutable only while one comparison fills it; `rows()` freezes it.
    agent: str
    counts: dict[str, list[Any]]
    seed_difference: str | None = None

    def add(self, measure: str, ours: Any, theirs: Any, where: str) -> None:
        slot = self.counts.setdefault(measure, [0, 0, None])
        slot[1] += 1
        difference = first_difference(ours, theirs, where)
        if difference is None:
            slot[0] += 1
        elif slot[2] is None:
            slot[2] = difference

    def rows(self) -> list[MeasureRow]:
        return [
            MeasureRow(
                measure, self.agent, agreed, total, difference, seed_difference=self.seed_difference
            )
            for measure, (agreed, total, difference) in self.counts.items()
        ]


def _pick(record: Mapping[str, Any] | None, keys: Iterable[str]) -> dict[str, Any] | None:
    if record is None:
        return None
    return {key: record.get(key) for key in keys}


def _messages(items: Sequence[Mapping[str, Any]] | None) -> list[Any] | None:
    if items is None:
        return None
    return [[m.get("entry_index"), m.get("role")] for m in items]


def _compare_cut_point(
    tally: _Tally, budget: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]
) -> None:
    cut_keys = ("firstKeptEntryIndex", "turnStartIndex", "isSplitTurn", "firstKeptEntryFileIndex")
    tally.add(
        "cut_point",
        _pick(ours["find_cut_point"], cut_keys),
        _pick(theirs["find_cut_point"], cut_keys),
        f"budget {budget} find_cut_point",
    )


def _compare_preparation(
    tally: _Tally, budget: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]
) -> None:
    where = f"budget {budget}"
    mine, ref = ours.get("prepare_compaction"), theirs.get("prepare_compaction")
    where = f"{where} prepare_compaction"
    tally.add("prepare.returned", mine is not None, ref is not None, where)
    if mine is None or ref is None:
        return
    tally.add(
        "prepare.first_kept",
        mine["firstKeptEntryFileIndex"],
        ref["firstKeptEntryFileIndex"],
        f"{where}.firstKeptEntryFileIndex",
    )
    tally.add("prepare.split", mine["isSplitTurn"], ref["isSplitTurn"], f"{where}.isSplitTurn")
    tally.add(
        "prepare.tokens_before", mine["tokensBefore"], ref["tokensBefore"], f"{where}.tokensBefore"
    )
    tally.add(
        "prepare.previous_summary",
        mine["previousSummary"],
        ref["previousSummary"],
        f"{where}.previousSummary",
    )
    for key, measure in (
        ("messagesToSummarize", "prepare.messages_to_summarize"),
        ("turnPrefixMessages", "prepare.turn_prefix"),
        ("recentMessages", "prepare.recent_messages"),
    ):
        if key in ref:
            tally.add(
                measure,
                _messages(mine.get(key)),
                _messages(ref[key]),
                f"{where}.{key}[entry, role]",
            )
    files = ("readFiles", "modifiedFiles")
    tally.add(
        "file_lists",
        _pick(ours["file_operations"], files),
        _pick(theirs["file_operations"], files),
        f"budget {budget} file_operations",
    )
    tally.add(
        "files_block",
        ours["file_operations"]["block"],
        theirs["file_operations"]["block"],
        f"budget {budget} file_operations.block",
    )


def _compare_branch(
    tally: _Tally, ours: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None
) -> None:
    tally.add("branch.collect", ours is not None, theirs is not None, "branch_summary present")
    if ours is None or theirs is None:
        return
    collect = ("commonAncestorFileIndex", "entryFileIndices")
    tally.add(
        "branch.collect",
        [ours["targetFileIndex"], _pick(ours["collect"], collect)],
        [theirs["targetFileIndex"], _pick(theirs["collect"], collect)],
        "branch_summary [target, collect]",
    )
    for budget, ref in theirs["prepare"].items():
        mine = ours["prepare"].get(budget)
        where = f"branch_summary.prepare[{budget}]"
        if mine is None:
            tally.add("branch.prepare", None, "present", where)
            continue
        tally.add(
            "branch.prepare",
            [_messages(mine["messages"]), mine["totalTokens"]],
            [_messages(ref["messages"]), ref["totalTokens"]],
            f"{where} [messages, totalTokens]",
        )
        tally.add(
            "branch.file_lists",
            _pick(mine, ("readFiles", "modifiedFiles")),
            _pick(ref, ("readFiles", "modifiedFiles")),
            where,
        )
        tally.add(
            "branch.files_block",
            mine["file_operations_block"],
            ref["file_operations_block"],
            f"{where}.file_operations_block",
        )


def compare_engine(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[MeasureRow]:
    """Context, estimates, cut points, preparations, file lists and blocks, pruning and
    branch-summary collection and preparation (not the summarizer texts)."""
    agent = str(reference["agent"])
    target = (reference.get("branch_summary") or {}).get("targetFileIndex")
    ours = our_document(session, agent, budgets, branch_target_index=target)
    tally = _Tally(agent, {})
    tally.add(
        "context",
        [ours["context"]["message_count"], ours["context"]["roles"]],
        [reference["context"]["message_count"], reference["context"]["roles"]],
        "context [count, roles]",
    )
    mine, ref = ours["estimates"]["tokens"], reference["estimates"]["tokens"]
    if len(mine) != len(ref):
        tally.add("estimates", len(mine), len(ref), "estimates: entry count")
    else:
        for i, (a, b) in enumerate(zip(mine, ref, strict=True)):
            if a is not None or b is not None:
                tally.add("estimates", a, b, f"estimates[entry {i}]")
    for budget in budgets:
        key = str(budget)
        if key in reference["budgets"]:
            _compare_cut_point(tally, key, ours["budgets"][key], reference["budgets"][key])
            _compare_preparation(tally, key, ours["budgets"][key], reference["budgets"][key])
    if "pruning" in reference:
        pruned = ("prunedCount", "tokensSaved", "pruned")
        for name, ref_pass in reference["pruning"].items():
            theirs = _pick(ref_pass, pruned)
            if theirs is not None:
                theirs["pruned"] = [[p["file_index"], p["notice"]] for p in theirs["pruned"]]
            mine_pass = _pick(ours["pruning"].get(name), pruned)
            if mine_pass is not None:
                mine_pass["pruned"] = [[p["file_index"], p["notice"]] for p in mine_pass["pruned"]]
            tally.add(f"pruning.{name}", mine_pass, theirs, f"pruning.{name}")
    _compare_branch(tally, ours["branch_summary"], reference.get("branch_summary"))
    return tally.rows()


SEED_BOUNDARY_REASON = (
    "seed: prepareCompaction starts after the previous compaction "
    "(boundaryStart = prevCompactionIndex + 1); the release re-opens its kept region"
)
"""Why the default MusePi preparations differ from the release on files with a compaction."""


def compare_seed_boundary(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[MeasureRow]:
    """The preparations of the profile's default (seed boundary) against the release's.

    Only MusePi, and only files whose leaf path holds a compaction (elsewhere the two
    rules are the same); one case per budget and measure, as in `compare_engine`. The rows
    carry `seed_difference` (`SEED_BOUNDARY_REASON`): they list the difference, never fail.
    """
    if reference["agent"] != "musepi":
        return []
    if reference["session"].get("latest_compaction_path_index", -1) < 0:
        return []
    ours = our_budgets(session, "musepi", budgets, boundary="seed")
    tally = _Tally("musepi", {}, seed_difference=SEED_BOUNDARY_REASON)
    for budget in budgets:
        key = str(budget)
        if key in reference["budgets"]:
            _compare_preparation(tally, key, ours[key], reference["budgets"][key])
    return tally.rows()


COMPARISONS: list[Comparison] = [
    compare_engine,
    compare_seed_boundary,
    compare_dialects,
    compare_pi_summarizer_input,
]
"""Every comparison `compare_all` runs; register another by appending its function here."""


def compare_all(
    reference: Mapping[str, Any],
    session: Session,
    budgets: Sequence[int],
    comparisons: Sequence[Comparison] | None = None,
) -> list[MeasureRow]:
    """The rows of every comparison in `comparisons` (default `COMPARISONS`)."""
    rows: list[MeasureRow] = []
    for comparison in COMPARISONS if comparisons is None else comparisons:
        rows.extend(comparison(reference, session, budgets))
    return rows


def merge_rows(rows: Iterable[MeasureRow]) -> list[MeasureRow]:
    """Rows of the same (agent, measure, seed difference) summed over inputs; the first
    difference kept."""
    merged: dict[tuple[str, str, str | None], MeasureRow] = {}
    for row in rows:
        key = (row.agent, row.measure, row.seed_difference)
        seen = merged.get(key)
        if seen is None:
            merged[key] = row
            continue
        merged[key] = MeasureRow(
            row.measure,
            row.agent,
            seen.agreed + row.agreed,
            seen.total + row.total,
            seen.first_difference or row.first_difference,
            seen.own_wording and row.own_wording,
            row.seed_difference,
        )
    return list(merged.values())

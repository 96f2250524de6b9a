"""Our side of the conformance run: the reference document's shape, computed by our profiles.

`our_document(session, agent, budgets)` returns, for the measures this module covers, the same
keys and value shapes as the reference drivers (`conformance/README.md`): indices count entries
in file order after the header line, a message is `{entry_index, role}` (ids of version-1 files
are random at every load, so they are not compared). Everything here is a pure function of the
`Session`; reading the file is the caller's business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..compaction._branch import collect_entries_for_branch_summary, prepare_branch_entries
from ..compaction._cut import find_cut_point
from ..compaction._file_ops import (
    FileOperations,
    compute_file_lists,
    format_file_operations,
    format_files_block,
)
from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._pruning import (
    PruneResult,
    maintenance_prune,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from ..compaction._settings import CompactionSettings
from ..context._build import build_session_context
from ..session._model import Entry
from ..session._session import Session, parse_timestamp_ms
from ..tokens._counter import TokenCounter
from ._reference import DEFAULT_BUDGETS

PROFILE_OF_AGENT = {"pi": "pi", "musepi": "musepi"}
"""The profile that follows each reference agent."""
_ESTIMATED_TYPES = frozenset({"message", "custom_message", "branch_summary", "compaction"})
_DAY_MS = 24 * 3600 * 1000


def _file_indices(session: Session) -> dict[str, int]:
    return {str(e.id): i for i, e in enumerate(session.entries) if e.id is not None}


def _describe(
    ids: Sequence[str], messages: Sequence[Mapping[str, Any]], index: Mapping[str, int]
) -> list[dict[str, Any]]:
    return [
        {"entry_index": index.get(entry_id), "role": message.get("role")}
        for entry_id, message in zip(ids, messages, strict=True)
    ]


def _latest_compaction(path: Sequence[Entry]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            return i
    return -1


def _files(ops: FileOperations, profile: str) -> dict[str, Any]:
    read, modified = compute_file_lists(ops, profile=profile)
    block = (
        format_file_operations(read, modified)
        if profile == "pi"
        else format_files_block(read, modified, read_set=ops.read)
    )
    return {"readFiles": read, "modifiedFiles": modified, "block": block}


def _preparation(
    prep: CompactionPreparation, index: Mapping[str, int], profile: str
) -> dict[str, Any]:
    files = _files(prep.file_ops, profile)
    out: dict[str, Any] = {
        "firstKeptEntryFileIndex": index.get(prep.first_kept_entry_id),
        "tokensBefore": prep.tokens_before,
        "isSplitTurn": prep.is_split_turn,
        "previousSummary": prep.previous_summary,
        "messagesToSummarize": _describe(
            prep.summarize_entry_ids, prep.messages_to_summarize, index
        ),
        "turnPrefixMessages": _describe(
            prep.turn_prefix_entry_ids, prep.turn_prefix_messages, index
        ),
        "readFiles": files["readFiles"],
        "modifiedFiles": files["modifiedFiles"],
    }
    if profile == "musepi":
        out["recentMessages"] = _describe(prep.kept_entry_ids, prep.recent_messages, index)
    return out


def _budget(
    path: Sequence[Entry],
    path_indices: Sequence[int],
    budget: int,
    counter: TokenCounter,
    profile: str,
    index: Mapping[str, int],
    boundary: str,
) -> dict[str, Any]:
    start = _latest_compaction(path) + 1
    cut = find_cut_point(path, start, len(path), budget, counter=counter, profile=profile)
    first = cut.first_kept_entry_index
    result: dict[str, Any] = {
        "find_cut_point": {
            "startIndex": start,
            "endIndex": len(path),
            "firstKeptEntryIndex": first,
            "turnStartIndex": cut.turn_start_index,
            "isSplitTurn": cut.is_split_turn,
            "firstKeptEntryFileIndex": path_indices[first] if first < len(path) else None,
        }
    }
    settings = CompactionSettings.for_profile(profile, keep_recent_tokens=budget, boundary=boundary)
    prep = prepare_compaction(list(path), settings, counter, profile=profile)
    if prep is None:
        result["prepare_compaction"] = None
        return result
    result["prepare_compaction"] = _preparation(prep, index, profile)
    result["file_operations"] = _files(prep.file_ops, profile)
    return result


def _pruned(result: PruneResult, path: Sequence[Entry], index: Mapping[str, int]) -> dict[str, Any]:
    pruned_ids = set(result.pruned_ids)
    pruned = []
    for entry in result.entries:
        if entry.id in pruned_ids:
            content = (entry.message or {}).get("content")
            notice = content[0].get("text") if isinstance(content, list) and content else None
            pruned.append({"file_index": index.get(str(entry.id)), "notice": notice})
    return {
        "prunedCount": result.pruned_count,
        "tokensSaved": result.tokens_saved,
        "pruned": pruned,
    }


def _pruning(path: Sequence[Entry], index: Mapping[str, int]) -> dict[str, Any]:
    """The three pruning passes the musepi driver reports, each with a fresh counter."""
    settings = CompactionSettings.musepi()
    entries = tuple(path)
    # The driver sets the clock one day after the last entry (Date.parse of its timestamp).
    last = parse_timestamp_ms(entries[-1].timestamp) if entries else None
    now = int(last if last is not None else 0) + _DAY_MS
    return {
        "maintenance_default": _pruned(
            maintenance_prune(entries, TokenCounter("musepi"), settings=settings, now_ms=now),
            path,
            index,
        ),
        # DEFAULT_PRUNE_CONFIG alone: no supersede pass, no keep boundary, no warm-cache guard.
        "library_default": _pruned(
            prune_tool_outputs(
                entries,
                TokenCounter("musepi"),
                supersede_reads=False,
                keep_boundary_id="",
                cache_warm_suffix_tokens=None,
                now_ms=now,
            ),
            path,
            index,
        ),
        "supersede_pass": _pruned(
            prune_superseded_tool_results(
                entries, TokenCounter("musepi"), settings=settings, now_ms=now
            ),
            path,
            index,
        ),
    }


def _branch_summary(
    session: Session,
    path_indices: Sequence[int],
    budgets: Sequence[int],
    profile: str,
    index: Mapping[str, int],
    target_index: int | None,
) -> dict[str, Any] | None:
    if target_index is None:
        if not path_indices:
            return None
        target_index = path_indices[len(path_indices) // 2]
    if not 0 <= target_index < len(session.entries):
        return None
    target_id = str(session.entries[target_index].id)
    leaf = session.leaf_id
    entries, common = collect_entries_for_branch_summary(session, leaf, target_id)
    prepared: dict[str, Any] = {}
    for token_budget in (0, *budgets):
        prep = prepare_branch_entries(
            entries, token_budget, counter=TokenCounter.for_profile(profile), profile=profile
        )
        files = _files(prep.file_ops, profile)
        prepared[str(token_budget)] = {
            "messages": _describe(prep.entry_ids, prep.messages, index),
            "totalTokens": prep.total_tokens,
            "readFiles": files["readFiles"],
            "modifiedFiles": files["modifiedFiles"],
            "file_operations_block": files["block"],
        }
    return {
        "fromLeafFileIndex": index.get(str(leaf)) if leaf is not None else None,
        "targetFileIndex": target_index,
        "collect": {
            "commonAncestorFileIndex": index.get(common) if common is not None else None,
            "entryFileIndices": [index.get(str(e.id)) for e in entries],
        },
        "prepare": prepared,
    }


def our_budgets(
    session: Session,
    agent: str,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    boundary: str = "release",
) -> dict[str, Any]:
    """The `budgets` part of `our_document` alone (cut point, preparation, file lists).

    `boundary` is `CompactionSettings.boundary` (MusePi only): `our_document` uses the
    release's, the seed-difference comparison the profile's default `"seed"`.
    """
    profile = PROFILE_OF_AGENT[agent]
    index = _file_indices(session)
    path = session.path()
    path_indices = [index[str(e.id)] for e in path]
    counter = TokenCounter.for_profile(profile)
    return {
        str(b): _budget(path, path_indices, b, counter, profile, index, boundary) for b in budgets
    }


def our_document(
    session: Session,
    agent: str,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    branch_target_index: int | None = None,
    boundary: str = "release",
) -> dict[str, Any]:
    """What our profile (`agent`'s, see `PROFILE_OF_AGENT`) reports for the session.

    Args:
        session: The session, as `read_session` returns it.
        agent: "pi" or "musepi".
        budgets: keepRecentTokens values (every other setting is the profile's default,
            except `boundary`).
        branch_target_index: File index of the entry navigated to for the branch-summary
            measures (default: the middle entry of the leaf's path, as the drivers).
        boundary: `CompactionSettings.boundary` of the MusePi preparations. Default
            `"release"`, the rule of the release the document is compared with; the
            profile's own default (`"seed"`) differs from it where the seed speaks
            (`compare_seed_boundary`).

    Returns:
        A dict with `session`, `context`, `estimates`, `budgets`, `branch_summary` and (musepi)
        `pruning`, shaped as the reference document.
    """
    profile = PROFILE_OF_AGENT[agent]
    index = _file_indices(session)
    path = session.path()
    path_indices = [index[str(e.id)] for e in path]
    counter = TokenCounter.for_profile(profile)
    context = build_session_context(session, profile=profile)
    document: dict[str, Any] = {
        "agent": agent,
        "session": {
            "entry_count": len(session.entries),
            "entry_types": [e.type for e in session.entries],
            "leaf_file_index": path_indices[-1] if path_indices else None,
            "path_file_indices": path_indices,
            "latest_compaction_path_index": _latest_compaction(path),
        },
        "context": {
            "message_count": len(context.messages),
            "roles": [m.get("role") for m in context.messages],
        },
        "estimates": {
            "tokens": [
                counter.count_entry(e) if e.type in _ESTIMATED_TYPES else None
                for e in session.entries
            ]
        },
        "budgets": {
            str(b): _budget(path, path_indices, b, counter, profile, index, boundary)
            for b in budgets
        },
        "branch_summary": _branch_summary(
            session, path_indices, budgets, profile, index, branch_target_index
        ),
    }
    if profile == "musepi":
        document["pruning"] = _pruning(path, index)
    return document

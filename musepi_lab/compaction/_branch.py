"""Branch summarization: what to summarize when leaving a branch, and where it goes (spec §7).

When the agent navigates the entry tree from one leaf to another entry, the entries of the
abandoned branch (from the old leaf back to the common ancestor) can be summarized, and the
summary is stored as a `branch_summary` entry attached at the navigation target. This module
holds the pure parts: collecting the entries, fitting them into a token budget, the
navigation rule for the new leaf, and appending the summary entry. The LLM call lives with
the strategies.

Tree before and after navigating from D to F with a summary (ids as in the seed's picture):

    A ─┬─ B ─ C ─ D        (old leaf; B, C, D are summarized)
       └─ E ─ F            (target)

    A ─┬─ B ─ C ─ D
       └─ E ─ F ─ S        (S: branch_summary, parentId F, fromId F — the new leaf)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session._messages import entry_to_message
from ..session._model import Entry, message_text
from ..session._profiles import check_profile
from ..session._session import Session, iso_timestamp
from ..tokens._counter import TokenCounter
from ._file_ops import (
    FileOperations,
    extract_file_ops,
    is_extension_summary,
    seed_from_details,
)
from ._result import new_entry_id
from ._serialize import truncate_tool_result

DEFAULT_CONTEXT_WINDOW = 128000
"""Window assumed when the model does not state one (pi and oh-my-pi)."""
DEFAULT_BRANCH_SUMMARY_RESERVE = 16384
"""`branchSummary.reserveTokens` default."""
NO_CONTENT_SUMMARY = "No content to summarize"
"""The summary pi and oh-my-pi store when the branch yields no messages."""
ROOT_FROM_ID = "root"
"""`fromId` of a branch summary attached above the first entry (target None)."""
SUMMARY_ENTRY_SLACK = 0.9
"""A summary entry over budget is still taken while the total is below 90% of it."""


# -- collecting --------------------------------------------------------------------------


def _branch(session: Session, entry_id: str | None) -> tuple[Entry, ...]:
    # pi's getBranch: an unknown id has an empty path (Session.path would fall back to the
    # session leaf instead).
    if entry_id is None or entry_id not in session:
        return ()
    return session.path(entry_id)


def collect_entries_for_branch_summary(
    session: Session, old_leaf_id: str | None, target_id: str
) -> tuple[tuple[Entry, ...], str | None]:
    """The entries abandoned when navigating from `old_leaf_id` to `target_id` (spec §7.1).

    The common ancestor is the deepest entry on the target's root path that is also on
    the old leaf's. The entries are those from the old leaf up to (not including) the
    common ancestor, in chronological order; compaction entries are included. The walk
    also stops at a missing parent.

    Args:
        session: The session.
        old_leaf_id: The leaf being left (None: nothing to summarize).
        target_id: The entry navigated to.

    Returns:
        `(entries, common_ancestor_id)`; the id is None when the paths share nothing.
    """
    if not old_leaf_id:
        return (), None
    old_path = {e.id for e in _branch(session, old_leaf_id)}
    common: str | None = None
    for entry in reversed(_branch(session, target_id)):
        if entry.id in old_path:
            common = entry.id
            break
    collected: list[Entry] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    while current and current != common and current not in seen:
        found = session.get(current)
        if found is None:
            break
        entry = found
        seen.add(current)
        collected.append(entry)
        current = entry.parent_id
    collected.reverse()
    return tuple(collected), common


# -- budget ------------------------------------------------------------------------------


def branch_summary_budget(
    context_window: int | None, reserve: int = DEFAULT_BRANCH_SUMMARY_RESERVE
) -> int:
    """Token budget of the branch-summary input: `(window or 128000) − reserve`."""
    return (context_window or DEFAULT_CONTEXT_WINDOW) - reserve


@dataclass(frozen=True, slots=True)
class BranchPreparation:
    """The messages of an abandoned branch that fit the summary budget.

    Attributes:
        messages: Runtime messages, chronological (pass them through `convert_to_llm`
            before serializing).
        file_ops: File operations of every message considered plus those carried by
            earlier branch summaries.
        total_tokens: Estimated tokens of `messages`.
        entry_ids: Ids of the entries the messages came from, chronological.
    """

    messages: tuple[Mapping[str, Any], ...]
    file_ops: FileOperations
    total_tokens: int
    entry_ids: tuple[str, ...]


def _branch_message(entry: Entry, profile: str) -> Mapping[str, Any] | None:
    # pi: tool results are skipped (their context is in the assistant's calls). oh-my-pi:
    # kept, except useless non-error ones (dropped later anyway, so they must not eat
    # the budget).
    if entry.type == "message":
        msg = entry.message
        if msg is None:
            return None
        if msg.get("role") == "toolResult":
            if profile == "pi":
                return None
            if msg.get("useless") is True and msg.get("isError") is not True:
                return None
        return msg
    if entry.type in ("custom_message", "branch_summary", "compaction"):
        return entry_to_message(entry)
    return None


def _branch_tokens(message: Mapping[str, Any], counter: TokenCounter, profile: str) -> int:
    if profile == "pi" or message.get("role") != "toolResult":
        return counter.count_message(message)
    # oh-my-pi estimates a tool result as the summarizer will see it: texts joined and
    # cut to 2000 characters.
    text = message_text(message.get("content"))
    if not text:
        return 0
    trimmed = dict(message)
    trimmed["content"] = [{"type": "text", "text": truncate_tool_result(text)}]
    return counter.count_message(trimmed)


def prepare_branch_entries(
    entries: Sequence[Entry],
    token_budget: int = 0,
    *,
    counter: TokenCounter | None = None,
    profile: str = "musepi",
) -> BranchPreparation:
    """Choose the messages of an abandoned branch to summarize (spec §7.1, §7.2).

    Pass 1 (every entry): each `branch_summary` not made by an extension seeds the file
    operations from its details (`readFiles` → read, `modifiedFiles` → edited).
    Pass 2 (newest → oldest): entries become messages — `message` (pi skips tool results;
    musepi keeps them but skips useless non-error ones), `custom_message`,
    `branch_summary`, `compaction`; other types are skipped. Each message first adds its
    file operations, then its tokens; when the budget is positive and would be exceeded,
    a compaction or branch_summary entry is still taken if the total so far is below
    90% of the budget, and the walk stops.

    Args:
        entries: The abandoned entries, chronological (`collect_entries_for_branch_summary`).
        token_budget: Token budget (0 or less: no limit); see `branch_summary_budget`.
        counter: Token counter; default `TokenCounter("pi")` for pi, `"musepi"` for musepi.
        profile: `musepi` (oh-my-pi) or `pi`.

    Returns:
        The `BranchPreparation`.
    """
    check_profile(profile)
    if counter is None:
        counter = TokenCounter.for_profile(profile)
    ops = FileOperations()
    for entry in entries:
        if entry.type == "branch_summary" and not is_extension_summary(entry.record, profile=profile):
            ops = ops.merge(seed_from_details(entry.get("details"), profile=profile))

    taken: list[tuple[Mapping[str, Any], str]] = []
    total = 0
    for entry in reversed(entries):
        message = _branch_message(entry, profile)
        if message is None:
            continue
        found = extract_file_ops(message, profile=profile)
        if found:
            ops = ops.merge(found)
        tokens = _branch_tokens(message, counter, profile)
        if token_budget > 0 and total + tokens > token_budget:
            is_summary = entry.type in ("compaction", "branch_summary")
            if is_summary and total < token_budget * SUMMARY_ENTRY_SLACK:
                taken.append((message, str(entry.id)))
                total += tokens
            break
        taken.append((message, str(entry.id)))
        total += tokens
    taken.reverse()
    return BranchPreparation(
        messages=tuple(m for m, _ in taken),
        file_ops=ops,
        total_tokens=total,
        entry_ids=tuple(i for _, i in taken),
    )


# -- navigation --------------------------------------------------------------------------


def navigation_leaf(session: Session, target_id: str) -> str | None:
    """The new leaf when navigating to `target_id` (pi/oh-my-pi `navigateTree` step 4).

    A user message goes back to the editor, so the leaf becomes its parent; the same for
    a `custom_message`; any other entry becomes the leaf itself. None means "before the
    first entry" (the next entry would be a new root).

    Raises:
        ValueError: `target_id` is not in the session.
    """
    entry = session.get(target_id)
    if entry is None:
        raise ValueError(f"Entry {target_id} not found")
    if entry.role == "user" or entry.type == "custom_message":
        return entry.parent_id
    return target_id


def branch_with_summary(
    session: Session,
    target_id: str | None,
    summary: str,
    details: Any = None,
    *,
    from_extension: bool = False,
    timestamp: str | None = None,
    entry_id: str | None = None,
    profile: str = "musepi",
) -> Session:
    """A new session with a `branch_summary` entry attached at `target_id` (spec §1.10).

    The entry's `parentId` is `target_id` (None: a new root) and — pi's quirk, kept by
    oh-my-pi — its `fromId` is that same attachment point, or the literal `"root"` when
    `target_id` is None, although the docs describe `fromId` as the entry navigated
    from. Being appended last, the entry is the new session's leaf. `details` and the
    extension flag are written only when given (`fromHook` for pi, `fromExtension` for
    musepi), as JSON drops JavaScript's `undefined`.

    Args:
        session: The session (not modified).
        target_id: The entry to attach the summary to (from `navigation_leaf`), or None.
        summary: The summary text.
        details: Usually `{"readFiles": [...], "modifiedFiles": [...]}`.
        from_extension: The summary came from an extension, not the built-in summarizer.
        timestamp: ISO-8601 time of the entry; None uses the current time.
        entry_id: The new entry's id; None draws a fresh unique 8-hex id.
        profile: `musepi` or `pi` (only the extension flag's name differs).

    Returns:
        The new session.

    Raises:
        ValueError: `target_id` is not in the session.
    """
    check_profile(profile)
    if target_id is not None and target_id not in session:
        raise ValueError(f"Entry {target_id} not found")
    record: dict[str, Any] = {
        "type": "branch_summary",
        "id": entry_id if entry_id is not None else new_entry_id(session),
        "parentId": target_id,
        "timestamp": timestamp if timestamp is not None else iso_timestamp(),
        "fromId": target_id if target_id is not None else ROOT_FROM_ID,
        "summary": summary,
    }
    if details is not None:
        record["details"] = details
    if from_extension:
        record["fromHook" if profile == "pi" else "fromExtension"] = True
    return session.append(Entry.from_record(record))

"""Tree navigation: moving the leaf to another entry, optionally summarizing what is left.

`navigate_tree` follows pi's `navigateTree` (spec §7.1; the seed's "Branch summarization
pipeline"): collect the entries from the old leaf back to the common ancestor, ask the
`session_before_tree` hook (it may cancel, supply the summary, or change instructions and
label), summarize with a model when asked, move the leaf (a user message or custom message
goes back to the editor, so the leaf becomes its parent; any other entry becomes the leaf),
attach the `branch_summary` entry there when there is a summary, put the label on the summary
entry (or on the target without one), and tell the `session_tree` hook. The input session
is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .._prompts import PromptSet
from ..compaction._branch import (
    DEFAULT_BRANCH_SUMMARY_RESERVE,
    BranchPreparation,
    branch_summary_budget,
    branch_with_summary,
    collect_entries_for_branch_summary,
    navigation_leaf,
    prepare_branch_entries,
)
from ..compaction._hooks import NO_HOOKS, BeforeTree, SessionHooks, TreePreparation
from ..compaction._result import derived_entry_id
from ..llm import Summarizer
from ..session._model import Entry, message_text
from ..session._profiles import check_profile
from ..session._session import Session, timestamp_after
from ..tokens._counter import TokenCounter
from ._summary import BranchSummary, generate_branch_summary

TreeHooks = SessionHooks
"""The tree touchpoints' former name: the same `SessionHooks` (one place for every hook)."""


@dataclass(frozen=True)
class NavigationResult:
    """The outcome of `navigate_tree`.

    Attributes:
        session: The new session: its leaf moved, the summary entry (and label) appended.
        old_leaf_id: The leaf before.
        target_id: The entry navigated to.
        new_leaf_id: The leaf after (before any summary entry): the target, or its parent
            for a user or custom message; None for a new root.
        abandoned: The entries from the old leaf back to the common ancestor.
        common_ancestor_id: The deepest entry both paths share, or None.
        budget: The token budget of a summary's input.
        preparation: The messages a summary would read, and the file operations.
        summary: The branch summary, when one was made or supplied.
        summary_entry: The appended `branch_summary` entry, if any.
        editor_text: The text of a navigated-to user or custom message (back to the editor).
        cancelled: True when a hook cancelled (the session is the input).
    """

    session: Session
    old_leaf_id: str | None
    target_id: str
    new_leaf_id: str | None
    abandoned: tuple[Entry, ...]
    common_ancestor_id: str | None
    budget: int
    preparation: BranchPreparation
    summary: BranchSummary | None = None
    summary_entry: Entry | None = None
    editor_text: str | None = None
    cancelled: bool = False
    hooks_called: tuple[str, ...] = field(default=(), repr=False)


def _editor_text(entry: Entry) -> str | None:
    if entry.role == "user" or entry.type == "custom_message":
        content = entry.message.get("content") if entry.message else entry.get("content")
        return message_text(content) if not isinstance(content, str) else content
    return None


def _label_entry(session: Session, target_id: str, label: str) -> dict[str, Any]:
    return {
        "type": "label",
        "id": derived_entry_id(session, f"label:{target_id}:{label}"),
        "targetId": target_id,
        "label": label,
        "timestamp": timestamp_after(session.leaf),
    }


def _moved(
    session: Session,
    new_leaf: str | None,
    summary: BranchSummary | None,
    *,
    details: Any,
    supplied: bool,
    label: str | None,
    target_id: str,
    profile: str,
) -> tuple[Session, Entry | None]:
    """The session after the move: summary entry at the new leaf, then the label."""
    entry: Entry | None = None
    if summary is not None:
        moved = branch_with_summary(
            session,
            new_leaf,
            summary.summary,
            details,
            from_extension=supplied,
            timestamp=timestamp_after(session.leaf),
            entry_id=derived_entry_id(session, f"branch_summary:{new_leaf}:{summary.summary}"),
            profile=profile,
        )
        entry = moved.leaf
    else:
        moved = session.with_leaf(new_leaf)
    if label:
        on = entry.id if entry is not None and entry.id is not None else target_id
        moved = moved.append(_label_entry(moved, on, label))
    return moved, entry


def _planned(
    session: Session,
    target_id: str,
    summarizer: Summarizer | None,
    reserve_tokens: int,
    counter: TokenCounter,
    profile: str,
) -> NavigationResult:
    """The navigation before any hook or summary: what would be abandoned, and its budget."""
    old_leaf = session.leaf_id
    abandoned, common = collect_entries_for_branch_summary(session, old_leaf, target_id)
    window = getattr(summarizer, "context_window", None) if summarizer is not None else None
    budget = branch_summary_budget(window, reserve_tokens)
    return NavigationResult(
        session=session,
        old_leaf_id=old_leaf,
        target_id=target_id,
        new_leaf_id=old_leaf,
        abandoned=abandoned,
        common_ancestor_id=common,
        budget=budget,
        preparation=prepare_branch_entries(abandoned, budget, counter=counter, profile=profile),
    )


def _answered(ask: TreePreparation, answer: BeforeTree | None) -> TreePreparation:
    """The caller's instructions and label, with what the `session_before_tree` hook changed."""
    if answer is None:
        return ask
    return replace(
        ask,
        custom_instructions=answer.custom_instructions or ask.custom_instructions,
        replace_instructions=ask.replace_instructions
        if answer.replace_instructions is None
        else answer.replace_instructions,
        label=answer.label or ask.label,
    )


def _branch_summary(
    base: NavigationResult,
    ask: TreePreparation,
    answer: BeforeTree | None,
    *,
    summarize: bool,
    summarizer: Summarizer | None,
    counter: TokenCounter,
    prompts: PromptSet | str | None,
    reserve_tokens: int,
    profile: str,
) -> BranchSummary | None:
    """The hook's summary when it supplied one, else the model's when asked, else None."""
    if answer is not None and answer.summary is not None:
        details = answer.details if isinstance(answer.details, dict) else {}
        return BranchSummary(
            answer.summary,
            tuple(details.get("readFiles", ())),
            tuple(details.get("modifiedFiles", ())),
            base.preparation,
            base.budget,
        )
    if not (summarize and base.abandoned):
        return None
    if summarizer is None:
        raise ValueError("summarize=True needs a summarizer (or a hook-supplied summary)")
    return generate_branch_summary(
        base.abandoned,
        summarizer,
        profile=profile,
        counter=counter,
        prompts=prompts,
        custom_instructions=ask.custom_instructions,
        replace_instructions=ask.replace_instructions,
        reserve_tokens=reserve_tokens,
    )


def _navigated(
    base: NavigationResult,
    ask: TreePreparation,
    answer: BeforeTree | None,
    summary: BranchSummary | None,
    *,
    profile: str,
) -> NavigationResult:
    """The result after the move: the new leaf, the summary entry and label appended."""
    session, target_id = base.session, base.target_id
    supplied = answer is not None and answer.summary is not None
    new_leaf = navigation_leaf(session, target_id)
    moved, entry = _moved(
        session,
        new_leaf,
        summary,
        details=(answer.details if supplied and answer is not None else summary.details)
        if summary is not None
        else None,
        supplied=supplied,
        label=ask.label,
        target_id=target_id,
        profile=profile,
    )
    target = session.get(target_id)
    return replace(
        base,
        session=moved,
        new_leaf_id=new_leaf,
        summary=summary,
        summary_entry=entry,
        editor_text=_editor_text(target) if target is not None else None,
    )


def navigate_tree(
    session: Session,
    target_id: str,
    *,
    summarize: bool = False,
    summarizer: Summarizer | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
    prompts: PromptSet | str | None = None,
    reserve_tokens: int = DEFAULT_BRANCH_SUMMARY_RESERVE,
    hooks: SessionHooks | None = None,
) -> NavigationResult:
    """Move the session's leaf to `target_id`, summarizing the abandoned branch if asked.

    Args:
        session: The session (never changed).
        target_id: The entry to navigate to.
        summarize: Summarize the abandoned entries with `summarizer`.
        summarizer: The model seam (needed with `summarize`, unless a hook supplies the
            summary).
        custom_instructions, replace_instructions: As in `generate_branch_summary`.
        label: A label for the summary entry (or, without a summary, the target).
        profile: `musepi` (default) or `pi`.
        counter: Token counter for the budget walk (default: the profile's estimator).
        prompts: A prompt set or folder (default: the project's).
        reserve_tokens: Tokens kept free of the summarizer's window.
        hooks: The touchpoints (`session_before_tree`, `session_tree` are called here).

    Returns:
        The `NavigationResult`. Navigating to the current leaf changes nothing.

    Raises:
        KeyError: `target_id` is not in the session.
        ValueError: `summarize` without a summarizer (and no hook-supplied summary).
    """
    check_profile(profile)
    if target_id not in session:
        raise KeyError(f"entry {target_id!r} is not in the session")
    hooks = hooks or NO_HOOKS
    counter = counter or TokenCounter.for_profile(profile)
    base = _planned(session, target_id, summarizer, reserve_tokens, counter, profile)
    if target_id == base.old_leaf_id:
        return base
    ask = TreePreparation(
        base.old_leaf_id,
        target_id,
        base.abandoned,
        base.common_ancestor_id,
        custom_instructions,
        replace_instructions,
        label,
    )
    answer = hooks.session_before_tree(ask) if hooks.session_before_tree else None
    called = ("session_before_tree",) if hooks.session_before_tree else ()
    if answer is not None and answer.cancel:
        return replace(base, cancelled=True, hooks_called=called)
    ask = _answered(ask, answer)
    summary = _branch_summary(
        base,
        ask,
        answer,
        summarize=summarize,
        summarizer=summarizer,
        counter=counter,
        prompts=prompts,
        reserve_tokens=reserve_tokens,
        profile=profile,
    )
    result = _navigated(base, ask, answer, summary, profile=profile)
    if hooks.session_tree:
        called = (*called, "session_tree")
        result = replace(result, hooks_called=called)
        hooks.session_tree(result)
    return replace(result, hooks_called=called)

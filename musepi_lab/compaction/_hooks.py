"""The seed's extension touchpoints as callbacks, in one place.

MusePi lets an extension take part in compaction and tree navigation (the seed's "Extension
and hook touchpoints"); a researcher studies extension-provided summaries by passing plain
callbacks instead of writing a strategy:

- `session_before_compact(CompactionPreparation) -> BeforeCompact | None`: may cancel, or
  supply the summary (the entry is then marked `fromExtension`, pi `fromHook`; no model
  is asked).
- `session_compacting(CompactionPreparation) -> Compacting | None` (the seed's
  `session.compacting`): may replace the summary prompt and add `<additional-context>`
  lines for the default (LLM) compaction.
- `session_compact(CompactionResult) -> None`: after a compaction, with the result (its
  `from_extension` says who wrote the summary).
- `session_before_tree(TreePreparation) -> BeforeTree | None`: may cancel the navigation,
  supply the branch summary, or change instructions and label.
- `session_tree(NavigationResult) -> None`: after a navigation (new and old leaf, the summary
  entry if any).

`compact`, `replay` and `navigate_tree` accept one `SessionHooks` value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..session._model import Entry

if TYPE_CHECKING:
    from ._prepare import CompactionPreparation
    from ._result import CompactionResult


@dataclass(frozen=True)
class BeforeCompact:
    """A `session_before_compact` answer; None fields leave the default alone.

    Attributes:
        cancel: Do not compact (`compact` returns None).
        summary: A summary supplied by the extension: the result is made from it and the
            preparation, marked `from_extension`; no strategy runs.
        first_kept_entry_id: Where the kept region starts (default: the preparation's cut).
        details: The entry's `details` for a supplied summary.
    """

    cancel: bool = False
    summary: str | None = None
    first_kept_entry_id: str | None = None
    details: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Compacting:
    """A `session.compacting` answer: how the default compaction's request changes.

    Attributes:
        prompt: Replaces the summary instruction (first and update summaries alike).
        context: Lines added to the request's `<additional-context>` block.
    """

    prompt: str | None = None
    context: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreePreparation:
    """What a navigation would abandon, shown to the `session_before_tree` hook.

    Attributes:
        old_leaf_id: The leaf being left.
        target_id: The entry navigated to.
        entries: The abandoned entries, chronological.
        common_ancestor_id: The deepest entry both paths share, or None.
        custom_instructions: Instructions the caller gave.
        replace_instructions: Whether they replace the branch prompt (pi).
        label: The label the caller gave.
    """

    old_leaf_id: str | None
    target_id: str
    entries: tuple[Entry, ...]
    common_ancestor_id: str | None
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None


@dataclass(frozen=True)
class BeforeTree:
    """A `session_before_tree` hook's answer; None fields leave the default alone.

    Attributes:
        cancel: Stop the navigation (the session stays as it was).
        summary: A summary supplied by the extension (no model is asked; the entry is marked
            `fromExtension` / pi `fromHook`).
        details: The `details` of a supplied summary.
        custom_instructions: Replace the caller's instructions.
        replace_instructions: Replace the caller's choice.
        label: Replace the caller's label.
    """

    cancel: bool = False
    summary: str | None = None
    details: Any = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


@dataclass(frozen=True)
class SessionHooks:
    """The seed's touchpoints as callbacks (see the module docstring); any may be None.

    `session_tree` receives the `navigation.NavigationResult` (typed loosely here, as
    navigation sits above the engine).
    """

    session_before_compact: Callable[[CompactionPreparation], BeforeCompact | None] | None = None
    session_compacting: Callable[[CompactionPreparation], Compacting | None] | None = None
    session_compact: Callable[[CompactionResult], None] | None = None
    session_before_tree: Callable[[TreePreparation], BeforeTree | None] | None = None
    session_tree: Callable[[Any], None] | None = None

    def without_compact_notice(self) -> SessionHooks:
        """These hooks without `session_compact` (a replay tells it once per kept
        compaction, not once per attempt)."""
        return SessionHooks(
            self.session_before_compact,
            self.session_compacting,
            None,
            self.session_before_tree,
            self.session_tree,
        )


NO_HOOKS = SessionHooks()
"""No callbacks: the default everywhere."""

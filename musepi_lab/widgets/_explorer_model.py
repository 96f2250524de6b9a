"""The `SessionExplorer`'s model: what it explores and shows, as a frozen value.

Which session (the root or one of its linked subagents), the branches offered and the
filter narrowing them, the branch being explored (its path, per-entry tokens and the cut a
compaction would make at its leaf now), the selected entry, the window of the entry list
around it, and the context the LLM would see there with its sizes. Every change is a
method returning a new model (`with_leaf`, `with_selection`, `with_query`,
`show_subagent`, `select`, `after_navigation`); the widget only turns its controls' events
into those calls and draws the result. No widget here (the module imports no ipywidgets),
so the model is tested without a kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._settings import CompactionSettings
from ..compaction._token_sources import ContextFigures, context_figures
from ..context._build import SessionContext, build_session_context
from ..llm._types import Summarizer
from ..navigation._navigate import NavigationResult, navigate_tree
from ..session._model import Entry
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._explorer_views import branch_options, entry_option_label, subagent_options

ENTRY_WINDOW = 400
"""Most path entries the entry list offers at once (those around the selection)."""


def entry_window(index: int, length: int, current: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """The `[lo, hi)` path range the entry list offers: `current` while it holds `index`,
    else at most `ENTRY_WINDOW` entries centred on it (a list of 10,000 entries is slow to
    draw and to label; the window follows the selection instead)."""
    lo, hi = current
    if lo <= index < hi:
        return current
    lo = max(0, min(index - ENTRY_WINDOW // 2, length - ENTRY_WINDOW))
    return lo, min(length, lo + ENTRY_WINDOW)


def narrowed(
    branches: tuple[tuple[str, str], ...], query: str, current: str | None
) -> tuple[tuple[str, str], ...]:
    """The branches whose label holds `query` (any case); the `current` one stays offered,
    first, so the view does not jump away from what is being looked at."""
    query = query.strip().lower()
    if not query:
        return branches
    shown = tuple(o for o in branches if query in o[0].lower())
    if current is not None and all(value != current for _, value in shown):
        shown = tuple(o for o in branches if o[1] == current) + shown
    return shown


def message_tokens(
    session: Session, context: SessionContext, counter: TokenCounter
) -> tuple[int, ...]:
    """Tokens of each context message. Messages passed through unchanged are the entries'
    own objects, whose counts are cached per entry; rewritten ones (summaries, stripped
    tool calls) are counted anew."""
    tokens = []
    for message, entry_id in zip(context.messages, context.entry_ids, strict=True):
        entry = session.get(entry_id)
        if entry is not None and entry.message is message:
            tokens.append(counter.count_entry(entry))
        else:
            tokens.append(counter.count_message(message))
    return tuple(tokens)


@dataclasses.dataclass(frozen=True)
class ExplorerModel:
    """One state of the session explorer (build it with `ExplorerModel.open`).

    Attributes:
        root: The session whose subagents are offered.
        session: The session explored: the root, or `root.linked[subagent]`.
        subagent: Index in `root.linked` of the session explored, -1 for the root.
        profile: Context profile (`"musepi"` or `"pi"`).
        settings: The profile's compaction settings (the cut at the leaf).
        counter: Token counter of every figure.
        branches: `(label, leaf id)` of every real branch (`branch_options`).
        query: The text narrowing the branches offered (`shown_branches`).
        leaf_id: The leaf of the branch explored (None: an empty session).
        path: The entries from the root to `leaf_id`.
        tokens: The counter's tokens of each path entry.
        preparation: The cut a compaction would make at `leaf_id` now.
        selected_index: Path index of the selected entry.
        window: The `[lo, hi)` path range the entry list offers.
        context: What the LLM would see if the session ended at the selected entry.
        message_tokens: Tokens of each message of `context`.
        figures: The context's sizes with their sources.
    """

    root: Session
    session: Session
    profile: str
    settings: CompactionSettings
    counter: TokenCounter = dataclasses.field(compare=False)
    subagent: int = -1
    branches: tuple[tuple[str, str], ...] = ()
    query: str = ""
    leaf_id: str | None = None
    path: tuple[Entry, ...] = ()
    tokens: tuple[int, ...] = ()
    preparation: CompactionPreparation | None = None
    selected_index: int = 0
    window: tuple[int, int] = (0, 0)
    context: SessionContext | None = None
    message_tokens: tuple[int, ...] = ()
    figures: ContextFigures | None = None

    @classmethod
    def open(
        cls, session: Session, *, profile: str = "musepi", counter: TokenCounter | None = None
    ) -> ExplorerModel:
        """Explore `session` anew: from its leaf, its last entry selected."""
        blank = cls(
            root=session,
            session=session,
            profile=profile,
            settings=CompactionSettings.for_profile(profile),
            counter=counter or TokenCounter.for_profile(profile),
        )
        return blank.show_subagent(-1)

    def copy_with(self, **changes: Any) -> ExplorerModel:
        """A copy with the given fields replaced (derived fields are not recomputed: use
        the `with_*` methods to move the explorer)."""
        return dataclasses.replace(self, **changes)

    # -- derived ----------------------------------------------------------------------
    @property
    def selected_entry(self) -> Entry | None:
        """The selected entry (None for an empty session)."""
        return self.path[self.selected_index] if self.path else None

    @property
    def context_tokens(self) -> int:
        """The counter's tokens of the whole context at the selection."""
        return sum(self.message_tokens)

    @property
    def shown_branches(self) -> tuple[tuple[str, str], ...]:
        """The branches the picker offers under `query`."""
        return narrowed(self.branches, self.query, self.leaf_id)

    @property
    def leaf_ids(self) -> tuple[str, ...]:
        """The leaf of every branch, in the order offered."""
        return tuple(value for _, value in self.branches)

    @property
    def subagent_options(self) -> list[tuple[str, int]]:
        """`(label, index)` of the root (-1) and each session it links."""
        return subagent_options(self.root)

    def entry_options(self) -> list[tuple[str, int]]:
        """`(label, path index)` of the entries in the list's window."""
        lo, hi = self.window
        return [(entry_option_label(i, self.path[i], self.tokens[i]), i) for i in range(lo, hi)]

    # -- moves ------------------------------------------------------------------------
    def show_subagent(self, index: int) -> ExplorerModel:
        """Explore the root (-1) or `root.linked[index]`, from its leaf; the filter cleared."""
        session = self.root if index < 0 else self.root.linked[index]
        branches = tuple(branch_options(session))
        moved = self.copy_with(session=session, subagent=index, branches=branches, query="")
        return moved.with_leaf(branches[0][1] if branches else None)

    def with_query(self, query: str) -> ExplorerModel:
        """Narrow the branches offered to those whose label holds `query`."""
        return self.copy_with(query=query)

    def with_leaf(self, leaf_id: str | None) -> ExplorerModel:
        """Explore the branch ending at `leaf_id`, its last entry selected."""
        path = self.session.path(leaf_id) if leaf_id is not None else ()
        prep = None
        if leaf_id is not None:
            prep = prepare_compaction(self.session, self.settings, self.counter, leaf_id=leaf_id)
        moved = self.copy_with(
            leaf_id=leaf_id,
            path=path,
            tokens=tuple(self.counter.count_entries(path)) if path else (),
            preparation=prep,
            window=(0, 0),
        )
        return moved.with_selection(max(0, len(path) - 1))

    def with_selection(self, index: int) -> ExplorerModel:
        """Select path entry `index`: the list's window follows, the context is rebuilt."""
        if not self.path:
            return self.copy_with(
                selected_index=0, window=(0, 0), context=None, message_tokens=(), figures=None
            )
        if not 0 <= index < len(self.path):
            raise IndexError(f"entry {index} is not on the branch (0 to {len(self.path) - 1})")
        entry = self.path[index]
        context = build_session_context(self.session, entry.id, profile=self.profile)
        tokens = message_tokens(self.session, context, self.counter)
        figures = context_figures(
            context.messages, list(tokens), method=self.counter.method, profile=self.profile
        )
        return self.copy_with(
            selected_index=index,
            window=entry_window(index, len(self.path), self.window),
            context=context,
            message_tokens=tokens,
            figures=figures,
        )

    def select(self, entry_id: str) -> ExplorerModel:
        """Select an entry by id, on the first branch that holds it when not on this one.

        Raises:
            KeyError: No entry has that id, or it is on no branch offered.
        """
        if entry_id not in self.session:
            raise KeyError(f"no entry {entry_id!r} in the session")
        model = self
        if all(e.id != entry_id for e in self.path):
            leaf = next(
                (
                    leaf
                    for leaf in self.leaf_ids
                    if any(e.id == entry_id for e in self.session.path(leaf))
                ),
                None,
            )
            if leaf is None:
                raise KeyError(f"entry {entry_id!r} is on no branch of the session")
            model = self.with_leaf(leaf)
        return model.with_selection([e.id for e in model.path].index(entry_id))

    # -- navigating -------------------------------------------------------------------
    def navigate(
        self, *, summarize: bool = False, summarizer: Summarizer | None = None
    ) -> NavigationResult | None:
        """Navigate from the session leaf to the selected entry (`navigate_tree`); None
        for an empty session. Raises what `navigate_tree` raises."""
        entry = self.selected_entry
        if entry is None or entry.id is None:
            return None
        return navigate_tree(
            self.session,
            entry.id,
            summarize=summarize,
            summarizer=summarizer,
            profile=self.profile,
            counter=self.counter,
        )

    def after_navigation(self, result: NavigationResult) -> ExplorerModel:
        """The navigated session explored anew, its branch summary (or new leaf) selected;
        the model itself when the navigation was cancelled."""
        if result.cancelled:
            return self
        model = ExplorerModel.open(result.session, profile=self.profile, counter=self.counter)
        shown = result.summary_entry.id if result.summary_entry is not None else None
        shown = shown or result.new_leaf_id
        return model.select(shown) if shown is not None else model

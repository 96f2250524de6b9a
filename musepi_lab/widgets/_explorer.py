"""`SessionExplorer`: browse a session's branches and entries, and what the LLM sees at each.

The session stays a plain immutable value; the explorer is a view over it. Its state
(`session`, `leaf_id`, `path`, `selected_entry`, `context`) is readable from Python, and
every control is a child widget whose value can be set from Python too.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._settings import CompactionSettings
from ..compaction._token_sources import ESTIMATED, ContextFigures, context_figures
from ..context._build import SessionContext, build_session_context
from ..formats._registry import read_session
from ..llm._types import Summarizer
from ..navigation._navigate import NavigationResult, navigate_tree
from ..session._errors import SessionReadError
from ..session._model import Entry
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._cut import split_turn_html
from ._explorer_views import (
    branch_options,
    context_html,
    entry_html,
    entry_option_label,
    file_label,
    navigation_html,
    session_files,
    subagent_options,
)
from ._figures import THOUSANDS, show_png, show_text
from ._live import DEFAULT_INTERVAL, LiveExplorerMixin, LiveFeed
from ._tree_view import TreeDrawing

ENTRY_WINDOW = 400
"""Most path entries the entry list offers at once (those around the selection)."""


class SessionExplorer(LiveExplorerMixin, widgets.VBox):
    """Pick a session, a branch and an entry; see its content, tokens and the LLM's view.

    Controls (child widgets, settable from Python):
        `file_picker` (Dropdown of session files, shown when built from a path),
        `leaf_picker` (Dropdown of the session's real branches: the session leaf, then each
    branch tip holding a message; metadata side leaves such as Claude Code progress lines
    are no branches), `branch_filter` (Text narrowing the branch list),
        `entry_list` (Select over the path entries around the selection, at most
        `ENTRY_WINDOW` of them, value = path index),
        `entry_slider` (IntSlider over the same path; kept in step with the list),
        `subagent_picker` (Dropdown: the session, then each subagent or compaction run it
        links, `Session.linked`; choosing one explores it, choosing the first comes back).

    The tree (`tree_output`, `tree_png`) shows the branch being explored with the cut a
    compaction would make at its leaf now (`preparation`) shaded on it, as
    `CutPointExplorer` draws it; `cut_view` says it in words. Every token figure says
    whether the provider recorded it or the counter estimated it (`figures`).

    Navigating (the seed's `/tree`): `summarize_box` (Checkbox), `preview_button` shows
    what navigating from the session leaf to the selected entry would abandon, the summary
    budget and the prepared messages; `navigate_button` does it (with a summarizer and the
    box ticked, the abandoned branch is summarized) and shows the resulting tree: the
    explorer's session becomes the navigated one, with its branch summary selected.

    State: `session`, `leaf_id`, `path`, `selected_index`, `selected_entry`, `context`
    (the `SessionContext` the LLM would see if the session ended at the selected entry),
    `context_tokens` (the counter's estimate of that context), `figures` (its sizes
    with their sources, `ContextFigures`), `root_session` (the session whose subagents
    the picker offers), `preparation` and `navigation` (the last `NavigationResult`,
    preview or applied).

    Args:
        source: A `Session`, a session file, or a folder of session files.
        profile: Context profile (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).
        max_chars: Longest text shown per content block (None: all of it; the entry box
            scrolls).
        context_rows: Most context messages listed (the newest are kept).
        summarizer: The model seam for branch summaries (None: navigate without one).
        live: Follow the session file while an agent writes it (`source` must be a file):
            the tree, the context against the model's window, the next cut point and the
            cost so far (`live_view`, `live_summary`) update within a second of a write,
            from the new lines only (`widgets.LiveFeed`); `stop()` ends it, `refresh()`
            looks once.
        interval: Seconds between looks at the file in live mode.
        plot: Draw the tree (turn off for speed in scripts; the cut is still computed).
    """

    def __init__(
        self,
        source: Session | str | os.PathLike[str],
        *,
        profile: str = "musepi",
        counter: TokenCounter | None = None,
        max_chars: int | None = None,
        context_rows: int = 60,
        summarizer: Summarizer | None = None,
        live: bool = False,
        interval: float = DEFAULT_INTERVAL,
        plot: bool = True,
    ) -> None:
        self.profile = profile
        self.plot = plot
        self.settings = CompactionSettings.for_profile(profile)
        self.preparation: CompactionPreparation | None = None
        self.figures: ContextFigures | None = None
        self.tree_png: bytes | None = None
        self._drawing: TreeDrawing | None = None
        self.summarizer = summarizer
        self.navigation: NavigationResult | None = None
        self.counter = counter or TokenCounter.for_profile(profile)
        self.max_chars = max_chars
        self.context_rows = context_rows
        self.session: Session = Session({"type": "session"}, ())
        self.root_session = self.session
        self.leaf_id: str | None = None
        self.path: tuple[Entry, ...] = ()
        self.context: SessionContext | None = None
        self.context_tokens = 0
        self._tokens: list[int] = []
        self._window = (0, 0)
        self._busy = False

        self._make_controls(summarizer)
        self.live_view = widgets.HTML()
        self.live: LiveFeed | None = None
        if live:
            self._open_live(source, interval)
        else:
            self._open(source)
        self._connect()

        # One column: the list, the entry and the context each take the whole width, so
        # no text is cut at a panel's edge and no id wraps in a narrow cell.
        super().__init__(
            children=[
                self.header,
                self.live_view,
                self.message,
                self.file_picker,
                self.subagent_picker,
                self.branch_filter,
                self.leaf_picker,
                self.cut_view,
                self.tree_output,
                self.entry_slider,
                widgets.HBox([self.preview_button, self.navigate_button, self.summarize_box]),
                self.navigation_view,
                self.entry_list_head,
                self.entry_list,
                self.entry_view,
                self.context_view,
            ],
            layout={"width": "100%"},
        )

    def _make_controls(self, summarizer: Summarizer | None) -> None:
        """The pickers, lists and views (empty until a session is shown)."""
        wide = {"width": "90%"}
        self.file_picker = widgets.Dropdown(description="file", layout=wide)
        self.subagent_picker = widgets.Dropdown(description="subagent", layout=wide)
        self.leaf_picker = widgets.Dropdown(description="branch", layout=wide)
        self.branch_filter = widgets.Text(
            description="find branch",
            placeholder="id, label or text; the list narrows as you type",
            continuous_update=True,
            layout=wide,
        )
        self._branches: list[tuple[str, str]] = []
        self.entry_slider = widgets.IntSlider(
            description="entry",
            min=0,
            max=0,
            continuous_update=False,
            readout_format=THOUSANDS,
            layout=wide,
        )
        self.entry_list_head = widgets.HTML()
        self.entry_list = widgets.Select(
            rows=14,
            layout={"width": "100%"},
            style={"description_width": "0px"},
        )
        self.cut_view = widgets.HTML()
        self.tree_output = widgets.Output(layout={"width": "100%", "overflow": "auto"})
        self.header = widgets.HTML()
        self.entry_view = widgets.HTML()
        self.context_view = widgets.HTML()
        self.message = widgets.HTML()
        self.summarize_box = widgets.Checkbox(
            description="summarize the abandoned branch",
            value=summarizer is not None,
            indent=False,
            layout={"width": "auto"},
        )
        self.preview_button = widgets.Button(
            description="preview: navigate here", layout={"width": "auto"}
        )
        self.navigate_button = widgets.Button(description="navigate here", button_style="info")
        self.navigation_view = widgets.HTML()

    def _open(self, source: Session | str | os.PathLike[str]) -> None:
        """Show a given session, or list a file or folder's sessions and show the first."""
        if isinstance(source, Session):
            self.file_picker.layout.display = "none"
            self._set_session(source)
        else:
            path = Path(source)
            if not path.exists():
                raise FileNotFoundError(f"no such session file or folder: {path}")
            files = session_files(path)
            if not files:
                raise FileNotFoundError(f"no session files under {path}")
            first = path if path.is_file() else files[0]
            self.file_picker.options = [(file_label(f, path), str(f)) for f in files]
            self.file_picker.value = str(first)
            self._load(first)

    def _connect(self) -> None:
        """Wire the controls to their handlers."""
        self.file_picker.observe(self._on_file, names="value")
        self.subagent_picker.observe(self._on_subagent, names="value")
        self.leaf_picker.observe(self._on_leaf, names="value")
        self.branch_filter.observe(self._on_filter, names="value")
        self.entry_slider.observe(self._on_slider, names="value")
        self.entry_list.observe(self._on_list, names="value")
        self.preview_button.on_click(lambda _: self.navigate_here(apply=False))
        self.navigate_button.on_click(lambda _: self.navigate_here(apply=True))

    # -- state ------------------------------------------------------------------------
    @property
    def selected_index(self) -> int:
        """Path index of the selected entry."""
        return int(self.entry_slider.value)

    @property
    def selected_entry(self) -> Entry | None:
        """The selected entry (None for an empty session)."""
        return self.path[self.selected_index] if self.path else None

    def select(self, entry_id: str) -> None:
        """Select an entry by id, switching to the first branch that holds it when needed.

        Raises:
            KeyError: No entry has that id, or it is on no branch offered.
        """
        if entry_id not in self.session:
            raise KeyError(f"no entry {entry_id!r} in the session")
        if all(e.id != entry_id for e in self.path):
            leaf = next(
                (
                    leaf_id
                    for leaf_id in self._leaf_ids()
                    if any(e.id == entry_id for e in self.session.path(leaf_id))
                ),
                None,
            )
            if leaf is None:
                raise KeyError(f"entry {entry_id!r} is on no branch of the session")
            self.leaf_picker.value = leaf
        self.entry_slider.value = [e.id for e in self.path].index(entry_id)

    def navigate_here(self, *, apply: bool = True) -> NavigationResult | None:
        """Navigate from the session leaf to the selected entry (the buttons call this).

        With `apply=False`, only show what would be abandoned, the budget and the prepared
        messages. With `apply=True`, navigate (summarizing when the box is ticked and a
        summarizer was given) and show the resulting tree: the session becomes the
        navigated one and its summary entry (or new leaf) is selected.
        """
        entry = self.selected_entry
        if entry is None or entry.id is None:
            return None
        summarize = apply and self.summarize_box.value and self.summarizer is not None
        try:
            result = navigate_tree(
                self.session,
                entry.id,
                summarize=summarize,
                summarizer=self.summarizer,
                profile=self.profile,
                counter=self.counter,
            )
        except (ValueError, KeyError, RuntimeError) as exc:
            self.navigation_view.value = (
                f"<span style='color:#a33'>could not navigate: {html.escape(str(exc))}</span>"
            )
            return None
        self.navigation = result
        if apply and not result.cancelled:
            self._set_session(result.session)
            shown = result.summary_entry.id if result.summary_entry is not None else None
            shown = shown or result.new_leaf_id
            if shown is not None:
                self.select(shown)
        self.navigation_view.value = navigation_html(result, applied=apply)
        return result

    # -- loading ----------------------------------------------------------------------
    def _load(self, file: Path) -> None:
        try:
            session = read_session(file)
        except (SessionReadError, OSError, ValueError) as exc:
            self.message.value = (
                f"<span style='color:#a33'>could not read {html.escape(str(file))}: "
                f"{html.escape(str(exc))}</span>"
            )
            return
        self._set_session(session)

    def _set_session(self, session: Session) -> None:
        """Explore a session anew: its subagents are offered, it is shown first."""
        self.root_session = session
        options = subagent_options(session)
        self._busy = True
        try:
            self.subagent_picker.options = options
            self.subagent_picker.value = -1
        finally:
            self._busy = False
        self.subagent_picker.layout.display = None if len(options) > 1 else "none"
        self._show_session(session)

    def _show_session(self, session: Session) -> None:
        """Show one session (the root or one of its subagents) from its leaf."""
        from ..display import session_html

        self.session = session
        self._drawing = None
        self.header.value = session_html(session)
        problems = len(session.errors)
        self.message.value = (
            f"<span style='color:#a33'>{problems} problem(s) met while reading; "
            "see the card above</span>"
            if problems
            else ""
        )
        self._busy = True
        try:
            self._branches = branch_options(session)
            self.branch_filter.value = ""
            self.leaf_picker.options = self._branches
            self.leaf_picker.value = self._branches[0][1] if self._branches else None
        finally:
            self._busy = False
        self._set_leaf(self.leaf_picker.value)

    def _leaf_ids(self) -> list[str]:
        return [value for _, value in self._branches]

    def _set_leaf(self, leaf_id: str | None) -> None:
        self.leaf_id = leaf_id
        self.path = self.session.path(leaf_id) if leaf_id is not None else ()
        self._tokens = self.counter.count_entries(self.path) if self.path else []
        last = max(0, len(self.path) - 1)
        self._busy = True
        try:
            self._window = (0, 0)
            self._list_around(last)
            self.entry_slider.max = last
            self.entry_slider.value = last
            self.entry_list.value = last if self.path else None
        finally:
            self._busy = False
        self.entry_list_head.value = (
            f"<div style='font-size:12px;color:#555'>{len(self.path):,} entries on this branch;"
            f" tokens {ESTIMATED} ({html.escape(self.counter.method)})</div>"
        )
        self._show_cut()
        self._show(last)

    def _show_cut(self) -> None:
        """The cut a compaction would make at the branch's leaf now, in words and on the
        tree (the tree of a session is laid out once per branch and counter)."""
        prep = None
        if self.leaf_id is not None:
            prep = prepare_compaction(
                self.session, self.settings, self.counter, leaf_id=self.leaf_id
            )
        self.preparation = prep
        self.cut_view.value = split_turn_html(prep) if self.path else ""
        self.tree_png = None
        if not self.plot or not self.path:
            self.tree_output.outputs = ()
            return
        if self._drawing is None or self._drawing.session is not self.session:
            self._drawing = TreeDrawing(self.session)
        try:
            png = self._drawing.png(leaf_id=self.leaf_id, counter=self.counter, cut=prep)
        except Exception as exc:  # a view shows the failure instead of dying with it
            show_text(self.tree_output, f"could not draw the tree: {exc!r}")
            return
        show_png(self.tree_output, png, description="entry tree with the cut")
        self.tree_png = png

    def _list_around(self, index: int) -> None:
        """Offer the path entries around `index` in the list (at most `ENTRY_WINDOW`).

        A branch of 10,000 entries would make a list the browser is slow to draw and a
        kernel slow to label; the window follows the slider instead.
        """
        lo, hi = self._window
        if lo <= index < hi:
            return
        lo = max(0, min(index - ENTRY_WINDOW // 2, len(self.path) - ENTRY_WINDOW))
        hi = min(len(self.path), lo + ENTRY_WINDOW)
        self._window = (lo, hi)
        self.entry_list.options = [
            (entry_option_label(i, self.path[i], self._tokens[i]), i) for i in range(lo, hi)
        ]

    def _show(self, index: int) -> None:
        if not self.path:
            self.context = None
            self.context_tokens = 0
            self.entry_view.value = "<i>empty session</i>"
            self.context_view.value = ""
            return
        entry = self.path[index]
        self.entry_view.value = entry_html(
            entry, index, self._tokens[index], max_chars=self.max_chars, method=self.counter.method
        )
        context = build_session_context(self.session, entry.id, profile=self.profile)
        tokens = self._message_tokens(context)
        self.context = context
        self.context_tokens = sum(tokens)
        self.figures = context_figures(
            context.messages, tokens, method=self.counter.method, profile=self.profile
        )
        self.context_view.value = context_html(
            context,
            tokens,
            self.figures,
            max_rows=self.context_rows,
            title=f"What the LLM sees at entry {index:,} ({self.profile}):",
        )

    def _message_tokens(self, context: SessionContext) -> list[int]:
        # Messages passed through unchanged are the entries' own objects: their counts are
        # cached per entry. Rewritten ones (summaries, stripped tool calls) are counted anew.
        tokens = []
        for message, entry_id in zip(context.messages, context.entry_ids, strict=True):
            entry = self.session.get(entry_id)
            if entry is not None and entry.message is message:
                tokens.append(self.counter.count_entry(entry))
            else:
                tokens.append(self.counter.count_message(message))
        return tokens

    # -- events -----------------------------------------------------------------------
    def _on_file(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._load(Path(change["new"]))

    def _on_subagent(self, change: dict[str, Any]) -> None:
        if self._busy or change["new"] is None:
            return
        index = int(change["new"])
        root = self.root_session
        self._show_session(root if index < 0 else root.linked[index])

    def _on_leaf(self, change: dict[str, Any]) -> None:
        if not self._busy and change["new"] is not None:
            self._set_leaf(change["new"])

    def _on_filter(self, change: dict[str, Any]) -> None:
        query = str(change["new"]).strip().lower()
        current = self.leaf_picker.value
        shown = [o for o in self._branches if query in o[0].lower()] if query else self._branches
        if current is not None and all(value != current for _, value in shown):
            # The branch being looked at stays offered, first, so the view does not jump.
            shown = [o for o in self._branches if o[1] == current] + shown
        self._busy = True
        try:
            self.leaf_picker.options = shown
            self.leaf_picker.value = current
        finally:
            self._busy = False

    def _on_slider(self, change: dict[str, Any]) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            self._list_around(change["new"])
            self.entry_list.value = change["new"]
        finally:
            self._busy = False
        self._show(change["new"])

    def _on_list(self, change: dict[str, Any]) -> None:
        if self._busy or change["new"] is None:
            return
        # The slider is the single source of the selection; moving it shows the entry.
        self.entry_slider.value = change["new"]

"""`SessionExplorer`: browse a session's branches and entries, and what the LLM sees at each.

The session stays a plain immutable value; what the explorer explores and shows is an
`ExplorerModel` (`_explorer_model`, a frozen value tested without a kernel), and the widget
is a thin view over it: each control's event becomes a model move, and `_render` draws what
changed. Its state (`model`, `session`, `leaf_id`, `path`, `selected_entry`, `context`) is
readable from Python, and every control is a child widget whose value can be set too.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from ..compaction._prepare import CompactionPreparation
from ..compaction._settings import CompactionSettings
from ..compaction._token_sources import ESTIMATED, ContextFigures
from ..context._build import SessionContext
from ..formats._registry import read_session
from ..llm._types import Summarizer
from ..navigation._navigate import NavigationResult
from ..session._errors import SessionReadError
from ..session._model import Entry
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._cut import split_turn_html
from ._explorer_model import ENTRY_WINDOW as ENTRY_WINDOW  # where the tests read it
from ._explorer_model import ExplorerModel
from ._explorer_views import (
    context_html,
    entry_html,
    file_label,
    navigation_html,
    session_files,
)
from ._figures import THOUSANDS, show_png, show_text
from ._live import DEFAULT_INTERVAL, LiveExplorerMixin, LiveFeed
from ._tree_view import TreeDrawing


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

    State: `model` (the `ExplorerModel` shown; the names below read it), `session`,
    `leaf_id`, `path`, `selected_index`, `selected_entry`, `context`
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
        self.tree_png: bytes | None = None
        self._drawing: TreeDrawing | None = None
        self.summarizer = summarizer
        self.navigation: NavigationResult | None = None
        self.counter = counter or TokenCounter.for_profile(profile)
        self.max_chars = max_chars
        self.context_rows = context_rows
        self.model = ExplorerModel.open(
            Session({"type": "session"}, ()), profile=profile, counter=self.counter
        )
        self._shown: ExplorerModel | None = None
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

    # -- state: read from the model ---------------------------------------------------
    @property
    def session(self) -> Session:
        """The session explored (the root or one of its subagents)."""
        return self.model.session

    @property
    def root_session(self) -> Session:
        """The session whose subagents the picker offers."""
        return self.model.root

    @property
    def settings(self) -> CompactionSettings:
        """The profile's compaction settings (the cut shown)."""
        return self.model.settings

    @property
    def leaf_id(self) -> str | None:
        """The leaf of the branch explored."""
        return self.model.leaf_id

    @property
    def path(self) -> tuple[Entry, ...]:
        """The entries of the branch explored, root first."""
        return self.model.path

    @property
    def preparation(self) -> CompactionPreparation | None:
        """The cut a compaction would make at the branch's leaf now."""
        return self.model.preparation

    @property
    def context(self) -> SessionContext | None:
        """What the LLM would see if the session ended at the selected entry."""
        return self.model.context

    @property
    def context_tokens(self) -> int:
        """The counter's estimate of that context."""
        return self.model.context_tokens

    @property
    def figures(self) -> ContextFigures | None:
        """The context's sizes with their sources."""
        return self.model.figures

    @property
    def selected_index(self) -> int:
        """Path index of the selected entry."""
        return self.model.selected_index

    @property
    def selected_entry(self) -> Entry | None:
        """The selected entry (None for an empty session)."""
        return self.model.selected_entry

    def select(self, entry_id: str) -> None:
        """Select an entry by id, switching to the first branch that holds it when needed.

        Raises:
            KeyError: No entry has that id, or it is on no branch offered.
        """
        self._render(self.model.select(entry_id))

    def navigate_here(self, *, apply: bool = True) -> NavigationResult | None:
        """Navigate from the session leaf to the selected entry (the buttons call this).

        With `apply=False`, only show what would be abandoned, the budget and the prepared
        messages. With `apply=True`, navigate (summarizing when the box is ticked and a
        summarizer was given) and show the resulting tree: the session becomes the
        navigated one and its summary entry (or new leaf) is selected.
        """
        summarize = apply and self.summarize_box.value and self.summarizer is not None
        try:
            result = self.model.navigate(summarize=summarize, summarizer=self.summarizer)
        except (ValueError, KeyError, RuntimeError) as exc:
            self.navigation_view.value = (
                f"<span style='color:#a33'>could not navigate: {html.escape(str(exc))}</span>"
            )
            return None
        if result is None:
            return None
        self.navigation = result
        if apply:
            self._render(self.model.after_navigation(result))
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
        self._render(ExplorerModel.open(session, profile=self.profile, counter=self.counter))

    # -- drawing the model ------------------------------------------------------------
    def _render(self, model: ExplorerModel) -> None:
        """Show `model`, redrawing only the panes whose part of it changed."""
        old, self.model = self._shown, model
        self._shown = model
        new_root = old is None or old.root is not model.root
        new_session = old is None or old.session is not model.session
        new_branch = new_session or old is None or old.leaf_id != model.leaf_id
        self._busy = True
        try:
            if new_root:
                self._show_subagents(model)
            if new_session:
                self._show_session(model)
            if new_branch or old is None or old.shown_branches != model.shown_branches:
                self.leaf_picker.options = list(model.shown_branches)
                self.leaf_picker.value = model.leaf_id
            if new_branch:
                self._show_branch(model)
            if new_branch or old is None or old.window != model.window:
                self.entry_list.options = model.entry_options()
            self.entry_slider.value = model.selected_index
            self.entry_list.value = model.selected_index if model.path else None
        finally:
            self._busy = False
        if new_branch or old is None or old.selected_index != model.selected_index:
            self._show_entry(model)

    def _show_subagents(self, model: ExplorerModel) -> None:
        options = model.subagent_options
        self.subagent_picker.options = options
        self.subagent_picker.value = model.subagent
        self.subagent_picker.layout.display = None if len(options) > 1 else "none"

    def _show_session(self, model: ExplorerModel) -> None:
        from ..display import session_html

        session = model.session
        self._drawing = None
        self.header.value = session_html(session)
        problems = len(session.errors)
        self.message.value = (
            f"<span style='color:#a33'>{problems} problem(s) met while reading; "
            "see the card above</span>"
            if problems
            else ""
        )
        self.branch_filter.value = model.query

    def _show_branch(self, model: ExplorerModel) -> None:
        self.entry_slider.max = max(0, len(model.path) - 1)
        self.entry_list_head.value = (
            f"<div style='font-size:12px;color:#555'>{len(model.path):,} entries on this "
            f"branch; tokens {ESTIMATED} ({html.escape(self.counter.method)})</div>"
        )
        self._show_cut(model)

    def _show_cut(self, model: ExplorerModel) -> None:
        """The cut at the branch's leaf, in words and on the tree (the tree of a session
        is laid out once per branch and counter)."""
        prep = model.preparation
        self.cut_view.value = split_turn_html(prep) if model.path else ""
        self.tree_png = None
        if not self.plot or not model.path:
            self.tree_output.outputs = ()
            return
        if self._drawing is None or self._drawing.session is not model.session:
            self._drawing = TreeDrawing(model.session)
        try:
            png = self._drawing.png(leaf_id=model.leaf_id, counter=self.counter, cut=prep)
        except Exception as exc:  # a view shows the failure instead of dying with it
            show_text(self.tree_output, f"could not draw the tree: {exc!r}")
            return
        show_png(self.tree_output, png, description="entry tree with the cut")
        self.tree_png = png

    def _show_entry(self, model: ExplorerModel) -> None:
        entry, index = model.selected_entry, model.selected_index
        if entry is None or model.context is None or model.figures is None:
            self.entry_view.value = "<i>empty session</i>"
            self.context_view.value = ""
            return
        self.entry_view.value = entry_html(
            entry,
            index,
            model.tokens[index],
            max_chars=self.max_chars,
            method=self.counter.method,
        )
        self.context_view.value = context_html(
            model.context,
            list(model.message_tokens),
            model.figures,
            max_rows=self.context_rows,
            title=f"What the LLM sees at entry {index:,} ({self.profile}):",
        )

    # -- events: each one a model move ------------------------------------------------
    def _on_file(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._load(Path(change["new"]))

    def _on_subagent(self, change: dict[str, Any]) -> None:
        if not self._busy and change["new"] is not None:
            self._render(self.model.show_subagent(int(change["new"])))

    def _on_leaf(self, change: dict[str, Any]) -> None:
        if not self._busy and change["new"] is not None:
            self._render(self.model.with_leaf(change["new"]))

    def _on_filter(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self._render(self.model.with_query(str(change["new"])))

    def _on_slider(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self._render(self.model.with_selection(int(change["new"])))

    def _on_list(self, change: dict[str, Any]) -> None:
        if not self._busy and change["new"] is not None:
            self._render(self.model.with_selection(int(change["new"])))

"""`SessionExplorer`: browse a session's branches and entries, and what the LLM sees at each.

The session stays a plain immutable value; the explorer is a view over it. Its state
(`session`, `leaf_id`, `path`, `selected_entry`, `context`) is readable from Python, and
every control is a child widget whose value can be set from Python too.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import orjson

from ..context._build import SessionContext, build_session_context
from ..context._transcript import TranscriptItem
from ..context._transcript import render_transcript as _render_transcript
from ..formats._registry import SESSION_SUFFIXES, iter_session_files, read_session
from ..llm._types import Summarizer
from ..metrics._facts import context_text
from ..navigation._navigate import NavigationResult, navigate_tree
from ..session._errors import SessionReadError
from ..session._messages import entry_to_message
from ..session._model import Entry
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._figures import escape_clip, one_line
from ._live import DEFAULT_INTERVAL, LiveExplorerMixin, LiveFeed

ENTRY_WINDOW = 400
"""Most path entries the entry list offers at once (those around the selection)."""
SNIPPET_CHARS = 90
"""Characters of an entry's text shown in the entry list and the context table."""


def entry_kind(entry: Entry) -> str:
    """`type/role` of an entry, or its type when it carries no message role."""
    return f"{entry.type}/{entry.role}" if entry.role else entry.type


def entry_snippet(entry: Entry, limit: int = SNIPPET_CHARS) -> str:
    """One line of what an entry says: its message text, or its record for metadata."""
    message = entry_to_message(entry)
    if message is not None:
        text = context_text([message])
        if text.strip():
            return one_line(text, limit)
    extra = {k: v for k, v in entry.record.items() if k not in ("type", "id", "parentId")}
    return one_line(orjson.dumps(extra, default=str).decode(), limit)


def entry_option_label(index: int, entry: Entry, tokens: int) -> str:
    """The line of one path entry in the entry list."""
    return f"{index:>4} · {entry_kind(entry):<22} {tokens:>7,} tok · {entry_snippet(entry, 60)}"


def entry_html(entry: Entry, index: int, tokens: int, *, max_chars: int = 1500) -> str:
    """An entry as HTML: its ids, position and tokens, then its content."""
    message = entry_to_message(entry)
    if message is not None:
        item = TranscriptItem(entry_id=entry.id, entry_type=entry.type, message=message)
        body = _render_transcript([item], max_chars=max_chars)
    else:
        body = orjson.dumps(entry.to_dict(), option=orjson.OPT_INDENT_2, default=str).decode()
    facts = [
        ("path index", index),
        ("id", entry.id),
        ("parent", entry.parent_id),
        ("line", entry.line),
        ("timestamp", entry.timestamp),
        ("tokens", f"{tokens:,}"),
    ]
    head = " · ".join(
        f"<b>{html.escape(k)}</b> {html.escape(str(v))}" for k, v in facts if v is not None
    )
    return (
        f"<div style='font-size:12px'><div><b>{html.escape(entry_kind(entry))}</b> · {head}</div>"
        "<pre style='white-space:pre-wrap;max-height:320px;overflow:auto;margin:4px 0;"
        f"background:#f7f7f7;padding:4px'>{escape_clip(body, max_chars * 4)}</pre></div>"
    )


def context_html(
    context: SessionContext, tokens: Sequence[int], *, max_rows: int = 60, title: str = ""
) -> str:
    """The messages of an LLM context as a compact table (newest rows kept when cut)."""
    total = sum(tokens)
    shown = range(max(0, len(context.messages) - max_rows), len(context.messages))
    rows = []
    for i in shown:
        message = context.messages[i]
        role = str(message.get("role", "?"))
        snippet = one_line(context_text([message]), SNIPPET_CHARS)
        rows.append(
            f"<tr><td>{i}</td><td>{html.escape(role)}</td>"
            f"<td>{html.escape(str(context.entry_ids[i]))}</td>"
            f"<td style='text-align:right'>{tokens[i]:,}</td>"
            f"<td>{html.escape(snippet)}</td></tr>"
        )
    cut = len(context.messages) - len(shown)
    more = f"<div>… {cut} earlier message(s) not shown</div>" if cut else ""
    model = context.model or {}
    model_text = f"{model.get('provider', '')}/{model.get('modelId', '')}" if model else "-"
    summary = (
        f"<b>{html.escape(title)}</b> {len(context.messages)} messages · ≈{total:,} tokens · "
        f"model {html.escape(model_text)} · thinking {html.escape(context.thinking_level)}"
        + (
            f" · opens with compaction {html.escape(context.compaction_id)}"
            if context.compaction_id
            else ""
        )
    )
    return (
        f"<div style='font-size:12px'><div>{summary}</div>{more}"
        "<div style='max-height:320px;overflow:auto'><table style='border-collapse:collapse'>"
        "<tr><th>#</th><th>role</th><th>entry</th><th>tokens</th><th>text</th></tr>"
        f"{''.join(rows)}</table></div></div>"
    )


def navigation_html(result: NavigationResult, *, applied: bool, max_rows: int = 40) -> str:
    """A navigation as HTML: from and to, what is abandoned, the summary budget and the
    messages prepared for it, and the summary when there is one."""
    verb = "navigated" if applied else "would navigate"
    head = (
        f"<b>{verb}</b> from {html.escape(str(result.old_leaf_id))} to "
        f"{html.escape(result.target_id)}: new leaf {html.escape(str(result.new_leaf_id))}, "
        f"common ancestor {html.escape(str(result.common_ancestor_id))}"
    )
    if result.cancelled:
        head += " · <b>cancelled by a hook</b>"
    rows = "".join(
        f"<tr><td>{html.escape(str(e.id))}</td><td>{html.escape(entry_kind(e))}</td>"
        f"<td>{html.escape(entry_snippet(e))}</td></tr>"
        for e in result.abandoned[-max_rows:]
    )
    more = len(result.abandoned) - min(len(result.abandoned), max_rows)
    prep = result.preparation
    parts = [
        f"<div>{head}</div>",
        f"<div>{len(result.abandoned)} entries abandoned"
        + (f" ({more} earlier not listed)" if more else "")
        + f" · summary budget {result.budget:,} tokens · {len(prep.messages)} messages "
        f"prepared (≈{prep.total_tokens:,} tokens)</div>",
        "<div style='max-height:200px;overflow:auto'><table>"
        f"<tr><th>entry</th><th>kind</th><th>text</th></tr>{rows}</table></div>",
    ]
    if result.summary is not None:
        parts.append(
            "<div><b>branch summary</b>"
            + (
                f" (entry {html.escape(str(result.summary_entry.id))})"
                if result.summary_entry
                else ""
            )
            + "<pre style='white-space:pre-wrap;max-height:240px;overflow:auto;"
            f"background:#f7f7f7;padding:4px'>{escape_clip(result.summary.summary, 6000)}</pre></div>"
        )
    return f"<div style='font-size:12px'>{''.join(parts)}</div>"


def branch_options(session: Session) -> list[tuple[str, str]]:
    """`(label, leaf id)` of each real branch: the session leaf first, then the tip of every
    other branch of the folded tree (`plot._layout.fold_tree`), in tree order."""
    from ..plot._layout import fold_tree

    if session.leaf_id is None:
        return []
    folded = fold_tree(session)
    depth = {e.id: d + 1 for d, e in session.walk()}
    own = folded.unit_of.get(session.leaf_id)
    tips = [session.leaf_id] + [
        str(folded.heads[u].id)
        for u, kids in enumerate(folded.children)
        if not kids and u != own and folded.heads[u].id
    ]
    options = []
    for tip in tips:
        entry = session.by_id[tip]
        label = session.labels.get(tip)
        active = " (session leaf)" if tip == session.leaf_id else ""
        tag = f" [{label}]" if label else ""
        options.append(
            (
                f"{tip} · {depth.get(tip, 0)} entries · ends {entry_kind(entry)}{tag}{active}"
                f" · {entry_snippet(entry, 40)}",
                tip,
            )
        )
    return options


def session_files(source: Path) -> list[Path]:
    """The session files a picker offers: those under a folder, or a file and its siblings."""
    if source.is_dir():
        return list(iter_session_files(source))
    siblings = sorted(
        p for p in source.parent.iterdir() if p.is_file() and p.suffix in SESSION_SUFFIXES
    )
    return siblings if source in siblings else [source, *siblings]


class SessionExplorer(LiveExplorerMixin, widgets.VBox):
    """Pick a session, a branch and an entry; see its content, tokens and the LLM's view.

    Controls (child widgets, settable from Python):
        `file_picker` (Dropdown of session files, shown when built from a path),
        `leaf_picker` (Dropdown of the session's real branches: the session leaf, then each
    branch tip holding a message; metadata side leaves such as Claude Code progress lines
    are no branches), `branch_filter` (Text narrowing the branch list),
        `entry_list` (Select over the path entries around the selection, at most
        `ENTRY_WINDOW` of them, value = path index),
        `entry_slider` (IntSlider over the same path; kept in step with the list).

    Navigating (the seed's `/tree`): `summarize_box` (Checkbox), `preview_button` shows
    what navigating from the session leaf to the selected entry would abandon, the summary
    budget and the prepared messages; `navigate_button` does it (with a summarizer and the
    box ticked, the abandoned branch is summarized) and shows the resulting tree: the
    explorer's session becomes the navigated one, with its branch summary selected.

    State: `session`, `leaf_id`, `path`, `selected_index`, `selected_entry`, `context`
    (the `SessionContext` the LLM would see if the session ended at the selected entry),
    `context_tokens` and `navigation` (the last `NavigationResult`, preview or applied).

    Args:
        source: A `Session`, a session file, or a folder of session files.
        profile: Context profile (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).
        max_chars: Longest text shown per content block.
        context_rows: Most context messages listed (the newest are kept).
        summarizer: The model seam for branch summaries (None: navigate without one).
        live: Follow the session file while an agent writes it (`source` must be a file):
            the tree, the context against the model's window, the next cut point and the
            cost so far (`live_view`, `live_summary`) update within a second of a write,
            from the new lines only (`widgets.LiveFeed`); `stop()` ends it, `refresh()`
            looks once.
        interval: Seconds between looks at the file in live mode.
    """

    def __init__(
        self,
        source: Session | str | os.PathLike[str],
        *,
        profile: str = "musepi",
        counter: TokenCounter | None = None,
        max_chars: int = 1500,
        context_rows: int = 60,
        summarizer: Summarizer | None = None,
        live: bool = False,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.profile = profile
        self.summarizer = summarizer
        self.navigation: NavigationResult | None = None
        self.counter = counter or TokenCounter.for_profile(profile)
        self.max_chars = max_chars
        self.context_rows = context_rows
        self.session: Session = Session({"type": "session"}, ())
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

        super().__init__(
            children=[
                self.header,
                self.live_view,
                self.message,
                self.file_picker,
                self.branch_filter,
                self.leaf_picker,
                self.entry_slider,
                widgets.HBox([self.preview_button, self.navigate_button, self.summarize_box]),
                self.navigation_view,
                widgets.HBox(
                    [
                        widgets.VBox([self.entry_list], layout={"width": "45%"}),
                        widgets.VBox([self.entry_view, self.context_view], layout={"width": "55%"}),
                    ]
                ),
            ]
        )

    def _make_controls(self, summarizer: Summarizer | None) -> None:
        """The pickers, lists and views (empty until a session is shown)."""
        self.file_picker = widgets.Dropdown(description="file", layout={"width": "60%"})
        self.leaf_picker = widgets.Dropdown(description="branch", layout={"width": "60%"})
        self.branch_filter = widgets.Text(
            description="find branch",
            placeholder="id, label or text; the list narrows as you type",
            continuous_update=True,
            layout={"width": "60%"},
        )
        self._branches: list[tuple[str, str]] = []
        self.entry_slider = widgets.IntSlider(
            description="entry", min=0, max=0, continuous_update=False, layout={"width": "60%"}
        )
        self.entry_list = widgets.Select(
            rows=14, layout={"width": "100%"}, style={"description_width": "0px"}
        )
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
            self.file_picker.options = [(_file_label(f, path), str(f)) for f in files]
            self.file_picker.value = str(first)
            self._load(first)

    def _connect(self) -> None:
        """Wire the controls to their handlers."""
        self.file_picker.observe(self._on_file, names="value")
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
        from ..display import session_html

        self.session = session
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
        self._show(last)

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
            entry, index, self._tokens[index], max_chars=self.max_chars
        )
        context = build_session_context(self.session, entry.id, profile=self.profile)
        tokens = self._message_tokens(context)
        self.context = context
        self.context_tokens = sum(tokens)
        self.context_view.value = context_html(
            context,
            tokens,
            max_rows=self.context_rows,
            title=f"What the LLM sees at entry {index} ({self.profile}):",
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


def _file_label(file: Path, source: Path) -> str:
    base = source if source.is_dir() else source.parent
    try:
        return str(file.relative_to(base))
    except ValueError:
        return str(file)

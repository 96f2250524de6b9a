"""`LiveFeed`: a session file followed while an agent writes it, for the live explorer.

A background thread polls the file (every 0.25 s by default) through `formats._tail`,
which reads only the bytes past the last offset; when the session changed, the feed works
out the live figures (`analysis.live_summary`) and hands both to a callback. `poll_once`
does one step in the caller's thread (tests, or a notebook without threads), and `stop`
ends the thread.
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..analysis._live import LiveSummary, live_summary
from ..compaction._settings import CompactionSettings
from ..formats._tail import TailState, poll, start_tail
from ..session._session import Session
from ..tokens._counter import TokenCounter

DEFAULT_INTERVAL = 0.25
"""Seconds between two looks at the file."""

Listener = Callable[[TailState, LiveSummary], None]


def live_html(summary: LiveSummary, state: TailState) -> str:
    """The live figures as one HTML block (what `SessionExplorer(live=True)` shows)."""
    share = summary.context_tokens / summary.window if summary.window else 0.0
    colour = "#a33" if summary.would_compact else "#363"
    window = f"{summary.window:,}"
    if summary.window_source == "unknown":
        window += " <span style='color:#a33'>(unknown window: default assumed)</span>"
    trigger = (
        "<b>compaction due</b>"
        if summary.would_compact
        else f"{summary.tokens_to_threshold:,} tokens until the threshold"
    )
    cut = (
        f"next cut at path entry {summary.cut_index:,} "
        f"(<span style='white-space:nowrap'>{html.escape(str(summary.cut_entry_id))}</span>),"
        f" keeping {summary.tokens_kept:,} tokens estimated by the counter"
        if summary.cut_entry_id
        else "nothing to cut yet"
    )
    figures = summary.figures
    estimated = (
        f" · {html.escape(figures.estimated_text())}"
        if figures is not None and figures.recorded is not None
        else ""
    )
    notes = [f"window {summary.window:,}: {html.escape(summary.window_reason)}"]
    if summary.unpriced_models:
        notes.append("default prices for " + html.escape(", ".join(summary.unpriced_models)))
    if state.pending:
        notes.append(f"pending partial line ({state.pending_bytes:,} bytes)")
    if state.restarts:
        notes.append(f"file replaced or truncated {state.restarts}×, read anew")
    if summary.problems:
        notes.append(f"{summary.problems:,} problem(s) met while reading")
    warning = figures.warning() if figures is not None else None
    if warning:
        notes.append(f"<b style='color:#a33'>⚠ recorded ≠ estimated</b>: {html.escape(warning)}")
    return (
        "<div style='font-size:12px'>"
        f"<b>live</b> · {summary.entries:,} entries · leaf "
        f"<span style='white-space:nowrap'>{html.escape(str(summary.leaf_id))}</span> · "
        f"<span style='color:{colour}'>context {summary.context_tokens:,} / {window} tokens "
        f"({share:.0%}) {summary.context_source}</span>{estimated} · threshold {summary.threshold:,}: {trigger} · {cut} · "
        f"cost so far ${summary.cost_usd:.4f}"
        + (f"<div>{' · '.join(notes)}</div>" if notes else "")
        + "</div>"
    )


class LiveFeed:
    """Follow one session file and tell a listener when its session changes.

    Attributes:
        state: The tail's current `TailState` (its `session` is the latest).
        summary: The live figures of that session (`snapshot()` gives both at once).
        interval: Seconds between looks at the file.

    Args:
        path: The session file (pi/MusePi, Claude Code or Codex JSONL).
        listener: Called with `(state, summary)` after each change (in the feed's thread
            once `start` ran).
        settings: Compaction settings for the cut and the trigger (default: MusePi's).
        counter: Token counter (default: the profile's estimator).
        window: The model's context window (default: recorded, else the table).
        interval: Seconds between looks (0.2–0.25 keeps a view within a second of a write).
    """

    def __init__(
        self,
        path: str,
        listener: Listener | None = None,
        *,
        settings: CompactionSettings | None = None,
        counter: TokenCounter | None = None,
        window: int | None = None,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.settings = settings or CompactionSettings.musepi()
        self.counter = counter or TokenCounter.for_profile(self.settings.profile)
        self.window = window
        self.interval = interval
        self.listener = listener
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        state = start_tail(path)
        self._current = (state, self._summarize(state))

    @property
    def state(self) -> TailState:
        """The tail's current state (its `session` is the latest)."""
        return self._current[0]

    @property
    def summary(self) -> LiveSummary:
        """The live figures of `state.session`."""
        return self._current[1]

    def snapshot(self) -> tuple[TailState, LiveSummary]:
        """The state and its figures, taken together (the thread may move on meanwhile)."""
        return self._current

    def _summarize(self, state: TailState) -> LiveSummary:
        return live_summary(
            state.session,
            settings=self.settings,
            counter=self.counter,
            window=self.window,
            pending_bytes=state.pending_bytes,
        )

    def poll_once(self) -> bool:
        """Look at the file once; True (and the listener told) when anything changed."""
        with self._lock:
            before, summary = self._current
            after = poll(before)
            if after is before:
                return False
            if after.session is not before.session or after.pending != before.pending:
                summary = self._summarize(after)
            self._current = (after, summary)  # one assignment: readers see a matching pair
        if self.listener is not None:
            self.listener(after, summary)
        return True

    def start(self) -> None:
        """Poll in a background thread until `stop` (a second call does nothing)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="musepi-lab-live", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.poll_once()
            except Exception as exc:  # a view keeps running; the error is kept in `error`
                self.error = exc
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    error: Exception | None = None
    """The last error a background poll met (None when all went well)."""

    @property
    def running(self) -> bool:
        """Whether the background thread is polling."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 2.0) -> None:
        """End the background thread (waits up to `timeout` seconds for it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


class LiveExplorerMixin:
    """The live mode of `SessionExplorer`: a `LiveFeed` whose changes reset its session."""

    live: LiveFeed | None
    live_view: Any
    profile: str
    counter: TokenCounter
    file_picker: Any

    @property
    def session(self) -> Session:  # the explorer's
        raise NotImplementedError

    def _set_session(self, session: Session) -> None:  # the explorer's
        raise NotImplementedError

    def _open_live(self, source: Session | str | os.PathLike[str], interval: float) -> None:
        if isinstance(source, Session) or not Path(source).is_file():
            raise ValueError(f"live=True follows a session file; got {source!r}")
        self.file_picker.layout.display = "none"
        settings = CompactionSettings.for_profile(self.profile)
        self.live = LiveFeed(
            os.fspath(source),
            self._on_live,
            settings=settings,
            counter=self.counter,
            interval=interval,
        )
        self._on_live(self.live.state, self.live.summary)
        self.live.start()

    def _on_live(self, state: TailState, summary: LiveSummary) -> None:
        # The figures first: they reach the browser before the tree is redrawn.
        self.live_view.value = live_html(summary, state)
        if state.session is not self.session:
            self._set_session(state.session)

    @property
    def live_summary(self) -> LiveSummary | None:
        """The live figures (context, window, next cut, cost) in live mode, else None."""
        return self.live.summary if self.live is not None else None

    def refresh(self) -> bool:
        """Live mode: look at the file now; True when the view changed."""
        return self.live.poll_once() if self.live is not None else False

    def stop(self) -> None:
        """Live mode: stop following the file (the view keeps what it shows)."""
        if self.live is not None:
            self.live.stop()

    def close(self) -> None:
        """Stop following the file, then close the widget."""
        self.stop()
        super().close()  # type: ignore[misc]  # the widget's own close

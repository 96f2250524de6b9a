"""`CutPointExplorer`: move the keep-recent budget and watch where a compaction would cut.

Every change recomputes `prepare_compaction` (cheap: the token counter caches per entry
and the engine reuses its per-path plan across budgets) and redraws what depends on it.
The window and reserve do not move the cut; they set the threshold the token bar shows.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import ipywidgets as widgets

from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._settings import CompactionSettings
from ..compaction._threshold import threshold_tokens
from ..compaction._token_sources import (
    BEYOND,
    ESTIMATED,
    RECORDED,
    ContextFigures,
    context_figures,
    cut_bar_parts,
)
from ..context._build import build_session_context
from ..session._profiles import PROFILES
from ..session._session import Session
from ..tokens._counter import METHODS, TokenCounter, token_method_for
from ._figures import THOUSANDS, show_png, show_text
from ._tree_view import TreeDrawing

DEFAULT_WINDOW = 200_000
"""Context window the explorer starts with (Claude-class models)."""
BAR_COLORS: dict[str, str] = {
    "summarized": "#fd8d3c",
    "turn prefix": "#9e9ac8",
    "kept": "#74c476",
    BEYOND: "#bdbdbd",
    "free": "#eeeeee",
}


def region_tokens(
    prep: CompactionPreparation | None, counter: TokenCounter, *, whole: int = 0
) -> dict[str, int]:
    """Estimated tokens of the summarized, turn-prefix and kept regions of a preparation;
    without a cut everything is kept: `whole` (the context's estimate) goes there."""
    if prep is None:
        return {"summarized": 0, "turn prefix": 0, "kept": whole}
    return {
        "summarized": counter.count_messages(prep.messages_to_summarize),
        "turn prefix": counter.count_messages(prep.turn_prefix_messages),
        "kept": counter.count_messages(prep.recent_messages),
    }


def token_bar_html(
    regions: dict[str, int], *, window: int, threshold: int, figures: ContextFigures
) -> str:
    """A bar as wide as the window: the parts of the context, and the threshold mark.

    The parts add up to the figure written beside the bar: the regions are the counter's
    estimates, and what the provider recorded beyond them is a part of its own
    (`cut_bar_parts`). Every figure says where it comes from.
    """
    context = figures.context
    parts = cut_bar_parts(regions, context)
    total = sum(parts.values())
    scale = max(window, total, 1)
    cells = "".join(
        f"<div title='{html.escape(name)}: {n:,}' style='width:{100 * n / scale:.3f}%;"
        f"background:{BAR_COLORS[name]}'></div>"
        for name, n in parts.items()
        if n > 0
    )
    mark = (
        f"<div title='threshold {threshold:,}' style='position:absolute;top:-3px;bottom:-3px;"
        f"left:{100 * threshold / scale:.3f}%;border-left:2px solid #d62728'></div>"
    )
    source = RECORDED if figures.recorded is not None else ESTIMATED
    terms = " + ".join(
        f"<span style='color:{BAR_COLORS[name]}'>■</span> {html.escape(name)} {n:,}"
        for name, n in parts.items()
        if name != BEYOND or n
    )
    if total == context:
        head = f"context {context:,} {source} = {terms}"
    else:  # the provider counted fewer tokens than the counter's regions hold
        head = (
            f"regions {total:,} = {terms} · context {context:,} {source} ({total - context:,} less)"
        )
    legend = (
        f"<div>{head}</div><div style='color:#555'>regions {ESTIMATED} ({figures.method})"
        + (
            f"; {BEYOND}: what the provider recorded and the regions do not hold (system "
            "prompt, tool definitions, the tokenizers' difference)"
            if parts[BEYOND]
            else ""
        )
        + f" · whole context {figures.estimated_text()}</div>"
    )
    verdict = (
        "<b style='color:#d62728'>over the threshold: a compaction would fire</b>"
        if context > threshold
        else "under the threshold: no automatic compaction yet"
    )
    return (
        "<div style='font-size:12px'>"
        "<div style='position:relative;display:flex;height:14px;width:100%;max-width:720px;"
        f"background:{BAR_COLORS['free']};border-radius:3px'>{cells}{mark}</div>"
        f"{legend}<div>threshold {threshold:,} (red mark) · window {window:,}: {verdict}</div>"
        f"{figures_warning_html(figures)}</div>"
    )


def figures_warning_html(figures: ContextFigures) -> str:
    """The warning when recorded and estimated disagree extremely, else nothing."""
    warning = figures.warning()
    if warning is None:
        return ""
    return f"<div style='color:#a33'><b>⚠ recorded ≠ estimated</b>: {html.escape(warning)}</div>"


def split_turn_html(prep: CompactionPreparation | None) -> str:
    """The cut in words, with the split-turn case spelled out."""
    if prep is None:
        return "<b>No cut</b>: nothing to summarize at this budget (the whole path is kept)."
    text = (
        f"<b>Cut</b> at path index {prep.cut_index} · first kept entry "
        f"<code>{html.escape(prep.first_kept_entry_id)}</code> · keep budget "
        f"{prep.keep_recent_tokens:,}"
    )
    if prep.usage_ratio is not None and prep.usage_ratio > 1:
        text += f" (shrunk by usage ratio {prep.usage_ratio:.2f})"
    if prep.is_split_turn:
        start = prep.path[prep.turn_start_index] if prep.turn_start_index >= 0 else None
        text += (
            "<br><b style='color:#6a51a3'>split turn</b>: the cut falls inside a turn that "
            f"starts at path index {prep.turn_start_index}"
            + (f" (<code>{html.escape(str(start.id))}</code>)" if start is not None else "")
            + f"; its first {len(prep.turn_prefix_messages)} message(s) are summarized "
            "separately as the turn prefix."
        )
    return f"<div style='font-size:12px'>{text}</div>"


_SLIDER_LOOK: dict[str, Any] = {
    "continuous_update": False,
    "readout_format": THOUSANDS,
    "style": {"description_width": "90px"},
    "layout": {"width": "520px"},
}


def _slider(description: str, high: int, step: int, value: int, *, low: int = 0) -> Any:
    """A token slider as the explorer shows them (updates when released)."""
    return widgets.IntSlider(
        description=description, min=low, max=high, step=step, value=value, **_SLIDER_LOOK
    )


class CutPointExplorer(widgets.VBox):
    """Sliders for keep-recent, reserve and window, profile and token-method pickers, and
    the tree plot and token bar that follow them.

    Controls (child widgets, settable from Python): `keep_slider`, `reserve_slider`,
    `window_slider` (IntSliders, tokens), `profile_picker`, `method_picker` (Dropdowns).

    State: `session`, `leaf_id`, `settings` (the `CompactionSettings` in force),
    `counter`, `preparation` (the current `CompactionPreparation`, or None when nothing
    would be summarized), `threshold`, `context_tokens` (the trigger's figure: recorded by
    the provider where the path has usage), `figures` (both sizes with their sources,
    `ContextFigures`), `regions` (tokens per region, estimated by the counter) and
    `png` (bytes of the tree last drawn, None when plotting is off).

    Args:
        session: The session (not changed).
        leaf_id: The leaf whose path is cut (default: the session leaf).
        settings: Starting settings (default: the profile's defaults).
        window: Starting context window.
        method: Starting token method (default: the profile's estimator).
        plot: Draw the tree (turn off for speed in scripts; the state still updates).
    """

    def __init__(
        self,
        session: Session,
        *,
        leaf_id: str | None = None,
        settings: CompactionSettings | None = None,
        window: int = DEFAULT_WINDOW,
        method: str | None = None,
        plot: bool = True,
    ) -> None:
        settings = settings or CompactionSettings.musepi()
        self.session = session
        self.leaf_id = leaf_id
        self.plot = plot
        self.settings = settings
        self._given_settings = settings
        self._drawn: tuple[Any, ...] | None = None
        self._drawing = TreeDrawing(session)
        self.preparation: CompactionPreparation | None = None
        self.threshold = 0
        self.context_tokens = 0
        self.figures: ContextFigures | None = None
        self._figures_key: tuple[Any, ...] | None = None
        self._leaf_figures: ContextFigures | None = None
        self.regions: dict[str, int] = {}
        self.png: bytes | None = None
        self._counters: dict[str, TokenCounter] = {}
        method = method or token_method_for(settings.profile)
        self.counter = self._counter(method)

        path_tokens = sum(self.counter.count_entries(session.path(leaf_id)))
        keep_max = max(settings.keep_recent_tokens * 2, path_tokens, 1000)
        window_max = max(1_000_000, window)
        self.keep_slider = _slider("keep recent", keep_max, 500, settings.keep_recent_tokens)
        self.reserve_slider = _slider("reserve", window_max, 512, settings.resolved_reserve_tokens)
        self.window_slider = _slider("window", window_max, 4096, window, low=4096)
        self.profile_picker = widgets.Dropdown(
            description="profile", options=list(PROFILES), value=settings.profile
        )
        self.method_picker = widgets.Dropdown(
            description="tokens", options=list(METHODS), value=method
        )
        path_length = len(session.path(leaf_id))
        self.zoom_slider = widgets.IntRangeSlider(
            description="tree zoom",
            min=0,
            max=max(1, path_length),
            value=(0, max(1, path_length)),
            **_SLIDER_LOOK,
        )
        self.cut_view = widgets.HTML()
        self.bar_view = widgets.HTML()
        self.card_view = widgets.HTML()
        self.plot_output = widgets.Output(layout={"width": "100%", "overflow": "auto"})

        self._recompute()
        for control in (
            self.keep_slider,
            self.reserve_slider,
            self.window_slider,
            self.profile_picker,
            self.method_picker,
            self.zoom_slider,
        ):
            control.observe(self._on_change, names="value")

        super().__init__(children=self._children())

    def _children(self) -> list[widgets.Widget]:
        sliders = [self.keep_slider, self.reserve_slider, self.window_slider, self.zoom_slider]
        pickers = [self.profile_picker, self.method_picker]
        controls = widgets.HBox([widgets.VBox(sliders), widgets.VBox(pickers)])
        return [controls, self.cut_view, self.bar_view, self.plot_output, self.card_view]

    # -- computing --------------------------------------------------------------------
    def _counter(self, method: str) -> TokenCounter:
        # One counter per method, kept: switching back reuses its per-entry cache.
        if method not in self._counters:
            self._counters[method] = TokenCounter(method)
        return self._counters[method]

    def _settings(self) -> CompactionSettings:
        profile = self.profile_picker.value
        base = (
            self._given_settings
            if self._given_settings.profile == profile
            else CompactionSettings.for_profile(profile)
        )
        reserve = int(self.reserve_slider.value)
        # MusePi treats an unset reserve differently from an explicit one (spec §3.5):
        # leave it unset until the slider moves away from the default.
        unset = base.reserve_tokens is None and reserve == base.resolved_reserve_tokens
        return base.copy_with(
            keep_recent_tokens=int(self.keep_slider.value),
            reserve_tokens=None if unset else reserve,
        )

    def _figures(self, prep: CompactionPreparation | None) -> ContextFigures:
        """Both sizes of the leaf's context; the recorded one from the cut's own estimate
        when there is a cut (the figure its trigger compares)."""
        leaf = self.leaf_id or self.session.leaf_id
        key = (leaf, self.settings.profile, self.counter.method)
        if self._leaf_figures is None or self._figures_key != key:
            messages = build_session_context(
                self.session, leaf, profile=self.settings.profile
            ).messages
            counts = [self.counter.count_message(m) for m in messages]
            self._leaf_figures = context_figures(
                messages, counts, method=self.counter.method, profile=self.settings.profile
            )
            self._figures_key = key
        figures: ContextFigures = self._leaf_figures
        if prep is not None and prep.context_estimate.last_usage_index >= 0:
            estimate = prep.context_estimate
            figures = dataclasses.replace(
                figures, recorded=estimate.usage_tokens, trailing=estimate.trailing_tokens
            )
        return figures

    def _recompute(self) -> None:
        self.settings = self._settings()
        self.counter = self._counter(self.method_picker.value)
        prep = prepare_compaction(self.session, self.settings, self.counter, leaf_id=self.leaf_id)
        self.preparation = prep
        self.figures = self._figures(prep)
        self.regions = region_tokens(prep, self.counter, whole=self.figures.estimated)
        window = int(self.window_slider.value)
        self.threshold = threshold_tokens(window, self.settings)
        self.context_tokens = self.figures.context
        self.cut_view.value = split_turn_html(prep)
        self.bar_view.value = token_bar_html(
            self.regions, window=window, threshold=self.threshold, figures=self.figures
        )
        # The cut only changes with the budget, profile and counter, not with window or
        # reserve: skip the redraw, the slow part, when it stayed where it was.
        key = (
            self.counter.method,
            self.settings.profile,
            tuple(self.zoom_slider.value),
            None if prep is None else (prep.first_kept_entry_id, prep.turn_start_index),
        )
        if key != self._drawn:
            self._draw()
            self._drawn = key

    def _draw(self) -> None:
        from ..display import preparation_html

        prep = self.preparation
        self.card_view.value = preparation_html(prep, self.counter) if prep is not None else ""
        if not self.plot:
            return
        start, end = self.zoom_slider.value
        try:
            png = self._drawing.png(
                leaf_id=self.leaf_id, counter=self.counter, cut=prep, start=start, end=end
            )
        except Exception as exc:  # a view shows the failure instead of dying with it
            show_text(self.plot_output, f"could not draw the tree: {exc!r}")
            self.png = None
            return
        show_png(self.plot_output, png, description="entry tree")
        self.png = png

    # -- events -----------------------------------------------------------------------
    def _on_change(self, _change: dict[str, Any]) -> None:
        self._recompute()

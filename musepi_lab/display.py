"""Rich display: compact HTML summaries for notebooks, plain text for terminals.

Pure string building (no IPython import): `Session`, `CompactionPreparation`,
`CompactionResult` and `ReplayResult` call these from `_repr_html_`.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

_STYLE = (
    "<style>.mpl-card{font-family:system-ui,sans-serif;font-size:12px;border:1px solid #ddd;"
    "border-radius:6px;padding:6px 10px;display:inline-block;max-width:100%}"
    ".mpl-card h4{margin:2px 0 6px 0;font-size:13px}.mpl-card table{border-collapse:collapse}"
    ".mpl-card td,.mpl-card th{padding:1px 8px 1px 0;text-align:left;vertical-align:top}"
    ".mpl-card th{color:#555;font-weight:normal}"
    ".mpl-bar{display:flex;height:10px;width:360px;border-radius:3px;overflow:hidden;margin:4px 0}"
    "</style>"
)


def _rows(pairs: Iterable[tuple[str, Any]]) -> str:
    return "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in pairs
    )


def card(title: str, pairs: Sequence[tuple[str, Any]], extra: str = "") -> str:
    """A small titled key/value card."""
    return (
        f"{_STYLE}<div class='mpl-card'><h4>{html.escape(title)}</h4>"
        f"<table>{_rows(pairs)}</table>{extra}</div>"
    )


def _bar(parts: Sequence[tuple[str, int, str]]) -> str:
    total = sum(n for _, n, _ in parts) or 1
    cells = "".join(
        f"<div title='{html.escape(name)}: {n:,}' style='width:{100 * n / total:.2f}%;"
        f"background:{color}'></div>"
        for name, n, color in parts
        if n > 0
    )
    legend = " · ".join(
        f"<span style='color:{c}'>■</span> {html.escape(n)} {v:,}" for n, v, c in parts
    )
    return f"<div class='mpl-bar'>{cells}</div><div>{legend}</div>"


def session_pairs(session: Any) -> list[tuple[str, Any]]:
    """Key facts of a session, for HTML and text."""
    path = session.path()
    roles = Counter(e.role for e in path if e.type == "message")
    kinds = Counter(e.type for e in session.entries)
    return [
        ("format", session.source_format),
        ("entries", f"{len(session.entries):,} ({len(path):,} on the active path)"),
        ("messages on path", ", ".join(f"{r} {n}" for r, n in roles.most_common())),
        ("compactions", kinds.get("compaction", 0)),
        ("branch summaries", kinds.get("branch_summary", 0)),
        ("leaves", len(session.leaves)),
        ("problems", len(session.errors)),
        ("source", session.source_path or "(in memory)"),
    ]


def session_html(session: Any) -> str:
    """HTML card of a `Session`."""
    problems = ""
    if session.errors:
        items = "".join(f"<li>{html.escape(str(p))}</li>" for p in session.errors[:5])
        more = f"<li>… {len(session.errors) - 5} more</li>" if len(session.errors) > 5 else ""
        problems = scrollable(f"<ul style='margin:4px 0;color:#a33'>{items}{more}</ul>", 160)
    return card(f"Session {session.id}", session_pairs(session), problems)


TOKEN_COUNTS_NOTE = (
    "Which count is which: `tokens before` is the preparation's figure (recorded provider "
    "usage where the path has one); `compact()` reports `context_tokens_before` and "
    "`tokens_after`, both the rebuilt context counted by the run's estimator, so they can "
    "differ from it."
)
"""The footnote under preparation and result cards."""


def keep_budget_text(prep: Any) -> str:
    """The keep-recent budget the cut used, and why it differs from the one asked for."""
    used, asked = prep.keep_recent_tokens, prep.settings.keep_recent_tokens
    if used == asked:
        return f"{used:,}"
    ratio = prep.usage_ratio
    if ratio is not None and ratio > 1:
        return (
            f"{used:,} (asked {asked:,}, divided by the usage ratio {ratio:.2f}: the provider "
            f"counted {ratio:.2f}× the estimator's tokens, so the estimated budget shrinks "
            "to keep the same real size)"
        )
    return f"{used:,} (asked {asked:,})"


def tokens_before_text(prep: Any) -> str:
    """`tokens_before`, with where the number comes from."""
    n = prep.tokens_before
    if prep.profile == "pi":
        return f"{n:,} (recorded by the provider at the last reply, plus estimated after it)"
    if n == 0:
        return "0 (no recorded usage on the path)"
    return f"{n:,} (prompt tokens recorded by the provider for the last reply on the path)"


def context_estimate_text(prep: Any) -> str:
    """The usage-plus-estimate of the region the cut considered, in its two parts."""
    estimate = prep.context_estimate
    if estimate.last_usage_index < 0:
        return f"{estimate.tokens:,} (all estimated by the counter: no recorded usage)"
    return (
        f"{estimate.tokens:,} ({estimate.usage_tokens:,} recorded by the provider "
        f"+ {estimate.trailing_tokens:,} estimated by the counter after it)"
    )


def preparation_pairs(prep: Any) -> list[tuple[str, Any]]:
    """Key facts of a `CompactionPreparation`."""
    return [
        ("profile", prep.profile),
        ("first kept entry", prep.first_kept_entry_id),
        ("split turn", prep.is_split_turn),
        ("tokens before", tokens_before_text(prep)),
        ("context estimate", context_estimate_text(prep)),
        ("keep-recent budget", keep_budget_text(prep)),
        ("to summarize", f"{len(prep.messages_to_summarize)} messages"),
        ("turn prefix", f"{len(prep.turn_prefix_messages)} messages"),
        ("kept", f"{len(prep.recent_messages)} messages"),
        ("previous summary", "yes" if prep.previous_summary else "no"),
    ]


def preparation_html(prep: Any, counter: Any = None) -> str:
    """HTML card of a `CompactionPreparation`, with a bar of the three regions."""
    from .tokens import TokenCounter

    counter = counter or TokenCounter.for_profile(prep.profile)
    bar = _bar(
        [
            ("summarized", counter.count_messages(prep.messages_to_summarize), "#fd8d3c"),
            ("turn prefix", counter.count_messages(prep.turn_prefix_messages), "#9e9ac8"),
            ("kept", counter.count_messages(prep.recent_messages), "#74c476"),
        ]
    )
    source = _note(f"regions estimated by the counter ({counter.method})")
    return card(
        "Compaction preparation", preparation_pairs(prep), bar + source + _note(TOKEN_COUNTS_NOTE)
    )


def _note(text: str) -> str:
    return f"<div style='color:#666;max-width:640px;margin-top:4px'>{html.escape(text)}</div>"


def scrollable(inner: str, max_height_px: int = 320) -> str:
    """`inner` in a box that scrolls past `max_height_px` (and sideways when too wide)."""
    return f"<div style='max-height:{max_height_px}px;overflow:auto;max-width:100%'>{inner}</div>"


def _num(value: int | None) -> str:
    return f"{value:,}" if value is not None else "?"


def result_pairs(result: Any) -> list[tuple[str, Any]]:
    """Key facts of a `CompactionResult`."""
    summary = result.summary or ""
    first_line = summary.strip().splitlines()[0] if summary.strip() else "(empty)"
    return [
        ("strategy", result.strategy or "?"),
        ("method", result.method or "-"),
        (
            "context before → after",
            f"{_num(result.context_tokens_before)} → {_num(result.tokens_after)} "
            "(the rebuilt context, counted by the run's estimator)",
        ),
        ("tokens before", f"{result.tokens_before:,} (the preparation's figure)"),
        ("summary", f"{len(summary):,} chars: {first_line[:80]}"),
        (
            "summarizer tokens",
            f"{result.summarizer_input_tokens:,} in / {result.summarizer_output_tokens:,} out",
        ),
        ("latency", f"{result.latency_s:.3f} s"),
        ("first kept entry", result.first_kept_entry_id),
    ]


def result_html(result: Any) -> str:
    """HTML card of a `CompactionResult`, with the summary in a collapsible block."""
    details = (
        "<details><summary>summary text</summary><pre style='white-space:pre-wrap;max-height:300px;"
        f"overflow:auto'>{html.escape(result.summary or '')}</pre></details>"
    )
    return card("Compaction result", result_pairs(result), details + _note(TOKEN_COUNTS_NOTE))


def replay_pairs(replay: Any) -> list[tuple[str, Any]]:
    """Key facts of a `ReplayResult`."""
    return [
        ("strategy", replay.strategy),
        ("window / threshold", f"{replay.window:,} / {replay.threshold:,}"),
        ("requests", len(replay.timeline)),
        ("compactions", replay.compactions),
        ("peak context", f"{replay.peak_context:,}"),
        ("cost", f"${replay.total_cost:.4f}"),
        ("expected cost, 90% interval", _interval(replay)),
    ]


def _interval(replay: Any) -> str:
    """`$expected [$low, $high]` of a replay's bill (`ReplayResult.cost_interval`)."""
    low, high = replay.cost_interval
    return f"${replay.cost:.4f} [${low:.4f}, ${high:.4f}]"


def replay_html(replay: Any) -> str:
    """HTML card of a `ReplayResult`."""
    rows = "".join(
        f"<tr><td>{e.request}</td><td>{html.escape(e.trigger)}</td><td>{html.escape(e.method)}</td>"
        f"<td>{e.tokens_before:,} → {e.tokens_after:,}</td></tr>"
        for e in replay.events
    )
    table = (
        scrollable(
            "<table><tr><th>request</th><th>trigger</th><th>method</th><th>tokens</th></tr>"
            f"{rows}</table>"
        )
        if rows
        else ""
    )
    return card("Replay", replay_pairs(replay), table)


def text_card(title: str, pairs: Sequence[tuple[str, Any]], note: str = "") -> str:
    """The plain-text form of a card, for terminals (with an optional footnote)."""
    width = max((len(k) for k, _ in pairs), default=0)
    lines = [title, *(f"  {k.ljust(width)}  {v}" for k, v in pairs)]
    return "\n".join([*lines, f"  {note}"] if note else lines)


def register_displays() -> None:
    """Fill the repr registry (`musepi_lab._repr`) for the core values: HTML cards in
    notebooks, text cards in terminals. `import musepi_lab` calls it."""
    from ._repr import register_repr
    from .compaction._prepare import CompactionPreparation
    from .compaction._result import CompactionResult
    from .replay._result import ReplayResult
    from .session._session import Session

    register_repr(Session, html=session_html)
    register_repr(
        CompactionPreparation,
        html=preparation_html,
        text=lambda p: text_card("CompactionPreparation", preparation_pairs(p), TOKEN_COUNTS_NOTE),
    )
    register_repr(
        CompactionResult,
        html=result_html,
        text=lambda r: text_card("CompactionResult", result_pairs(r), TOKEN_COUNTS_NOTE),
    )
    register_repr(ReplayResult, html=replay_html)


register_displays()

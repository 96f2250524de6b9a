"""`run_benchmark`: the grid (session × strategy × budget) as one tidy DataFrame.

Each cell is a pure function of its inputs (`Cell`): the session file, the strategy and its
parameters, the budget, the settings, the token method and the fact source. Cells run
inline, in a process pool (the default), or on any `concurrent.futures.Executor` — a Dask
`distributed.Client(...).get_executor()` or Ray's take the same cells. With a cache folder
every finished cell is written at once (one small JSON file named by the cell's key), so an
interrupted run resumes where it stopped.

What a row holds (`COLUMNS`), for a `compact` cell (budget = keep-recent tokens, one
compaction at the session leaf):

- identity: `session_id`, `source` (the file), `format`, `mode`, `strategy`, `params`
  (canonical JSON), `label` (name and non-default parameters), `budget`, `counter`,
  `fact_source`;
- `compacted` (the strategy did something), `method`, `compactions` (0 or 1);
- `tokens_before` / `tokens_after` (the context the model sees, with the cell's counter),
  `token_reduction`, `summary_tokens`;
- `facts`, `facts_kept`, `fact_retention`, `retention_<kind>`: facts of the part the
  engine's cut at this budget would summarize away (planted facts when the session has a
  `facts.json` beside it, else `extract_facts` of the summarized messages), counted only
  when present in the context before; retained when their exact text is still in the
  context after (`metrics.context_text`). None when there was nothing to score;
- `instructions`, `instruction_survival`: the first user request and the user's standing
  instructions (planted `instruction` facts, else extracted ones) present before;
- `tool_pairing_valid`, `tool_pairing_problems`, `cache_prefix_tokens`, `cache_prefix_kept`;
- `summarizer_input_tokens`, `summarizer_output_tokens`, `summarizer_cost_usd`;
- timings `compact_seconds` (the strategy) and `cell_seconds` (the whole cell);
- `error`: the exception of a cell that failed (its metrics are then None).

A `replay` cell (budget = context window) replays the session with the strategy
(`musepi_lab.replay`): `compactions`, `requests`, `peak_context`, `replay_cost_usd`; token
columns describe the last compaction; `fact_retention` is the retention, after the last
compaction, of the facts of the session's first part (every entry before the request at
which the first compaction fired); `retention_first` is their retention after the first
compaction, `decay` lists every step and `decay_slope` its mean change per compaction.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..compaction._prepare import prepare_compaction
from ..compaction._result import CompactionResult, derived_entry_id
from ..compaction._settings import CompactionSettings
from ..context._build import UNSET, build_session_context
from ..context._llm import convert_to_llm
from ..datasets._generator import PlantedFact, read_facts
from ..formats._registry import iter_sessions
from ..llm._summarizer import Summarizer
from ..metrics._facts import FACT_KINDS, Fact, context_text, extract_facts
from ..metrics._metrics import (
    DEFAULT_PRICES,
    cache_prefix_tokens,
    decay_curve,
    fact_retention,
    summarizer_cost,
    summary_tokens,
    token_reduction,
    tool_pairing_problems,
)
from ..session._messages import entry_to_message
from ..session._session import Session, timestamp_after
from ..strategies._base import Strategy, compact
from ..tokens._counter import TokenCounter
from ._grid import Cell, SessionRef, canonical_json, make_cells, resolve_strategy, session_refs

if TYPE_CHECKING:
    import pandas as pd

TIMING_COLUMNS: tuple[str, ...] = ("compact_seconds", "cell_seconds")
"""Columns that vary from run to run; leave them out when comparing frames."""

COLUMNS: tuple[str, ...] = (
    "session_id",
    "source",
    "format",
    "mode",
    "strategy",
    "params",
    "label",
    "budget",
    "counter",
    "fact_source",
    "compacted",
    "method",
    "compactions",
    "requests",
    "tokens_before",
    "tokens_after",
    "token_reduction",
    "summary_tokens",
    "peak_context",
    "replay_cost_usd",
    "facts",
    "facts_kept",
    "fact_retention",
    *(f"retention_{kind}" for kind in FACT_KINDS),
    "retention_first",
    "decay",
    "decay_slope",
    "instructions",
    "instruction_survival",
    "tool_pairing_valid",
    "tool_pairing_problems",
    "cache_prefix_tokens",
    "cache_prefix_kept",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "summarizer_cost_usd",
    *TIMING_COLUMNS,
    "error",
)
"""Every column of a benchmark frame, in order."""

CellHook = Callable[[Cell, Mapping[str, Any]], None]


# -- worker-side caches -------------------------------------------------------------------
# A worker runs many cells of the same session (the grid is session-major): read each file
# once and share one token counter per (session, method), so per-entry counts are reused
# across strategies and budgets. Keyed by the file's hash, so a changed file is re-read.
@lru_cache(maxsize=8)
def _load_session(path: str, index: int, sha256: str) -> Session:
    for i, session in enumerate(iter_sessions(path)):
        if i == index:
            return session
    raise IndexError(f"{path}: has no session #{index}")


@lru_cache(maxsize=16)
def _shared_counter(path: str, index: int, sha256: str, method: str) -> TokenCounter:
    return TokenCounter(method)


@lru_cache(maxsize=16)
def _planted_facts(path: str, sha256: str | None) -> tuple[Any, ...]:
    return read_facts(path.removesuffix(".facts.json") + ".jsonl")


def clear_worker_caches() -> None:
    """Forget the sessions, counters and facts this process has cached (benchmarks call
    it so every timed run starts cold, as a fresh worker does)."""
    _load_session.cache_clear()
    _shared_counter.cache_clear()
    _planted_facts.cache_clear()


# -- small pure helpers -------------------------------------------------------------------
def _first_request(session: Session) -> str | None:
    """The first text block of the first user message on the active path."""
    for entry in session.path():
        message = entry.message
        if message is None or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content.strip() or None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = str(block.get("text", "")).strip()
                if text:
                    return text
        return None
    return None


def _fact_source(cell: Cell) -> str:
    if cell.facts == "auto":
        return "planted" if cell.session.facts_path else "extracted"
    if cell.facts == "planted" and not cell.session.facts_path:
        raise FileNotFoundError(f"{cell.session.path}: no planted facts (.facts.json) beside it")
    return cell.facts


def _planted(cell: Cell) -> list[Any]:
    assert cell.session.facts_path is not None
    return list(_planted_facts(cell.session.facts_path, cell.session.facts_sha256))


def _instructions(cell: Cell, session: Session, source: str) -> list[str]:
    """Standing instructions: the first user request plus the user's rules."""
    items: list[str] = []
    first = _first_request(session)
    if first:
        items.append(first)
    if source == "planted":
        items.extend(f.fact for f in _planted(cell) if f.kind == "instruction")
    else:
        users = [
            m for e in session.path() if (m := e.message) is not None and m.get("role") == "user"
        ]
        items.extend(f.text for f in extract_facts(users) if f.kind == "instruction")
    return list(dict.fromkeys(items))


def _readable_text(runtime: Sequence[Mapping[str, Any]], llm: Sequence[Mapping[str, Any]]) -> str:
    """Everything the model reads: the runtime messages' text (with snapcompact archive
    text) and the provider messages' text (summaries rendered, snapcompact text blocks)."""
    return context_text(runtime) + "\n" + context_text(llm)


def _retention_columns(facts: Sequence[Fact], after_text: str) -> dict[str, Any]:
    kept = sum(1 for f in facts if f.text in after_text)
    row: dict[str, Any] = {
        "facts": len(facts),
        "facts_kept": kept,
        "fact_retention": kept / len(facts) if facts else None,
    }
    for kind in FACT_KINDS:
        of_kind = [f for f in facts if f.kind == kind]
        row[f"retention_{kind}"] = fact_retention(of_kind, after_text) if of_kind else None
    return row


def _survival(instructions: Sequence[str], after_text: str) -> float | None:
    return fact_retention(instructions, after_text) if instructions else None


def _cost(cell: Cell, input_tokens: int, output_tokens: int) -> float:
    return summarizer_cost(input_tokens, output_tokens, {**DEFAULT_PRICES, **(cell.prices or {})})


def _identity(cell: Cell, session: Session, source: str) -> dict[str, Any]:
    return {
        "session_id": session.id,
        "source": cell.session.path,
        "format": session.source_format,
        "mode": cell.mode,
        "strategy": cell.strategy.name,
        "params": cell.params_json,
        "label": cell.strategy.label,
        "budget": cell.budget,
        "counter": cell.counter_method,
        "fact_source": source,
    }


# -- the two cell kinds -------------------------------------------------------------------
def score_compaction(
    session: Session,
    result: CompactionResult | None,
    *,
    settings: CompactionSettings,
    counter: TokenCounter,
    planted: Sequence[PlantedFact] | None = None,
    instructions: Sequence[str] = (),
    leaf_id: str | None = None,
    salt: str = "",
) -> dict[str, Any]:
    """What one compaction at a leaf did: the metric columns of a compact-mode cell.

    The context before and after (the result applied, with a deterministic id and time) is
    rebuilt and counted with `counter`. Facts are those of the part the engine's cut at
    `settings` summarizes away — the `planted` ones when given, else `extract_facts` of
    those messages — counted only when present before; likewise the `instructions`.

    Returns:
        `compacted`, `method`, `tokens_before`, `tokens_after`, `token_reduction`,
        `summary_tokens`, the retention columns (`facts`, `facts_kept`,
        `fact_retention`, `retention_<kind>`), `instructions`, `instruction_survival`,
        `tool_pairing_valid`, `tool_pairing_problems`, `cache_prefix_tokens`,
        `cache_prefix_kept`, `summarizer_input_tokens`, `summarizer_output_tokens`.
    """
    profile = settings.profile
    leaf = UNSET if leaf_id is None else leaf_id
    if result is None:
        after, after_leaf = session, leaf
    else:
        after = result.apply(
            session,
            timestamp=timestamp_after(session.leaf),
            entry_id=derived_entry_id(session, salt),
        )
        # An appended compaction is the new leaf; a rewrite keeps the leaf compacted at.
        after_leaf = UNSET if result.append_entry else leaf
    ctx_before = build_session_context(session, leaf, profile=profile).messages
    ctx_after = build_session_context(after, after_leaf, profile=profile).messages
    llm_before = convert_to_llm(ctx_before, profile=profile)
    llm_after = convert_to_llm(ctx_after, profile=profile)
    before_text = _readable_text(ctx_before, llm_before)
    after_text = _readable_text(ctx_after, llm_after)
    tokens_before = counter.count_messages(ctx_before)
    tokens_after = counter.count_messages(ctx_after)

    # The part scored: what the engine's cut at this budget summarizes away.
    prep = prepare_compaction(session, settings, counter, leaf_id=leaf_id)
    facts: list[Fact] = []
    if prep is not None:
        summarized = set(prep.summarize_entry_ids) | set(prep.turn_prefix_entry_ids)
        if planted is not None:
            facts = [Fact(f.fact, f.kind) for f in planted if f.entry_id in summarized]
        else:
            facts = list(extract_facts([*prep.messages_to_summarize, *prep.turn_prefix_messages]))
        facts = [f for f in facts if f.text in before_text]
    standing = [i for i in instructions if i in before_text]
    prefix = cache_prefix_tokens(llm_before, llm_after, counter)
    llm_total = counter.count_messages(llm_before)
    problems = tool_pairing_problems(llm_after)
    # `none` returns a result that changes nothing: not a compaction.
    changed = result is not None and llm_after != llm_before
    return {
        "compacted": changed,
        "method": (result.method or result.strategy) if result is not None else None,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "token_reduction": token_reduction(tokens_before, tokens_after),
        "summary_tokens": summary_tokens(result.summary, counter) if result is not None else 0,
        **_retention_columns(facts, after_text),
        "instructions": len(standing),
        "instruction_survival": _survival(standing, after_text),
        "tool_pairing_valid": not problems,
        "tool_pairing_problems": len(problems),
        "cache_prefix_tokens": prefix,
        "cache_prefix_kept": prefix / llm_total if llm_total > 0 else None,
        "summarizer_input_tokens": result.summarizer_input_tokens if result is not None else 0,
        "summarizer_output_tokens": result.summarizer_output_tokens if result is not None else 0,
    }


def _compact_cell(cell: Cell, session: Session, counter: TokenCounter) -> dict[str, Any]:
    settings = cell.settings.copy_with(keep_recent_tokens=cell.budget)
    source = _fact_source(cell)
    started = time.perf_counter()
    result = compact(
        session, cell.strategy, settings=settings, counter=counter, summarizer=cell.summarizer
    )
    compact_seconds = time.perf_counter() - started
    scores = score_compaction(
        session,
        result,
        settings=settings,
        counter=counter,
        planted=_planted(cell) if source == "planted" else None,
        instructions=_instructions(cell, session, source),
        salt=f"{cell.strategy.label}:{cell.budget}",
    )
    if scores["method"] is None and result is not None:
        scores["method"] = cell.strategy.name
    return {
        **_identity(cell, session, source),
        **scores,
        "compactions": int(scores["compacted"]),
        "requests": None,
        "peak_context": None,
        "replay_cost_usd": None,
        "retention_first": None,
        "decay": None,
        "decay_slope": None,
        "summarizer_cost_usd": _cost(
            cell, scores["summarizer_input_tokens"], scores["summarizer_output_tokens"]
        ),
        "compact_seconds": compact_seconds,
    }


def _replay_cell(cell: Cell, session: Session, counter: TokenCounter) -> dict[str, Any]:
    from ..replay._replay import replay

    settings = cell.settings
    source = _fact_source(cell)
    started = time.perf_counter()
    res = replay(
        session,
        cell.strategy,
        window=cell.budget,
        settings=settings,
        counter=counter,
        summarizer=cell.summarizer,
        prices={**DEFAULT_PRICES, **(cell.prices or {})},
    )
    compact_seconds = time.perf_counter() - started
    events = res.events
    timeline = res.timeline
    final = build_session_context(res.session, profile=settings.profile).messages
    problems = tool_pairing_problems(convert_to_llm(final, profile=settings.profile))
    path = session.path()
    path_text = context_text([m for e in path if (m := entry_to_message(e)) is not None])
    instructions = [i for i in _instructions(cell, session, source) if i in path_text]

    facts: list[Fact] = []
    curve: list[float] = []
    if events:
        # The first part: everything the agent had seen when the first compaction fired.
        fired_at = timeline["entry_id"].iloc[events[0].request]
        ids = [e.id for e in path]
        early = ids[: ids.index(fired_at)] if fired_at in ids else []
        if source == "planted":
            early_ids = set(early)
            facts = [Fact(f.fact, f.kind) for f in _planted(cell) if f.entry_id in early_ids]
        else:
            by_id = session.by_id
            early_msgs = [m for i in early if (m := entry_to_message(by_id[i])) is not None]
            facts = list(extract_facts(early_msgs))
        facts = [f for f in facts if f.text in path_text]
        curve = [fact_retention(facts, ev.context) for ev in events] if facts else []
    last = events[-1] if events else None
    s_in = sum(ev.summarizer_input_tokens for ev in events)
    s_out = sum(ev.summarizer_output_tokens for ev in events)
    retention = _retention_columns(facts, last.context if last is not None else "")
    if last is None:
        retention.update({"facts_kept": None, "fact_retention": None})
    decay = decay_curve(curve) if curve else None
    return {
        **_identity(cell, session, source),
        "compacted": bool(events),
        "method": last.method if last is not None else None,
        "compactions": len(events),
        "requests": len(timeline),
        "tokens_before": last.tokens_before if last is not None else None,
        "tokens_after": last.tokens_after if last is not None else None,
        "token_reduction": token_reduction(last.tokens_before, last.tokens_after)
        if last is not None
        else None,
        "summary_tokens": summary_tokens(last.result.summary, counter)
        if last is not None
        else None,
        "peak_context": res.peak_context,
        "replay_cost_usd": float(timeline["cost_usd"].sum()) if len(timeline) else 0.0,
        **retention,
        "retention_first": curve[0] if curve else None,
        "decay": canonical_json(curve) if curve else None,
        "decay_slope": decay["slope"] if decay else None,
        "instructions": len(instructions),
        "instruction_survival": _survival(instructions, last.context) if last is not None else None,
        "tool_pairing_valid": not problems,
        "tool_pairing_problems": len(problems),
        "cache_prefix_tokens": last.cache_prefix_tokens if last is not None else None,
        "cache_prefix_kept": last.cache_prefix_tokens / last.tokens_before
        if last is not None and last.tokens_before > 0
        else None,
        "summarizer_input_tokens": s_in,
        "summarizer_output_tokens": s_out,
        "summarizer_cost_usd": _cost(cell, s_in, s_out),
        "compact_seconds": compact_seconds,
    }


def _failed_row(cell: Cell, exc: BaseException) -> dict[str, Any]:
    return {
        "source": cell.session.path,
        "mode": cell.mode,
        "strategy": cell.strategy.name,
        "params": cell.params_json,
        "label": cell.strategy.label,
        "budget": cell.budget,
        "counter": cell.counter_method,
        "error": f"{type(exc).__name__}: {exc}",
    }


def run_cell(cell: Cell) -> dict[str, Any]:
    """Compute one cell: a row with every column of `COLUMNS`.

    A failing cell (unreadable file, a strategy that raises, a missing summarizer) gives a
    row whose `error` says what happened; it never raises, so one bad cell does not stop a
    grid.
    """
    started = time.perf_counter()
    try:
        ref = cell.session
        session = _load_session(ref.path, ref.index, ref.sha256)
        counter = _shared_counter(ref.path, ref.index, ref.sha256, cell.counter_method)
        if cell.mode == "replay":
            row = _replay_cell(cell, session, counter)
        else:
            row = _compact_cell(cell, session, counter)
        row["error"] = None
    except Exception as exc:
        row = _failed_row(cell, exc)
        row["error"] += "\n" + "".join(traceback.format_exception(exc)[-3:]).rstrip()
    row["cell_seconds"] = time.perf_counter() - started
    return {column: row.get(column) for column in COLUMNS}


# -- the cell cache -----------------------------------------------------------------------
def cell_path(cache_dir: str | os.PathLike[str], cell: Cell) -> Path:
    """The file a finished cell is stored in: `<cache_dir>/<key[:2]>/<key>.json`."""
    key = cell.key
    return Path(cache_dir) / key[:2] / f"{key}.json"


def read_cell(cache_dir: str | os.PathLike[str], cell: Cell) -> dict[str, Any] | None:
    """A cached row, or None when the cell is not done (or its file is unreadable)."""
    path = cell_path(cache_dir, cell)
    try:
        stored = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    row = stored.get("row") if isinstance(stored, dict) else None
    if not isinstance(row, dict) or stored.get("key") != cell.key:
        return None
    return {column: row.get(column) for column in COLUMNS}


def write_cell(cache_dir: str | os.PathLike[str], cell: Cell, row: Mapping[str, Any]) -> Path:
    """Store a finished row atomically (write a temporary file, then rename)."""
    path = cell_path(cache_dir, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(
        orjson.dumps(
            {"key": cell.key, "inputs": cell.key_material(), "row": dict(row)},
            option=orjson.OPT_INDENT_2,
            default=str,
        )
    )
    os.replace(tmp, path)
    return path


# -- the runner ---------------------------------------------------------------------------
def _progress(total: int, enabled: bool, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, unit="cell")


def _default_workers(cells: int) -> int:
    return max(1, min(os.cpu_count() or 1, cells))


def run_cells(
    cells: Sequence[Cell],
    *,
    executor: Executor | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_computed: CellHook | None = None,
    max_workers: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of the given cells, in the cells' order (cached cells are read, the others
    computed and, with `cache_dir`, written as each finishes).

    Args:
        cells: The cells.
        executor: `"serial"` (inline), None (a process pool of `max_workers`, default one
            per CPU), or any `concurrent.futures.Executor` (not shut down here).
        cache_dir: Folder of finished cells; None disables resuming.
        progress: Show a tqdm progress bar (notebook-aware).
        on_computed: Called in this process with each computed (not cached) cell and row.
        max_workers: Size of the default process pool.
    """
    rows: list[dict[str, Any] | None] = [None] * len(cells)
    todo: list[int] = []
    for i, cell in enumerate(cells):
        cached = read_cell(cache_dir, cell) if cache_dir is not None else None
        if cached is None:
            todo.append(i)
        else:
            rows[i] = cached

    def finish(i: int, row: dict[str, Any]) -> None:
        rows[i] = row
        # Failed cells are not stored, so a rerun tries them again.
        if cache_dir is not None and row.get("error") is None:
            write_cell(cache_dir, cells[i], row)
        if on_computed is not None:
            on_computed(cells[i], row)

    bar = _progress(len(cells), progress, "bench")
    bar.update(len(cells) - len(todo))
    try:
        if executor == "serial" or (executor is None and len(todo) <= 1):
            for i in todo:
                finish(i, run_cell(cells[i]))
                bar.update()
        elif isinstance(executor, str):
            raise ValueError(f"executor must be 'serial', None or an Executor, not {executor!r}")
        else:
            own = executor is None
            pool: Executor = (
                ProcessPoolExecutor(max_workers=max_workers or _default_workers(len(todo)))
                if executor is None
                else executor
            )
            try:
                futures: dict[Future[dict[str, Any]], int] = {
                    pool.submit(run_cell, cells[i]): i for i in todo
                }
                for future in as_completed(futures):
                    finish(futures[future], future.result())
                    bar.update()
            finally:
                if own:
                    pool.shutdown(wait=True, cancel_futures=True)
    finally:
        bar.close()
    return [row for row in rows if row is not None]


def benchmark_config(
    sessions: Sequence[SessionRef],
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    *,
    mode: str,
    settings: CompactionSettings,
    counter_method: str,
    facts: str,
    summarizer: Summarizer | None,
    prices: Mapping[str, float] | None,
) -> dict[str, Any]:
    """The configuration of a run, as JSON-ready data (written beside the results)."""
    import platform
    import sys

    import pandas

    from .. import __version__
    from .._prompts import PromptSet
    from ._grid import settings_json

    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "budget_meaning": "context window (tokens)"
        if mode == "replay"
        else "keep_recent_tokens of one compaction at the session leaf",
        "sessions": [
            {
                "path": r.path,
                "index": r.index,
                "sha256": r.sha256,
                "facts": r.facts_path,
                "facts_sha256": r.facts_sha256,
            }
            for r in sessions
        ],
        "strategies": [{"name": s.name, "params": s.params, "label": s.label} for s in strategies],
        "budgets": list(budgets),
        "settings": settings_json(settings),
        "counter": counter_method,
        "facts": facts,
        "summarizer": getattr(summarizer, "identity", None) if summarizer else None,
        "prices": {**DEFAULT_PRICES, **(prices or {})},
        "prompts": PromptSet.default().label,
        "versions": {
            "musepi_lab": __version__,
            "python": sys.version.split()[0],
            "pandas": pandas.__version__,
            "platform": platform.platform(),
        },
    }


def run_benchmark(
    sessions: str | os.PathLike[str] | Iterable[str | os.PathLike[str] | Session | SessionRef],
    strategies: Iterable[str | Strategy | tuple[str, Mapping[str, Any]]],
    budgets: Iterable[int],
    *,
    executor: Executor | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    settings: CompactionSettings | None = None,
    counter_method: str | None = None,
    summarizer: Summarizer | None = None,
    facts: str | None = None,
    progress: bool = True,
    mode: str = "compact",
    prices: Mapping[str, float] | None = None,
    max_workers: int | None = None,
    on_computed: CellHook | None = None,
) -> pd.DataFrame:
    """Run every (session, strategy, budget) cell and return one tidy DataFrame.

    Args:
        sessions: Session files, folders of them, `Session`s read from files, or
            `SessionRef`s (a single path is accepted too).
        strategies: Names (`"observation-masking:keep_turns=3"` works), `(name, params)`
            pairs, or strategy values.
        budgets: Tokens. `compact` mode: `keep_recent_tokens` of the one compaction run at
            the session leaf. `replay` mode: the context window replayed under.
        executor: `"serial"` to run inline; None for a process pool (one worker per CPU,
            or `max_workers`); or any `concurrent.futures.Executor`, e.g.
            `distributed.Client(...).get_executor()`.
        cache_dir: Folder where each finished cell is written at once; a rerun with the
            same folder skips finished cells.
        settings: Compaction settings (default: MusePi's).
        counter_method: Token method (default: the profile's estimator).
        summarizer: For strategies that call a model (must pickle for process pools).
        facts: `"auto"` (default), `"planted"` or `"extracted"` (see `FACT_SOURCES`).
        progress: Show a progress bar (tqdm, notebook-aware).
        mode: `"compact"` or `"replay"` (see `MODES`).
        prices: USD per million tokens (`input`, `output`, `cache_read`, `cache_write`).
        max_workers: Size of the default process pool.
        on_computed: Called with each computed (not cached) cell and its row.

    Returns:
        One row per cell, in grid order (session, strategy, budget), with the columns of
        `COLUMNS`; `df.attrs["config"]` holds the run's configuration and
        `df.attrs["cells_computed"]` / `["cells_cached"]` what this call did.

    Raises:
        FileNotFoundError: A session path does not exist.
        KeyError: An unknown strategy name.
        ValueError: A bad budget, mode or fact source.
    """
    import pandas as pd

    if isinstance(sessions, (str, os.PathLike)):
        sessions = [sessions]
    refs = session_refs(sessions)
    strats = [resolve_strategy(s) for s in strategies]
    budget_list = list(budgets)
    settings = settings or CompactionSettings.musepi()
    fact_source = facts or "auto"
    cells = make_cells(
        refs,
        strats,
        budget_list,
        mode=mode,
        settings=settings,
        counter_method=counter_method,
        facts=fact_source,
        summarizer=summarizer,
        prices=prices,
    )
    computed = 0

    def count(cell: Cell, row: Mapping[str, Any]) -> None:
        nonlocal computed
        computed += 1
        if on_computed is not None:
            on_computed(cell, row)

    rows = run_cells(
        cells,
        executor=executor,
        cache_dir=cache_dir,
        progress=progress,
        on_computed=count,
        max_workers=max_workers,
    )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs["config"] = benchmark_config(
        refs,
        strats,
        budget_list,
        mode=mode,
        settings=settings,
        counter_method=cells[0].counter_method if cells else (counter_method or ""),
        facts=fact_source,
        summarizer=summarizer,
        prices=prices,
    )
    df.attrs["cells_computed"] = computed
    df.attrs["cells_cached"] = len(cells) - computed
    return df

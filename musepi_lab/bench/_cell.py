"""Running one cell: read its session (cached per worker), run the strategy or the replay,
and score what it did (`_score`). A failing cell becomes a row with its error, and so does
one that runs past its time limit (`Cell.time_limit`): the cell runs in a thread of its
own, which the caller stops waiting for at the limit. Python cannot kill a thread; the
abandoned one is sent `CellTimeout`, which ends it at its next Python instruction (a loop,
a sleep in steps), and one blocked for good in C stays asleep, daemonic, until its process
ends. Either way the grid goes on; the same in every executor, since each runs `run_cell`."""

from __future__ import annotations

import ctypes
import threading
import time
import traceback
from functools import lru_cache
from typing import Any

from ..datasets._generator import PlantedFact, read_facts
from ..formats._registry import iter_sessions
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._compare import compact_scores
from ._grid import Cell
from ._score import (
    COLUMNS,
    clear_score_caches,
    score_replay,
    standing_instructions,
)


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
def _planted_facts(path: str, sha256: str | None) -> tuple[PlantedFact, ...]:
    return tuple(read_facts(path.removesuffix(".facts.json") + ".jsonl"))


def clear_worker_caches() -> None:
    """Forget the sessions, counters and facts this process has cached (benchmarks call
    it so every timed run starts cold, as a fresh worker does)."""
    _load_session.cache_clear()
    _shared_counter.cache_clear()
    _planted_facts.cache_clear()
    clear_score_caches()


# -- what a cell scores against -----------------------------------------------------------
def _fact_source(cell: Cell) -> str:
    if cell.facts == "auto":
        return "planted" if cell.session.facts_path else "extracted"
    if cell.facts == "planted" and not cell.session.facts_path:
        raise FileNotFoundError(f"{cell.session.path}: no planted facts (.facts.json) beside it")
    return cell.facts


def _planted(cell: Cell, source: str) -> tuple[PlantedFact, ...] | None:
    """The cell's planted facts when it scores planted facts, else None (extract)."""
    if source != "planted":
        return None
    assert cell.session.facts_path is not None
    return _planted_facts(cell.session.facts_path, cell.session.facts_sha256)


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
def _compact_cell(cell: Cell, session: Session, counter: TokenCounter) -> dict[str, Any]:
    source = _fact_source(cell)
    planted = _planted(cell, source)
    scores, _result = compact_scores(
        session,
        cell.strategy,
        cell.budget,
        settings=cell.settings,
        counter=counter,
        summarizer=cell.summarizer,
        planted=planted,
        instructions=standing_instructions(session, planted),
        prices=cell.prices,
    )
    return {**_identity(cell, session, source), **scores}


def _replay_cell(cell: Cell, session: Session, counter: TokenCounter) -> dict[str, Any]:
    from ..replay._replay import replay_session

    source = _fact_source(cell)
    planted = _planted(cell, source)
    started = time.perf_counter()
    res = replay_session(
        session,
        cell.strategy,
        window=cell.budget,
        settings=cell.settings,
        counter=counter,
        summarizer=cell.summarizer,
        prices=cell.prices,  # None: each request at its model's prices (prices_for)
    )
    compact_seconds = time.perf_counter() - started
    scoring = time.perf_counter()
    scores = score_replay(
        session,
        res,
        counter=counter,
        profile=cell.settings.profile,
        planted=planted,
        instructions=standing_instructions(session, planted),
        prices=cell.prices,
    )
    return {
        **_identity(cell, session, source),
        **scores,
        "compact_seconds": compact_seconds,
        "score_seconds": time.perf_counter() - scoring,
    }


def failed_row(cell: Cell, exc: BaseException) -> dict[str, Any]:
    """The row of a cell that failed with `exc` (identity columns and `error`)."""
    # The last frames say where it failed without flooding the table.
    where = "".join(traceback.format_exception(exc)[-3:]).rstrip()
    return {
        "source": cell.session.path,
        "mode": cell.mode,
        "strategy": cell.strategy.name,
        "params": cell.params_json,
        "label": cell.strategy.label,
        "budget": cell.budget,
        "counter": cell.counter_method,
        "error": f"{type(exc).__name__}: {exc}\n{where}",
    }


DEFAULT_CELL_TIMEOUT = 900.0
"""Seconds a cell of `run_benchmark` may run by default (`--cell-timeout`): far above what
a model-free cell takes (under a second) or a model-calling one (a few requests, each
with its own two-minute timeout), so only a cell that would never end meets it."""


class CellTimeout(BaseException):
    """Raised into an abandoned cell's thread. A BaseException, so the cell's own `except
    Exception` does not catch it and go on."""


def run_cell(cell: Cell) -> dict[str, Any]:
    """Compute one cell: a row with every column of `COLUMNS` (missing ones are None).

    A failing cell (unreadable file, a strategy that raises, a missing summarizer) gives a
    row whose `error` says what happened, as does one that ran past `cell.time_limit`
    (`TimeoutError: ... time limit of N s ...`); it never raises, so one bad cell does not
    stop a grid.
    """
    if cell.time_limit is None:
        return _run_cell(cell)
    return _run_with_limit(cell, cell.time_limit)


def _run_with_limit(cell: Cell, limit: float) -> dict[str, Any]:
    started = time.perf_counter()
    done: list[dict[str, Any]] = []

    def target() -> None:
        try:
            done.append(_run_cell(cell))
        except CellTimeout:
            pass  # abandoned: its row was written by the waiting thread

    thread = threading.Thread(target=target, name="musepi-lab-cell", daemon=True)
    thread.start()
    thread.join(limit)
    if done:
        return done[0]
    if thread.ident is not None and thread.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread.ident), ctypes.py_object(CellTimeout)
        )
    row = failed_row(cell, TimeoutError())
    row["error"] = (
        f"TimeoutError: the cell ran past its time limit of {limit:g} s (cell_timeout, "
        "--cell-timeout) and was given up"
    )
    row["cell_seconds"] = time.perf_counter() - started
    return {column: row.get(column) for column in COLUMNS}


def _run_cell(cell: Cell) -> dict[str, Any]:
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
        row = failed_row(cell, exc)
    row["cell_seconds"] = time.perf_counter() - started
    return {column: row.get(column) for column in COLUMNS}

"""The benchmark grid: sessions × strategies × budgets, as plain picklable cells.

A cell names its session by path (never a `Session` object), so cells travel cheaply to
worker processes and other machines; workers read the file themselves. A cell's key is a
hash of everything its result depends on (the file's bytes, the strategy and its
parameters, the budget, the settings, the token method, the fact source, the summarizer's
identity and this package's version), which is what makes runs resumable.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compaction._settings import CompactionSettings
from ..datasets._registry import cached_file_sha256, is_manifest_file
from ..formats._registry import detect_format, iter_session_files
from ..llm._summarizer import Summarizer
from ..session._session import Session
from ..strategies._base import Strategy, get
from ..tokens._counter import token_method_for

MODES: tuple[str, ...] = ("compact", "replay")
"""Cell kinds. `compact`: one compaction at the session leaf, budget = keep-recent tokens.
`replay`: the session replayed under a context window, budget = the window."""

FACT_SOURCES: tuple[str, ...] = ("auto", "planted", "extracted")
"""Where scored facts come from: `planted` (the `<id>.facts.json` beside a generated
session), `extracted` (`extract_facts` of the summarized messages), or `auto` (planted when
the file is there, else extracted)."""

CACHE_FORMAT = 1
"""Bumped when the meaning of a cached cell changes, so old cells are not reused."""


@dataclass(frozen=True)
class SessionRef:
    """A session by file: what a cell carries instead of a `Session`.

    Attributes:
        path: The session file (absolute).
        index: Which session of the file (OpenHands evaluation output holds several).
        sha256: Hash of the file's bytes (part of the cell key).
        facts_path: The planted-facts file beside it, if any.
        facts_sha256: Hash of that file.
    """

    path: str
    index: int = 0
    sha256: str = ""
    facts_path: str | None = None
    facts_sha256: str | None = None


@dataclass(frozen=True)
class Cell:
    """One (session, strategy, budget) point of the grid.

    Attributes:
        session: The session's file.
        strategy: The strategy value (its class and parameters pickle by reference).
        budget: Keep-recent tokens (`compact`) or context window (`replay`).
        mode: One of `MODES`.
        settings: Compaction settings; `compact` cells replace `keep_recent_tokens` by
            the budget.
        counter_method: Token method for every count of the cell.
        facts: One of `FACT_SOURCES`.
        summarizer: The LLM seam for strategies that call a model (not part of the
            key; its `identity` is).
        prices: USD per million tokens for cost columns.
        time_limit: Seconds the cell may run before it is given up as an error row
            (`run_cell`); None: no limit. Not part of the key: a limit changes no result.
    """

    session: SessionRef
    strategy: Strategy
    budget: int
    mode: str
    settings: CompactionSettings
    counter_method: str
    facts: str = "auto"
    summarizer: Summarizer | None = dataclasses.field(default=None, compare=False)
    prices: Mapping[str, float] | None = None
    time_limit: float | None = dataclasses.field(default=None, compare=False)

    @property
    def params_json(self) -> str:
        """The strategy's parameters as canonical JSON (sorted keys)."""
        return canonical_json(self.strategy.params)

    def key_material(self) -> dict[str, Any]:
        """Everything the cell's result depends on, as plain JSON data."""
        from .._version import __version__

        identity = getattr(self.summarizer, "identity", None) if self.summarizer else None
        return {
            "format": CACHE_FORMAT,
            "musepi_lab": __version__,
            "path": self.session.path,
            "index": self.session.index,
            "sha256": self.session.sha256,
            "facts_sha256": self.session.facts_sha256,
            "strategy": self.strategy.name,
            "params": self.strategy.params,
            "budget": self.budget,
            "mode": self.mode,
            "settings": settings_json(self.settings),
            "counter": self.counter_method,
            "facts": self.facts,
            "summarizer": identity
            if identity is not None or self.summarizer is None
            else type(self.summarizer).__qualname__,
            "prices": dict(self.prices) if self.prices else None,
        }

    @property
    def key(self) -> str:
        """Hex sha256 of `key_material`: names the cell's file in a cache folder."""
        return hashlib.sha256(canonical_json(self.key_material()).encode()).hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces; tuples become lists, other values `str`."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def settings_json(settings: CompactionSettings) -> dict[str, Any]:
    """Compaction settings as a JSON-ready dict (tuples become lists)."""
    data: dict[str, Any] = json.loads(canonical_json(dataclasses.asdict(settings)))
    return data


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_strategy(text: str) -> tuple[str, dict[str, Any]]:
    """`NAME[:k=v,...]` → `(name, params)`; values are read as JSON when they parse
    (`3`, `true`, `0.5`, `"x"`), else kept as strings.

    Raises:
        ValueError: An empty name or a parameter without `=`.
    """
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"strategy {text!r}: empty name")
    params: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"strategy {text!r}: parameter {part!r} is not k=v")
        params[key.strip()] = _scalar(value.strip())
    return name, params


def resolve_strategy(spec: str | Strategy | tuple[str, Mapping[str, Any]]) -> Strategy:
    """A strategy value from a name, a `NAME:k=v` string, a `(name, params)` pair, or a
    value (returned as is).

    Raises:
        KeyError: Unknown strategy name (the message lists the available ones).
        TypeError: A parameter the strategy does not take.
    """
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, tuple):
        name, params = spec
        return get(name, **dict(params))
    name, params = parse_strategy(spec)
    return get(name, **params)


def _facts_beside(path: Path) -> Path | None:
    candidate = path.with_name(path.name.removesuffix(".jsonl") + ".facts.json")
    return candidate if path.name.endswith(".jsonl") and candidate.is_file() else None


def _sessions_in_file(path: Path) -> int:
    from ..formats._openhands import iter_openhands

    try:
        if detect_format(path) != "openhands":
            return 1
        return sum(1 for _ in iter_openhands(path))
    except Exception:
        # A file that cannot even be counted is one cell that fails with the reader's
        # error in its row, never a grid that does not start.
        return 1


def session_refs(
    sessions: Iterable[str | os.PathLike[str] | Session | SessionRef],
) -> list[SessionRef]:
    """Session references for files, folders (every session file under them, dataset
    manifests left out), `Session`s read from files, and refs; duplicates dropped.

    Raises:
        FileNotFoundError: A path does not exist.
        TypeError: A `Session` that was not read from a file (cells carry paths).
    """
    refs: list[SessionRef] = []
    seen: set[tuple[str, int]] = set()

    def add(ref: SessionRef) -> None:
        if (ref.path, ref.index) not in seen:
            seen.add((ref.path, ref.index))
            refs.append(ref)

    def add_file(path: Path, index: int | None = None) -> None:
        path = path.resolve()
        facts = _facts_beside(path)
        sha = cached_file_sha256(path)
        facts_sha = cached_file_sha256(facts) if facts is not None else None
        indices = range(_sessions_in_file(path)) if index is None else (index,)
        for i in indices:
            add(SessionRef(os.fspath(path), i, sha, os.fspath(facts) if facts else None, facts_sha))

    for item in sessions:
        if isinstance(item, SessionRef):
            add(item)
        elif isinstance(item, Session):
            if item.source_path is None:
                raise TypeError(
                    f"session {item.id!r} was not read from a file: write it first "
                    "(cells send paths to workers, not Session objects)"
                )
            add_file(Path(item.source_path), 0)
        else:
            path = Path(item)
            if not path.exists():
                raise FileNotFoundError(f"{path}: no such session file or folder")
            files = [path] if path.is_file() else list(iter_session_files(path))
            for file in files:
                if not is_manifest_file(file):
                    add_file(file)
    return refs


def make_cells(
    sessions: Sequence[SessionRef],
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    *,
    mode: str = "compact",
    settings: CompactionSettings | None = None,
    counter_method: str | None = None,
    facts: str = "auto",
    summarizer: Summarizer | None = None,
    prices: Mapping[str, float] | None = None,
    time_limit: float | None = None,
) -> list[Cell]:
    """The grid, session-major (cells of one session are neighbours, so a worker that
    read a session reuses it), then strategy, then budget; each cell with `time_limit`.

    Raises:
        ValueError: Unknown mode or fact source, a budget that is not a positive int, or a
            time limit that is not a positive number of seconds.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if facts not in FACT_SOURCES:
        raise ValueError(f"unknown fact source {facts!r}; expected one of {FACT_SOURCES}")
    for budget in budgets:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            raise ValueError(f"budgets must be positive ints (tokens), got {budget!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise ValueError(f"a cell time limit is a positive number of seconds, got {time_limit!r}")
    settings = settings or CompactionSettings.musepi()
    method = counter_method or token_method_for(settings.profile)
    return [
        Cell(ref, strat, budget, mode, settings, method, facts, summarizer, prices, time_limit)
        for ref in sessions
        for strat in strategies
        for budget in budgets
    ]

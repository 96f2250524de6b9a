"""What every benchmark script shares: the corpus location, the interleaved-median timer,
and the `--quick` / `--check` / `--repeat` command line.

The scripts run from this folder (`python perf/bench_read.py`), so they import it by
name.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MUSEPI_LAB_CORPUS", REPO.parent / "shared" / "corpus"))


def interleaved_samples(
    functions: dict[str, Callable[[], object]],
    repeat: int,
    setup: dict[str, Callable[[], object]] | None = None,
    *,
    block: int = 1,
    warm_up: bool = False,
) -> dict[str, list[float]]:
    """Wall times of `repeat` runs of each function (rounded up to whole blocks), the
    functions taking turns so drift hits all alike.

    Each turn collects garbage, then runs one untimed call when `warm_up`, then `block`
    timed calls back to back (as a peer times itself in its own loop). `setup[name]`, when
    given, runs before each call of `name`, outside its timing (what it touches is as warm
    as the peers' objects in their own timing loops).
    """
    before = setup or {}
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(-(-repeat // block)):
        for name, function in functions.items():
            prepare = before.get(name)
            gc.collect()
            if warm_up:
                if prepare is not None:
                    prepare()
                function()
            for _ in range(block):
                if prepare is not None:
                    prepare()
                start = time.perf_counter()
                function()
                times[name].append(time.perf_counter() - start)
    return times


def median_seconds(
    functions: dict[str, Callable[[], object]],
    repeat: int,
    setup: dict[str, Callable[[], object]] | None = None,
) -> dict[str, float]:
    """Median wall time of each function, repetitions interleaved (`interleaved_samples`)."""
    samples = interleaved_samples(functions, repeat, setup)
    return {name: statistics.median(values) for name, values in samples.items()}


# The core keeps no public way to drop what it derived from a session (nothing but a
# benchmark wants one), so the one place that reaches into the private slots is here.
_SET_ENTRY_MEMO = Entry.__dict__["_memo"].__set__


def forget_counts(session: Session) -> Session:
    """Drop the token counts memoised on the session's entries and the plans kept with it.

    The walked paths (and the tree index) stay: a preparation on the session afterwards does
    the work pi's `prepareCompaction` does on the path it is handed, on warm objects.
    Returns the session.
    """
    for entry in session.entries:
        _SET_ENTRY_MEMO(entry, None)
    session._memo.clear()
    return session


def bench_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the options every script takes (`--quick`, `--check`, `--repeat`)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 on a wide miss")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (median)")
    return parser


def repetitions(args: argparse.Namespace, *, quick: int, full: int) -> int:
    """`--repeat` if given, else the quick or full default."""
    return args.repeat or (quick if args.quick else full)

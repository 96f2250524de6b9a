"""Benchmark: `replay` growth with session length at a small window (issue 14 target 3).

Sessions of 5k, 10k, 20k and 50k entries (`--quick`: 2k, 4k, 8k) come from the project's
own dataset generator (`musepi_lab.datasets._generator`, a fixed seed, the task count
scaled to the size), and are replayed at window 2,000 with `truncate` under MusePi's default
settings and under a small keep budget (500 tokens, so every compaction drops something).

For each size the script prints the replay's median wall and CPU time, the CPU time per
path entry, the work the replay did (compactions fired, strategy passes, and entries handed
to strategies per path entry, which a linear replay keeps constant) and, as the same-run
baseline, the replay's time over the *floor*: one fresh counter counting every path entry
(the least any replay must do). The growth exponent is the least-squares slope of log(CPU
time) against log(path entries) over all sizes; CPU time, because on a shared machine the
wall clock also measures the neighbours.

Targets (issue 14): 50,000 entries under 10 s; growth exponent ≤ 1.1 from 5k to 50k.

    python perf/bench_replay.py [--quick] [--check] [--repeat N]

`--check` exits 1 only on a wide miss (exponent above 1.1 × 1.5, or the largest session over
10 s × 1.5).
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _harness import bench_parser, repetitions

from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.datasets._generator import GeneratorConfig, generate_session
from musepi_lab.replay import _compaction
from musepi_lab.replay._replay import replay_session
from musepi_lab.session._session import Session
from musepi_lab.tokens._counter import TokenCounter

WINDOW = 2_000
SIZES = (5_000, 10_000, 20_000, 50_000)
QUICK_SIZES = (2_000, 4_000, 8_000)
TIME_TARGET_S = 10.0
EXPONENT_TARGET = 1.1
WIDE_MARGIN = 1.5
ENTRIES_PER_TASK = 12  # what the generator writes per task, measured (620 entries / 50 tasks)

SETTINGS: dict[str, CompactionSettings] = {
    "musepi default": CompactionSettings.musepi(),
    "musepi keep 500": CompactionSettings.musepi(keep_recent_tokens=500),
}


def generated_session(n_entries: int) -> Session:
    """A generated session of about `n_entries` entries (same arguments, same session)."""
    tasks = max(1, round(n_entries / ENTRIES_PER_TASK))
    session, _ = generate_session(GeneratorConfig(seed=11, tasks=tasks))
    return session


@dataclass
class Work:
    """Work a replay did, counted by wrapping the strategy seam (not timed)."""

    passes: int = 0
    live_entries: int = 0


def counted_replay(session: Session, settings: CompactionSettings) -> tuple[Any, Work]:
    """Replay once with the strategy seam wrapped, counting passes and entries handed over."""
    work = Work()
    real: Callable[..., Any] = _compaction.compact

    def counting(live: Session, *args: Any, **kwargs: Any) -> Any:
        work.passes += 1
        work.live_entries += len(live.entries)
        return real(live, *args, **kwargs)

    _compaction.compact = counting  # type: ignore[assignment]
    try:
        result = replay_session(session, "truncate", window=WINDOW, settings=settings)
    finally:
        _compaction.compact = real  # type: ignore[assignment]
    return result, work


def growth_exponent(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def timed(function: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `function` (CPU time is what the growth exponent
    uses: on a shared machine the wall clock also measures the neighbours)."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    """Run the benchmark; exit 1 on a wide miss with `--check`."""
    args = bench_parser(__doc__ or "").parse_args()
    repeat = repetitions(args, quick=1, full=3)
    sizes = QUICK_SIZES if args.quick else SIZES
    sessions = [generated_session(n) for n in sizes]
    failed = False
    for name, settings in SETTINGS.items():
        print(f"\nreplay(truncate, window={WINDOW:,}), {name}, median of {repeat}", flush=True)
        print(
            f"{'entries':>8} {'wall s':>7} {'cpu s':>7} {'us/entry':>9} {'x floor':>8} "
            f"{'compactions':>11} {'passes':>7} {'live/entry':>10} {'peak':>7}"
        )
        cpus: list[float] = []
        lengths: list[int] = []
        for session in sessions:
            path = session.path()
            result, work = counted_replay(session, settings)  # also the warm-up
            wall, cpu = timed(
                lambda s=session, c=settings: replay_session(
                    s, "truncate", window=WINDOW, settings=c
                ),
                repeat,
            )
            _, floor = timed(lambda p=path: TokenCounter.for_profile("musepi").count_entries(p), 3)
            cpus.append(cpu)
            lengths.append(len(path))
            print(
                f"{len(session.entries):>8,} {wall:>7.2f} {cpu:>7.2f} {cpu / len(path) * 1e6:>9.0f} "
                f"{cpu / floor:>8.0f} {result.compactions:>11,} {work.passes:>7,} "
                f"{work.live_entries / len(path):>10.1f} {result.peak_context:>7,}",
                flush=True,
            )
        exponent = growth_exponent(lengths, cpus)
        print(f"growth exponent (cpu) {exponent:.2f} (target ≤ {EXPONENT_TARGET})", end="")
        if not args.quick:
            print(
                f"; {lengths[-1]:,} entries in {cpus[-1]:.1f} s cpu (target < {TIME_TARGET_S:.0f} s)"
            )
        else:
            print()
        failed = failed or exponent > EXPONENT_TARGET * WIDE_MARGIN
        failed = failed or (not args.quick and cpus[-1] > TIME_TARGET_S * WIDE_MARGIN)
    if args.check and failed:
        print("wide miss", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"\n(total {time.perf_counter() - start:.0f} s)")
    sys.exit(code)

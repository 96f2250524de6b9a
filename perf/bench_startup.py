"""Benchmark: how long a fresh process takes to `import musepi_lab` and to print
`musepi-lab --help`, against `python -c pass` in the same run.

Each command runs in its own fresh interpreter, the three taking turns (so drift hits all
alike); the CPU time (user + system, from `resource.getrusage` of the finished child) and
the wall time of each are recorded. Bytecode is written into a temporary cache
(`PYTHONPYCACHEPREFIX`) and warmed first, as an installed package has its `.pyc` files; the
figures with `PYTHONDONTWRITEBYTECODE=1` (every module compiled on each start) are printed
too with `--compile`. Also shown: `import musepi_lab; musepi_lab.read_session` (what the
first use of a name loads).

    python perf/bench_startup.py [--quick] [--check] [--repeat N] [--compile]

Targets: `musepi-lab --help` under 0.5 s of wall time; `import musepi_lab` within 50 ms of
CPU of `python -c pass`. `--check` exits 1 only above 0.75 s, or 75 ms.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from _harness import REPO, bench_parser, repetitions

HELP_TARGET_S = 0.5
IMPORT_TARGET_S = 0.050
COMMANDS: dict[str, list[str]] = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import musepi_lab": ["-c", "import musepi_lab"],
    "musepi-lab --help": ["-m", "musepi_lab.cli", "--help"],
    "import + read_session name": ["-c", "import musepi_lab; musepi_lab.read_session"],
}


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """`(cpu seconds, wall seconds)` of one fresh interpreter running `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *argv], env=env, check=True, stdout=subprocess.DEVNULL, cwd=REPO
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def measure(env: dict[str, str], repeat: int) -> dict[str, tuple[float, float]]:
    """Median `(cpu, wall)` per command over `repeat` interleaved runs (one warm-up each)."""
    for argv in COMMANDS.values():
        run_once(argv, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(repeat):
        for name, argv in COMMANDS.items():
            samples[name].append(run_once(argv, env))
    return {
        name: (statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs))
        for name, runs in samples.items()
    }


def report(title: str, medians: dict[str, tuple[float, float]]) -> None:
    base_cpu, base_wall = medians["python -c pass (baseline)"]
    print(title)
    print(f"{'command':<30} {'CPU ms':>8} {'+ vs pass':>10} {'wall ms':>8} {'x pass':>7}")
    for name, (cpu, wall) in medians.items():
        print(
            f"{name:<30} {cpu * 1e3:>8.0f} {(cpu - base_cpu) * 1e3:>+10.0f} "
            f"{wall * 1e3:>8.0f} {wall / base_wall:>7.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--compile", action="store_true", help="also without bytecode")
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=3, full=15)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="musepi-pyc-") as cache:
        medians = measure({**base, "PYTHONPYCACHEPREFIX": cache}, repeat)
    report(f"with bytecode ({repeat} runs each, interleaved; machine possibly shared)", medians)
    if args.compile:
        print()
        report("without bytecode", measure({**base, "PYTHONDONTWRITEBYTECODE": "1"}, repeat))
    help_wall = medians["musepi-lab --help"][1]
    extra_cpu = medians["import musepi_lab"][0] - medians["python -c pass (baseline)"][0]
    print(
        f"\n--help: {help_wall:.2f} s wall (target < {HELP_TARGET_S} s): "
        f"{'holds' if help_wall < HELP_TARGET_S else 'missed'}; import: {extra_cpu * 1e3:+.0f} ms "
        f"CPU over python -c pass (target ≤ {IMPORT_TARGET_S * 1e3:.0f} ms): "
        f"{'holds' if extra_cpu <= IMPORT_TARGET_S else 'missed'}"
    )
    if args.check and (help_wall > 0.75 or extra_cpu > 0.075):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

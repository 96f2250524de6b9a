"""Benchmark: `musepi-lab usage daily --offline --json` against ccusage, whole processes.

Lays the Claude Code corpus files out as one `projects/` folder (as `~/.claude` holds them,
a session's subagents beside it), once (the small folder) and `--copies` times (the large
folder, each copy its own project folder), then runs in turn, N times each:

- ours: `python -m musepi_lab.cli usage daily --offline --json <folder>/projects` (this
  checkout's code, the shared venv's Python);
- ccusage 20.0.24, the pinned one (`ensure_installed("ccusage")`), and, when it is
  installed at `$CCUSAGE18` (`npm install ccusage@18.0.11` there), ccusage 18.0.11:
  `node <bin> daily --offline --json --timezone UTC` with `CLAUDE_CONFIG_DIR=<folder>`.

Each figure is the median wall time of whole processes (start-up included), their median
CPU time (user + system, worker processes included: the figure other load on a shared
machine disturbs least) and the peak resident memory of the process (`os.wait4`'s
`ru_maxrss`), runs interleaved so drift hits all alike; ratios are ours / theirs. The load
average is printed beside them: wall ratios from a loaded machine say little.

    python perf/bench_usage_peer.py [--repeat N] [--copies K]

With `BENCH_BASELINE_TREE=<checkout>` the same command from that checkout (the code before
a change) runs in turn too, as "musepi-lab before".

Targets (issue 30): on the large folder ours ≤ 0.8x ccusage's wall time and peak memory
≤ ccusage's; on the small folder ≤ 1.0x.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import CORPUS

ROOT = Path(__file__).resolve().parent.parent


def lay_out(target: Path, copies: int) -> Path:
    """`target/projects/<copy>-<stem>/<file>` (+ `<stem>/subagents/`) for the corpus files."""
    source = CORPUS / "claude-code"
    for n in range(copies):
        for file in sorted(source.glob("*.jsonl")):
            folder = target / "projects" / f"p{n}-{file.stem}"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, folder / file.name)
            subagents = file.with_suffix("") / "subagents"
            if subagents.is_dir():
                shutil.copytree(subagents, folder / file.stem / "subagents")
    return target


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.jsonl"))


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, peak resident MiB and CPU seconds (user + system, its reaped workers
    included) of one whole process (its output discarded)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr.read().decode()[-2000:]}")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def commands(folder: Path, home: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "TZ": "UTC"}
    ours_env = {**env, "PYTHONPATH": str(ROOT)}
    found = {
        "musepi-lab": (
            [
                sys.executable,
                "-m",
                "musepi_lab.cli",
                "usage",
                "daily",
                "--offline",
                "--json",
                str(folder / "projects"),
            ],
            ours_env,
        )
    }
    baseline = os.environ.get("BENCH_BASELINE_TREE")
    if baseline:  # another checkout (before the change), the same command
        argv = [*found["musepi-lab"][0]]
        found["musepi-lab before"] = (argv, {**env, "PYTHONPATH": baseline})
    peer_env = {**env, "CLAUDE_CONFIG_DIR": str(folder)}
    options = ["daily", "--offline", "--json", "--timezone", "UTC"]
    node = shutil.which("node")
    if node is None:
        return found
    from musepi_lab.conformance._reference import ensure_installed

    pinned = ensure_installed("ccusage") / "node_modules" / ".bin" / "ccusage"
    found["ccusage 20.0.24"] = ([node, str(pinned), *options], peer_env)
    old = Path(os.environ.get("CCUSAGE18", "/tmp/i30/cc18")) / "node_modules" / ".bin" / "ccusage"
    if old.exists():
        found["ccusage 18.0.11"] = ([node, str(old), *options], peer_env)
    return found


def measure(folder: Path, home: Path, repeat: int) -> None:
    cmds = commands(folder, home)
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    peaks: dict[str, list[float]] = {name: [] for name in cmds}
    cpus: dict[str, list[float]] = {name: [] for name in cmds}
    for argv, env in cmds.values():  # warm-up: page cache, node's compile cache
        run(argv, env)
    for _ in range(repeat):
        for name, (argv, env) in cmds.items():
            seconds, mib, cpu = run(argv, env)
            walls[name].append(seconds)
            peaks[name].append(mib)
            cpus[name].append(cpu)
    ours = statistics.median(walls["musepi-lab"])
    ours_mib = max(peaks["musepi-lab"])
    ours_cpu = statistics.median(cpus["musepi-lab"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{folder_bytes(folder) / 1e6:.1f} MB of Claude Code sessions, {repeat} runs each "
        f"(load average {load:.1f} on {os.cpu_count()} cores)"
    )
    header = ("command", "wall s", "cpu s", "peak MiB", "wall x", "cpu x", "memory x")
    print("{:<18} {:>8} {:>8} {:>9} {:>7} {:>7} {:>9}".format(*header))
    for name in cmds:
        wall, mib = statistics.median(walls[name]), max(peaks[name])
        cpu = statistics.median(cpus[name])
        ours_row = name == "musepi-lab"
        ratios = (
            ("", "", "")
            if ours_row
            else (f"{ours / wall:.2f}", f"{ours_cpu / cpu:.2f}", f"{ours_mib / mib:.2f}")
        )
        print(
            f"{name:<18} {wall:>8.3f} {cpu:>8.3f} {mib:>9.0f} {ratios[0]:>7} {ratios[1]:>7} "
            f"{ratios[2]:>9}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args(argv)
    if not (CORPUS / "claude-code").is_dir():
        print(f"corpus not found at {CORPUS}; nothing to measure")
        return 0
    with tempfile.TemporaryDirectory(prefix="musepi-usage-peer-") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        for copies in (1, args.copies):
            folder = lay_out(root / f"x{copies}", copies)
            measure(folder, home, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the grid on a Dask LocalCluster against the same grid on the process pool.

A folder of sessions (`--data DIR`, or `--n` sessions written by the generator with a small
shape into a temporary folder) × four model-free strategies (truncate, observation-masking,
extractive, prune) × three keep-recent budgets. Each timed run is a fresh Python process
(so one run's heap does not sit under the next one's memory figures), started by this
script, which samples the resident memory of that process and of each of its children
(psutil, every 0.2 s): for the pool run the pool's workers, for the Dask run the client
(which also holds the LocalCluster's scheduler and nannies) and each worker process.

    python perf/bench_dask.py [--n 200 | --data DIR] [--workers 2] [--repeat 1] [--no-kill]

Figures:
- throughput (cells per second of the run) on the LocalCluster / on the pool, the runs
  interleaved; the Dask side includes starting and stopping its cluster (also shown
  without it). Target ≥ 0.85.
- peak memory of the Dask client (< 1 GiB) and of each worker (< 2 GiB).
- a run in which one worker is SIGKILLed when a third of the parts are written: its extra
  wall time against the unkilled run, beside the time of the task it had in flight (one
  session's cells; the worker runs one task at a time). Target: extra ≤ in-flight time
  (plus the restarted worker's start-up, shown). Its rows must equal the unkilled run's.
Every Dask run's rows are checked against the pool run's, cell by cell (timing left out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

STRATEGIES = ("truncate", "observation-masking", "extractive", "prune")
BUDGETS = (2000, 8000, 20000)
RATIO_TARGET = 0.85
CLIENT_TARGET = 1 << 30
WORKER_TARGET = 2 << 30
GIB = float(1 << 30)


# -- the data -------------------------------------------------------------------------------
def _write_one(args: tuple[str, int]) -> None:
    from musepi_lab.datasets import GeneratorConfig, generate_session
    from musepi_lab.datasets._generator import facts_json

    folder, seed = args
    session, facts = generate_session(GeneratorConfig(seed=seed, tasks=4, read_lines=60))
    name = f"gen-{seed:05d}"
    Path(folder, f"{name}.jsonl").write_bytes(session.to_jsonl())
    Path(folder, f"{name}.facts.json").write_bytes(facts_json(facts))


def generate(folder: Path, n: int, workers: int) -> None:
    """`n` small generated sessions (with their planted facts) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_write_one, [(str(folder), seed) for seed in range(n)], chunksize=64))


# -- one run, in its own process --------------------------------------------------------------
def _plan(data: str) -> tuple[list, dict]:
    from musepi_lab.bench._run import _plan as plan
    from musepi_lab.compaction._settings import CompactionSettings

    return plan(
        data,
        STRATEGIES,
        BUDGETS,
        mode="compact",
        settings=CompactionSettings.musepi(),
        counter_method=None,
        facts="auto",
        summarizer=None,
        prices=None,
    )


def child(kind: str, data: str, out: str, workers: int) -> None:
    """Run the grid once (`pool` or `dask`) and print its timings as JSON."""
    started = time.perf_counter()
    cells, config = _plan(data)
    planned = time.perf_counter()
    report: dict = {"cells": len(cells), "plan_s": planned - started}
    if kind == "pool":
        from musepi_lab.bench import write_benchmark
        from musepi_lab.bench._run import _frame, run_cells

        ends: list[float] = []
        rows = run_cells(
            cells,
            executor=None,
            max_workers=workers,
            progress=False,
            on_computed=lambda cell, row: ends.append(time.time()),
        )
        report["run_s"] = time.perf_counter() - planned
        report["steady"] = steady_rate(sorted(ends), [1] * len(ends))
        report["cluster_s"] = 0.0
        write_benchmark(_frame(rows, config, computed=len(rows), cached=0), out)
    else:
        from musepi_lab.bench._dask import run_on_dask

        connected: list[float] = []

        def on_client(client: object) -> None:
            connected.append(time.perf_counter())
            print(json.dumps({"connected": True}), flush=True)

        run = run_on_dask(
            cells, out, config, n_workers=workers, progress=False, on_client=on_client
        )
        report["run_s"] = time.perf_counter() - planned
        report["cluster_s"] = connected[0] - planned
        report["computed"] = run.computed
    print(json.dumps(report), flush=True)


# -- the parent: runs, memory samples, a kill --------------------------------------------------
def _is_worker(proc: object) -> bool:
    try:
        line = " ".join(proc.cmdline())  # type: ignore[attr-defined]
    except Exception:
        return False
    return "resource_tracker" not in line and "forkserver" not in line


class Sampler(threading.Thread):
    """Peak RSS of a process and of each of its (worker) descendants."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.client = 0
        self.workers: dict[int, int] = {}
        self.client_cpu = 0.0
        self.worker_cpu: dict[int, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.client = max(self.client, self.root.memory_info().rss)
                cpu = self.root.cpu_times()
                self.client_cpu = cpu.user + cpu.system
                for proc in self.root.children(recursive=True):
                    if _is_worker(proc):
                        rss = proc.memory_info().rss
                        self.workers[proc.pid] = max(self.workers.get(proc.pid, 0), rss)
                        cpu = proc.cpu_times()
                        self.worker_cpu[proc.pid] = cpu.user + cpu.system
            except Exception:
                pass  # a process ended between listing and reading
            self.stop.wait(0.2)

    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.root.children(recursive=True) if _is_worker(p)]


def timed_run(kind: str, data: Path, out: Path, workers: int, kill_at: float | None) -> dict:
    """One run in a child process, sampled; with `kill_at`, one worker is SIGKILLed once
    that share of the sessions' parts is written."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
        ),
    }
    argv = [sys.executable, __file__, "--child", kind, "--data", str(data), "--out", str(out)]
    argv += ["--workers", str(workers)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    sampler = Sampler(proc.pid)
    sampler.start()
    killed = None
    if kill_at is not None:
        from musepi_lab.bench import session_refs

        # The generated datasets keep one folder per format: count the sessions below `data`.
        sessions = max(1, len(session_refs([data])))
        results = out / "results"
        while proc.poll() is None:
            if (
                results.is_dir()
                and sum(1 for _ in results.glob("part-*.parquet")) >= kill_at * sessions
            ):
                pids = sampler.worker_pids()
                if pids:
                    killed = pids[0]
                    os.kill(killed, signal.SIGKILL)
                    break
            time.sleep(0.5)  # a glob of thousands of parts is not free
    lines = proc.stdout.read().splitlines() if proc.stdout else []
    proc.wait()
    sampler.stop.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{kind} run failed ({proc.returncode})")
    report = json.loads(lines[-1])
    report.update(client_rss=sampler.client, worker_rss=dict(sampler.workers), killed=killed)
    report.update(client_cpu=sampler.client_cpu, worker_cpu=sum(sampler.worker_cpu.values()))
    return report


def _same_rows(a: Path, b: Path) -> bool:
    from musepi_lab.bench import read_benchmark
    from musepi_lab.bench._score import TIMING_COLUMNS

    x = read_benchmark(a).drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)
    y = read_benchmark(b).drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)
    return bool(x.equals(y))


STEADY = (0.2, 0.9)
"""The share of the cells between which the steady throughput is taken."""


def steady_rate(ends: list[float], cells: list[int]) -> float:
    """Cells per second between the moments `STEADY` of the cells were done (`ends`:
    sorted finish times of units holding `cells` cells each): start-up and tail left out."""
    total = sum(cells)
    done, lo, hi = 0, None, None
    for end, n in zip(ends, cells, strict=True):
        done += n
        if lo is None and done >= STEADY[0] * total:
            lo, lo_done = end, done
        if hi is None and done >= STEADY[1] * total:
            hi, hi_done = end, done
    if lo is None or hi is None or hi <= lo:
        return float("nan")
    return (hi_done - lo_done) / (hi - lo)


def _dask_steady(out: Path) -> float:
    """`steady_rate` of a Dask run, from its parts' modification times."""
    parts = sorted(
        (p.stat().st_mtime_ns / 1e9, pq_rows(p)) for p in (out / "results").glob("part-*.parquet")
    )
    return steady_rate([t for t, _ in parts], [n for _, n in parts])


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_metadata(path).num_rows)


def _cell_seconds(out: Path) -> float:
    """The sum of the run's cells' own times (as the workers measured them)."""
    from musepi_lab.bench import read_benchmark

    return float(read_benchmark(out)["cell_seconds"].sum())


def _task_seconds(out: Path) -> tuple[float, float]:
    """Mean and max time of one session's task (the sum of its cells' seconds)."""
    from musepi_lab.bench import read_benchmark

    per = read_benchmark(out).groupby("source")["cell_seconds"].sum()
    return float(per.mean()), float(per.max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="sessions to generate (no --data)")
    parser.add_argument("--data", default=None, help="a folder of sessions instead")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=1, help="interleaved pool/dask rounds")
    parser.add_argument("--no-kill", action="store_true", help="skip the SIGKILL run")
    parser.add_argument("--keep", default=None, help="keep run folders here")
    parser.add_argument("--child", choices=("pool", "dask"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.data, args.out, args.workers)
        return 0

    scratch = Path(args.keep or tempfile.mkdtemp(prefix="musepi-bench-dask-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        if args.data:
            data = Path(args.data)
        else:
            data = scratch / "sessions"
            t = time.perf_counter()
            generate(data, args.n, args.workers)
            print(f"generated {args.n} sessions in {time.perf_counter() - t:.1f} s into {data}")
        runs: dict[str, list[dict]] = {"pool": [], "dask": []}
        for r in range(args.repeat):
            for kind in ("pool", "dask") if r % 2 == 0 else ("dask", "pool"):
                out = scratch / f"{kind}-{r}"
                shutil.rmtree(out, ignore_errors=True)
                runs[kind].append(timed_run(kind, data, out, args.workers, None))
                runs[kind][-1]["out"] = out
                runs[kind][-1]["cell_s"] = _cell_seconds(out)
                if kind == "dask":
                    runs[kind][-1]["steady"] = _dask_steady(out)
        for r in range(args.repeat):
            if not _same_rows(runs["pool"][r]["out"], runs["dask"][r]["out"]):
                print(f"round {r}: the Dask rows differ from the pool's", file=sys.stderr)
                return 1
        _table(runs, args)
        if not args.no_kill:
            killed = timed_run("dask", data, scratch / "dask-killed", args.workers, 1 / 3)
            _kill_table(killed, runs["dask"][0], scratch / "dask-killed")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def _table(runs: dict[str, list[dict]], args: argparse.Namespace) -> None:
    cells = runs["pool"][0]["cells"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    pool_s = _median([r["run_s"] for r in runs["pool"]])
    dask_s = _median([r["run_s"] for r in runs["dask"]])
    start_s = _median([r["cluster_s"] for r in runs["dask"]])
    ratio = pool_s / dask_s
    warm = pool_s / (dask_s - start_s)
    steady = _median([r["steady"] for r in runs["dask"]]) / _median(
        [r["steady"] for r in runs["pool"]]
    )
    client = max(r["client_rss"] for r in runs["dask"])
    worker = max(max(r["worker_rss"].values(), default=0) for r in runs["dask"])
    pool_worker = max(max(r["worker_rss"].values(), default=0) for r in runs["pool"])
    print(
        f"\n{cells} cells ({cells // (len(STRATEGIES) * len(BUDGETS))} sessions × "
        f"{len(STRATEGIES)} strategies × {len(BUDGETS)} budgets), {args.workers} workers, "
        f"{args.repeat} round(s); cores {os.cpu_count()}, load average (1 min) {load:.2f}\n"
    )
    print("| run | median s | cells/s | peak RSS: main process | peak RSS: largest worker |")
    print("|---|---|---|---|---|")
    print(
        f"| process pool | {pool_s:.1f} | {cells / pool_s:.1f} | "
        f"{runs['pool'][0]['client_rss'] / GIB:.2f} GiB | {pool_worker / GIB:.2f} GiB |"
    )
    print(
        f"| Dask LocalCluster | {dask_s:.1f} (cluster start {start_s:.1f}) | "
        f"{cells / dask_s:.1f} | {client / GIB:.2f} GiB (client) | {worker / GIB:.2f} GiB |"
    )
    for kind in ("pool", "dask"):
        r = runs[kind]
        print(
            f"{kind}: Σ cell seconds {_median([x['cell_s'] for x in r]):.1f}, CPU seconds of "
            f"the main process {_median([x['client_cpu'] for x in r]):.1f} and of the "
            f"workers {_median([x['worker_cpu'] for x in r]):.1f} (sampled every 0.2 s)"
        )
    print(
        f"\nthroughput Dask / pool: {ratio:.2f} (target ≥ {RATIO_TARGET}: "
        f"{'meets' if ratio >= RATIO_TARGET else 'misses'}); "
        f"without the cluster's start: {warm:.2f}; steady state (cells/s between "
        f"{STEADY[0]:.0%} and {STEADY[1]:.0%} of the cells done): {steady:.2f}"
    )
    print(
        f"client peak {client / GIB:.2f} GiB (target < 1 GiB: "
        f"{'meets' if client < CLIENT_TARGET else 'misses'}); largest worker peak "
        f"{worker / GIB:.2f} GiB (target < 2 GiB: {'meets' if worker < WORKER_TARGET else 'misses'})"
    )


def _kill_table(killed: dict, unkilled: dict, out: Path) -> None:
    same = _same_rows(out, unkilled["out"])
    mean_task, max_task = _task_seconds(unkilled["out"])
    extra = killed["run_s"] - unkilled["run_s"]
    print("\n| SIGKILL run | wall s | extra s | in-flight task s (mean / max) | rows equal |")
    print("|---|---|---|---|---|")
    print(
        f"| one worker killed at 1/3 of the parts (pid {killed['killed']}) | "
        f"{killed['run_s']:.1f} | {extra:+.1f} | {mean_task:.2f} / {max_task:.2f} | {same} |"
    )
    verdict = "meets" if extra <= max_task else "misses"
    print(
        f"extra wall time {extra:+.1f} s against an in-flight task of at most {max_task:.2f} s "
        f"({verdict}; one run each, so run-to-run noise is in the figure)"
    )


if __name__ == "__main__":
    raise SystemExit(main())

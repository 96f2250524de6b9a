"""`kill -9` a process while it writes benchmark results, again and again, and count what
the survivors find: a readable `results.parquet`, a `results.csv` holding the same frame,
and a `config.json` of the same write.

    python perf/kill_bench_writes.py [--kills N] [--rows N]

A child writes frames of `--rows` rows in a loop (`write_benchmark`), each stamped with its
write number in every file; the parent kills it with SIGKILL at a random moment and checks
the folder. Run with `PYTHONPATH` pointing at another checkout to measure that one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CHILD = """
    import sys
    import pandas as pd
    from musepi_lab.bench import write_benchmark

    out, rows = sys.argv[1], int(sys.argv[2])
    for n in range(1_000_000):
        frame = pd.DataFrame({"run": n, "cell": range(rows), "text": [f"x{i * n}" for i in range(rows)]})
        write_benchmark(frame, out, {"run": n})
        print(n, flush=True)
"""


def check(out: Path) -> str:
    """What a reader finds: `ok`, or what is wrong."""
    import pandas as pd

    try:
        parquet = pd.read_parquet(out / "results.parquet")
    except Exception:
        return "parquet unreadable"
    try:
        csv = pd.read_csv(out / "results.csv")
    except Exception:
        return "csv unreadable"
    runs = {int(parquet["run"].iloc[0]), json.loads((out / "config.json").read_text())["run"]}
    if len(csv) != len(parquet) or set(csv["run"]) != {int(parquet["run"].iloc[0])}:
        return "csv disagrees with parquet"
    return "ok" if len(runs) == 1 else "config disagrees with results"


def trial(out: Path, rows: int, rng: random.Random) -> str:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(out), str(rows)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=out.parent,  # not this checkout: `-c` puts the working folder on sys.path
    )
    assert child.stdout is not None
    child.stdout.readline()  # one complete write exists: there is something to lose
    time.sleep(rng.uniform(0.0, 1.0))
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return check(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    outcomes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.kills):
            result = trial(Path(tmp) / f"run{i}", args.rows, rng)
            outcomes[result] = outcomes.get(result, 0) + 1
    print(f"{args.kills} kills: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    return 0 if outcomes.get("ok", 0) == args.kills else 1


if __name__ == "__main__":
    sys.exit(main())

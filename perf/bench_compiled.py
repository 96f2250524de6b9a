"""Benchmark: the hot modules compiled (mypyc, optionally Cython) against the same code interpreted.

Copies `musepi_lab/` into a temporary folder (no `pyproject.toml` there: the venv's
setuptools refuses our `license = "MIT"` when it builds), compiles the hot modules of two
paths in that copy, then times each figure in fresh subprocesses, one importing this
tree's package (interpreted) and one importing the copy (compiled), alternated in the same
run:

| figure | what is timed | compiled modules |
|---|---|---|
| prepare same-work | `prepare_compaction` (pi profile, fresh counter) on `pi/large-session.jsonl` and `pi/before-compaction.jsonl`, read once and warm, counts and plans dropped before each call (`_harness.forget_counts`), path kept: bench_peer's `prepare_same_work` | `PREPARE_MODULES` |
| read | `read_session` on the largest Codex and Claude Code corpus files | `READ_MODULES` |
| orjson floor | `bench_read.parse_lines(..., orjson.loads)` of the same files (subagent files too), timed beside each read in the same child | none |

It prints the medians, the compiled / interpreted speed-up per figure and, for the reads,
the ratio to the orjson floor, compiled and not. A module the compiler refuses is left
interpreted and named with the compiler's reason. Each child checks that it imported what
it should (a `.so` for every compiled module, or none) and reports a result fingerprint
(first kept entry and token estimate, entry count and last id), which must match between
the two sides.

    python perf/bench_compiled.py [--quick] [--repeat N] [--cython] [--also MODULE ...]

`--cython` also compiles the same modules with Cython (pure-Python mode: the `.py` files
as they are) when `Cython` is importable; it is not a dependency of the project. Compiling
takes a minute or two. `--also` compiles more modules (paths under `musepi_lab/`) with
the two sets. There is no target here: `--check` is accepted and ignored.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import CORPUS, REPO, bench_parser, repetitions

PREPARE_MODULES = (
    "tokens/_estimate.py",
    "tokens/_counter.py",
    "compaction/_cut.py",
    "compaction/_file_ops.py",
    "compaction/_prepare.py",
    "session/_messages.py",
)
READ_MODULES = (
    "formats/_codex.py",
    "formats/_codex_convert.py",
    "formats/_codex_items.py",
    "formats/_claude_code.py",
    "formats/_claude_code_blocks.py",
    "formats/_claude_code_header.py",
    "formats/_claude_code_tree.py",
    "formats/_records.py",
    "formats/_io.py",
)
PI_FILES = ("large-session.jsonl", "before-compaction.jsonl")
READ_FORMATS = ("codex", "claude-code")
MYPY_CONFIG = "[mypy]\nignore_missing_imports = True\n"
ERROR_FILE = re.compile(r"^(musepi_lab/[\w/]+\.py):\d+(?::\d+)?: error: (.*)$", re.MULTILINE)
EXTENSION = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


# -- building ---------------------------------------------------------------------------
def copy_package(root: Path) -> None:
    """`musepi_lab/` of this tree into `root`, sources only (no pyproject.toml beside it)."""
    shutil.copytree(
        REPO / "musepi_lab",
        root / "musepi_lab",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"),
    )


def refused_modules(output: str, modules: list[str]) -> dict[str, str]:
    """The modules a failed compile names in its errors, each with its first error."""
    refused: dict[str, str] = {}
    for path, message in ERROR_FILE.findall(output):
        module = path.removeprefix("musepi_lab/")
        if module in modules and module not in refused:
            refused[module] = message.strip()
    return refused


def compile_modules(
    root: Path, modules: list[str], command: Callable[[list[str]], list[str]]
) -> tuple[list[str], dict[str, str]]:
    """Compile `modules` in the copy at `root`; drop the ones the compiler refuses and retry.

    Returns the modules compiled and the refused ones with the reason. A failure that names
    none of the modules (a build problem) refuses them all, with the output's tail.
    """
    remaining = list(modules)
    refused: dict[str, str] = {}
    while remaining:
        proc = subprocess.run(
            command(["musepi_lab/" + m for m in remaining]),
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0:
            return remaining, refused
        output = proc.stdout + proc.stderr
        named = refused_modules(output, remaining)
        if not named:
            tail = " | ".join(output.strip().splitlines()[-3:])
            return [], refused | {m: f"build failed: {tail}" for m in remaining}
        refused |= named
        remaining = [m for m in remaining if m not in named]
    return [], refused


def mypyc_command(root: Path) -> Callable[[list[str]], list[str]]:
    """The mypyc command line for some files, with a minimal config (the project's
    `warn_unused_configs` makes mypyc exit 1)."""
    config = root / "mypyc.ini"
    config.write_text(MYPY_CONFIG)
    mypyc = Path(sys.executable).parent / "mypyc"
    return lambda files: [str(mypyc), "--config-file", str(config), *files]


def cython_command(root: Path) -> Callable[[list[str]], list[str]]:
    """A setup.py run that cythonizes some files in place (pure-Python mode)."""
    setup = root / "cython_setup.py"
    setup.write_text(
        "import sys\n"
        "from Cython.Build import cythonize\n"
        "from setuptools import setup\n"
        "files = sys.argv[3:]\n"
        "del sys.argv[3:]\n"
        "setup(ext_modules=cythonize(files, compiler_directives={'language_level': 3},"
        " quiet=True), script_args=sys.argv[1:3])\n"
    )
    return lambda files: [sys.executable, str(setup), "build_ext", "--inplace", *files]


def build(kind: str, root: Path, modules: list[str]) -> tuple[list[str], dict[str, str]]:
    """A copy of the package in `root` with `modules` compiled by `kind`: the compiled
    modules and the refused ones with the reason."""
    copy_package(root)
    command = mypyc_command(root) if kind == "mypyc" else cython_command(root)
    return compile_modules(root, modules, command)


# -- the child --------------------------------------------------------------------------
def child(task: dict[str, Any]) -> dict[str, Any]:
    """Time one figure in this process (which imports whichever package is first on the
    path) and say what it imported; the parent reads the JSON it prints."""
    import orjson
    from _harness import forget_counts, interleaved_samples
    from bench_read import files_read, parse_lines

    import musepi_lab
    from musepi_lab.compaction._prepare import prepare_compaction
    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.formats._registry import read_session
    from musepi_lab.tokens._counter import TokenCounter

    package = Path(musepi_lab.__file__).parent
    extensions = sorted(
        str(p.relative_to(package)).split(".")[0] + ".py" for p in package.rglob("*" + EXTENSION)
    )
    file, repeat = task["file"], task["repeat"]
    if task["kind"] == "prepare":
        settings = CompactionSettings.for_profile("pi")
        session = read_session(file)
        prep = prepare_compaction(session, settings, TokenCounter.for_profile("pi"))
        result = [prep.first_kept_entry_id, prep.tokens_before] if prep else None
        samples = interleaved_samples(
            {"ours": lambda: prepare_compaction(session, settings, TokenCounter.for_profile("pi"))},
            repeat,
            {"ours": lambda: forget_counts(session)},
        )
    else:
        session = read_session(file)
        files = files_read(Path(file))
        result = [len(session.entries), session.entries[-1].id if session.entries else None]
        samples = interleaved_samples(
            {
                "ours": lambda: read_session(file),
                "orjson": lambda: parse_lines(files, orjson.loads),
            },
            repeat,
        )
    return {"extensions": extensions, "result": result, "samples": samples}


def run_child(root: Path, task: dict[str, Any]) -> dict[str, Any]:
    """`child(task)` in a fresh interpreter importing the package under `root`."""
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(task)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {task} under {root} failed: {proc.stderr.strip()[-600:]}")
    document: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return document


# -- the parent -------------------------------------------------------------------------
def tasks(repeat: int) -> list[tuple[str, dict[str, Any]]]:
    """The figures: a label and the child's task."""
    from bench_read import largest_per_format

    found = []
    for name in PI_FILES:
        file = CORPUS / "pi" / name
        if file.is_file():
            found.append((f"prepare {name}", {"kind": "prepare", "file": str(file)}))
    for fmt, file in largest_per_format(CORPUS):
        if fmt in READ_FORMATS:
            found.append((f"read {fmt} {file.name[:16]}", {"kind": "read", "file": str(file)}))
    return [(label, task | {"repeat": repeat}) for label, task in found]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.3f}"


def measure(
    sides: dict[str, Path], figures: list[tuple[str, dict[str, Any]]], rounds: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """For each figure and side, the pooled samples of `rounds` alternated child runs."""
    pooled: dict[str, dict[str, dict[str, Any]]] = {}
    for label, task in figures:
        pooled[label] = {}
        for _ in range(rounds):
            for side, root in sides.items():
                got = run_child(root, task)
                into = pooled[label].setdefault(
                    side, {"extensions": got["extensions"], "result": got["result"], "samples": {}}
                )
                for name, values in got["samples"].items():
                    into["samples"].setdefault(name, []).extend(values)
    return pooled


def report(pooled: dict[str, dict[str, dict[str, Any]]], expected: dict[str, set[str]]) -> None:
    """Print medians, speed-ups and read / orjson ratios per figure."""
    header = f"  {'figure':<36} {'side':<12} {'ms':>9} {'speed-up':>9} {'/orjson':>8}  same result"
    print(header)
    for label, sides in pooled.items():
        base = statistics.median(sides["interpreted"]["samples"]["ours"])
        floor = [v for s in sides.values() for v in s["samples"].get("orjson", [])]
        for side, got in sides.items():
            median = statistics.median(got["samples"]["ours"])
            speed = f"{base / median:8.2f}x"
            vs_floor = f"{median / statistics.median(floor):7.2f}x" if floor else " " * 8
            same = got["result"] == sides["interpreted"]["result"]
            extensions = set(got["extensions"])
            imported = (
                "" if extensions == expected[side] else f" (imported .so: {sorted(extensions)})"
            )
            print(
                f"  {label:<36} {side:<12} {_ms(median)} {speed} {vs_floor}"
                f"  {'yes' if same else 'NO'}{imported}"
            )
        if floor:
            print(f"  {label:<36} {'orjson':<12} {_ms(statistics.median(floor))}")


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return 0
    parser = bench_parser(__doc__ or "")
    parser.add_argument("--cython", action="store_true", help="also compile with Cython")
    parser.add_argument(
        "--also",
        nargs="*",
        default=[],
        metavar="MODULE",
        help="more modules to compile, relative to musepi_lab/ (e.g. session/_model.py)",
    )
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=7, full=21)
    rounds = 1 if args.quick else 2
    figures = tasks(repeat)
    if not figures:
        print(f"corpus not found under {CORPUS}: nothing to measure")
        return 0
    modules = [*PREPARE_MODULES, *READ_MODULES, *args.also]
    compilers = ["mypyc"]
    if args.cython:
        if importlib.util.find_spec("Cython") is None:
            print("--cython: Cython is not importable here; mypyc only")
        else:
            compilers.append("cython")
    sides: dict[str, Path] = {"interpreted": REPO}
    expected: dict[str, set[str]] = {"interpreted": set()}
    try:
        for kind in compilers:
            print(f"compiling {len(modules)} modules with {kind} ...", flush=True)
            root = sides[kind] = Path(tempfile.mkdtemp(prefix=f"musepi-{kind}-"))
            compiled, refused = build(kind, root, modules)
            expected[kind] = set(compiled)
            print(f"  compiled: {', '.join(compiled) or 'none'}")
            for module, why in refused.items():
                print(f"  refused:  {module}: {why}")
        print(
            f"\nmedians of {repeat} runs x {rounds} round(s) per side, each in a fresh process;"
            " speed-up = interpreted / side; /orjson against the pooled floor of the same run\n"
        )
        report(measure(sides, figures, rounds), expected)
    finally:
        for root in sides.values():
            if root != REPO:
                shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

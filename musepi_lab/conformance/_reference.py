"""Run the reference agents' published packages on a session file and return what they report.

Two references, each a set of pinned npm packages (`conformance/pins/<name>/package.json` with
its `package-lock.json`):

- `pi`: `@mariozechner/pi-coding-agent@0.58.3`, run on node (driver `driver/pi.mjs`);
- `musepi`: the oh-my-pi packages (`@oh-my-pi/pi-agent-core`, `snapcompact`, `pi-catalog`,
  `pi-coding-agent`), run on Bun from the npm package `@oven/bun-linux-x64` (driver
  `driver/omp.ts`).

They are installed with `npm install` over the pinned lockfile into a cache outside the repository,
`${MUSEPI_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/musepi-lab/conformance}/<name>@<version>`,
once: a marker file holding the digest of the pins says the install is complete, so later runs
reuse it, and a change of pins reinstalls. The driver is copied beside the installed
`node_modules` before each run so the package names resolve from it.

Missing tools raise `ReferenceToolMissing` naming the tool; nothing here skips (the tests decide,
and under `CI=true` they fail instead of skipping).

The pins and drivers stay in the repository's `conformance/` folder (one place, beside its
README); `MUSEPI_CONFORMANCE_DIR` points elsewhere (for an installed wheel).

Reference documents are cached per (session file digest, pins and driver digest, options) in
`<cache root>/results/`, so repeated test and CLI runs do not rerun the drivers.

Command line (from the repository root; `conformance/run.py` forwards here):

    python conformance/run.py install [pi|musepi|all]
    python conformance/run.py run --agent pi SESSION.jsonl [--budgets 1000,20000] [--out OUT.json]
    python conformance/run.py probe-omp     # which oh-my-pi release installs completely
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._atomic import write_bytes_atomic
from .._errors import MusepiLabError


def harness_dir() -> Path:
    """The folder holding `pins/` and `driver/`: `MUSEPI_CONFORMANCE_DIR`, else the
    repository's `conformance/`."""
    explicit = os.environ.get("MUSEPI_CONFORMANCE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "conformance"


HERE = harness_dir()
PINS = HERE / "pins"
DRIVERS = HERE / "driver"
MARKER = ".musepi-installed.json"
NPM_FLAGS = ("--no-audit", "--no-fund", "--ignore-scripts")

# Budgets swept when the caller gives none: at least 10 from 1,000 to 100,000 (issue 11),
# including each release's default keepRecentTokens (20,000).
DEFAULT_BUDGETS = (1000, 2000, 5000, 10000, 15000, 20000, 30000, 40000, 60000, 80000, 100000)

# oh-my-pi releases tried, newest first, by `probe-omp` (npm shows these for the coding agent).
OMP_CANDIDATES = ("18.3.4", "18.2.9", "18.2.3")
OMP_PACKAGES = (
    "@oh-my-pi/pi-agent-core",
    "@oh-my-pi/snapcompact",
    "@oh-my-pi/pi-catalog",
    "@oh-my-pi/pi-coding-agent",
)

Agent = Literal["pi", "musepi"]


class ReferenceToolMissing(MusepiLabError, RuntimeError):
    """A tool the reference run needs (node, npm, bun) is not available."""


class ReferenceRunError(MusepiLabError, RuntimeError):
    """The installation or the driver failed."""


@dataclass(frozen=True)
class Reference:
    """One reference agent: its pins, the package that names its cache folder, its driver."""

    agent: str
    pins: str
    main_package: str
    cache_prefix: str
    runtime: Literal["node", "bun"]
    driver: str

    @property
    def pins_dir(self) -> Path:
        return PINS / self.pins

    @property
    def version(self) -> str:
        manifest = json.loads((self.pins_dir / "package.json").read_text())
        return str(manifest["dependencies"][self.main_package])

    @property
    def cache_name(self) -> str:
        return f"{self.cache_prefix}@{self.version}"


REFERENCES: dict[str, Reference] = {
    "pi": Reference(
        agent="pi",
        pins="pi",
        main_package="@mariozechner/pi-coding-agent",
        cache_prefix="pi-coding-agent",
        runtime="node",
        driver="pi.mjs",
    ),
    "musepi": Reference(
        agent="musepi",
        pins="omp",
        main_package="@oh-my-pi/pi-coding-agent",
        cache_prefix="oh-my-pi",
        runtime="bun",
        driver="omp.ts",
    ),
    # The usage reports (ccusage, @ccusage/codex, @ccusage/pi): run through their own command
    # lines by `_ccusage.py`, so no driver.
    "ccusage": Reference(
        agent="ccusage",
        pins="ccusage",
        main_package="ccusage",
        cache_prefix="ccusage",
        runtime="node",
        driver="",
    ),
}


def cache_root() -> Path:
    """Where the installs live: `MUSEPI_CONFORMANCE_CACHE`, else the XDG cache folder."""
    explicit = os.environ.get("MUSEPI_CONFORMANCE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "musepi-lab" / "conformance"


def reference(agent: str) -> Reference:
    """The reference for `agent` ("pi", "musepi" or "ccusage")."""
    try:
        return REFERENCES[agent]
    except KeyError:
        raise ValueError(f"unknown agent {agent!r}; expected one of {sorted(REFERENCES)}") from None


def install_dir(agent: str) -> Path:
    """The cache folder of `agent`'s pinned packages (installed or not)."""
    return cache_root() / reference(agent).cache_name


def _which(tool: str, purpose: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise ReferenceToolMissing(f"{tool} not found on PATH (needed to {purpose})")
    return found


def _pins_digest(ref: Reference) -> str:
    if not (ref.pins_dir / "package.json").is_file():
        raise ReferenceToolMissing(
            f"conformance pins not found at {ref.pins_dir} (they live in the repository's "
            "conformance/ folder; set MUSEPI_CONFORMANCE_DIR to a copy of it)"
        )
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update(name.encode())
        digest.update((ref.pins_dir / name).read_bytes())
    return digest.hexdigest()


def _installed(target: Path, digest: str) -> bool:
    try:
        marker = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("pins_sha256") == digest)


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    """One installer at a time per cache folder (pytest-xdist workers share it)."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def bun_binary(target: Path) -> Path:
    """The Bun executable shipped by `@oven/bun-linux-x64` inside an install."""
    return target / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"


def ensure_installed(agent: str) -> Path:
    """Install `agent`'s pinned packages into the cache unless already there; return the folder.

    Raises:
        ReferenceToolMissing: npm (or node, which npm runs on) is missing.
        ReferenceRunError: `npm install` failed.
    """
    ref = reference(agent)
    target = install_dir(agent)
    digest = _pins_digest(ref)
    if _installed(target, digest):
        return target
    with _locked(target):
        if _installed(target, digest):
            return target
        npm = _which("npm", f"install the {agent} reference packages from the npm registry")
        _which("node", "run npm")
        (target / MARKER).unlink(missing_ok=True)
        shutil.rmtree(target / "node_modules", ignore_errors=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(ref.pins_dir / name, target / name)
        started = time.monotonic()
        # `npm install` over the copied lockfile installs the locked versions. (`npm ci` refuses
        # the oh-my-pi lock: pi-natives lists optional per-platform packages that were never
        # published for 18.2.3, so they cannot be in any lockfile.)
        proc = subprocess.run(
            [npm, "install", *NPM_FLAGS, "--loglevel=error"],
            cwd=target,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise ReferenceRunError(
                f"npm install for the {agent} reference failed in {target}:\n"
                + "\n".join(proc.stderr.splitlines()[:15])
            )
        seconds = round(time.monotonic() - started, 1)
        if ref.runtime == "bun" and not bun_binary(target).is_file():
            raise ReferenceToolMissing(
                f"bun binary missing at {bun_binary(target)} after installing @oven/bun-linux-x64"
            )
        marker = {
            "pins_sha256": digest,
            "agent": agent,
            "version": ref.version,
            "install_seconds": seconds,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (target / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    return target


def _runtime_command(ref: Reference, target: Path) -> list[str]:
    if ref.runtime == "node":
        return [_which("node", "run the pi reference driver")]
    bun = bun_binary(target)
    if not bun.is_file():
        raise ReferenceToolMissing(
            f"bun not found at {bun} (from the npm package @oven/bun-linux-x64)"
        )
    return [str(bun)]


def _driver_env(target: Path) -> dict[str, str]:
    """The driver's environment: the packages write nothing into the user's home, and the token
    estimate is each release's plain default (no accurate-tokenizer switch)."""
    env = dict(os.environ)
    home = target / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    env.pop("PI_TOKENIZER_ACCURATE", None)
    env.pop("NODE_ENV", None)
    env["NO_COLOR"] = "1"
    return env


def run_reference(
    agent: Agent,
    session_file: str | os.PathLike[str],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    branch_target: int | str | None = None,
    frames_dir: str | os.PathLike[str] | None = None,
    snapcompact: bool = True,
    snapcompact_budgets: Sequence[int] | None = None,
    texts: Literal["full", "digest"] = "full",
    timeout: float = 600,
) -> dict[str, Any]:
    """Run `agent`'s reference packages on one session file and return the driver's JSON.

    Args:
        agent: "pi" (pi-coding-agent 0.58.3 on node) or "musepi" (oh-my-pi on Bun).
        session_file: a pi/oh-my-pi session JSONL file (never modified: the drivers open a copy).
        budgets: keepRecentTokens values; every other setting is the release's default.
        branch_target: the entry to navigate to for the branch-summary measures, as a file-order
            index (int; version-1 files get random ids at every load) or an entry id (str);
            default: the middle entry of the leaf's path.
        frames_dir: where the musepi driver writes snapcompact frame PNGs (default: not written;
            the JSON then holds each frame's size, dimensions and sha256 only).
        snapcompact: whether the musepi driver renders snapcompact archives (the slowest part,
            about 3 s per budget for four readers on a 1,000-entry session).
        snapcompact_budgets: the budgets to render snapcompact archives at (default: all).
        texts: "full" puts every long text (summarizer input per dialect, archive text) in the
            JSON; "digest" puts its length and sha256 instead (musepi driver; the pi driver's
            texts are always full).
        timeout: seconds before the driver is stopped.

    Returns:
        The parsed JSON document (`schema` "musepi-lab.conformance.reference/1").

    Raises:
        ReferenceToolMissing: node, npm or bun is missing.
        ReferenceRunError: installing or running the driver failed.
    """
    ref = reference(agent)
    session = Path(session_file).resolve()
    if not session.is_file():
        raise FileNotFoundError(session)
    target = ensure_installed(agent)
    command = _runtime_command(ref, target)
    driver_dir = target / "driver"
    driver_dir.mkdir(exist_ok=True)
    driver = driver_dir / ref.driver
    shutil.copyfile(DRIVERS / ref.driver, driver)
    options = _driver_options(
        ref.runtime, branch_target, frames_dir, snapcompact, snapcompact_budgets, texts
    )
    with tempfile.TemporaryDirectory(prefix="musepi-conformance-") as scratch:
        out = Path(scratch) / "reference.json"
        argv = [
            *command,
            str(driver),
            "--session",
            str(session),
            "--budgets",
            ",".join(str(int(b)) for b in budgets),
            "--out",
            str(out),
            *options,
        ]
        return _run_driver(
            f"{agent} reference driver failed on {session}", argv, target, out, timeout
        )


def _run_driver(
    failure: str, argv: Sequence[str], target: Path, out: Path, timeout: float
) -> dict[str, Any]:
    """Run a driver in `target` and read the JSON it wrote to `out` (`ReferenceRunError`:
    `failure`, the exit status and the end of stderr, when it failed or wrote nothing)."""
    proc = subprocess.run(
        list(argv),
        cwd=target,
        env=_driver_env(target),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0 or not out.is_file():
        raise ReferenceRunError(f"{failure} (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def _driver_options(
    runtime: str,
    branch_target: int | str | None,
    frames_dir: str | os.PathLike[str] | None,
    snapcompact: bool,
    snapcompact_budgets: Sequence[int] | None,
    texts: str,
) -> list[str]:
    """The driver's command-line options beyond the session, budgets and output."""
    argv: list[str] = []
    if isinstance(branch_target, int):
        argv += ["--branch-target-index", str(branch_target)]
    elif branch_target is not None:
        argv += ["--branch-target-id", branch_target]
    if runtime != "bun":
        return argv
    if frames_dir is not None:
        Path(frames_dir).mkdir(parents=True, exist_ok=True)
        argv += ["--frames-dir", str(Path(frames_dir).resolve())]
    if not snapcompact:
        argv += ["--no-snapcompact"]
    elif snapcompact_budgets is not None:
        argv += ["--snapcompact-budgets", ",".join(str(int(b)) for b in snapcompact_budgets)]
    return [*argv, "--texts", texts]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def results_dir() -> Path:
    """Where reference documents are cached (beside the installs, outside the repository)."""
    return cache_root() / "results"


def reference_cache_key(agent: Agent, session_file: Path, options: dict[str, Any]) -> str:
    """The cache key of one reference run: the session file's bytes, the pins, the driver and
    the options (budgets, snapcompact, texts, branch target)."""
    ref = reference(agent)
    digest = hashlib.sha256()
    for part in (
        agent,
        _file_digest(session_file),
        _pins_digest(ref),
        _file_digest(DRIVERS / ref.driver),
        json.dumps(options, sort_keys=True),
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def cached_reference(
    agent: Agent,
    session_file: str | os.PathLike[str],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    branch_target: int | str | None = None,
    snapcompact: bool = False,
    snapcompact_budgets: Sequence[int] | None = None,
    texts: Literal["full", "digest"] = "full",
    frames: bool = False,
) -> dict[str, Any]:
    """`run_reference`, cached per (file digest, pins and driver digest, options).

    The document is read from `results_dir()` when an earlier run made it; otherwise the
    driver runs and its document is written there atomically. With `frames`, the snapcompact
    frame PNGs are kept beside it (`<document>-frames/`, moved into place whole) and the
    document's frame `file` paths point there.
    """
    session = Path(session_file).resolve()
    if not session.is_file():
        raise FileNotFoundError(session)
    options = {
        "budgets": [int(b) for b in budgets],
        "branch_target": branch_target,
        "snapcompact": snapcompact,
        "snapcompact_budgets": None
        if snapcompact_budgets is None
        else [int(b) for b in snapcompact_budgets],
        "texts": texts,
        **({"frames": True} if frames else {}),
    }
    target = results_dir() / f"{agent}-{reference_cache_key(agent, session, options)}.json"
    kept_frames = target.with_name(target.stem + "-frames")
    if target.is_file() and (not frames or kept_frames.is_dir()):
        try:
            cached: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
            return cached
        except ValueError:
            target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = kept_frames.with_name(f"{kept_frames.name}.{os.getpid()}.partial")
    document = run_reference(
        agent,
        session,
        budgets,
        branch_target=branch_target,
        frames_dir=partial if frames else None,
        snapcompact=snapcompact,
        snapcompact_budgets=snapcompact_budgets,
        texts=texts,
    )
    text = json.dumps(document)
    if frames:  # the frames move into place whole; the document points at their final home
        partial.mkdir(exist_ok=True)
        shutil.rmtree(kept_frames, ignore_errors=True)
        partial.rename(kept_frames)
        text = text.replace(json.dumps(str(partial.resolve()))[1:-1], str(kept_frames.resolve()))
    write_bytes_atomic(target, text.encode(), durable=False)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def probe_omp(candidates: Sequence[str] = OMP_CANDIDATES) -> list[dict[str, Any]]:
    """Try each oh-my-pi release, newest first, until all four packages install and import.

    Each try installs into a throw-away folder (never the cache). Returns one record per release
    tried: version, whether it installed, and the npm error or import failure otherwise.
    """
    npm = _which("npm", "probe oh-my-pi releases on the npm registry")
    bun_pin = json.loads((PINS / "omp" / "package.json").read_text())["dependencies"][
        "@oven/bun-linux-x64"
    ]
    records: list[dict[str, Any]] = []
    for version in candidates:
        with tempfile.TemporaryDirectory(prefix="musepi-omp-probe-") as scratch:
            deps = {name: version for name in OMP_PACKAGES} | {"@oven/bun-linux-x64": bun_pin}
            manifest = {"name": "probe", "private": True, "dependencies": deps}
            Path(scratch, "package.json").write_text(json.dumps(manifest))
            proc = subprocess.run(
                [npm, "install", *NPM_FLAGS, "--loglevel=error"],
                cwd=scratch,
                capture_output=True,
                text=True,
                check=False,
            )
            record: dict[str, Any] = {"version": version, "installed": proc.returncode == 0}
            if proc.returncode != 0:
                lines = [ln for ln in proc.stderr.splitlines() if "notarget" in ln or "ERR" in ln]
                record["error"] = "\n".join(lines[:3]) or proc.stderr[-500:]
                records.append(record)
                continue
            script = Path(scratch, "probe.ts")
            script.write_text("".join(f'await import("{name}");\n' for name in OMP_PACKAGES))
            bun = bun_binary(Path(scratch))
            imported = subprocess.run(
                [str(bun), str(script)], cwd=scratch, capture_output=True, text=True, check=False
            )
            record["imported"] = imported.returncode == 0
            if imported.returncode != 0:
                record["error"] = imported.stderr[-500:]
            records.append(record)
            if record["imported"]:
                break
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install the pinned reference packages into the cache")
    inst.add_argument("agent", nargs="?", default="all", choices=["pi", "musepi", "all"])
    run = sub.add_parser("run", help="run a reference driver on one session file")
    run.add_argument("--agent", required=True, choices=sorted(REFERENCES))
    run.add_argument("session")
    run.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    branch = run.add_mutually_exclusive_group()
    branch.add_argument("--branch-target-index", type=int)
    branch.add_argument("--branch-target-id")
    run.add_argument("--frames-dir")
    run.add_argument("--no-snapcompact", action="store_true")
    run.add_argument("--snapcompact-budgets", help="comma-separated; default: every budget")
    run.add_argument("--texts", choices=["full", "digest"], default="full")
    run.add_argument("--out", help="write the JSON here (default: standard output)")
    sub.add_parser("probe-omp", help="find the newest oh-my-pi release whose packages all install")
    args = parser.parse_args(argv)

    if args.command == "install":
        for agent in sorted(REFERENCES) if args.agent == "all" else [args.agent]:
            started = time.monotonic()
            target = ensure_installed(agent)
            print(f"{agent}: {target} ({time.monotonic() - started:.1f} s)")
        return 0
    if args.command == "probe-omp":
        print(json.dumps(probe_omp(), indent=2))
        return 0
    result = run_reference(
        args.agent,
        args.session,
        [int(b) for b in args.budgets.split(",") if b],
        branch_target=(
            args.branch_target_index
            if args.branch_target_index is not None
            else args.branch_target_id
        ),
        frames_dir=args.frames_dir,
        snapcompact=not args.no_snapcompact,
        snapcompact_budgets=(
            [int(b) for b in args.snapcompact_budgets.split(",") if b]
            if args.snapcompact_budgets
            else None
        ),
        texts=args.texts,
    )
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

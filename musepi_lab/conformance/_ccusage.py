"""Our usage reports against ccusage's, the tool people already read their agents' usage with.

The published packages (`conformance/pins/ccusage`: `ccusage` 20.0.24, the newest whose
native binary the registry serves, run through its node launcher as `ccusage claude`; and
`@ccusage/codex` and `@ccusage/pi` 18.0.11, the last that run on node 20) are installed by
`_reference.ensure_installed("ccusage")` into the conformance cache and run through their
own command lines with `--json` (and `--offline`: nothing is fetched), UTC dates, on a
scratch folder laid out as each expects, made of copies of the session files (the inputs are
never touched):

- Claude Code: `CLAUDE_CONFIG_DIR=<tmp>`, files in `projects/<file stem>/<file>` and a
  session's subagents in `projects/<stem>/<stem>/subagents/`. ccusage 20 names a session by
  its folder under the project, so a main file and its subagents make the session `<stem>`
  (18.x named the subagents' one `subagents`: both count toward the main file here).
- Codex: `CODEX_HOME=<tmp>`, files in `sessions/`; a session is the file stem.
- pi: `--piPath <tmp>/sessions`, files in `sessions/project/`; a session is the file stem.

`compare_usage` puts both reports side by side per day and per session and explains every
difference with causes from `CAUSES`, each with its size measured from the raw lines
(`_ccusage_causes`); what they leave over is the row's residual, named "unexplained".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._atomic import write_bytes_atomic
from ._ccusage_causes import (
    Sizes,
    Vector,
    claude_sizes,
    codex_sizes,
    duplicate_summary,
    explain,
    pi_sizes,
    session_files,
)
from ._ccusage_table import usage_agreement_table
from ._reference import (
    ReferenceRunError,
    _pins_digest,
    ensure_installed,
    reference,
    results_dir,
)

Kind = Literal["claude-code", "codex", "pi"]
TOKENS = ("input", "output", "cache_read", "cache_write")
"""The token counts compared (input uncached, as ours; Codex's cached input is cache_read)."""

BINARIES: Mapping[str, str] = {
    "claude-code": "ccusage",
    "codex": "ccusage-codex",
    "pi": "ccusage-pi",
}
SUBCOMMANDS: Mapping[str, tuple[str, ...]] = {"claude-code": ("claude",)}
"""What goes before the report: ccusage 20 reads every agent unless told which."""


@dataclass(frozen=True)
class AgreementRow:
    """One (format, folder, report, key) compared: ccusage's figures, ours, and the causes."""

    kind: str
    folder: str
    report: str
    key: str
    theirs: Mapping[str, float]
    ours: Mapping[str, float]
    causes: tuple[str, ...]
    sizes: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)
    """cause → the part of (theirs − ours) it accounts for (`_ccusage_causes.FIGURES`)."""
    residual: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """What the causes leave over; not zero exactly when "unexplained" is a cause."""

    @property
    def tokens_equal(self) -> bool:
        return all(self.theirs.get(n, 0) == self.ours.get(n, 0) for n in TOKENS)

    @property
    def cost_equal(self) -> bool:
        a, b = self.theirs.get("cost", 0.0), self.ours.get("cost", 0.0)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)

    @property
    def explained(self) -> bool:
        """Every difference has a cause (no "unexplained")."""
        return "unexplained" not in self.causes


# -- running ccusage -----------------------------------------------------------------------


def _layout(kind: Kind, files: Sequence[Path], root: Path) -> tuple[dict[str, str], list[str]]:
    """Copy `files` into `root` as `kind`'s ccusage expects; its environment and arguments."""
    if kind == "claude-code":
        for file in files:
            folder = root / "projects" / file.stem
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, folder / file.name)
            subagents = file.with_suffix("") / "subagents"
            if subagents.is_dir():
                shutil.copytree(subagents, folder / file.stem / "subagents")
        return {"CLAUDE_CONFIG_DIR": str(root)}, ["--offline"]
    if kind == "codex":
        (root / "sessions").mkdir(parents=True)
        for file in files:
            shutil.copyfile(file, root / "sessions" / file.name)
        return {"CODEX_HOME": str(root)}, ["--offline"]
    (root / "sessions" / "project").mkdir(parents=True)
    for file in files:
        shutil.copyfile(file, root / "sessions" / "project" / file.name)
    return {"PI_AGENT_DIR": str(root / "sessions")}, ["--piPath", str(root / "sessions")]


def _cache_key(kind: str, files: Sequence[Path], report: str) -> str:
    digest = hashlib.sha256(f"{kind}\0{report}\0{_pins_digest(reference('ccusage'))}".encode())
    for file in files:
        for part in session_files(file) if kind == "claude-code" else [file]:
            digest.update(part.name.encode() + b"\0" + hashlib.sha256(part.read_bytes()).digest())
    return digest.hexdigest()[:32]


def run_ccusage(
    kind: Kind, files: Sequence[str | os.PathLike[str]], report: str, *, timeout: float = 300
) -> dict[str, Any]:
    """The pinned ccusage command's JSON report for `kind` on copies of `files`, cached in the
    conformance cache per (files' bytes, pins, report); `run_ccusage_uncached` runs it.
    """
    paths = [Path(f) for f in files]
    target = results_dir() / f"ccusage-{_cache_key(kind, paths, report)}.json"
    try:
        cached: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
        return cached
    except (OSError, ValueError):
        pass
    document = run_ccusage_uncached(kind, paths, report, timeout=timeout)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(target, json.dumps(document).encode(), durable=False)
    return document


def run_ccusage_uncached(
    kind: Kind, files: Sequence[str | os.PathLike[str]], report: str, *, timeout: float = 300
) -> dict[str, Any]:
    """Run the pinned ccusage command for `kind` on copies of `files`; its JSON report.

    Raises:
        ReferenceToolMissing: node or npm is missing.
        ReferenceRunError: the install or the command failed.
    """
    target = ensure_installed("ccusage")
    binary = target / "node_modules" / ".bin" / BINARIES[kind]
    node = shutil.which("node")
    if node is None:  # ensure_installed found it; a PATH change in between is still an error
        raise ReferenceRunError("node not found on PATH (needed to run ccusage)")
    with tempfile.TemporaryDirectory(prefix="musepi-ccusage-") as scratch:
        root = Path(scratch)
        env_extra, options = _layout(kind, [Path(f) for f in files], root / "data")
        home = root / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "TZ": "UTC", **env_extra}
        command = [*SUBCOMMANDS.get(kind, ()), report]
        argv = [node, str(binary), *command, "--json", "--timezone", "UTC", *options]
        proc = subprocess.run(
            argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if proc.returncode != 0:
            raise ReferenceRunError(
                f"{BINARIES[kind]} {report} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
            )
        try:
            document: dict[str, Any] = json.loads(proc.stdout)
        except ValueError as error:
            raise ReferenceRunError(f"{BINARIES[kind]} {report} wrote no JSON: {error}") from None
        return document


def _day(text: str) -> str:
    """A report date as YYYY-MM-DD (@ccusage/codex writes "Feb 23, 2026")."""
    from datetime import datetime

    for pattern in ("%Y-%m-%d", "%b %d, %Y"):
        try:
            return datetime.strptime(text, pattern).strftime("%Y-%m-%d")
        except ValueError:
            continue
    return text


def _ccusage_session_key(kind: str, item: Mapping[str, Any]) -> str:
    if kind == "claude-code" and item.get("sessionId") == "subagents":
        return str(item.get("projectPath", "")).split("/")[0]
    return str(item.get("sessionId"))


def their_figures(
    kind: str, report: str, document: Mapping[str, Any]
) -> dict[str, dict[str, float]]:
    """ccusage's JSON report as key → {input (uncached), output, cache_read, cache_write, cost}
    (and `requests` for blocks), summing the rows that fall on one key (a Claude Code session
    and its subagents). Gap blocks are left out."""
    if report == "blocks":
        return {
            str(item["id"]).replace(".000Z", "Z"): _block_figures(item)
            for item in document.get("blocks") or []
            if not item.get("isGap")
        }
    items = document.get("daily" if report == "daily" else "sessions") or []
    out: dict[str, dict[str, float]] = {}
    for item in items:
        key = _day(str(item["date"])) if report == "daily" else _ccusage_session_key(kind, item)
        figures = _item_figures(kind, item)
        total = out.setdefault(key, dict.fromkeys(figures, 0.0))
        for name, value in figures.items():
            total[name] += value
    return out


def _item_figures(kind: str, item: Mapping[str, Any]) -> dict[str, float]:
    if kind == "codex":
        cached = float(item.get("cachedInputTokens", 0))
        return {
            "input": float(item.get("inputTokens", 0)) - cached,
            "output": float(item.get("outputTokens", 0)),
            "cache_read": cached,
            "cache_write": 0.0,
            "cost": float(item.get("costUSD", 0.0)),
        }
    return {
        "input": float(item.get("inputTokens", 0)),
        "output": float(item.get("outputTokens", 0)),
        "cache_read": float(item.get("cacheReadTokens", 0)),
        "cache_write": float(item.get("cacheCreationTokens", 0)),
        "cost": float(item.get("totalCost", 0.0)),
    }


def _block_figures(item: Mapping[str, Any]) -> dict[str, float]:
    counts = item.get("tokenCounts") or {}
    return {
        "input": float(counts.get("inputTokens", 0)),
        "output": float(counts.get("outputTokens", 0)),
        "cache_read": float(counts.get("cacheReadInputTokens", 0)),
        "cache_write": float(counts.get("cacheCreationInputTokens", 0)),
        "cost": float(item.get("costUSD", 0.0)),
        "requests": float(item.get("entries", 0)),
    }


def reports_for(kind: str) -> tuple[str, ...]:
    """The reports compared: daily and session, and blocks for Claude Code (the only
    ccusage command of the three with a blocks report)."""
    return ("daily", "session", "blocks") if kind == "claude-code" else ("daily", "session")


# -- our side and the comparison ------------------------------------------------------------


# -- our side and the comparison ------------------------------------------------------------

_REPORT_COLUMNS = (("daily", "day"), ("session", "stem"), ("blocks", "block"))


def our_usage(files: Sequence[Path]) -> Any:
    """Our `usage_df` of `files` read together (so a request two files record is billed
    once, as ccusage bills it), with the columns the reports group by: `day` (UTC), `stem`
    (the main file a row's session belongs to) and `block` (its billing block)."""
    from ..analysis._usage import billing_blocks, usage_df

    frame = usage_df(list(files))
    stems = {str(file): file.stem for file in files}
    roots = {}
    for file in files:
        for part in session_files(file):
            roots[str(part)] = file.stem
    frame["stem"] = frame["file"].map(
        lambda f: roots.get(str(f), stems.get(str(f), Path(str(f)).stem))
    )
    frame["day"] = frame["timestamp"].dt.strftime("%Y-%m-%d")
    frame["block"] = billing_blocks(frame["timestamp"]).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return frame


def our_figures(files: Sequence[Path]) -> dict[str, dict[str, dict[str, float]]]:
    """Our `usage_df` of the files, summed per UTC day, per file stem (a session with its
    subagents) and per billing block: report → key → figures (plus the 1-hour writes, the
    cost priced for replies without a recorded one, and the requests)."""
    frame = our_usage(files)
    frame["priced_cost"] = frame["cost"].where(frame["cost_source"] == "priced", 0.0)
    frame["requests"] = 1
    names = [*TOKENS, "cache_write_1h", "cost", "priced_cost", "requests"]
    result: dict[str, dict[str, dict[str, float]]] = {}
    for report, column in _REPORT_COLUMNS:
        sums = frame.groupby(column)[names].sum()
        result[report] = {
            str(key): {n: float(row[n]) for n in names} for key, row in sums.iterrows()
        }
    return result


def cause_sizes(
    kind: str, files: Sequence[Path], ours: Mapping[str, Any], block_starts: Sequence[str]
) -> Sizes:
    """Each cause's size per report and key, measured from the files (`_ccusage_causes`)."""
    if kind == "claude-code":
        return claude_sizes(files, block_starts)
    if kind == "codex":
        return codex_sizes(files)
    priced = {
        report: {key: figures["priced_cost"] for key, figures in ours[report].items()}
        for report, _ in _REPORT_COLUMNS
        if report in ours
    }
    return pi_sizes(priced)


def compare_usage(
    kind: Kind, folder: str, files: Sequence[str | os.PathLike[str]]
) -> list[AgreementRow]:
    """Run ccusage (the `reports_for(kind)`) and ours on `files`; one row per key, its
    differences explained by causes with their measured sizes."""
    paths = [Path(f) for f in files]
    ours = our_figures(paths)
    documents = {report: run_ccusage(kind, paths, report) for report in reports_for(kind)}
    blocks = their_figures(kind, "blocks", documents["blocks"]) if "blocks" in documents else {}
    sizes = cause_sizes(kind, paths, ours, list(blocks))
    rows: list[AgreementRow] = []
    for report, document in documents.items():
        theirs = _our_names(their_figures(kind, report, document), ours[report])
        for key in sorted(set(theirs) | set(ours[report])):
            a = theirs.get(key, dict.fromkeys([*TOKENS, "cost"], 0.0))
            b = ours[report].get(key, dict.fromkeys([*TOKENS, "cost"], 0.0))
            key_sizes = sizes.get(report, {}).get(key, {})
            causes, residual = explain(a, b, key_sizes)
            named = {c: key_sizes[c] for c in causes if c in key_sizes}
            rows.append(AgreementRow(kind, folder, report, key, a, b, causes, named, residual))
    return rows


def _our_names(
    theirs: dict[str, dict[str, float]], ours: Mapping[str, Any]
) -> dict[str, dict[str, float]]:
    """Their keys under ours: @ccusage/pi names a session by the id after the last `_` of
    its file name (`<time>_<id>.jsonl`, pi's own layout), ours by the whole stem."""
    out: dict[str, dict[str, float]] = {}
    for key, figures in theirs.items():
        stems = [s for s in ours if key not in ours and s.endswith(f"_{key}")]
        out[stems[0] if len(stems) == 1 else key] = figures
    return out


def duplicates_of(files: Sequence[str | os.PathLike[str]]) -> dict[str, Vector]:
    """The requests Claude Code recorded twice that ours bills once, by reason, with their
    size (ccusage bills a repeated message.id and requestId once too)."""
    frame = our_usage([Path(f) for f in files])
    return duplicate_summary(frame.attrs.get("duplicate_requests", []))


def corpus_duplicates(corpus: str | os.PathLike[str]) -> dict[str, dict[str, Vector]]:
    """`duplicates_of` every Claude Code folder `corpus_usage_folders` finds."""
    return {
        folder: duplicates_of(files)
        for kind, folder, files in corpus_usage_folders(corpus)
        if kind == "claude-code"
    }


@dataclass(frozen=True)
class PriceRow:
    """ccusage's cost of one model's tokens (a per-model breakdown) against ours of the same
    tokens: the cache writes split into 5-minute and 1-hour ones as the raw lines record
    them (ccusage 20 prices the 1-hour ones at 2x input too; Codex and pi record none)."""

    kind: str
    session: str
    model: str
    tokens: Mapping[str, float]
    theirs: float
    ours: float | None

    @property
    def equal(self) -> bool:
        return self.ours is not None and math.isclose(
            self.theirs, self.ours, rel_tol=1e-9, abs_tol=1e-9
        )


def _breakdowns(
    kind: str, document: Mapping[str, Any]
) -> Iterable[tuple[str, str, dict[str, float], float]]:
    for item in document.get("sessions") or []:
        if kind == "codex":
            models = item.get("models") or {}
            if len(models) == 1:  # the session's cost is this model's
                cached = float(item.get("cachedInputTokens", 0))
                tokens = {
                    "input": float(item.get("inputTokens", 0)) - cached,
                    "output": float(item.get("outputTokens", 0)),
                    "cache_read": cached,
                    "cache_write": 0.0,
                }
                yield (
                    _ccusage_session_key(kind, item),
                    next(iter(models)),
                    tokens,
                    float(item.get("costUSD", 0.0)),
                )
            continue
        for part in item.get("modelBreakdowns") or []:
            tokens = {
                "input": float(part.get("inputTokens", 0)),
                "output": float(part.get("outputTokens", 0)),
                "cache_read": float(part.get("cacheReadTokens", 0)),
                "cache_write": float(part.get("cacheCreationTokens", 0)),
            }
            yield (
                _ccusage_session_key(kind, item),
                str(part.get("modelName")),
                tokens,
                float(part.get("cost", 0.0)),
            )


def price_rows(kind: Kind, files: Sequence[str | os.PathLike[str]]) -> list[PriceRow]:
    """Each model's tokens in ccusage's session report, priced by ccusage and by our table
    (the 1-hour share of the writes from our rows of that session and model, when ours
    counts the same writes; else every write at the 5-minute rate)."""
    from ..metrics._prices import known_prices, usage_cost

    if kind == "pi":  # @ccusage/pi never prices: its costs are the recorded ones
        return []
    paths = [Path(f) for f in files]
    document = run_ccusage(kind, paths, "session")
    ours = our_usage(paths) if kind == "claude-code" else None
    rows: list[PriceRow] = []
    for session, model, tokens, cost in _breakdowns(kind, document):
        prices = known_prices(model)
        one_hour = 0
        if ours is not None:
            mine = ours[(ours["stem"] == session) & (ours["model"] == model)]
            if int(mine["cache_write"].sum()) == int(tokens["cache_write"]):
                one_hour = int(mine["cache_write_1h"].sum())
        price = (
            usage_cost(
                prices,
                input=int(tokens["input"]),
                output=int(tokens["output"]),
                cache_read=int(tokens["cache_read"]),
                cache_write_5m=int(tokens["cache_write"]) - one_hour,
                cache_write_1h=one_hour,
            )
            if prices is not None
            else None
        )
        rows.append(PriceRow(kind, session, model, tokens, cost, price))
    return rows


def claude_code_files(folder: Path) -> list[Path]:
    """A Claude Code folder's session files: the main files, and the subagent files whose
    main file is not there (read alone; ccusage reads them too)."""
    mains = sorted(folder.glob("*.jsonl"))
    orphans = sorted(
        p
        for p in folder.glob("*/subagents/agent-*.jsonl")
        if not p.parent.parent.with_suffix(".jsonl").is_file()
    )
    return mains + orphans


def corpus_usage_folders(corpus: str | os.PathLike[str]) -> list[tuple[Kind, str, list[Path]]]:
    """Every corpus folder with recorded usage that ccusage reads: (kind, folder, files).

    Claude Code subagent files come with their main file (an orphan one by itself); each
    pi folder (at any depth) is compared alone (`@ccusage/pi` drops a reply whose timestamp and total it
    has seen in another file)."""
    base = Path(corpus)
    found: list[tuple[Kind, str, list[Path]]] = []
    claude = claude_code_files(base / "claude-code")
    if claude:
        found.append(("claude-code", "claude-code", claude))
    codex = sorted((base / "codex").glob("*.jsonl"))
    if codex:
        found.append(("codex", "codex", codex))
    pi_root = base / "pi"
    # Every folder holding pi files, pi's own `--<cwd>--/` project folders included.
    folders = sorted({p.parent for p in pi_root.rglob("*.jsonl")}) if pi_root.is_dir() else []
    for folder in folders:
        files = sorted(folder.glob("*.jsonl"))
        if files:
            found.append(("pi", folder.relative_to(base).as_posix(), files))
    return found


def compare_usage_corpus(
    corpus: str | os.PathLike[str],
) -> tuple[list[AgreementRow], list[PriceRow]]:
    """`compare_usage` and `price_rows` over every folder `corpus_usage_folders` finds."""
    rows: list[AgreementRow] = []
    prices: list[PriceRow] = []
    for kind, folder, files in corpus_usage_folders(corpus):
        rows.extend(compare_usage(kind, folder, files))
        prices.extend(price_rows(kind, files))
    return rows, prices


def main(argv: Sequence[str] | None = None) -> int:
    """`python conformance/run.py ccusage [CORPUS]`: print the agreement table; exit 1 when a
    difference has no cause or a model is priced differently."""
    import argparse

    parser = argparse.ArgumentParser(prog="conformance/run.py ccusage", description=__doc__)
    default = Path(__file__).resolve().parents[3] / "shared" / "corpus"
    parser.add_argument("corpus", nargs="?", default=os.environ.get("MUSEPI_LAB_CORPUS", default))
    args = parser.parse_args(argv)
    rows, prices = compare_usage_corpus(args.corpus)
    print(usage_agreement_table(rows, prices, corpus_duplicates(args.corpus)))
    return 0 if all(r.explained for r in rows) and all(p.equal for p in prices) else 1

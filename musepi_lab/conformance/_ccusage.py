"""Our usage reports against ccusage's, the tool people already read their agents' usage with.

The published packages (`conformance/pins/ccusage`: `ccusage`, `@ccusage/codex` and
`@ccusage/pi`, all 18.0.11, the last line that runs on node 20 without a native binary) are
installed by `_reference.ensure_installed("ccusage")` into the conformance cache and run
through their own command lines with `--json` (and `--offline`: nothing is fetched), UTC
dates, on a scratch folder laid out as each expects, made of copies of the session files
(the inputs are never touched):

- Claude Code: `CLAUDE_CONFIG_DIR=<tmp>`, files in `projects/<file stem>/<file>` and a
  session's subagents in `projects/<stem>/<stem>/subagents/`. ccusage names a session by the
  folder a file sits in, so a main file's session is its stem and its subagent files make a
  session `subagents` under `<stem>/<stem>`: both count toward the main file here.
- Codex: `CODEX_HOME=<tmp>`, files in `sessions/`; a session is the file stem.
- pi: `--piPath <tmp>/sessions`, files in `sessions/project/`; a session is the file stem.

`compare_usage` puts both reports side by side per day and per session and explains every
difference with a cause from `CAUSES` (the known ways the two count differently, each checked
against the raw files by the tests); a difference no cause explains is "unexplained".
"""

from __future__ import annotations

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

CAUSES: Mapping[str, str] = {
    "claude-streamed-output": (
        "Claude Code writes one line per content block of a streamed reply, each with the "
        "reply's usage so far; ccusage keeps the first line of each message.id:requestId "
        "(output_tokens counted before the reply finished), ours the last (the final count). "
        "Input and cache counts are the same on every line."
    ),
    "codex-repeated-token-count": (
        "Codex writes a token_count event again without a new request (the same "
        "total_token_usage); @ccusage/codex counts every event's last_token_usage, ours one "
        "request per new cumulative total."
    ),
    "claude-1h-cache-writes": (
        "ccusage prices every cache write at the 5-minute rate (1.25x input); Claude Code "
        "records 1-hour writes (cache_creation.ephemeral_1h_input_tokens), which ours prices "
        "at 2x input."
    ),
    "costs-follow-tokens": "the token counts differ (see the token cause), so the costs do.",
    "pi-unrecorded-cost": (
        "a pi reply without a recorded cost: @ccusage/pi counts $0 (it never prices), ours "
        "prices it from the table."
    ),
    "price-table": (
        "ccusage prices from its bundled LiteLLM table, ours from metrics.MODEL_PRICES "
        "(PRICES_SOURCE): the model's prices or tiers (above 200k tokens) differ."
    ),
}
"""Why a figure can differ between ccusage and ours, by cause id."""


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
        group = [file, *sorted((file.with_suffix("") / "subagents").glob("*.jsonl"))]
        for part in group if kind == "claude-code" else [file]:
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
        argv = [node, str(binary), report, "--json", "--timezone", "UTC", *options]
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


def our_figures(files: Sequence[Path]) -> dict[str, dict[str, dict[str, float]]]:
    """Our `usage_df` of each file, summed per UTC day, per file stem (a session with its
    subagents) and per billing block: report → key → figures (plus the 1-hour writes, the
    unrecorded costs and the requests)."""
    import pandas as pd

    from ..analysis._usage import billing_blocks, usage_df

    frames = []
    for file in files:
        frame, _ = usage_df(file)
        frames.append(frame.assign(stem=file.stem))
    frame = pd.concat(frames, ignore_index=True)
    frame["day"] = frame["timestamp"].dt.strftime("%Y-%m-%d")
    frame["block"] = billing_blocks(frame["timestamp"]).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    frame["priced_unrecorded"] = (frame["cost_source"] == "priced").astype(int)
    frame["requests"] = 1
    names = [*TOKENS, "cache_write_1h", "cost", "priced_unrecorded", "requests"]
    result: dict[str, dict[str, dict[str, float]]] = {}
    for report, column in (("daily", "day"), ("session", "stem"), ("blocks", "block")):
        sums = frame.groupby(column)[names].sum()
        result[report] = {
            str(key): {n: float(row[n]) for n in names} for key, row in sums.iterrows()
        }
    return result


def _causes(kind: str, theirs: Mapping[str, float], ours: Mapping[str, float]) -> tuple[str, ...]:
    causes: list[str] = []
    token_diff = {n for n in TOKENS if theirs.get(n, 0) != ours.get(n, 0)}
    if token_diff:
        if kind == "claude-code" and token_diff == {"output"}:
            causes.append("claude-streamed-output")
        elif kind == "codex" and all(theirs[n] >= ours.get(n, 0) for n in token_diff):
            causes.append("codex-repeated-token-count")
        else:
            causes.append("unexplained")
    cost_equal = math.isclose(
        theirs.get("cost", 0.0), ours.get("cost", 0.0), rel_tol=1e-9, abs_tol=1e-9
    )
    if not cost_equal:
        if token_diff:
            causes.append("costs-follow-tokens")
        if kind == "claude-code" and ours.get("cache_write_1h", 0) > 0:
            causes.append("claude-1h-cache-writes")
        if kind == "pi" and ours.get("priced_unrecorded", 0) > 0:
            causes.append("pi-unrecorded-cost")
        if kind != "pi" and not causes:
            causes.append("price-table")
        if not causes:
            causes.append("unexplained")
    return tuple(causes)


def compare_usage(
    kind: Kind, folder: str, files: Sequence[str | os.PathLike[str]]
) -> list[AgreementRow]:
    """Run ccusage (the `reports_for(kind)`) and ours on `files`; one row per key."""
    paths = [Path(f) for f in files]
    ours = our_figures(paths)
    rows: list[AgreementRow] = []
    for report in reports_for(kind):
        theirs = their_figures(kind, report, run_ccusage(kind, paths, report))
        for key in sorted(set(theirs) | set(ours[report])):
            a = theirs.get(key, dict.fromkeys([*TOKENS, "cost"], 0.0))
            b = ours[report].get(key, dict.fromkeys([*TOKENS, "cost"], 0.0))
            rows.append(AgreementRow(kind, folder, report, key, a, b, _causes(kind, a, b)))
    return rows


@dataclass(frozen=True)
class PriceRow:
    """ccusage's cost of one model's tokens (a per-model breakdown) against ours of the same
    tokens, every cache write at the 5-minute rate as ccusage prices it."""

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
    """Each model's tokens in ccusage's session report, priced by ccusage and by our table."""
    from ..metrics._prices import known_prices, usage_cost

    if kind == "pi":  # @ccusage/pi never prices: its costs are the recorded ones
        return []
    document = run_ccusage(kind, [Path(f) for f in files], "session")
    rows: list[PriceRow] = []
    for session, model, tokens, cost in _breakdowns(kind, document):
        prices = known_prices(model)
        ours = (
            usage_cost(
                prices,
                input=int(tokens["input"]),
                output=int(tokens["output"]),
                cache_read=int(tokens["cache_read"]),
                cache_write_5m=int(tokens["cache_write"]),
            )
            if prices is not None
            else None
        )
        rows.append(PriceRow(kind, session, model, tokens, cost, ours))
    return rows


def corpus_usage_folders(corpus: str | os.PathLike[str]) -> list[tuple[Kind, str, list[Path]]]:
    """Every corpus folder with recorded usage that ccusage reads: (kind, folder, main files).

    Claude Code subagent files come with their main file; each pi folder is compared alone
    (`@ccusage/pi` drops a reply whose timestamp and total it has seen in another file)."""
    base = Path(corpus)
    found: list[tuple[Kind, str, list[Path]]] = []
    claude = sorted((base / "claude-code").glob("*.jsonl"))
    if claude:
        found.append(("claude-code", "claude-code", claude))
    codex = sorted((base / "codex").glob("*.jsonl"))
    if codex:
        found.append(("codex", "codex", codex))
    pi_root = base / "pi"
    folders = (
        [pi_root, *sorted(p for p in pi_root.iterdir() if p.is_dir())] if pi_root.is_dir() else []
    )
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


def usage_agreement_table(rows: Iterable[AgreementRow], prices: Iterable[PriceRow] = ()) -> str:
    """The agreement table: per folder and report, how many keys agree on tokens and on cost,
    every difference with its cause, then each model's tokens priced by both."""
    rows = list(rows)
    groups: dict[tuple[str, str], list[AgreementRow]] = {}
    for row in rows:
        groups.setdefault((row.folder, row.report), []).append(row)
    lines = [
        "ccusage 18.0.11 (@ccusage/codex, @ccusage/pi 18.0.11) against musepi-lab usage_df",
        f"{'folder':<26} {'report':<8} {'keys':>4} {'tokens equal':>12} {'cost equal':>10} "
        f"{'unexplained':>11}",
    ]
    for (folder, report), group in groups.items():
        lines.append(
            f"{folder:<26} {report:<8} {len(group):>4} "
            f"{sum(r.tokens_equal for r in group):>12} {sum(r.cost_equal for r in group):>10} "
            f"{sum(not r.explained for r in group):>11}"
        )
    lines.append("")
    lines.append("differences (theirs → ours) and causes:")
    for row in rows:
        if row.tokens_equal and row.cost_equal:
            continue
        diffs = [
            f"{n} {row.theirs.get(n, 0):,.0f}→{row.ours.get(n, 0):,.0f}"
            for n in TOKENS
            if row.theirs.get(n, 0) != row.ours.get(n, 0)
        ]
        if not row.cost_equal:
            diffs.append(f"cost ${row.theirs.get('cost', 0):,.4f}→${row.ours.get('cost', 0):,.4f}")
        lines.append(
            f"  {row.folder} {row.report} {row.key}: {'; '.join(diffs)} [{', '.join(row.causes)}]"
        )
    prices = list(prices)
    if prices:
        lines.append("")
        lines.append(
            "the same tokens priced by both (per model and session, writes at the 5m rate):"
        )
        for p in prices:
            ours = "no price" if p.ours is None else f"${p.ours:,.6f}"
            verdict = "equal" if p.equal else "DIFFERENT [price-table]"
            lines.append(
                f"  {p.kind} {p.session[:36]} {p.model}: ccusage ${p.theirs:,.6f}, ours {ours}: {verdict}"
            )
    used = sorted(
        {c for r in rows for c in r.causes}
        | ({"price-table"} if any(not p.equal for p in prices) else set())
    )
    lines.append("")
    lines.extend(f"  {c}: {CAUSES.get(c, 'no known cause')}" for c in used)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`python conformance/run.py ccusage [CORPUS]`: print the agreement table; exit 1 when a
    difference has no cause or a model is priced differently."""
    import argparse

    parser = argparse.ArgumentParser(prog="conformance/run.py ccusage", description=__doc__)
    default = Path(__file__).resolve().parents[3] / "shared" / "corpus"
    parser.add_argument("corpus", nargs="?", default=os.environ.get("MUSEPI_LAB_CORPUS", default))
    args = parser.parse_args(argv)
    rows, prices = compare_usage_corpus(args.corpus)
    print(usage_agreement_table(rows, prices))
    return 0 if all(r.explained for r in rows) and all(p.equal for p in prices) else 1

"""The ccusage agreement table: counts per folder and report, every difference with its
causes and their sizes, the requests recorded twice, and the prices (split from
`_ccusage.py`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ._ccusage_causes import CAUSES, FIGURES, Vector
from ._ccusage_rows import AgreementRow, PriceRow
from ._reference import reference

TOKENS = FIGURES[:4]


def versions() -> str:
    """The pinned ccusage packages, as the table's first line names them."""
    manifest = json.loads((reference("ccusage").pins_dir / "package.json").read_text())
    deps = manifest["dependencies"]
    return ", ".join(
        f"{name} {deps[name]}" for name in ("ccusage", "@ccusage/codex", "@ccusage/pi")
    )


def _size_text(size: Mapping[str, float], sign: str = "+") -> str:
    parts = [f"{n} {size.get(n, 0):{sign},.0f}" for n in TOKENS if size.get(n, 0)]
    if size.get("cost", 0):
        parts.append(f"cost ${size['cost']:{sign},.4f}")
    return ", ".join(parts) or "0"


def usage_agreement_table(
    rows: Iterable[AgreementRow],
    prices: Iterable[PriceRow] = (),
    duplicates: Mapping[str, Mapping[str, Vector]] | None = None,
) -> str:
    """The agreement table: per folder and report, how many keys agree on tokens and on cost,
    every difference with its causes and their sizes (and what is unexplained), the requests
    recorded twice, then each model's tokens priced by both."""
    rows = list(rows)
    groups: dict[tuple[str, str], list[AgreementRow]] = {}
    for row in rows:
        groups.setdefault((row.folder, row.report), []).append(row)
    width = max([26, *(len(folder) for folder, _ in groups)])
    lines = [
        f"{versions()} against musepi-lab usage_df",
        f"{'folder':<{width}} {'report':<8} {'keys':>4} {'tokens equal':>12} {'cost equal':>10} "
        f"{'unexplained':>11}",
    ]
    for (folder, report), group in groups.items():
        lines.append(
            f"{folder:<{width}} {report:<8} {len(group):>4} "
            f"{sum(r.tokens_equal for r in group):>12} {sum(r.cost_equal for r in group):>10} "
            f"{sum(not r.explained for r in group):>11}"
        )
    lines.append("")
    lines.append("differences (theirs → ours), each cause with its size (theirs − ours):")
    for row in rows:
        if row.tokens_equal and row.cost_equal and row.explained:
            continue
        diffs = [
            f"{n} {row.theirs.get(n, 0):,.0f}→{row.ours.get(n, 0):,.0f}"
            for n in TOKENS
            if row.theirs.get(n, 0) != row.ours.get(n, 0)
        ]
        if not row.cost_equal:
            diffs.append(f"cost ${row.theirs.get('cost', 0):,.4f}→${row.ours.get('cost', 0):,.4f}")
        causes = [f"{c} ({_size_text(row.sizes[c])})" for c in row.causes if c in row.sizes]
        if not row.explained:
            causes.append(f"unexplained ({_size_text(row.residual)})")
        lines.append(
            f"  {row.folder} {row.report} {row.key}: {'; '.join(diffs) or 'none'} "
            f"[{', '.join(causes)}]"
        )
    if duplicates:
        lines.append("")
        lines.append(
            "requests recorded twice, billed once by ours (a repeated message.id:requestId "
            "ccusage bills once too; a sidechain replay: claude-sidechain-replay):"
        )
        for folder, reasons in duplicates.items():
            for reason, size in (reasons or {"none": {"requests": 0.0}}).items():
                text = _size_text(size, sign="")
                lines.append(f"  {folder} {reason}: {size['requests']:,.0f} requests, {text}")
    prices = list(prices)
    if prices:
        lines.append("")
        lines.append("the same tokens priced by both (per model and session):")
        for p in prices:
            ours = "no price" if p.ours is None else f"${p.ours:,.6f}"
            verdict = "equal" if p.equal else "DIFFERENT"
            lines.append(
                f"  {p.kind} {p.session[:36]} {p.model}: ccusage ${p.theirs:,.6f}, ours {ours}: {verdict}"
            )
    used = sorted({c for r in rows for c in r.causes})
    lines.append("")
    lines.extend(f"  {c}: {CAUSES.get(c, 'no known cause')}" for c in used)
    return "\n".join(lines)

"""The rows of the ccusage comparison, a leaf both the comparison (`_ccusage`) and its
table (`_ccusage_table`) import."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["TOKENS", "AgreementRow", "PriceRow"]

TOKENS = ("input", "output", "cache_read", "cache_write")
"""The token counts compared (input uncached, as ours; Codex's cached input is cache_read)."""


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

"""One row of the conformance table: agreement of one measure for one agent on one input."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MeasureRow:
    """Agreement of one measure for one agent on one input.

    Attributes:
        measure: Name of the measure (`cut_point`, `prepare.tokens_before`, ...).
        agent: "pi" or "musepi".
        agreed: Cases where ours equals the reference.
        total: Cases compared.
        first_difference: Where the first disagreeing case differs, with both values; None
            when all agree.
        own_wording: The measure compares texts that are our own wording by design (prompt
            prose, wrapper sentences): a disagreement there does not fail the run.
        seed_difference: For rows comparing the profile's seed-following default with the
            release, the one-line reason (which seed rule); `agreed` then counts the cases
            where the seed rule happens to give the release's value. Never fails the run.
            None for the ordinary rows.
    """

    measure: str
    agent: str
    agreed: int
    total: int
    first_difference: str | None = None
    own_wording: bool = False
    seed_difference: str | None = None

    @property
    def ok(self) -> bool:
        """All cases agree, or the measure is own wording or a listed seed difference."""
        return self.own_wording or self.seed_difference is not None or self.agreed == self.total

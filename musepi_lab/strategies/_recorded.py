"""`recorded`: the compactions the agent itself made, as a strategy.

Every harness the readers know records its own compactions as `compaction` entries: pi and
MusePi compaction entries, Claude Code's `compact_boundary` with its summary line, Codex's
`compacted` record. `recorded` reproduces them with their recorded summaries, so any other
strategy can be compared with what the real agent did, at the same points, with the same
metrics.

- In a replay, `recorded` fires at each recorded compaction entry (trigger `recorded`) and
  nowhere else: the replay appends the recorded entry itself (`replay/_recorded.py`).
- Run directly (`compact(session, "recorded")`), it returns the newest recorded compaction
  on the path as a result: its summary, first kept entry, details and preserved data, to be
  applied at the leaf. None when the agent never compacted on that path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..compaction._result import CompactionResult
from ..session._model import Entry
from ._base import CompactionContext, Strategy, register

RECORDED_METHOD = "recorded"


def latest_compaction(entries: tuple[Entry, ...] | list[Entry]) -> Entry | None:
    """The newest `compaction` entry of a path, or None."""
    return next((e for e in reversed(entries) if e.type == "compaction"), None)


def result_from_entry(entry: Entry, *, leaf_id: str | None, profile: str) -> CompactionResult:
    """A recorded compaction entry as a `CompactionResult` (its own summary and data)."""
    details = entry.get("details")
    preserve = entry.get("preserveData")
    tokens_before = entry.get("tokensBefore")
    return CompactionResult(
        summary=str(entry.get("summary") or ""),
        first_kept_entry_id=str(entry.get("firstKeptEntryId") or entry.id or ""),
        tokens_before=tokens_before if isinstance(tokens_before, int) else 0,
        details=details if isinstance(details, Mapping) else None,
        method=RECORDED_METHOD,
        preserve_data=preserve if isinstance(preserve, Mapping) else None,
        params={"entry_id": entry.id, "recorded_method": _recorded_method(entry)},
        leaf_id=leaf_id,
        profile=profile,
    )


def _recorded_method(entry: Entry) -> Any:
    method = entry.get("method")
    return method if isinstance(method, str) else ""


@register
@dataclass(frozen=True)
class Recorded(Strategy):
    """Follow the agent's own recorded compactions with their recorded summaries."""

    name: ClassVar[str] = "recorded"
    needs_preparation: ClassVar[bool] = False
    follows_recorded: ClassVar[bool] = True

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """The newest recorded compaction on the path; None when there is none."""
        entry = latest_compaction(ctx.session.path(ctx.leaf_id))
        if entry is None:
            return None
        return result_from_entry(entry, leaf_id=ctx.leaf_id, profile=ctx.settings.profile)

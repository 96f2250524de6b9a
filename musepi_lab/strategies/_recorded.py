"""`recorded`: the compactions the agent itself made, as a strategy.

Every harness the readers know records its own compactions as `compaction` entries: pi and
MusePi compaction entries, Claude Code's `compact_boundary` with its summary line, Codex's
`compacted` record. `recorded` reproduces them with their recorded summaries, so any other
strategy can be compared with what the real agent did, at the same points, with the same
metrics.

- In a replay, `recorded` fires at each recorded compaction entry (trigger `recorded`) and
  nowhere else: the replay appends the recorded entry itself (`replay/_recorded.py`).
- Run directly (`compact(session, "recorded", leaf_id=...)`), it returns the compaction the
  agent made right after that leaf (a compaction entry among the leaf's children), else the
  newest recorded compaction on the path: its summary, first kept entry, details and
  preserved data, to be applied at the leaf. None when the agent never compacted there.
  So `compact(session, name, leaf_id=c.parent_id)` for a recorded compaction `c` compares
  any strategy with what the agent did at the same point.
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
        """The compaction recorded right after the leaf, else the newest on the path;
        None when there is none."""
        leaf = ctx.leaf_id or (ctx.session.leaf.id if ctx.session.leaf else None)
        here = [c for c in ctx.session.children(leaf) if c.type == "compaction"] if leaf else []
        entry = here[0] if here else latest_compaction(ctx.session.path(ctx.leaf_id))
        if entry is None:
            return None
        result = result_from_entry(entry, leaf_id=ctx.leaf_id, profile=ctx.settings.profile)
        path_ids = {e.id for e in ctx.session.path(ctx.leaf_id)}
        if result.first_kept_entry_id not in path_ids and leaf is not None:
            # Claude Code keeps nothing from before its boundary (its entry names the first
            # message after it); applied at the leaf, the nearest is keeping the leaf alone.
            result = result.copy_with(first_kept_entry_id=leaf)
        return result

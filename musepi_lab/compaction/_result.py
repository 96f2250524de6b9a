"""`CompactionResult`: what a strategy produced, and how it becomes a compaction entry.

The entry follows spec §1.4 (pi: `summary`, `firstKeptEntryId`, `tokensBefore`, `details`,
`fromHook`) and §1.11 (MusePi adds `shortSummary`, `tokensAfter`, `method`,
`preserveData`, and renames `fromHook` to `fromExtension`). As `JSON.stringify` does,
fields whose value is undefined (None here) are left out.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Container, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._repr import html_of, text_of
from ..formats._records import stable_id
from ..session._model import Entry
from ..session._profiles import check_profile
from ..session._session import Session, iso_timestamp

if TYPE_CHECKING:
    from ._prepare import CompactionPreparation

_ID_ATTEMPTS = 100


def new_entry_id(taken: Container[str]) -> str:
    """A fresh entry id as pi draws them: 8 hex chars of a random UUID, re-drawn up to 100
    times on collision, then the full UUID (spec §1.3)."""
    for _ in range(_ID_ATTEMPTS):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def derived_entry_id(session: Session, salt: str) -> str:
    """A deterministic 8-hex id for an entry the workbench appends (a replayed or
    benchmarked compaction): derived from the session id and `salt`, re-hashed until it
    is free in `session`, so repeated runs give identical sessions."""
    entry_id = stable_id(session.id, salt)
    while entry_id in session:
        entry_id = stable_id(entry_id)
    return entry_id


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if value is None or isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, repr=False)
class CompactionResult:
    """The outcome of one compaction: the summary and where the kept region starts.

    Attributes:
        summary: The summary text stored in the entry (with its file block, if any).
        first_kept_entry_id: Id of the first entry kept verbatim.
        tokens_before: Context size before the compaction.
        details: Entry `details` (normally `{readFiles, modifiedFiles}`), or None.
        method: MusePi method (`remote`, `snapcompact`, `handoff`, `shake`, `soft`,
            `window`, ...), or None.
        short_summary: MusePi's one-line display summary, or None.
        tokens_after: Context size after the compaction, if measured (`compact()` measures
            it by rebuilding the context and counting it with the run's counter).
        context_tokens_before: The context size before, measured the same way as
            `tokens_after` (set by `compact()`; not written into the entry, whose
            `tokensBefore` follows the profile's rule).
        preserve_data: MusePi `preserveData` (snapcompact archive, provider replay), or None.
        from_extension: True when produced by an extension (pi `fromHook`).
        summarizer_input_tokens: Input tokens billed for producing the summary.
        summarizer_output_tokens: Output tokens billed.
        summarizer_cached_input_tokens: Of the input tokens, those that repeat the live
            context's prefix, so a provider's prompt cache serves them (a handoff replays
            the context; 0 for summaries of a serialized transcript).
        latency_s: Wall time spent producing the summary.
        strategy: Name of the strategy that produced the result.
        params: The strategy's parameters.
        leaf_id: Id of the entry the compaction is appended under (the leaf of the path
            the preparation came from); None means the session leaf.
        profile: Entry layout to write: `"musepi"` or `"pi"`.
        replacements: Entries the strategy rewrites in place (observation masking,
            pruning): entry id → the full new record (same id). None: none.
        append_entry: Whether `apply` appends a compaction entry. False for strategies
            that only rewrite entries (masking, pruning, `none`).
        new_session: For a handoff: the session the agent continues in (its header names
            the parent session, its first entry is the handoff `custom_message`). `apply`
            returns it; no compaction entry is written (the seed).
    """

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Mapping[str, Any] | None = None
    method: str | None = None
    short_summary: str | None = None
    tokens_after: int | None = None
    context_tokens_before: int | None = None
    preserve_data: Mapping[str, Any] | None = None
    from_extension: bool = False
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summarizer_cached_input_tokens: int = 0
    latency_s: float = 0.0
    strategy: str | None = None
    params: Mapping[str, Any] | None = None
    leaf_id: str | None = None
    profile: str = "musepi"
    replacements: Mapping[str, Mapping[str, Any]] | None = None
    append_entry: bool = True
    new_session: Session | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.summary, str):
            raise TypeError(f"summary must be a str, not {type(self.summary).__name__}")
        if not isinstance(self.first_kept_entry_id, str) or not self.first_kept_entry_id:
            raise ValueError("first_kept_entry_id must be a non-empty entry id")
        check_profile(self.profile)
        for name in ("details", "preserve_data", "params"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise TypeError(f"{name} must be a mapping or None")
            object.__setattr__(self, name, _frozen(value))
        if self.replacements is not None:
            object.__setattr__(self, "replacements", _frozen_replacements(self.replacements))

    @classmethod
    def from_preparation(
        cls, preparation: CompactionPreparation, summary: str, **fields: Any
    ) -> CompactionResult:
        """A result for a preparation: its first kept entry, tokens before, leaf and
        profile are filled in; `fields` sets the rest (or overrides)."""
        values: dict[str, Any] = {
            "first_kept_entry_id": preparation.first_kept_entry_id,
            "tokens_before": preparation.tokens_before,
            "leaf_id": preparation.leaf_id,
            "profile": preparation.profile,
        }
        values.update(fields)
        return cls(summary=summary, **values)

    def __repr__(self) -> str:
        return text_of(self) or f"CompactionResult(method={self.method!r})"

    def _repr_html_(self) -> str | None:
        return html_of(self)

    def copy_with(self, **changes: Any) -> CompactionResult:
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **changes)

    def to_entry_record(
        self, parent_id: str | None, *, entry_id: str, timestamp: str
    ) -> dict[str, Any]:
        """The compaction entry record (a plain dict, JSON-ready), by `profile`.

        Args:
            parent_id: Id of the parent entry (the leaf), None for a root.
            entry_id: Id of the new entry.
            timestamp: ISO timestamp of the new entry.
        """
        record: dict[str, Any] = {
            "type": "compaction",
            "id": entry_id,
            "parentId": parent_id,
            "timestamp": timestamp,
            "summary": self.summary,
        }
        if self.profile == "pi":
            record["firstKeptEntryId"] = self.first_kept_entry_id
            record["tokensBefore"] = self.tokens_before
            if self.details is not None:
                record["details"] = _plain(self.details)
            # pi's agent session always passes a boolean here, so it is always written.
            record["fromHook"] = bool(self.from_extension)
            return record
        if self.short_summary is not None:
            record["shortSummary"] = self.short_summary
        record["firstKeptEntryId"] = self.first_kept_entry_id
        record["tokensBefore"] = self.tokens_before
        if self.tokens_after is not None:
            record["tokensAfter"] = self.tokens_after
        if self.details is not None:
            record["details"] = _plain(self.details)
        if self.method is not None:
            record["method"] = self.method
        if self.preserve_data is not None:
            record["preserveData"] = _plain(self.preserve_data)
        if self.from_extension:
            record["fromExtension"] = True
        return record

    def apply(
        self,
        session: Session,
        *,
        timestamp: str | None = None,
        entry_id: str | None = None,
    ) -> Session:
        """A new session with this compaction applied; `session` is not changed.

        A handoff result returns its `new_session` instead (the parent is not changed).

        Entries named in `replacements` are substituted first (same id, same position,
        new record). Then, when `append_entry`, the compaction entry becomes a child of
        `leaf_id` (default: the session leaf) and, being last in file order, the new
        session leaf.

        Args:
            session: The session the preparation was made from.
            timestamp: ISO timestamp of the entry (default: now).
            entry_id: Id of the entry (default: a fresh unique 8-hex id).

        Raises:
            ValueError: The session is empty, `leaf_id` is not in it, the first kept entry
                is not on the path to the leaf, `entry_id` is already taken, or a
                replacement names an entry the session does not hold.
        """
        if self.new_session is not None:
            return self.new_session  # a handoff: the agent continues in a new session
        parent = self.leaf_id if self.leaf_id is not None else session.leaf_id
        if parent is None:
            raise ValueError("cannot append a compaction to an empty session")
        if parent not in session:
            raise ValueError(f"leaf {parent!r} is not an entry of the session")
        path_ids = {e.id for e in session.path(parent)}
        if self.first_kept_entry_id not in path_ids:
            raise ValueError(
                f"first kept entry {self.first_kept_entry_id!r} is not on the path to {parent!r}"
            )
        if self.replacements:
            session = _substitute(session, self.replacements)
        if not self.append_entry:
            return session
        if entry_id is None:
            entry_id = new_entry_id(session.by_id)
        elif entry_id in session:
            raise ValueError(f"entry id {entry_id!r} is already used in the session")
        record = self.to_entry_record(
            parent, entry_id=entry_id, timestamp=timestamp or iso_timestamp()
        )
        return session.append(Entry.from_record(record))


def _frozen_replacements(
    replacements: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Mapping[str, Any]]:
    if not isinstance(replacements, Mapping):
        raise TypeError("replacements must be a mapping of entry id to record, or None")
    frozen: dict[str, Mapping[str, Any]] = {}
    for entry_id, record in replacements.items():
        if not isinstance(record, Mapping):
            raise TypeError(f"replacement for {entry_id!r} must be a record mapping")
        if record.get("id") != entry_id:
            raise ValueError(f"replacement for {entry_id!r} carries id {record.get('id')!r}")
        frozen[entry_id] = _frozen(record)  # type: ignore[assignment]
    return MappingProxyType(frozen)


def _substitute(session: Session, replacements: Mapping[str, Mapping[str, Any]]) -> Session:
    missing = [entry_id for entry_id in replacements if entry_id not in session]
    if missing:
        raise ValueError(f"replacements name entries not in the session: {missing}")
    # Only the entry the id resolves to (the last one, for a duplicated id) is replaced.
    targets = {id(session.get(entry_id)): entry_id for entry_id in replacements}
    entries = tuple(
        Entry.from_record(replacements[targets[id(e)]], line=e.line, source_id=e.source_id)
        if id(e) in targets
        else e
        for e in session.entries
    )
    return session.copy_with(entries=entries)


def _plain(value: Any) -> Any:
    """A deep plain copy (dicts and lists) of read-only mappings, for JSON writing."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value

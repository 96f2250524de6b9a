"""`prepare_compaction`: split a session path into what to summarize and what to keep.

pi (spec §4.3): the region after the latest compaction is cut by `find_cut_point`; the
part before the cut is summarized (with the previous summary), a split turn's prefix is
summarized separately.

MusePi (spec §4.4–4.5): one *effective sequence* of message-bearing entries is built —
what follows the previous (readable) compaction, minus compaction records and pure
metadata, never crossing a `/clear` reset boundary — and estimation, the adaptive keep
budget, the cut and the partition all run on it. Where the sequence starts is
`CompactionSettings.boundary`: `"seed"` (default) right after the previous compaction
record, as the seed says (`boundaryStart = prevCompactionIndex + 1`); `"release"` at the
previous compaction's `firstKeptEntryId`, re-opening the region it kept (oh-my-pi 18.2.3,
§4.5). A preparation with nothing to summarize is a no-op (None).

Token counts come from a `TokenCounter`, which caches them per entry: pass the same
counter to repeated calls (a sweep over keep budgets counts each entry once).
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from .._repr import html_of, text_of
from ..session._messages import entry_to_message
from ..session._model import Entry, Message
from ..session._profiles import check_profile
from ..session._session import Session, session_memo_get, session_memo_put
from ..tokens._counter import TokenCounter
from ._cut import CutWindow, cut_window
from ._file_ops import FileOpsPrefix, seed_file_ops
from ._settings import CompactionSettings
from ._threshold import (
    ContextEstimate,
    adapt_keep_recent_tokens,
    calculate_context_tokens,
    calculate_prompt_tokens,
    estimate_from_counts,
    message_usage,
)

if TYPE_CHECKING:
    from ._file_ops import FileOperations


_REMOTE_PRESERVE_KEY = "openaiRemoteCompaction"


@dataclass(frozen=True, slots=True, repr=False)
class CompactionPreparation:
    """Everything a compaction strategy needs, computed without any LLM call.

    Indices are positions in `path` (the root→leaf entries the preparation was made
    from). Each `*_entry_ids` tuple names, in order, the entries whose messages make up
    the matching message tuple.

    Attributes:
        first_kept_entry_id: Id of the first entry kept verbatim (`firstKeptEntryId`).
        messages_to_summarize: Runtime messages before the kept region (and before the
            split turn's start), to be summarized.
        turn_prefix_messages: The start of a split turn, summarized separately; empty
            when the turn is not split.
        recent_messages: Runtime messages of the kept region.
        is_split_turn: Whether the cut falls inside a turn.
        tokens_before: pi: the usage-plus-trailing estimate of the context from the
            previous compaction on (§4.3 step 3); MusePi: the context size of the last
            valid usage on the path, 0 without one (§4.4).
        previous_summary: Summary of the previous compaction used, if any.
        previous_preserve_data: `preserveData` of that compaction, if any.
        file_ops: File operations of the summarized messages and turn prefix, seeded from
            the previous compaction's details (unless it came from an extension).
        settings: The settings used.
        profile: `"musepi"` or `"pi"`.
        keep_recent_tokens: The keep budget the cut used (MusePi: after adaptation).
        usage_ratio: MusePi's `prompt tokens / estimated tokens` (None when no usage or
            for pi); the keep budget was divided by it when above 1.
        custom_instructions: Focus instructions for the summarizer, if any.
        summarize_entry_ids: Entries of `messages_to_summarize`.
        turn_prefix_entry_ids: Entries of `turn_prefix_messages`.
        kept_entry_ids: Entries of `recent_messages`.
        cut_index: Path index of the first kept entry.
        boundary_start: Path index where the region considered starts. pi: after the
            previous compaction. MusePi: the first message of the effective sequence (seed
            boundary: the first after the previous compaction; release boundary: from its
            first kept entry on).
        turn_start_index: Path index of the split turn's start, or -1.
        previous_compaction_index: Path index of the previous compaction used, or -1.
        reset_boundary_index: Path index of the `/clear` boundary honoured (MusePi), or -1.
        context_estimate: Usage-plus-estimate of the region considered, with its parts
            (its `last_usage_index` is a path index). For pi it is `tokens_before`.
        leaf_id: Id of the path's last entry: the parent of the compaction entry.
        path: The root→leaf entries.
    """

    first_kept_entry_id: str
    messages_to_summarize: tuple[Message, ...]
    turn_prefix_messages: tuple[Message, ...]
    recent_messages: tuple[Message, ...]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    previous_preserve_data: Mapping[str, Any] | None
    file_ops: FileOperations
    settings: CompactionSettings
    profile: str
    keep_recent_tokens: int
    usage_ratio: float | None
    custom_instructions: str | None
    summarize_entry_ids: tuple[str, ...]
    turn_prefix_entry_ids: tuple[str, ...]
    kept_entry_ids: tuple[str, ...]
    cut_index: int
    boundary_start: int
    turn_start_index: int
    previous_compaction_index: int
    reset_boundary_index: int
    context_estimate: ContextEstimate
    leaf_id: str | None
    path: tuple[Entry, ...] = field(repr=False, compare=False)

    def __repr__(self) -> str:
        return text_of(self) or f"CompactionPreparation(cut_index={self.cut_index})"

    def _repr_html_(self) -> str | None:
        return html_of(self)

    @property
    def has_previous_summary(self) -> bool:
        """Whether a previous summary is carried into this compaction."""
        return bool(self.previous_summary)


# -- inputs -------------------------------------------------------------------------------
def _as_path(
    source: Session | Sequence[Entry | Mapping[str, Any]], leaf_id: str | None
) -> tuple[Entry, ...]:
    if isinstance(source, Session):
        if leaf_id is not None and leaf_id not in source:
            raise KeyError(f"leaf id {leaf_id!r} is not an entry of the session")
        return source.path(leaf_id)
    if isinstance(source, (str, bytes)) or not isinstance(source, Sequence):
        raise TypeError(
            "prepare_compaction takes a Session or a sequence of path entries, "
            f"not {type(source).__name__}"
        )
    entries = [e if isinstance(e, Entry) else Entry.from_record(e) for e in source]
    if leaf_id is None:
        return tuple(entries)
    session = Session({"type": "session"}, entries)
    if leaf_id not in session:
        raise KeyError(f"leaf id {leaf_id!r} is not among the entries")
    return session.path(leaf_id)


def _entry_counts(counter: TokenCounter, entries: Sequence[Entry]) -> list[int]:
    # Batch counting (BPE counters encode every uncached entry in one call) when the
    # counter offers it; either way the results land in the counter's per-entry cache.
    batch = getattr(counter, "count_entries", None)
    if batch is not None:
        return list(batch(entries))
    return [counter.count_entry(e) for e in entries]


class _EntryCounts(Sequence[int]):
    """The token counts of some entries, each counted when first read (a lazy list)."""

    __slots__ = ("_count", "_entries")

    def __init__(self, counter: TokenCounter, entries: Sequence[Entry]) -> None:
        self._count = counter.count_entry
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self._count(e) for e in self._entries[index]]
        return self._count(self._entries[index])


def _summary_text(entry: Entry | None) -> str | None:
    if entry is None:
        return None
    summary = entry.get("summary")
    return summary if isinstance(summary, str) else None


def _preserve_data(entry: Entry | None) -> Mapping[str, Any] | None:
    if entry is None:
        return None
    data = entry.get("preserveData")
    return data if isinstance(data, Mapping) else None


def _index_of(path: Sequence[Entry], entry_id: Any, stop: int) -> int:
    if not isinstance(entry_id, str):
        return -1
    for index in range(stop):
        if path[index].id == entry_id:
            return index
    return -1


def is_remote_compaction(entry: Entry) -> bool:
    """Whether a compaction holds provider-native (OpenAI remote) replay history."""
    data = entry.get("preserveData")
    return isinstance(data, Mapping) and isinstance(data.get(_REMOTE_PRESERVE_KEY), Mapping)


def is_readable_compaction(entry: Entry, settings: CompactionSettings) -> bool:
    """Whether MusePi can build on this compaction (oh-my-pi `remotePreserveReusable`).

    A textual summary always can. A provider-native one only when remote compaction is
    enabled; the live check also needs the active model's provider, which an offline
    session does not record, so it is not made here.
    """
    return not is_remote_compaction(entry) or settings.remote_enabled


# -- plans: everything that does not depend on the keep budget -----------------------------
@dataclass(frozen=True, slots=True)
class _Plan:
    """The budget-independent part of a preparation for one path.

    `entries` is what the cut window indexes: the path itself (pi) or the effective
    sequence (MusePi). `bearing` lists the indices of `entries` that carry a message,
    with `messages` and `ids` parallel to it; `positions` maps `entries` indices to path
    indices (None when they are the same).
    """

    profile: str
    path: tuple[Entry, ...]
    entries: tuple[Entry, ...]
    positions: tuple[int, ...] | None
    window: CutWindow
    bearing: tuple[int, ...]
    messages: tuple[Message, ...]
    ids: tuple[str, ...]
    file_ops: FileOpsPrefix
    estimate: ContextEstimate
    tokens_before: int
    prompt_tokens: int | None
    estimated_tokens: int | None
    previous_index: int
    reset_index: int
    previous: Entry | None

    def path_index(self, index: int) -> int:
        if index < 0 or self.positions is None:
            return index
        return self.positions[index]


def _at_path_index(estimate: ContextEstimate, to_path: Callable[[int], int]) -> ContextEstimate:
    if estimate.last_usage_index < 0:
        return estimate
    return dataclasses.replace(estimate, last_usage_index=to_path(estimate.last_usage_index))


def _pi_plan(path: tuple[Entry, ...], counter: TokenCounter) -> _Plan:
    previous_index = -1
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            previous_index = index
            break
    previous = path[previous_index] if previous_index >= 0 else None
    start, end = previous_index + 1, len(path)
    # tokensBefore counts from the previous compaction itself: its summary is a message.
    estimate_from = max(previous_index, 0)
    region = path[estimate_from:]
    region_messages = [entry_to_message(e) for e in region]
    # pi counts only what its walks reach: the messages after the last usage (the
    # estimate) and, in the window, those inside the keep budget. So does this plan.
    estimate = _at_path_index(
        estimate_from_counts(region_messages, _EntryCounts(counter, region), profile="pi"),
        lambda i: i + estimate_from,
    )
    window = cut_window(path, start, end, counter=counter, profile="pi")
    bearing = tuple(i for i in range(start, end) if region_messages[i - estimate_from] is not None)
    messages = tuple(region_messages[i - estimate_from] for i in bearing)
    return _Plan(
        profile="pi",
        path=path,
        entries=path,
        positions=None,
        window=window,
        bearing=bearing,
        messages=messages,  # type: ignore[arg-type]
        ids=tuple(str(path[i].id) for i in bearing),
        file_ops=FileOpsPrefix.build(seed_file_ops(previous, "pi"), messages, "pi"),  # type: ignore[arg-type]
        estimate=estimate,
        tokens_before=estimate.tokens,
        prompt_tokens=None,
        estimated_tokens=None,  # pi does not adapt the keep budget
        previous_index=previous_index,
        reset_index=-1,
        previous=previous,
    )


def _musepi_region(path: tuple[Entry, ...], settings: CompactionSettings) -> tuple[int, int, int]:
    """`(previous_index, reset_index, region_start)` of the effective sequence (§4.4–4.5).

    The start is after the previous compaction (seed boundary), or (release boundary) at
    its kept region; either way never before the latest `/clear` boundary.
    """
    previous_index = -1
    latest_reset = -1
    for index in range(len(path) - 1, -1, -1):
        kind = path[index].type
        if kind == "reset_boundary" and latest_reset < 0:
            latest_reset = index
        elif kind == "compaction" and previous_index < 0:
            if is_readable_compaction(path[index], settings):
                previous_index = index
        if previous_index >= 0 and latest_reset >= 0:
            break
    if latest_reset > previous_index:
        # `/clear` after the summary cleared the summary too: start fresh after it.
        return -1, latest_reset, latest_reset + 1
    lower = latest_reset + 1  # an older boundary still bounds the re-expansion
    if previous_index < 0:
        return -1, latest_reset, lower
    previous = path[previous_index]
    if settings.boundary == "seed":
        return previous_index, latest_reset, previous_index + 1
    if is_remote_compaction(previous):
        # Replayable provider history holds the kept turns; start after its snapshot.
        through = _index_of(path, previous.get("providerReplayThroughEntryId"), previous_index)
        start = through + 1 if through >= 0 else previous_index + 1
    else:
        kept = _index_of(path, previous.get("firstKeptEntryId"), previous_index)
        start = kept if kept >= 0 else previous_index + 1
    return previous_index, latest_reset, max(start, lower)


def _musepi_plan(
    path: tuple[Entry, ...], settings: CompactionSettings, counter: TokenCounter
) -> _Plan | None:
    previous_index, reset_index, region_start = _musepi_region(path, settings)
    previous = path[previous_index] if previous_index >= 0 else None
    positions: list[int] = []
    sequence: list[Entry] = []
    messages: list[Message] = []
    for index in range(region_start, len(path)):
        entry = path[index]
        if entry.type == "compaction":
            continue
        message = entry_to_message(entry, include_compaction=False)
        if message is None:
            continue  # metadata: model/thinking changes, labels, custom state...
        positions.append(index)
        sequence.append(entry)
        messages.append(message)
    if not sequence:
        return None
    counts = _entry_counts(counter, sequence)
    # The release's getLastAssistantUsage takes the newest valid usage even when it is all
    # zero (converted sessions): tokensBefore is then 0 and the keep budget is not adapted.
    usage_index = -1
    for index in range(len(path) - 1, -1, -1):
        entry = path[index]
        if (
            entry.type == "message"
            and message_usage(entry.message, profile="musepi", skip_all_zero=False) is not None
        ):
            usage_index = index
            break
    tokens_before = 0
    prompt_tokens: int | None = None
    if usage_index >= 0:
        usage = path[usage_index].message["usage"]  # type: ignore[index]
        tokens_before = calculate_context_tokens(usage, profile="musepi")
        prompt_tokens = calculate_prompt_tokens(usage)
    return _Plan(
        profile="musepi",
        path=path,
        entries=tuple(sequence),
        positions=tuple(positions),
        window=cut_window(
            sequence, 0, len(sequence), counter=counter, profile="musepi", counts=counts
        ),
        bearing=tuple(range(len(sequence))),
        messages=tuple(messages),
        ids=tuple(str(e.id) for e in sequence),
        file_ops=FileOpsPrefix.build(seed_file_ops(previous, "musepi"), messages, "musepi"),
        estimate=_at_path_index(
            estimate_from_counts(messages, counts, profile="musepi"), positions.__getitem__
        ),
        tokens_before=tokens_before,
        prompt_tokens=prompt_tokens,
        # The release boundary puts the retained region in the estimate (§4.5), so
        # re-expanded history does not inflate the usage ratio.
        estimated_tokens=sum(counts),
        previous_index=previous_index,
        reset_index=reset_index,
        previous=previous,
    )


def _prepare_from_plan(
    plan: _Plan,
    settings: CompactionSettings,
    custom_instructions: str | None,
) -> CompactionPreparation | None:
    keep = settings.keep_recent_tokens
    ratio: float | None = None
    if plan.prompt_tokens is not None and plan.estimated_tokens is not None:
        estimated = plan.estimated_tokens
        ratio = plan.prompt_tokens / estimated if estimated > 0 else 0.0
        keep = adapt_keep_recent_tokens(keep, plan.prompt_tokens, estimated)
    cut = plan.window.cut(keep)
    first = cut.first_kept_entry_index
    first_entry = plan.entries[first] if first < len(plan.entries) else None
    if first_entry is None or first_entry.id is None:
        return None  # unmigrated session (pi), or nothing to cut
    history_end = cut.turn_start_index if cut.is_split_turn else first
    bearing = plan.bearing
    h = bisect_left(bearing, history_end)
    c = bisect_left(bearing, first)
    t = bisect_left(bearing, cut.turn_start_index) if cut.is_split_turn else c
    messages, ids = plan.messages, plan.ids
    summarize, prefix = messages[:h], messages[t:c]
    if plan.profile == "musepi" and not summarize and not prefix:
        return None  # nothing to summarize: a no-op
    previous = plan.previous
    return CompactionPreparation(
        first_kept_entry_id=str(first_entry.id),
        messages_to_summarize=summarize,
        turn_prefix_messages=prefix,
        recent_messages=messages[c:],
        is_split_turn=cut.is_split_turn,
        tokens_before=plan.tokens_before,
        previous_summary=_summary_text(previous),
        previous_preserve_data=_preserve_data(previous),
        file_ops=plan.file_ops.upto(c),
        settings=settings,
        profile=plan.profile,
        keep_recent_tokens=keep,
        usage_ratio=ratio,
        custom_instructions=custom_instructions,
        summarize_entry_ids=ids[:h],
        turn_prefix_entry_ids=ids[t:c],
        kept_entry_ids=ids[c:],
        cut_index=plan.path_index(first),
        boundary_start=plan.path_index(plan.window.start)
        if plan.positions is None
        else plan.positions[0],
        turn_start_index=plan.path_index(cut.turn_start_index),
        previous_compaction_index=plan.previous_index,
        reset_boundary_index=plan.reset_index,
        context_estimate=plan.estimate,
        leaf_id=plan.path[-1].id,
        path=plan.path,
    )


# Plans are cached per counter (the object callers already reuse to share token counts).
# A Session is keyed by its identity and the leaf, a bare path by the identities of its
# entries; each cached value holds the session or path, so an id in a key cannot be
# reused by another object while the key is in the cache. Sessions and entries are
# immutable, so a cached plan never goes stale.
_PLAN_CACHE_SIZE = 8
_plan_caches: weakref.WeakKeyDictionary[
    Any, OrderedDict[tuple[Any, ...], tuple[Any, tuple[Entry, ...], _Plan | None]]
] = weakref.WeakKeyDictionary()
_plan_lock = threading.Lock()


def _build_plan(
    path: tuple[Entry, ...], settings: CompactionSettings, counter: TokenCounter, profile: str
) -> _Plan | None:
    if not path or path[-1].type == "compaction":
        return None  # "Already compacted"
    if profile == "pi":
        return _pi_plan(path, counter)
    return _musepi_plan(path, settings, counter)


def _plan_for(
    source: Session | Sequence[Entry | Mapping[str, Any]],
    leaf_id: str | None,
    settings: CompactionSettings,
    counter: TokenCounter,
    profile: str,
) -> _Plan | None:
    variant = (
        profile,
        profile == "musepi" and settings.remote_enabled,
        profile == "musepi" and settings.boundary,
    )
    if isinstance(source, Session) and type(counter) is TokenCounter:
        # A plain counter's counts live on the entries, so any counter of the method gives
        # the same plan: it is kept with the session, for every later preparation.
        memo_key = ("plan", *variant, counter.method, leaf_id)
        kept = session_memo_get(source, memo_key)
        if kept is None:
            kept = (_build_plan(_as_path(source, leaf_id), settings, counter, profile),)
            session_memo_put(source, memo_key, kept)
        plan: _Plan | None = kept[0]
        return plan
    try:
        with _plan_lock:
            cache = _plan_caches.setdefault(counter, OrderedDict())
    except TypeError:  # a counter that cannot be weakly referenced: no plan reuse
        return _build_plan(_as_path(source, leaf_id), settings, counter, profile)
    path: tuple[Entry, ...] | None = None
    if isinstance(source, Session):
        key: tuple[Any, ...] = (*variant, "session", id(source), leaf_id)
    else:
        path = _as_path(source, leaf_id)
        key = (*variant, "path", *map(id, path))
    with _plan_lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit[2]
    if path is None:
        path = _as_path(source, leaf_id)
    plan = _build_plan(path, settings, counter, profile)
    with _plan_lock:
        cache[key] = (source, path, plan)
        while len(cache) > _PLAN_CACHE_SIZE:
            cache.popitem(last=False)
    return plan


def prepare_compaction(
    path_or_session: Session | Sequence[Entry | Mapping[str, Any]],
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    *,
    profile: str | None = None,
    leaf_id: str | None = None,
    custom_instructions: str | None = None,
) -> CompactionPreparation | None:
    """Decide what a compaction at the leaf would summarize and keep (spec §4.3–4.5).

    pi (§4.3): the region after the latest compaction is cut with `find_cut_point`;
    messages before the cut (before the split turn's start) are summarized with the
    previous summary, a split turn's start is summarized separately, file operations are
    seeded from the previous compaction's details. MusePi (§4.4–4.5): the same on the
    effective sequence (what follows the previous compaction, metadata and compaction
    records dropped, `/clear` boundaries honoured), with the keep budget shrunk by the
    usage/estimate ratio; nothing to summarize → None. With `settings.boundary ==
    "release"` the sequence also re-opens the previous compaction's kept region (from its
    `firstKeptEntryId`), as oh-my-pi 18.2.3 does; the default `"seed"` starts after the
    previous compaction record, as the seed says.

    Repeated calls with the same counter on the same session or path (e.g. a sweep over
    `keep_recent_tokens`) reuse the token counts and everything else that does not
    depend on the budget; the counter keeps the plans of its last 8 paths (and so those
    sessions) alive. On a `Session` with a plain `TokenCounter` (whose counts live on the
    entries) the plan is kept with the session instead, so any later call with a counter
    of the same method reuses it.

    Args:
        path_or_session: A `Session` (its path to `leaf_id`, default the session leaf) or
            root→leaf path entries (`Entry` objects, or v3 records).
        settings: Compaction settings (default: the profile's defaults).
        counter: Token counter; reuse one across calls to reuse counts. Default: a new
            counter with the profile's estimator (`pi` or `musepi`).
        profile: `"musepi"` or `"pi"`; default `settings.profile`.
        leaf_id: The leaf to prepare at (default: the session leaf / the last entry).
        custom_instructions: Focus instructions, carried to the strategy.

    Returns:
        The preparation, or None when there is nothing to do: the path is empty or ends
        with a compaction ("already compacted"), the cut entry has no id (unmigrated
        data), or — MusePi — nothing would be summarized.

    Raises:
        KeyError: `leaf_id` names no entry.
        ValueError: Unknown profile.
        TypeError: `path_or_session` is neither a Session nor a sequence of entries.
    """
    if profile is None:
        profile = settings.profile if settings is not None else "musepi"
    check_profile(profile)
    if settings is None:
        settings = CompactionSettings.for_profile(profile)
    counter = counter if counter is not None else TokenCounter(profile)
    plan = _plan_for(path_or_session, leaf_id, settings, counter, profile)
    if plan is None:
        return None
    return _prepare_from_plan(plan, settings, custom_instructions)

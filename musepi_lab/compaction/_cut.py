"""Where to cut: valid cut points, turn starts and `find_cut_point` (spec §4.1–4.2, §4.6).

pi: the walk from the newest entry back accumulates token counts until the keep budget is
reached, then cuts at the nearest valid cut point at or after that entry; only `message`
entries count (a `custom_message` or `branch_summary` is a cut point worth 0 tokens).

MusePi (oh-my-pi 18.2.3 `findCutPoint`): the walk goes back by valid cut points, measuring
whole assistant/tool groups, and keeps the oldest cut point whose suffix still fits the
budget (the newest group is kept even when it alone is over); every context-visible entry
counts. A bash command starts a turn like a user message, the turn is judged before metadata
is pulled into the kept region, and a `custom`-role message is no cut point.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..session._model import Entry
from ..session._profiles import check_profile
from ..tokens._counter import TokenCounter

# Message roles an entry may be cut at; never `toolResult` (it must follow its call).
_CUT_ROLES: dict[str, frozenset[str]] = {
    "pi": frozenset(
        {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
    ),
    # oh-my-pi also accepts the legacy `hookMessage` role (§4.4); a `custom`-role message
    # entry is no cut point in 18.2.3 (`custom_message` entries are).
    "musepi": frozenset(
        {
            "user",
            "assistant",
            "bashExecution",
            "branchSummary",
            "compactionSummary",
            "hookMessage",
        }
    ),
}
_TURN_START_ROLES = frozenset({"user", "bashExecution"})
_USER_ROLE_ENTRY_TYPES = frozenset({"branch_summary", "custom_message"})
_CONTEXT_VISIBLE_TYPES = frozenset({"message", "custom_message", "branch_summary"})


@dataclass(frozen=True, slots=True)
class CutPointResult:
    """Where `find_cut_point` cuts.

    Attributes:
        first_kept_entry_index: Index of the first entry kept verbatim.
        turn_start_index: Index of the entry that starts the turn being split, or -1.
        is_split_turn: True when the cut falls inside a turn (not at a user message).
    """

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def _check_range(entries: Sequence[Entry], start: int, end: int) -> None:
    if not 0 <= start <= end <= len(entries):
        raise IndexError(f"bad range [{start}, {end}) for {len(entries)} entries")


def is_valid_cut_point(entry: Entry, *, profile: str = "musepi") -> bool:
    """Whether an entry may be the first kept entry (§4.1).

    Cut points: `message` entries whose role is user, assistant, bashExecution, custom,
    branchSummary or compactionSummary (MusePi also the legacy hookMessage), and every
    `branch_summary` and `custom_message` entry. Never a tool result, a metadata entry
    or a compaction.
    """
    kind = entry.type
    if kind == "message":
        return entry.role in _CUT_ROLES[profile]
    return kind in _USER_ROLE_ENTRY_TYPES


def find_valid_cut_points(
    entries: Sequence[Entry], start: int, end: int, *, profile: str = "musepi"
) -> list[int]:
    """Indices in `[start, end)` of the entries `is_valid_cut_point` accepts (§4.1)."""
    check_profile(profile)
    _check_range(entries, start, end)
    roles = _CUT_ROLES[profile]
    out: list[int] = []
    for index in range(start, end):
        entry = entries[index]
        kind = entry.type
        if (kind == "message" and entry.role in roles) or kind in _USER_ROLE_ENTRY_TYPES:
            out.append(index)
    return out


def find_turn_start_index(entries: Sequence[Entry], index: int, start: int) -> int:
    """The entry starting the turn that contains `index`, scanning down to `start` (§4.1).

    A turn starts at a `branch_summary`, a `custom_message`, or a `message` whose role is
    user or bashExecution. Returns -1 if there is none in `[start, index]`.
    """
    for i in range(index, start - 1, -1):
        entry = entries[i]
        if entry.type in _USER_ROLE_ENTRY_TYPES:
            return i
        if entry.type == "message" and entry.role in _TURN_START_ROLES:
            return i
    return -1


# What the backward walk counts: pi `message` entries alone, MusePi every context-visible one.
_MESSAGE_ONLY = frozenset({"message"})


@dataclass(frozen=True, slots=True)
class CutWindow:
    """The tables `find_cut_point` needs for one window `[start, end)` of entries.

    Built once per window (valid cut points, the entries the walk counts), it answers
    `cut(keep_recent_tokens)` for any budget in O(log n) plus the pull-back and turn-start
    scans, which is what makes a sweep over budgets cheap. Token counts are taken as the
    backward walk needs them, newest first, and their running sums kept: like pi's own
    walk, a cut counts only the entries inside its budget (and the next one), and a larger
    budget later extends the sums. Indices are absolute (into the entries the window was
    built from).

    Attributes:
        profile: `"musepi"` or `"pi"`: which cut rule `cut` applies.
        start: First index of the window.
        end: One past the last index.
        kinds: Entry type of every entry `[0, end)` (only `[start, end)` is filled).
        roles: Message role of every entry (None for non-message entries).
        cut_points: Valid cut points, ascending.
        counted: Indices whose tokens the walk counts, ascending.
    """

    profile: str
    start: int
    end: int
    kinds: tuple[str | None, ...]
    roles: tuple[str | None, ...]
    cut_points: tuple[int, ...]
    counted: tuple[int, ...]
    # Token count of the entry at an index; and the running sums from the newest counted
    # entry back (`_walked[j]`: tokens of counted[-1 - j:]), extended under the lock.
    _count: Callable[[int], int] = field(repr=False, compare=False)
    _walked: list[int] = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _newest_reaching(self, keep_recent_tokens: int) -> int:
        """Position in `counted` of the newest entry at which the backward walk's running
        sum reaches the budget, or -1 if the whole window stays under it."""
        walked, counted = self._walked, self.counted
        n = len(counted)
        if (not walked or walked[-1] < keep_recent_tokens) and len(walked) < n:
            with self._lock:
                count = self._count
                while (not walked or walked[-1] < keep_recent_tokens) and len(walked) < n:
                    total = walked[-1] if walked else 0
                    walked.append(total + count(counted[n - 1 - len(walked)]))
        j = bisect_left(walked, keep_recent_tokens)
        return len(counted) - 1 - j if j < len(walked) else -1

    def cut(self, keep_recent_tokens: int) -> CutPointResult:
        """The cut for a keep budget (see `find_cut_point`)."""
        if self.profile == "musepi":
            return self._musepi_cut(keep_recent_tokens)
        start, cut_points = self.start, self.cut_points
        if not cut_points:
            return CutPointResult(start, -1, False)
        cut = cut_points[0]
        reaching = self._newest_reaching(keep_recent_tokens)
        if reaching >= 0:
            crossing = self.counted[reaching]
            # When the entry that crosses the budget lies after the last cut point (a
            # trailing tool result), pi finds no cut point at or after it and keeps its
            # default, the first cut point: everything is kept. Reproduced as is.
            pos = bisect_left(cut_points, crossing)
            if pos < len(cut_points):
                cut = cut_points[pos]
        kinds, roles = self.kinds, self.roles
        while cut > start and kinds[cut - 1] not in ("message", "compaction"):
            cut -= 1
        if kinds[cut] == "message" and roles[cut] == "user":
            return CutPointResult(cut, -1, False)
        turn_start = -1
        for i in range(cut, start - 1, -1):
            kind = kinds[i]
            if kind in _USER_ROLE_ENTRY_TYPES or (
                kind == "message" and roles[i] in _TURN_START_ROLES
            ):
                turn_start = i
                break
        return CutPointResult(cut, turn_start, turn_start != -1)

    def _musepi_cut(self, keep_recent_tokens: int) -> CutPointResult:
        start, cut_points = self.start, self.cut_points
        if not cut_points:
            return CutPointResult(start, -1, False)
        # The oldest cut point whose suffix fits the budget. The walk back stops at the
        # newest entry where the running sum goes over it: every cut point after that
        # entry fits, none at or before it does. None goes over: the first cut point;
        # no cut point after it: the newest (kept even though it alone is over).
        over = self._newest_reaching(keep_recent_tokens + 1)
        if over < 0:
            cut = cut_points[0]
        else:
            pos = bisect_right(cut_points, self.counted[over])
            cut = cut_points[min(pos, len(cut_points) - 1)]
        kinds, roles = self.kinds, self.roles
        turn_start = -1
        is_turn_start = _is_turn_start(kinds[cut], roles[cut])
        if not is_turn_start:
            for i in range(cut, start - 1, -1):
                if _is_turn_start(kinds[i], roles[i]):
                    turn_start = i
                    break
        # Metadata right before the cut joins the kept region; a message-bearing entry, a
        # compaction or a reset boundary stops it.
        while cut > start and kinds[cut - 1] not in _PULL_BACK_STOPS:
            cut -= 1
        return CutPointResult(cut, turn_start, not is_turn_start and turn_start != -1)


_PULL_BACK_STOPS = frozenset(
    {"message", "custom_message", "branch_summary", "compaction", "reset_boundary"}
)


def _is_turn_start(kind: str | None, role: str | None) -> bool:
    """oh-my-pi `isTurnStartEntry`: a user or bash message, a branch summary, a custom message."""
    return kind in _USER_ROLE_ENTRY_TYPES or (kind == "message" and role in _TURN_START_ROLES)


def cut_window(
    entries: Sequence[Entry],
    start: int,
    end: int,
    *,
    counter: TokenCounter | None = None,
    profile: str = "musepi",
    counts: Sequence[int] | None = None,
) -> CutWindow:
    """Precompute the cut tables of `entries[start:end]` (see `CutWindow`).

    Args:
        entries: Path entries or any entry sequence.
        start: First index considered.
        end: One past the last index considered.
        counter: Token counter (default: the profile's estimator); entries are counted
            as the cuts need them.
        profile: `"musepi"` or `"pi"`.
        counts: Token counts of `entries[start:end]` if already known (else the counter's).
    """
    check_profile(profile)
    _check_range(entries, start, end)
    if counts is not None and len(counts) != end - start:
        raise ValueError("counts must hold one count per entry of the window")
    roles_allowed = _CUT_ROLES[profile]
    kinds: list[str | None] = [None] * end
    roles: list[str | None] = [None] * end
    cut_points: list[int] = []
    counted: list[int] = []
    walk_counts = _CONTEXT_VISIBLE_TYPES if profile == "musepi" else _MESSAGE_ONLY
    for index in range(start, end):
        entry = entries[index]
        kind = entry.type
        if kind == "message":
            role = entry.role
            roles[index] = role
            if role in roles_allowed:
                cut_points.append(index)
        elif kind in _USER_ROLE_ENTRY_TYPES:
            cut_points.append(index)
        kinds[index] = kind
        if kind in walk_counts:
            counted.append(index)
    if counts is not None:
        known = counts

        def count(index: int) -> int:
            return known[index - start]
    else:
        count_entry = (counter if counter is not None else TokenCounter(profile)).count_entry

        def count(index: int) -> int:
            return count_entry(entries[index])

    return CutWindow(
        profile=profile,
        start=start,
        end=end,
        kinds=tuple(kinds),
        roles=tuple(roles),
        cut_points=tuple(cut_points),
        counted=tuple(counted),
        _count=count,
    )


def find_cut_point(
    entries: Sequence[Entry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    *,
    counter: TokenCounter | None = None,
    profile: str = "musepi",
) -> CutPointResult:
    """Find the first entry to keep so that about `keep_recent_tokens` stay verbatim (§4.2).

    1. No valid cut point in `[start, end)` → cut at `start`, no split.
    2. pi: walk from `end − 1` down to `start` adding token counts of `message` entries.
       When the sum reaches the budget, cut at the first valid cut point at or after that
       entry; if it never does, cut at the first valid cut point. MusePi (oh-my-pi
       18.2.3): the oldest valid cut point whose suffix (every context-visible entry from
       it to `end`) is at most the budget; the newest cut point when none is, and the
       turn is judged (step 4) before step 3.
    3. Pull the metadata right before the cut into the kept region: step back while the
       previous entry is neither a `message` nor a `compaction` (and stay ≥ `start`).
    4. Split turn, judged on the entry after step 3: a user message is a turn start (no
       split); otherwise the turn start is searched back to `start` and the cut splits
       a turn if one is found. As in pi, a cut at bashExecution, custom_message or
       branch_summary reports a split with `turn_start_index == cut` (an empty prefix),
       and metadata pulled in front of a user message makes the previous turn the prefix.

    For many budgets over the same window, build a `cut_window` once and call its `cut`.

    Args:
        entries: Path entries (root first) or any entry sequence.
        start: First index considered.
        end: One past the last index considered.
        keep_recent_tokens: Budget of recent tokens to keep.
        counter: Token counter (default: the profile's estimator); counts are cached per
            entry, so reuse one counter across calls.
        profile: `"musepi"` or `"pi"`.
    """
    window = cut_window(entries, start, end, counter=counter, profile=profile)
    return window.cut(keep_recent_tokens)

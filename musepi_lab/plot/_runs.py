"""Runs and labels: how a chain of nodes shrinks to a column budget, and which labels fit.

Pure functions on plain sequences (no session, no matplotlib), used by the tree layout
and the tree plot. Ordinary nodes collapse into runs first, the shortest runs last; user
messages collapse only when that is not enough; compactions, branch summaries, forks,
labels and pinned entries only when nothing else is left.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence


# -- runs ----------------------------------------------------------------------------
def _spans_at(priority: Sequence[int], level: int, min_run: int) -> list[tuple[int, int]]:
    """Spans when nodes of `priority >= level` stay alone and runs of at least `min_run`
    others collapse."""
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(priority)
    for i in range(n + 1):
        if i < n and priority[i] < level:
            continue
        if i - start >= min_run:
            spans.append((start, i))
        else:
            spans.extend((k, k + 1) for k in range(start, i))
        if i < n:
            spans.append((i, i + 1))
        start = i + 1
    return spans


def _chunked(priority: Sequence[int], level: int, budget: int) -> list[tuple[int, int]] | None:
    """Spans when nodes of `priority >= level` stay alone and the stretches between them
    are cut into equal runs, as short as the budget allows (None: it cannot fit)."""
    n = len(priority)
    keep = [i for i in range(n) if priority[i] >= level]
    bounds = [-1, *keep, n]
    segments = [(a + 1, b) for a, b in itertools.pairwise(bounds) if b > a + 1]
    room = budget - len(keep)
    if room < len(segments):
        return None
    # The shortest run length whose chunks fit: columns only fall as the length grows.
    low, high = 1, max((b - a for a, b in segments), default=1)
    while low < high:
        mid = (low + high) // 2
        if sum(-(-(b - a) // mid) for a, b in segments) <= room:
            high = mid
        else:
            low = mid + 1
    pieces = [-(-(b - a) // low) for a, b in segments]
    # Columns left over go to the stretches whose runs are longest, one at a time.
    heap = [(-(b - a) / k, j) for j, ((a, b), k) in enumerate(zip(segments, pieces, strict=True))]
    heapq.heapify(heap)
    for _ in range(room - sum(pieces)):
        if not heap:
            break
        _, j = heapq.heappop(heap)
        a, b = segments[j]
        if pieces[j] < b - a:
            pieces[j] += 1
            heapq.heappush(heap, (-(b - a) / pieces[j], j))
    spans = [(i, i + 1) for i in keep]
    for (a, b), count in zip(segments, pieces, strict=True):
        cuts = [a + (b - a) * k // count for k in range(count + 1)]
        spans.extend(itertools.pairwise(cuts))
    return sorted(spans)


def group_chain(
    priority: Sequence[int], budget: int | None, min_run: int | None = None
) -> list[tuple[int, int]]:
    """Group a linear chain of nodes into at most `budget` columns.

    Args:
        priority: Per node: 2 = keep alone if at all possible (compactions, forks, pins),
            1 = keep alone unless too many (user messages), 0 = ordinary.
        budget: Most columns (None: no limit).
        min_run: Runs of at least this many ordinary nodes always collapse, whole.

    Returns:
        `(start, stop)` spans covering the chain in order; a span longer than one is a run.
        Under the budget, the stretches between kept nodes are cut into runs of equal
        length, as short as fits, so the columns are used rather than wasted.
    """
    n = len(priority)
    first = _spans_at(priority, 1, min_run) if min_run else [(i, i + 1) for i in range(n)]
    if budget is None or len(first) <= budget:
        return first
    budget = max(1, budget)
    for level in (1, 2, 3):  # level 3: nothing stays alone
        spans = _chunked(priority, level, budget)
        if spans is not None:
            return spans
    raise AssertionError("level 3 always fits")  # pragma: no cover


# -- labels --------------------------------------------------------------------------------
Box = tuple[float, float, float, float]
"""A rectangle `(x0, y0, x1, y1)` in display units."""


def _overlaps(a: Box, b: Box, pad: float) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def place_labels(
    candidates: Sequence[Sequence[Box]], *, blocked: Sequence[Box] = (), pad: float = 1.0
) -> list[int | None]:
    """Choose for each label the first of its candidate boxes that overlaps nothing placed.

    Labels are taken in the order given (put the important ones first); a label whose every
    candidate overlaps a placed label or a blocked box is left out (None).

    Args:
        candidates: Per label, its possible boxes in order of preference.
        blocked: Boxes no label may overlap.
        pad: Least gap between two boxes.

    Returns:
        Per label, the index of the chosen candidate, or None.
    """
    placed: list[Box] = list(blocked)
    chosen: list[int | None] = []
    for boxes in candidates:
        pick = next(
            (k for k, box in enumerate(boxes) if not any(_overlaps(box, p, pad) for p in placed)),
            None,
        )
        if pick is not None:
            placed.append(boxes[pick])
        chosen.append(pick)
    return chosen

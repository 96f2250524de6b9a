"""MusePi's progress guard for replayed compactions, and snapcompact's local rescue.

Spec §6.5: after a compaction pass the context should be at or below about 80% of the
threshold; when it is not, MusePi tries a local rescue (a smaller snapcompact archive, then
dropping images) and finally gives up with a warning. A replay keeps a compaction only when
it shrinks the context; one that does not is recorded as a failure and the context stays
as it was. These are the pure parts: the band, the rescue ladder, the image drop, the choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..compaction._result import CompactionResult
from ..context._summaries import SNAPCOMPACT_PRESERVE_KEY
from ..strategies._base import Strategy, get

PROGRESS_BAND = 0.8
"""Share of the threshold a compaction pass should reach (spec §6.5, "~80%")."""

DROP_IMAGES = "drop-images"
"""The label of the last rescue step: the archive without its frame images."""


def progress_band(threshold: int) -> int:
    """The context size a pass should reach: 80% of the threshold."""
    return math.floor(PROGRESS_BAND * threshold)


def frame_count(result: CompactionResult) -> int:
    """Frames of a snapcompact result's archive (0 for any other result)."""
    archive = _archive(result)
    frames = archive.get("frames") if archive is not None else None
    return len(frames) if isinstance(frames, list | tuple) else 0


def rescue_ladder(strategy: Strategy, result: CompactionResult) -> tuple[tuple[str, Strategy], ...]:
    """Smaller re-renders to try when `result` did not reach the band, in order.

    Snapcompact re-renders with half the frames of the previous render, down to one;
    other strategies have no local rescue.

    Returns:
        `(label, strategy)` pairs, e.g. `("max_frames=4", Snapcompact(max_frames=4))`.
    """
    if strategy.name != "snapcompact" or not hasattr(strategy, "max_frames"):
        return ()
    frames = frame_count(result)
    ladder: list[tuple[str, Strategy]] = []
    budget = frames // 2
    while budget >= 1:
        ladder.append((f"max_frames={budget}", get(strategy, max_frames=budget)))
        budget //= 2
    return tuple(ladder)


def without_images(result: CompactionResult) -> CompactionResult | None:
    """`result` with its snapcompact frames dropped, or None when it has none.

    The frames' characters count as truncated, so the rebuilt context says the middle was
    dropped; the archive's full `text` stays, so a later compaction can re-render it.
    """
    archive = _archive(result)
    if archive is None or not frame_count(result):
        return None
    frames = archive["frames"]
    dropped = sum(f.get("chars", 0) for f in frames if isinstance(f.get("chars"), int))
    truncated = archive.get("truncatedChars")
    slim = {
        **archive,
        "frames": [],
        "truncatedChars": (truncated if isinstance(truncated, int) else 0) + dropped,
    }
    preserve = {**(result.preserve_data or {}), SNAPCOMPACT_PRESERVE_KEY: slim}
    params = {**(result.params or {}), "frames": 0, "image_tokens": 0}
    return result.copy_with(preserve_data=preserve, params=params)


def choose(
    tokens_before: int, attempts: Sequence[tuple[str, int]], band: int
) -> tuple[int, str] | None:
    """Which attempt to keep: the first that reaches the band, else the smallest that
    shrinks the context, else None (the compaction failed).

    Args:
        tokens_before: Context tokens before the compaction.
        attempts: `(rescue label, tokens after)` of each attempt, first pass first.
        band: The progress band (`progress_band`).

    Returns:
        `(index, label)` of the attempt to keep, or None.
    """
    for index, (label, after) in enumerate(attempts):
        if after <= band and after < tokens_before:
            return index, label
    shrinking = [
        (after, index) for index, (_, after) in enumerate(attempts) if after < tokens_before
    ]
    if not shrinking:
        return None
    _, index = min(shrinking)
    return index, attempts[index][0]


def _archive(result: CompactionResult) -> dict[str, Any] | None:
    archive = (result.preserve_data or {}).get(SNAPCOMPACT_PRESERVE_KEY)
    return dict(archive) if isinstance(archive, Mapping) else None

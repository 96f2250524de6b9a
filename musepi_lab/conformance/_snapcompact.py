"""Snapcompact next to oh-my-pi's own: `compare_snapcompact` checks our archive, frames and
billing against the reference driver's JSON (`conformance/driver/omp.ts`), field by field.

The archived history is the reference's own preparation (its `messagesToSummarize` and
`turnPrefixMessages`, taken from our reading of the same file by entry index), so these
measures judge snapcompact alone; whether our cut agrees is the cut measures' business.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..session._messages import entry_to_message
from ..session._session import Session
from ..strategies.snapcompact._plan import MAX_FRAMES_DEFAULT, FrameShape
from ..strategies.snapcompact._providers import (
    frame_billing_tokens,
    image_budget,
    image_detail,
    max_frames_for_data_budget,
    provider_frame_budget,
)
from ..strategies.snapcompact._strategy import SnapcompactArchive, build_archive, resolve_shape

MEASURES: tuple[str, ...] = (
    "snapcompact/plan",
    "snapcompact/archive_text",
    "snapcompact/frame_geometry",
    "snapcompact/frame_pixels",
    "snapcompact/billing",
)
"""The measures `compare_snapcompact` reports, in order."""

_COLOR_TYPES = {0: "gray", 2: "rgb", 3: "palette", 4: "gray-alpha", 6: "rgba"}


@dataclass
class _Tally:
    """Agreement of one measure: cases agreed, cases compared, the first difference."""

    agreed: int = 0
    total: int = 0
    first_difference: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, where: str, ours: Any, theirs: Any) -> bool:
        self.total += 1
        if ours == theirs:
            self.agreed += 1
            return True
        if self.first_difference is None:
            self.first_difference = f"{where}: ours {_short(ours)}, reference {_short(theirs)}"
        return False


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reference_max_frames(provider: str | None) -> int:
    """The frame cap the agent's maintenance uses when the context window is unknown."""
    return min(MAX_FRAMES_DEFAULT, max_frames_for_data_budget(), provider_frame_budget(provider))


def archive_for_reference(
    session: Session,
    preparation: Mapping[str, Any],
    target: Mapping[str, Any],
    *,
    include_thinking: bool | None = None,
) -> SnapcompactArchive:
    """Our archive of the history the reference's preparation discards, for one reader.

    Args:
        session: Our reading of the file the reference ran on.
        preparation: The reference's `prepare_compaction` at one budget.
        target: The reference's reader (`provider`, `api`, `id`).
        include_thinking: Override; None decides by the reader's model id.
    """
    entries = session.entries
    described = [*preparation["messagesToSummarize"], *preparation["turnPrefixMessages"]]
    messages = [
        m
        for d in described
        if (m := entry_to_message(entries[d["entry_index"]], include_compaction=False)) is not None
    ]
    first_kept = int(preparation["firstKeptEntryFileIndex"])
    previous = next(
        (e for e in reversed(entries[:first_kept]) if e.type == "compaction"),
        None,
    )
    preserve = previous.get("preserveData") if previous is not None else None
    provider = target.get("provider")
    return build_archive(
        messages,
        model_id=target.get("id"),
        api=target.get("api"),
        previous_preserve_data=preserve if isinstance(preserve, Mapping) else None,
        previous_summary=preparation.get("previousSummary"),
        max_frames=reference_max_frames(provider if isinstance(provider, str) else None),
        include_thinking=include_thinking,
    )


def _text_matches(ours: str | None, theirs: Any) -> tuple[bool, str]:
    """Whether our text equals the reference's (full text, or `{length, sha256}` digest)."""
    if isinstance(theirs, Mapping):
        digest = hashlib.sha256((ours or "").encode("utf-8")).hexdigest()
        same = ours is not None and digest == theirs.get("sha256")
        return same, f"length {len(ours or '')} vs {theirs.get('length')} (digest)"
    if ours == theirs:
        return True, ""
    if ours is None or theirs is None:
        return False, f"ours {_short(ours)}, reference {_short(theirs)}"
    at = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    return False, (
        f"character {at} of {len(ours)} vs {len(theirs)}: ours {ours[max(0, at - 20) : at + 40]!r}, "
        f"reference {theirs[max(0, at - 20) : at + 40]!r}"
    )


def _png_info(data: bytes) -> dict[str, Any]:
    return {
        "width": int.from_bytes(data[16:20], "big"),
        "height": int.from_bytes(data[20:24], "big"),
        "bit_depth": data[24],
        "color_type": _COLOR_TYPES.get(data[25], str(data[25])),
    }


def _pixels(data: bytes) -> Any:
    """Decoded pixels as one RGB value per pixel (24-bit ints)."""
    import numpy as np  # lazily: `import musepi_lab` stays light
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        if image.mode == "P":
            palette = np.frombuffer(bytes(image.getpalette() or []), dtype=np.uint8)
            rgb = palette.reshape(-1, 3).astype(np.int32)
            colors = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
            return colors[np.asarray(image)]
        rgb = np.asarray(image.convert("RGB")).astype(np.int32)
        return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


def _frame_shape_of(theirs: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        theirs.get(k) for k in ("cols", "rows", "chars", "font", "variant", "lineRepeat", "detail")
    )


def _compare_target(
    where: str,
    built: SnapcompactArchive,
    theirs: Mapping[str, Any],
    tallies: Mapping[str, _Tally],
) -> None:
    target = theirs["target"]
    # The driver reports the reader's shape and bill (`resolveShape`), whatever font the
    # transcript then needed; the frames carry the shape actually drawn.
    shape = resolve_shape(target.get("id"), "auto", None, target.get("api"))
    _compare_plan(where, built, theirs, shape, tallies["snapcompact/plan"])
    _compare_text(where, built.record, theirs["archive"], tallies["snapcompact/archive_text"])
    _compare_billing(where, built, theirs, shape, tallies["snapcompact/billing"])
    _compare_frames(
        where,
        built.frames,
        theirs["frames"],
        tallies["snapcompact/frame_geometry"],
        tallies["snapcompact/frame_pixels"],
    )


def _compare_plan(
    where: str,
    built: SnapcompactArchive,
    theirs: Mapping[str, Any],
    shape: FrameShape,
    tally: _Tally,
) -> None:
    """The frame plan: limits, shape, geometry, counts and each frame's layout."""
    record = built.record
    ref_archive = theirs["archive"]
    ref_frames = theirs["frames"]
    ours_frames = built.frames
    provider = theirs["target"].get("provider")

    ours_plan = {
        "maxFrames": reference_max_frames(provider),
        "includeThinking": built.include_thinking,
        "shape": (shape.font, shape.cell_w, shape.cell_h, shape.size_px),
        "geometry": (shape.cols, shape.rows, shape.capacity),
        "frameCount": len(ours_frames),
        "totalChars": record["totalChars"],
        "truncatedChars": record["truncatedChars"],
        "frames": [
            tuple(
                f.get(k)
                for k in ("cols", "rows", "chars", "font", "variant", "lineRepeat", "detail")
            )
            for f in ours_frames
        ],
    }
    ref_shape = theirs["shape"]
    ref_plan = {
        "maxFrames": theirs["options"]["maxFrames"],
        "includeThinking": theirs["options"]["includeThinking"],
        "shape": (
            ref_shape["font"],
            ref_shape["cellWidth"],
            ref_shape["cellHeight"],
            ref_shape["frameSize"],
        ),
        "geometry": tuple(theirs["geometry"][k] for k in ("cols", "rows", "capacity")),
        "frameCount": ref_archive["frameCount"],
        "totalChars": ref_archive["totalChars"],
        "truncatedChars": ref_archive["truncatedChars"],
        "frames": [_frame_shape_of(f) for f in ref_frames],
    }
    plan_diff = next((k for k in ours_plan if ours_plan[k] != ref_plan[k]), None)
    tally.add(
        f"{where} {plan_diff or ''}".strip(),
        ours_plan.get(plan_diff or "", None),
        ref_plan.get(plan_diff or "", None),
    )


def _compare_text(
    where: str, record: Mapping[str, Any], ref_archive: Mapping[str, Any], text_tally: _Tally
) -> None:
    """The archive text, its head and its tail."""
    text_tally.total += 1
    problems = []
    for key in ("text", "textHead", "textTail"):
        same, why = _text_matches(record.get(key), ref_archive.get(key))
        if not same:
            problems.append(f"{key} {why}")
    if not problems:
        text_tally.agreed += 1
    elif text_tally.first_difference is None:
        text_tally.first_difference = f"{where}: {problems[0]}"


def _compare_billing(
    where: str,
    built: SnapcompactArchive,
    theirs: Mapping[str, Any],
    shape: FrameShape,
    billing: _Tally,
) -> None:
    """What the frames cost: per-frame estimate, detail, provider budgets, total."""
    ours_frames = built.frames
    provider = theirs["target"].get("provider")
    per_frame = frame_billing_tokens(built.api, shape.size_px)
    ours_billing = {
        "frameTokenEstimate": per_frame,
        "imageDetail": image_detail(built.api),
        "providerImageBudget": image_budget(provider),
        "providerFrameBudget": provider_frame_budget(provider),
        "frames": len(ours_frames),
        "frameTokens": per_frame * len(ours_frames),
    }
    ref_billing = {k: theirs["billing"][k] for k in ours_billing}
    billing.add(where, ours_billing, ref_billing)


def _compare_frames(
    where: str,
    ours_frames: Sequence[Mapping[str, Any]],
    ref_frames: Sequence[Mapping[str, Any]],
    geometry: _Tally,
    pixels: _Tally,
) -> None:
    """Each frame's PNG header, then its pixels when the reference PNG is on disk."""
    for k in range(max(len(ours_frames), len(ref_frames))):
        at = f"{where} frame {k}"
        ours_png = base64.b64decode(ours_frames[k]["data"]) if k < len(ours_frames) else None
        ref_png_info = ref_frames[k]["png"] if k < len(ref_frames) else None
        ref_info = (
            {key: ref_png_info[key] for key in ("width", "height", "bit_depth", "color_type")}
            if ref_png_info
            else None
        )
        geometry.add(at, _png_info(ours_png) if ours_png else None, ref_info)
        file = ref_png_info.get("file") if ref_png_info else None
        if ours_png is None or ref_png_info is None or not file or not Path(file).is_file():
            pixels.add(at, "frame" if ours_png else None, "frame" if ref_png_info else None)
            continue
        ref_bytes = Path(file).read_bytes()
        if hashlib.sha256(ours_png).hexdigest() == ref_png_info.get("sha256"):
            pixels.extra["identical_bytes"] = pixels.extra.get("identical_bytes", 0) + 1
        ours_rgb, ref_rgb = _pixels(ours_png), _pixels(ref_bytes)
        if ours_rgb.shape != ref_rgb.shape:
            pixels.add(
                at,
                f"{ours_rgb.shape[1]}x{ours_rgb.shape[0]}",
                f"{ref_rgb.shape[1]}x{ref_rgb.shape[0]}",
            )
            continue
        differing = int((ours_rgb != ref_rgb).sum())
        share = differing / (ours_rgb.shape[0] * ours_rgb.shape[1])
        worst = max(pixels.extra.get("max_differing_pixel_share", 0.0), share)
        pixels.extra["max_differing_pixel_share"] = worst
        pixels.add(at, f"{differing} differing pixels", "0 differing pixels")


def compare_snapcompact(
    reference: Mapping[str, Any], session: Session, budgets: Iterable[int | str] | None = None
) -> list[dict[str, Any]]:
    """Agreement of our snapcompact with oh-my-pi's, per measure, over budgets and readers.

    Args:
        reference: The musepi driver's JSON for the file (`--texts full` or `digest`;
            frame pixels are compared when it was run with `--frames-dir`).
        session: Our reading of the same file.
        budgets: The keep budgets to compare (default: every budget the reference rendered).

    Returns:
        One row per measure (`MEASURES`): `measure`, `agreed`, `total` (plan, archive text
        and billing count budget x reader cases; geometry and pixels count frames),
        `first_difference` (None when all agree); the pixel row also has
        `identical_bytes` (frames whose PNG sha256 matches too) and
        `max_differing_pixel_share`.
    """
    tallies = {m: _Tally() for m in MEASURES}
    wanted: Sequence[str] = (
        [str(b) for b in budgets] if budgets is not None else list(reference["budgets"])
    )
    for budget in wanted:
        per_budget = reference["budgets"].get(budget) or {}
        targets = per_budget.get("snapcompact")
        preparation = per_budget.get("prepare_compaction")
        if not isinstance(targets, Mapping) or "unavailable" in targets or preparation is None:
            continue
        for name, theirs in targets.items():
            built = archive_for_reference(session, preparation, theirs["target"])
            _compare_target(f"budget {budget} {name}", built, theirs, tallies)
    rows: list[dict[str, Any]] = []
    for measure in MEASURES:
        tally = tallies[measure]
        row: dict[str, Any] = {
            "measure": measure,
            "agreed": tally.agreed,
            "total": tally.total,
            "first_difference": tally.first_difference,
        }
        if measure == "snapcompact/frame_pixels":
            row["identical_bytes"] = tally.extra.get("identical_bytes", 0)
            row["max_differing_pixel_share"] = tally.extra.get("max_differing_pixel_share", 0.0)
        rows.append(row)
    return rows

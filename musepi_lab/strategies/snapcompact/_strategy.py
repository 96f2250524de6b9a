"""`snapcompact`: archive the discarded history as PNG frames of pixel-font text (spec §6.2).

Deterministic and model-free. The history a compaction discards (the preparation's
`messages_to_summarize` and `turn_prefix_messages`) is serialized in the scoped archive
format (`¶user:`, `¶think:`, `¶ai:`, `¶call:`), normalized for the pixel font, and appended
to the source text of the previous archive (or, after a text summary, put behind that
summary as `[Summary of earlier history] … [Recent conversation] …`). The whole text is
then laid out again: the oldest and the newest page stay text, the middle becomes square
PNG frames (`_frames.plan_archive`, `_frames.render_frame`), foveated beyond 80 frames.
Everything lands in the entry's `preserveData.snapcompact`, which the context rebuild
(`context._summaries.snapcompact_blocks`) turns back into the summary's text and image
blocks; a later compaction unfolds `text` (not the PNGs) and renders again.

Differences from oh-my-pi, all deliberate and small:

- Tool results are not wrapped in dim-ink toggles: the frame renderer draws black on white
  only, and a toggle would print as a `?` cell.
- Frames are always square (`_frames.render_frame`); oh-my-pi crops a frame's height to the
  rows printed.
- No CJK font: the normalizer folds what it can to ASCII/Latin-1 and prints `?` for the
  rest, so the `silver16-bw` shape is never chosen automatically.
- Frame shape and billing both follow the model id (`_frames.shape_for_model`,
  `_frames.api_family`); oh-my-pi bills by the provider's wire API.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..._prompts import PromptSet
from ...compaction._file_ops import compute_file_lists, file_details, format_file_list
from ...compaction._result import CompactionResult
from ...context._build import build_session_context
from ...context._llm import convert_to_llm
from ...context._summaries import NEWLINE_GLYPH
from .._base import CompactionContext, Strategy, StrategyUnavailable, register
from ._archive import elide_data_urls, serialize_scoped, strip_dim_markers
from ._normalize import normalize_archive_text
from ._plan import (
    MAX_FRAMES_DEFAULT,
    SHAPE_NAMES,
    ArchivePlan,
    FrameShape,
    frame_shape,
    plan_archive,
)
from ._providers import api_family, frame_billing_tokens, shape_for_model
from ._render import render_frame

PRESERVE_KEY = "snapcompact"
"""Key of the archive in a compaction's `preserveData`."""
REMOTE_PRESERVE_KEY = "openaiRemoteCompaction"
"""Key of an OpenAI remote-compaction payload; snapcompact replaces that history."""
SUMMARY_MARK = "[Summary of earlier history]"
RECENT_MARK = "[Recent conversation]"
NO_PRIOR_HISTORY = "No prior history."
SUMMARY_PROMPT = "snapcompact-summary"
MIME_PNG = "image/png"

TEXT_ONLY_MODELS: tuple[str, ...] = (
    r"gpt-3\.5",
    r"\bo[13]-mini\b",
    r"gpt-oss",
    r"deepseek(?!-vl)",
    r"codestral|devstral",
    r"qwen[\d.]*-coder",
    r"kimi-k2(?![.\d])",
    r"glm-4\.[5-7](?!v)",
)
"""Model-id patterns (case-insensitive regular expressions, searched anywhere in the id) of
model lines known to take no image input. Only a match makes snapcompact refuse; a model
that matches nothing is assumed to read images, as is a session with no model at all."""


def is_text_only_model(model_id: str, patterns: Sequence[str] = TEXT_ONLY_MODELS) -> bool:
    """Whether a model id matches one of the known text-only patterns.

    Args:
        model_id: A model id, optionally `provider/`-prefixed.
        patterns: Regular expressions searched case-insensitively in the id.
    """
    return any(re.search(p, model_id, re.IGNORECASE) for p in patterns)


# -- archive text ---------------------------------------------------------------------------
def previous_archive_text(preserve_data: Mapping[str, Any] | None) -> str:
    """The kept source text of a previous snapcompact archive, or `""`.

    Prefers the archive's full `text`; an archive without it contributes its head and tail
    joined by a newline glyph. Ink toggles are removed (frames here have no dim ink) and data
    URLs that an older slicer may have cut anywhere are elided.
    """
    archive = preserve_data.get(PRESERVE_KEY) if isinstance(preserve_data, Mapping) else None
    if not isinstance(archive, Mapping):
        return ""
    text = archive.get("text")
    if not isinstance(text, str) or not text:
        parts = [archive.get(k) for k in ("textHead", "textTail")]
        text = NEWLINE_GLYPH.join(p for p in parts if isinstance(p, str) and p)
    return elide_data_urls(strip_dim_markers(text), archive=True) if text else ""


def serialize_history(
    messages: Sequence[Mapping[str, Any]], *, include_thinking: bool = True
) -> str:
    """Runtime messages → normalized scoped archive text (no dim-ink toggles).

    Args:
        messages: Runtime messages (before `convert_to_llm`), oldest first.
        include_thinking: Keep `¶think:` parts.
    """
    llm = convert_to_llm(messages, profile="musepi")
    return serialize_scoped(
        llm, include_thinking=include_thinking, dim_tool_results=False, normalize=True
    )


def archive_text(
    history: str, *, previous_text: str = "", previous_summary: str | None = None
) -> tuple[str, bool]:
    """The archive source: previous archive text, then the newly archived history.

    Without a previous archive, a previous text summary opens the archive as
    `[Summary of earlier history] <summary> [Recent conversation] <history>`.

    Args:
        history: Normalized text of the history archived now.
        previous_text: Source text of the previous archive (`previous_archive_text`).
        previous_summary: Summary of the previous compaction, if any.

    Returns:
        `(text, included_previous_summary)`.
    """
    text = history
    included_summary = not previous_text and bool(previous_summary)
    if included_summary:
        head = f"{SUMMARY_MARK} {normalize_archive_text(previous_summary or '')}"
        text = f"{head} {RECENT_MARK} {text}" if text else head
    if previous_text:
        text = f"{previous_text}{NEWLINE_GLYPH}{text}" if text else previous_text
    # Data URLs must not reach the page slicer, which would split a payload.
    return elide_data_urls(text), included_summary


def kept_text(plan: ArchivePlan) -> str:
    """The archive source that survives a plan: everything but the dropped dense pages."""
    return plan.text_head + "".join(p.text for p in plan.pages) + plan.text_tail


# -- frames -----------------------------------------------------------------------------------
def resolve_shape(
    model_id: str | None, shape: str = "auto", frame_size: int | None = None
) -> FrameShape:
    """The high-quality frame shape: the model's (`auto`) or a named one, at a frame size.

    Raises:
        ValueError: Unknown shape name or a frame size too small for one cell.
    """
    if shape == "auto":
        base = shape_for_model(model_id or "")
    elif shape in SHAPE_NAMES:
        base = frame_shape(shape)
    else:
        raise ValueError(f"unknown frame shape {shape!r}; expected 'auto' or one of {SHAPE_NAMES}")
    resolved = frame_shape(base.name, frame_size) if frame_size is not None else base
    if resolved.capacity <= 0:
        raise ValueError(f"frame size {resolved.size_px}px holds no {resolved.name} cell")
    return resolved


def render_frames(plan: ArchivePlan, *, detail: str | None = None) -> list[dict[str, Any]]:
    """The `preserveData` frame records of a plan, oldest first.

    Each is `{data (base64 PNG), mimeType, cols, rows, chars, variant (shape name)}`, plus
    `detail` when given (OpenAI reads frames best at `detail: "original"`).
    """
    frames: list[dict[str, Any]] = []
    for page in plan.pages:
        frame: dict[str, Any] = {
            "data": base64.b64encode(render_frame(page.text, page.shape)).decode("ascii"),
            "mimeType": MIME_PNG,
            "cols": page.shape.cols,
            "rows": page.shape.rows,
            "chars": len(page.text),
            "variant": page.shape.name,
        }
        if detail is not None:
            frame["detail"] = detail
        frames.append(frame)
    return frames


# -- summary ----------------------------------------------------------------------------------
def frame_notes(frames: Sequence[Mapping[str, Any]], *, included_summary: bool) -> str:
    """The optional "Reading HISTORY" bullets, each line ending in a newline."""
    lines: list[str] = []
    if frames:
        count = len(frames)
        pictures = "1 picture" if count == 1 else f"{count} pictures"
        lines.append(
            f"- The middle of HISTORY is imaged: after the first page of text come {pictures} "
            "of the transcript in reading order, oldest first; the text after them is the "
            "newest page."
        )
        grids = list(dict.fromkeys((f["cols"], f["rows"]) for f in frames))
        grid = " or ".join(f"{c} columns x {r} rows" for c, r in grids)
        lines.append(f"- Each picture is one grid of {grid}, read row by row, left to right.")
    lines.append("- A solid black cell in a picture, or █ in text, marks a line break.")
    if included_summary:
        lines.append(
            f"- HISTORY opens with {SUMMARY_MARK}, a digest of what happened before the "
            f"archive, followed by {RECENT_MARK}."
        )
    return "".join(line + "\n" for line in lines)


def files_section(file_list: str) -> str:
    """The FILES section (underlined header and the grouped file list), or `""`."""
    return f"\nFILES\n=====\n{file_list}\n" if file_list else ""


def snapcompact_summary(
    prompts: PromptSet,
    frames: Sequence[Mapping[str, Any]],
    *,
    truncated_chars: int,
    included_summary: bool,
    file_list: str,
    has_text: bool,
) -> str:
    """The stored summary text (prompt `snapcompact-summary`), or `"No prior history."`."""
    if not frames and not has_text and not file_list:
        return NO_PRIOR_HISTORY
    return prompts.render(
        SUMMARY_PROMPT,
        frame_notes=frame_notes(frames, included_summary=included_summary),
        dropped_chars=f"{truncated_chars:,}",
        files_section=files_section(file_list),
    )


def short_summary(total_chars: int, frames: int, text_chars: int) -> str:
    """`Archived N chars of history onto M snapcompact frame(s)` (+ chars kept as text)."""
    noun = "frame" if frames == 1 else "frames"
    note = f" (+{text_chars:,} chars as text)" if text_chars else ""
    return f"Archived {total_chars:,} chars of history onto {frames} snapcompact {noun}{note}"


# -- the strategy -----------------------------------------------------------------------------
def session_model_id(ctx: CompactionContext, leaf_id: str | None) -> str | None:
    """The model in force at the leaf (MusePi context rules), or None."""
    if leaf_id is None:
        return None
    model = build_session_context(ctx.session, leaf_id, profile="musepi").model
    model_id = model.get("modelId") if model else None
    return model_id if isinstance(model_id, str) and model_id else None


def archive_record(
    plan: ArchivePlan, frames: Sequence[Mapping[str, Any]], previous_archive: Any
) -> dict[str, Any]:
    """The `preserveData.snapcompact` record: frames, kept text, and the characters archived
    and dropped (earlier compactions' dropped characters carried forward)."""
    earlier = (
        previous_archive.get("truncatedChars", 0) if isinstance(previous_archive, Mapping) else 0
    )
    truncated = (earlier if isinstance(earlier, int) else 0) + plan.truncated_chars
    text_chars = len(plan.text_head) + len(plan.text_tail)
    archive: dict[str, Any] = {
        "frames": list(frames),
        "totalChars": sum(f["chars"] for f in frames) + text_chars,
        "truncatedChars": truncated,
    }
    kept = kept_text(plan)
    if kept:
        archive["text"] = kept
    if plan.text_head:
        archive["textHead"] = plan.text_head
    if plan.text_tail:
        archive["textTail"] = plan.text_tail
    return archive


@register
@dataclass(frozen=True)
class Snapcompact(Strategy):
    """snapcompact (spec §6.2): the discarded history archived as PNG frames, no model call.

    Attributes:
        model: Model id that will read the frames; None takes the model in force at the
            leaf. It picks the frame shape, the billing estimate and the vision check.
        max_frames: Frame budget (at most 80); beyond it the middle is foveated and its
            oldest dense pages dropped.
        shape: `auto` (the model's shape) or a shape name (`8on22-bw`, `8on16-bw`,
            `11on16-bw`, `silver16-bw`).
        frame_size: Frame side in pixels; None keeps the shape's.
        include_thinking: Archive `¶think:` parts. None: left out for Anthropic models
            (oh-my-pi does the same), kept otherwise.
        require_vision: Refuse models known to take no images (`text_only_models`).
        text_only_models: Model-id patterns of known text-only models.
    """

    name: ClassVar[str] = "snapcompact"

    model: str | None = None
    max_frames: int = MAX_FRAMES_DEFAULT
    shape: str = "auto"
    frame_size: int | None = None
    include_thinking: bool | None = None
    require_vision: bool = True
    text_only_models: tuple[str, ...] = TEXT_ONLY_MODELS

    def _check_available(self, profile: str, model_id: str | None) -> None:
        if profile != "musepi":
            raise StrategyUnavailable(
                "strategy 'snapcompact' needs the musepi profile: pi compaction entries "
                "carry no preserveData to hold the archive"
            )
        if self.require_vision and model_id and is_text_only_model(model_id, self.text_only_models):
            raise StrategyUnavailable(
                f"strategy 'snapcompact' needs a model that reads images; {model_id!r} does "
                "not (pass require_vision=False to archive anyway)"
            )

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Archive the preparation's discarded history; None without a preparation.

        Raises:
            StrategyUnavailable: The pi profile (its entries carry no `preserveData`), or
                `require_vision` and a model known to take no images.
        """
        prep = ctx.preparation
        if prep is None:
            return None
        model_id = self.model if self.model is not None else session_model_id(ctx, prep.leaf_id)
        self._check_available(prep.profile, model_id)
        family = api_family(model_id or "")
        include_thinking = (
            self.include_thinking if self.include_thinking is not None else family != "anthropic"
        )
        high = resolve_shape(model_id, self.shape, self.frame_size)

        history = serialize_history(
            [*prep.messages_to_summarize, *prep.turn_prefix_messages],
            include_thinking=include_thinking,
        )
        text, included_summary = archive_text(
            history,
            previous_text=previous_archive_text(prep.previous_preserve_data),
            previous_summary=prep.previous_summary,
        )
        plan = plan_archive(text, high, max_frames=self.max_frames)
        frames = render_frames(plan, detail="original" if family == "openai" else None)

        previous = prep.previous_preserve_data or {}
        archive = archive_record(plan, frames, previous.get(PRESERVE_KEY))
        truncated, total_chars = archive["truncatedChars"], archive["totalChars"]
        text_chars = len(plan.text_head) + len(plan.text_tail)
        preserve = {
            k: v for k, v in previous.items() if k not in (REMOTE_PRESERVE_KEY, PRESERVE_KEY)
        }
        preserve[PRESERVE_KEY] = archive

        read_files, modified_files = compute_file_lists(prep.file_ops, profile="musepi")
        file_list = format_file_list(read_files, modified_files, read_set=prep.file_ops.read)
        summary = snapcompact_summary(
            ctx.prompts,
            frames,
            truncated_chars=truncated,
            included_summary=included_summary,
            file_list=file_list,
            has_text=bool(text_chars),
        )
        per_frame = frame_billing_tokens(family, high.size_px)
        image_tokens = per_frame * len(frames)
        return CompactionResult.from_preparation(
            prep,
            summary,
            method="snapcompact",
            short_summary=short_summary(total_chars, len(frames), text_chars),
            details=file_details(read_files, modified_files),
            preserve_data=preserve,
            params={
                "prompts": ctx.prompts.label,
                "frame_model": model_id,
                "frame_shape": high.name,
                "frame_size_px": high.size_px,
                "frames": len(frames),
                "billing_family": family,
                "frame_billing_tokens": per_frame,
                "image_tokens": image_tokens,
                "archived_chars": total_chars,
                "truncated_chars": truncated,
            },
        )

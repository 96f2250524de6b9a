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

The archive text, the plan, the frame pixels and the billing follow oh-my-pi 18.2.3
(`@oh-my-pi/snapcompact`): tool output dimmed between the ink toggles, frames drawn with the
misc-fixed 8x13 font and cropped to the rows printed, palette PNGs, billing by the reader's
wire API and shape by its model id, CJK-heavy transcripts on the `silver16-bw` grid.
Differences left:

- Silver's glyphs are not ported (only which characters it draws): a character only the
  release's Silver fallback draws keeps its text and cells but is drawn as the misc-fixed
  default character, and Silver-grid frames are not anti-aliased (same size, RGB PNG).
- Frame PNG bytes are our own encoder's (same pixels, palette, bit depth and size; another
  deflate stream).
- Summary prose is our own wording (prompt `snapcompact-summary`).
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
from ...context._summaries import NEWLINE_GLYPH, plain_archive_text
from .._base import CompactionContext, Strategy, StrategyUnavailable, register
from ._archive import elide_data_urls, serialize_scoped
from ._normalize import DIM_OFF, DIM_ON, normalize_archive_text
from ._plan import (
    MAX_FRAMES_DEFAULT,
    SHAPE_NAMES,
    ArchivePlan,
    FrameShape,
    frame_shape,
    plan_archive,
    printed_chars,
)
from ._providers import (
    billing_family,
    frame_billing_tokens,
    image_detail,
    provider_for_model,
    shape_for_model,
)
from ._render import render_frame
from ._renderability import needs_silver

PRESERVE_KEY = "snapcompact"
"""Key of the archive in a compaction's `preserveData`."""
REMOTE_PRESERVE_KEY = "openaiRemoteCompaction"
"""Key of an OpenAI remote-compaction payload; snapcompact replaces that history."""
_REPLACED_PRESERVE_KEYS = (REMOTE_PRESERVE_KEY, "anthropicCompaction", "snapcompact")
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
def previous_archive_text(
    preserve_data: Mapping[str, Any] | None, *, include_thinking: bool = True
) -> str:
    """The kept source text of a previous snapcompact archive, or `""`.

    Prefers the archive's full `text`; an archive without it contributes its head and tail
    joined by a newline glyph. Data URLs that an older slicer may have cut anywhere are
    elided; without `include_thinking`, `¶think:` sections are dropped.
    """
    archive = preserve_data.get(PRESERVE_KEY) if isinstance(preserve_data, Mapping) else None
    if not isinstance(archive, Mapping):
        return ""
    text = archive.get("text")
    if not isinstance(text, str) or not text:
        parts = [archive.get(k) for k in ("textHead", "textTail")]
        text = NEWLINE_GLYPH.join(p for p in parts if isinstance(p, str) and p)
    healed = elide_data_urls(text, archive=True) if text else ""
    return strip_thinking_sections(healed) if healed and not include_thinking else healed


_SECTION_SPLIT_RE = re.compile(r"\n\n(?=¶(?:user|think|ai|call):)")


def strip_thinking_sections(text: str) -> str:
    """Archive text without its `¶think:` sections (oh-my-pi `stripThinkingSections`)."""
    segments = (
        "\n\n".join(s for s in _SECTION_SPLIT_RE.split(seg) if not s.startswith("¶think:"))
        for seg in text.split(NEWLINE_GLYPH)
    )
    return NEWLINE_GLYPH.join(seg for seg in segments if seg)


def serialize_history(
    messages: Sequence[Mapping[str, Any]],
    *,
    include_thinking: bool = True,
    normalize: bool = True,
    font: str = "8x13",
) -> str:
    """Runtime messages → scoped archive text (tool output between dim toggles).

    Args:
        messages: Runtime messages (before `convert_to_llm`), oldest first.
        include_thinking: Keep `¶think:` parts.
        normalize: Fold the text to what `font` draws (`normalize_archive_text`).
        font: The frame font (`8x13`, or `silver` for the CJK grid).
    """
    llm = convert_to_llm(messages, profile="musepi")
    raw = serialize_scoped(llm, include_thinking=include_thinking, dim_tool_results=True)
    return normalize_archive_text(raw, font=font) if normalize else raw


def renderability_probe_text(
    serialized: str,
    previous_preserve_data: Mapping[str, Any] | None,
    previous_summary: str | None,
) -> str:
    """The text a frame font is chosen for (`renderabilityProbeText`): the previous archive's
    plain source text, else the previous summary, then the new history."""
    archive = (
        previous_preserve_data.get(PRESERVE_KEY)
        if isinstance(previous_preserve_data, Mapping)
        else None
    )
    previous = ""
    if isinstance(archive, Mapping):
        text = archive.get("text")
        if not isinstance(text, str) or not text:
            parts = [archive.get(k) for k in ("textHead", "textTail")]
            text = NEWLINE_GLYPH.join(p for p in parts if isinstance(p, str) and p)
        previous = elide_data_urls(plain_archive_text(text), archive=True) if text else ""
    if previous:
        return f"{previous}{NEWLINE_GLYPH}{serialized}"
    if previous_summary:
        return f"{previous_summary}{NEWLINE_GLYPH}{serialized}"
    return serialized


def archive_text(
    history: str,
    *,
    previous_text: str = "",
    previous_summary: str | None = None,
    font: str = "8x13",
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
        head = f"{SUMMARY_MARK} {normalize_archive_text(previous_summary or '', font=font)}"
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
    model_id: str | None,
    shape: str = "auto",
    frame_size: int | None = None,
    api: str | None = None,
) -> FrameShape:
    """The high-quality frame shape: the model's (`auto`) or a named one, at a frame size.

    Args:
        model_id: The reader's model id (picks the shape of its line).
        shape: `auto` or a shape name.
        frame_size: Frame side in pixels; None keeps the shape's.
        api: The reader's wire API or provider (the fallback shape of an unmeasured model).

    Raises:
        ValueError: Unknown shape name or a frame size too small for one cell.
    """
    if shape == "auto":
        base = shape_for_model(model_id, api)
    elif shape in SHAPE_NAMES:
        base = frame_shape(shape)
    else:
        raise ValueError(f"unknown frame shape {shape!r}; expected 'auto' or one of {SHAPE_NAMES}")
    resolved = frame_shape(base.name, frame_size) if frame_size is not None else base
    if resolved.capacity <= 0:
        raise ValueError(f"frame size {resolved.size_px}px holds no {resolved.name} cell")
    return resolved


def page_texts(plan: ArchivePlan) -> tuple[list[str], bool]:
    """Each frame's text with a dim span the page before left open re-opened, and whether a
    span is still open after the last frame (the text tail then re-opens it)."""
    dim_open = _dim_open(plan.text_head)
    texts: list[str] = []
    for page in plan.pages:
        text = DIM_ON + page.text if dim_open else page.text
        dim_open = _dim_open(text)
        texts.append(text)
    return texts, dim_open


def _dim_open(text: str) -> bool:
    return text.rfind(DIM_ON) > text.rfind(DIM_OFF)


def render_frames(plan: ArchivePlan, *, detail: str | None = None) -> list[dict[str, Any]]:
    """The `preserveData` frame records of a plan, oldest first (oh-my-pi's `Frame`).

    Each is `{data (base64 PNG), mimeType, cols, rows, chars (printed), font, variant ("bw"),
    lineRepeat}`, plus `detail` when given (OpenAI reads frames at `detail: "original"`).
    """
    texts, _ = page_texts(plan)
    frames: list[dict[str, Any]] = []
    for page, text in zip(plan.pages, texts, strict=True):
        frame: dict[str, Any] = {
            "data": base64.b64encode(render_frame(text, page.shape)).decode("ascii"),
            "mimeType": MIME_PNG,
            "cols": page.shape.cols,
            "rows": page.shape.rows,
            "chars": printed_chars(text, page.shape),
            "font": page.shape.font,
            "variant": "bw",
            "lineRepeat": 1,
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


def session_provider(ctx: CompactionContext, leaf_id: str | None) -> str | None:
    """The provider of the model in force at the leaf (MusePi context rules), or None."""
    if leaf_id is None:
        return None
    model = build_session_context(ctx.session, leaf_id, profile="musepi").model
    provider = model.get("provider") if model else None
    return provider if isinstance(provider, str) and provider else None


def archive_record(
    plan: ArchivePlan, frames: Sequence[Mapping[str, Any]], previous_archive: Any
) -> dict[str, Any]:
    """The `preserveData.snapcompact` record: frames, kept text, and the characters archived
    and dropped (earlier compactions' dropped characters carried forward).

    A dim span still open after the last frame is re-opened at the start of the text tail
    (and so of the tail inside `text`), as oh-my-pi does.
    """
    earlier = (
        previous_archive.get("truncatedChars", 0) if isinstance(previous_archive, Mapping) else 0
    )
    truncated = (earlier if isinstance(earlier, int) else 0) + plan.truncated_chars
    _, dim_open = page_texts(plan)
    tail = (DIM_ON if dim_open else "") + plan.text_tail if plan.text_tail else ""
    kept = kept_text(plan)
    if kept and plan.text_tail:
        kept = kept[: len(kept) - len(plan.text_tail)] + tail
    archive: dict[str, Any] = {
        "frames": list(frames),
        "totalChars": sum(f["chars"] for f in frames) + len(plan.text_head) + len(tail),
        "truncatedChars": truncated,
    }
    if kept:
        archive["text"] = kept
    if plan.text_head:
        archive["textHead"] = plan.text_head
    if tail:
        archive["textTail"] = tail
    return archive


def reads_thinking_badly(model_id: str | None) -> bool:
    """Whether archived thinking is left out for this reader: Claude-dialect models (their
    `reasoning_extraction` classifier trips on replayed reasoning)."""
    m = (model_id or "").lower()
    return any(k in m for k in ("claude", "anthropic", "opus", "sonnet", "haiku"))


@dataclass(frozen=True)
class SnapcompactArchive:
    """One snapcompact archive built from discarded history (pure; see `build_archive`).

    Attributes:
        shape: The high-quality frame shape.
        api: The reader's wire API or provider (billing), if known.
        plan: How the archive text was laid out.
        record: The `preserveData.snapcompact` record (frames with base64 PNGs).
        included_summary: Whether a previous text summary opens the archive.
        include_thinking: Whether `¶think:` parts were archived.
    """

    shape: FrameShape
    api: str | None
    plan: ArchivePlan
    record: dict[str, Any]
    included_summary: bool
    include_thinking: bool

    @property
    def frames(self) -> list[dict[str, Any]]:
        """The frame records, oldest first."""
        return list(self.record["frames"])

    @property
    def frame_tokens(self) -> int:
        """Tokens one frame is billed by the reader's API (`frameTokenEstimate`)."""
        return frame_billing_tokens(self.api, self.shape.size_px)


def build_archive(
    messages: Sequence[Mapping[str, Any]],
    *,
    model_id: str | None,
    api: str | None = None,
    previous_preserve_data: Mapping[str, Any] | None = None,
    previous_summary: str | None = None,
    max_frames: int = MAX_FRAMES_DEFAULT,
    shape: str = "auto",
    frame_size: int | None = None,
    include_thinking: bool | None = None,
) -> SnapcompactArchive:
    """Archive runtime messages (oh-my-pi 18.2.3 `compact`, without the summary prose).

    Args:
        messages: The discarded history (messages to summarize, then the turn prefix).
        model_id: The reader's model id (shape, thinking).
        api: The reader's wire API or provider id (billing, `detail`, fallback shape).
        previous_preserve_data: The previous compaction's `preserveData`.
        previous_summary: The previous compaction's summary.
        max_frames: Frame cap (at most 80).
        shape: `auto` or a shape name.
        frame_size: Frame side in pixels; None keeps the shape's.
        include_thinking: Archive thinking; None: not for Claude-dialect readers.
    """
    thinking = not reads_thinking_badly(model_id) if include_thinking is None else include_thinking
    raw = serialize_history(messages, include_thinking=thinking, normalize=False)
    high = resolve_shape(model_id, shape, frame_size, api)
    probe = renderability_probe_text(raw, previous_preserve_data, previous_summary)
    if shape == "auto" and high.font != "silver" and needs_silver(probe):
        high = frame_shape("silver16-bw", frame_size or 1568)
    text, included_summary = archive_text(
        normalize_archive_text(raw, font=high.font),
        previous_text=previous_archive_text(previous_preserve_data, include_thinking=thinking),
        previous_summary=previous_summary,
        font=high.font,
    )
    plan = plan_archive(text, high, max_frames=max_frames)
    frames = render_frames(plan, detail=image_detail(api))
    previous = previous_preserve_data.get(PRESERVE_KEY) if previous_preserve_data else None
    record = archive_record(plan, frames, previous)
    return SnapcompactArchive(high, api, plan, record, included_summary, thinking)


@register
@dataclass(frozen=True)
class Snapcompact(Strategy):
    """snapcompact (spec §6.2): the discarded history archived as PNG frames, no model call.

    Attributes:
        model: Model id that will read the frames; None takes the model in force at the
            leaf. It picks the frame shape, the vision check and whether thinking is kept.
        api: Wire API (`anthropic-messages`, `openai-responses`, …) or provider id of the
            reader; None takes the provider of `model` when given (`provider_for_model`), else
            the provider in force at the leaf. It picks the billing, the
            `detail` hint and the shape of a model with no measured shape.
        max_frames: Frame budget (at most 80); beyond it the middle is foveated and its
            oldest dense pages dropped.
        shape: `auto` (the model's shape) or a shape name (`8on22-bw`, `8on16-bw`,
            `11on16-bw`, `silver16-bw`).
        frame_size: Frame side in pixels; None keeps the shape's.
        include_thinking: Archive `¶think:` parts. None: left out for Claude-dialect
            models (oh-my-pi does the same), kept otherwise.
        require_vision: Refuse models known to take no images (`text_only_models`).
        text_only_models: Model-id patterns of known text-only models.
    """

    name: ClassVar[str] = "snapcompact"

    model: str | None = None
    api: str | None = None
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
        api = self.api
        if api is None:
            # A reader named by model id alone is billed by its own provider's API.
            explicit = self.model is not None
            api = provider_for_model(model_id) if explicit else session_provider(ctx, prep.leaf_id)
        built = build_archive(
            [*prep.messages_to_summarize, *prep.turn_prefix_messages],
            model_id=model_id,
            api=api,
            previous_preserve_data=prep.previous_preserve_data,
            previous_summary=prep.previous_summary,
            max_frames=self.max_frames,
            shape=self.shape,
            frame_size=self.frame_size,
            include_thinking=self.include_thinking,
        )
        archive, frames, high = built.record, built.frames, built.shape
        included_summary = built.included_summary
        truncated, total_chars = archive["truncatedChars"], archive["totalChars"]
        text_chars = len(archive.get("textHead", "")) + len(archive.get("textTail", ""))
        previous = prep.previous_preserve_data or {}
        preserve = {k: v for k, v in previous.items() if k not in _REPLACED_PRESERVE_KEYS}
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
        per_frame = built.frame_tokens
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
                "billing_family": billing_family(api),
                "frame_billing_tokens": per_frame,
                "image_tokens": image_tokens,
                "archived_chars": total_chars,
                "truncated_chars": truncated,
            },
        )

"""snapcompact (spec §6.2): frames, geometry, unfolding, determinism, foveation, acceptance.

Expected frame counts and sizes come from the spec's numbers (cell sizes, frame sizes,
billing formulas) applied to the length of the archive text, which each test builds with
the engine's serializer from the preparation's messages (or, for synthetic histories,
writes out by hand). PNGs are opened with Pillow.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import math
import random
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from _corpus import corpus_file
from PIL import Image

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction._file_ops import FileOperations
from musepi_lab.compaction._prepare import CompactionPreparation, prepare_compaction
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.formats._records import assistant_message, message_record, user_message
from musepi_lab.formats._registry import read_session
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.strategies._base import CompactionContext, StrategyUnavailable, compact
from musepi_lab.strategies.snapcompact._archive import serialize_scoped
from musepi_lab.strategies.snapcompact._normalize import normalize_archive_text
from musepi_lab.strategies.snapcompact._plan import frame_shape
from musepi_lab.strategies.snapcompact._render import render_frame
from musepi_lab.strategies.snapcompact._strategy import (
    Snapcompact,
    previous_archive_text,
    strip_thinking_sections,
)
from musepi_lab.tokens._counter import TokenCounter

REPO = Path(__file__).resolve().parents[1]
SAMPLES = sorted((REPO / "datasets" / "sample").glob("*.jsonl"))
PI_FIXTURES = (
    ("pi", "before-compaction.jsonl"),
    ("pi", "large-session.jsonl"),
    ("pi", "oh-my-pi", "before-compaction.jsonl"),
    ("pi", "oh-my-pi", "large-session.jsonl"),
)
NEWLINE = "\u2588"

# Spec §6.2: Anthropic models read `11on16-bw` (11x16 px cells) on 1568 px frames unless
# Opus >= 4.7 / Fable / Mythos; the foveated middle uses `8on16-bw`. Billing per frame:
# Anthropic ceil(min(ceil(S/28)^2, 4784) * 1.05), OpenAI ceil(min(ceil(S/32)^2, 10000) * 1.2),
# Google 1120.
ANTHROPIC_FRAME_PX = 1568
ANTHROPIC_CAPACITY = (1568 // 11) * (1568 // 16)
ANTHROPIC_FRAME_TOKENS = math.ceil(min(math.ceil(1568 / 28) ** 2, 4784) * 1.05)
OPENAI_FRAME_TOKENS = math.ceil(min(math.ceil(1568 / 32) ** 2, 10000) * 1.2)


# -- helpers ------------------------------------------------------------------------------
@cache
def _session(path: str) -> Session:
    return read_session(path)


@cache
def _result(path: str) -> CompactionResult | None:
    return compact(_session(path), "snapcompact", counter=TokenCounter("musepi"))


def _fixture(parts: Sequence[str]) -> str:
    return str(corpus_file(*parts))


def _prepare(session: Session, leaf_id: str | None = None) -> CompactionPreparation:
    prep = prepare_compaction(
        session, CompactionSettings.musepi(), TokenCounter("musepi"), leaf_id=leaf_id
    )
    assert prep is not None
    return prep


def _expected_text(prep: CompactionPreparation, *, include_thinking: bool = False) -> str:
    """The archive text of a first snapcompact, assembled as spec §6.2 describes it (tool
    output between the dim toggles, as oh-my-pi 18.2.3 keeps it)."""
    llm = convert_to_llm([*prep.messages_to_summarize, *prep.turn_prefix_messages])
    history = normalize_archive_text(
        serialize_scoped(llm, include_thinking=include_thinking, dim_tool_results=True)
    )
    if prep.previous_summary:
        head = "[Summary of earlier history] " + normalize_archive_text(prep.previous_summary)
        return f"{head} [Recent conversation] {history}" if history else head
    return history


def _archive(result: CompactionResult) -> Mapping[str, Any]:
    assert result.preserve_data is not None
    return result.preserve_data["snapcompact"]


def _png(frame: Mapping[str, Any]) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(frame["data"])))
    image.load()
    return image


def _run(session: Session, strategy: Snapcompact, prep: CompactionPreparation) -> CompactionResult:
    """Call the strategy directly (its own params survive; `compact` replaces them)."""
    ctx = CompactionContext(
        session=session,
        preparation=prep,
        settings=prep.settings,
        counter=TokenCounter("musepi"),
        summarizer=None,
        prompts=PromptSet.default(),
        leaf_id=prep.leaf_id,
    )
    result = strategy.run(ctx)
    assert result is not None
    return result


def _orphan_results(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """toolCallIds of tool results whose call is not in an earlier assistant message."""
    calls: set[str] = set()
    orphans: list[str] = []
    for message in messages:
        if message.get("role") == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    calls.add(block.get("id"))
        elif message.get("role") == "toolResult" and message.get("toolCallId") not in calls:
            orphans.append(message.get("toolCallId"))
    return orphans


def _context_tokens(
    counter: TokenCounter, messages: Sequence[Mapping[str, Any]], frame_tokens: int
) -> int:
    """Context size: text with the counter; each snapcompact frame at its reader's bill.

    oh-my-pi counts the summary and its text blocks as text and every image block at a
    flat per-frame figure; here that figure is the reading model's billing estimate.
    """
    total = 0
    for message in messages:
        blocks = message.get("blocks")
        if message.get("role") == "compactionSummary" and blocks:
            texts = [message["summary"], *(b["text"] for b in blocks if b["type"] == "text")]
            images = sum(1 for b in blocks if b["type"] == "image")
            total += sum(counter.count_texts(texts)) + images * frame_tokens
        else:
            total += counter.count_message(message)
    return total


# -- shared acceptance ----------------------------------------------------------------------
def _check_acceptance(session: Session, result: CompactionResult) -> None:
    counter = TokenCounter("musepi")
    new_session = result.apply(session)
    before = build_session_context(session)
    after = build_session_context(new_session)
    assert after.compaction_id == new_session.leaf_id
    assert _orphan_results(after.messages) == []
    # Every fixture and sample is read by a Claude 4.5 model: 1568 px `11on16-bw` frames.
    assert all((f["font"], f["cols"]) == ("8x13", 1568 // 11) for f in _archive(result)["frames"])
    assert _context_tokens(counter, after.messages, ANTHROPIC_FRAME_TOKENS) < _context_tokens(
        counter, before.messages, ANTHROPIC_FRAME_TOKENS
    )
    assert result.tokens_after is not None and result.tokens_after < result.tokens_before


@pytest.mark.parametrize("parts", PI_FIXTURES, ids="/".join)
def test_corpus_fixture_applies_and_shrinks(parts: tuple[str, ...]) -> None:
    path = _fixture(parts)
    result = _result(path)
    assert result is not None
    assert result.method == "snapcompact"
    _check_acceptance(_session(path), result)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_bundled_sample_applies_and_shrinks(path: Path) -> None:
    result = _result(str(path))
    assert result is not None
    _check_acceptance(_session(str(path)), result)


# -- frames and geometry --------------------------------------------------------------------
TOGGLES = ("\x0e", "\x0f")


def _pages(text: str, capacity: int) -> list[str]:
    """Pages of at most `capacity` printed characters; the dim toggles print nothing."""
    pages: list[str] = []
    start, printed = 0, 0
    for i, ch in enumerate(text):
        if ch in TOGGLES:
            continue
        if printed == capacity:
            pages.append(text[start:i])
            start, printed = i, 0
        printed += 1
    if printed:
        pages.append(text[start:])
    return pages


def _printed(text: str) -> int:
    return sum(1 for ch in text if ch not in TOGGLES)


@pytest.mark.parametrize("parts", PI_FIXTURES, ids="/".join)
def test_frame_count_and_geometry(parts: tuple[str, ...]) -> None:
    path = _fixture(parts)
    session = _session(path)
    prep = _prepare(session)
    text = _expected_text(prep)
    cap = ANTHROPIC_CAPACITY
    assert len(text) > 2 * cap  # these fixtures are long enough to be imaged
    archive = _archive(_result(path))
    frames = archive["frames"]
    pages = _pages(text[cap:-cap], cap)

    assert len(frames) == len(pages) <= 80
    assert archive["textHead"] == text[:cap]
    # A dim span open at the last frame's end is re-opened at the start of the tail.
    assert archive["textTail"] in (text[-cap:], "\x0e" + text[-cap:])
    assert archive["text"] == text[:-cap] + archive["textTail"]
    assert archive["truncatedChars"] == 0
    assert [f["chars"] for f in frames] == [_printed(p) for p in pages]
    assert archive["totalChars"] == (
        sum(f["chars"] for f in frames) + len(archive["textHead"]) + len(archive["textTail"])
    )
    for frame, page in zip(frames, pages, strict=True):
        assert frame["mimeType"] == "image/png"
        assert (frame["cols"], frame["rows"]) == (1568 // 11, 1568 // 16)
        assert (frame["font"], frame["variant"], frame["lineRepeat"]) == ("8x13", "bw", 1)
        image = _png(frame)
        assert image.format == "PNG"
        # As tall as the rows printed: ceil(printed characters / 142 columns) x 16 px.
        assert image.size == (ANTHROPIC_FRAME_PX, math.ceil(_printed(page) / (1568 // 11)) * 16)
        assert image.mode == "P"
        assert {c for _, c in image.getcolors()} >= {0, 1}  # ink on paper, not a blank page


def test_frames_are_the_pages_in_reading_order() -> None:
    path = _fixture(PI_FIXTURES[1])
    prep = _prepare(_session(path))
    text = _expected_text(prep)
    cap = ANTHROPIC_CAPACITY
    frames = _archive(_result(path))["frames"]
    pages = _pages(text[cap:-cap], cap)
    # Each page re-opens a dim span the text before it left open.
    dim_open = text[:cap].rfind("\x0e") > text[:cap].rfind("\x0f")
    drawn: list[str] = []
    for page in pages:
        page = "\x0e" + page if dim_open else page
        dim_open = page.rfind("\x0e") > page.rfind("\x0f")
        drawn.append(page)
    shape = frame_shape("11on16-bw", ANTHROPIC_FRAME_PX)
    for index in (0, len(frames) // 2, len(frames) - 1):
        # Same pixels as the expected page drawn on its own.
        lone = Image.open(io.BytesIO(render_frame(drawn[index], shape)))
        assert _png(frames[index]).tobytes() == lone.tobytes()


def test_rebuilt_context_carries_frames_and_text_edges() -> None:
    path = _fixture(PI_FIXTURES[1])
    session = _session(path)
    result = _result(path)
    archive = _archive(result)
    frames = archive["frames"]
    assert sum(len(f["data"]) for f in frames) < 3_000_000  # all fit the rebuild budget
    summary = build_session_context(result.apply(session)).messages[0]
    assert summary["role"] == "compactionSummary"
    assert summary["summary"] == result.summary
    blocks = summary["blocks"]

    # The edges are sent as plain text (oh-my-pi toPlainText): no dim toggles, glyph = newline.
    def plain(t: str) -> str:
        return t.replace("\x0e", "").replace("\x0f", "").replace(NEWLINE, "\n")

    assert blocks[0]["type"] == "text" and blocks[0]["text"].startswith(plain(archive["textHead"]))
    assert blocks[-1]["type"] == "text" and blocks[-1]["text"].endswith(plain(archive["textTail"]))
    images = [b for b in blocks if b["type"] == "image"]
    assert [b["data"] for b in images] == [f["data"] for f in frames]
    llm = convert_to_llm([summary])[0]
    assert llm["role"] == "user"
    assert llm["content"][0] == {"type": "text", "text": result.summary}
    assert sum(1 for b in llm["content"] if b["type"] == "image") == len(frames)


def test_summary_sections_and_short_summary() -> None:
    path = _fixture(PI_FIXTURES[0])
    result = _result(path)
    archive = _archive(result)
    frames = archive["frames"]
    text_chars = len(archive["textHead"]) + len(archive["textTail"])
    assert result.short_summary == (
        f"Archived {archive['totalChars']:,} chars of history onto {len(frames)} "
        f"snapcompact frames (+{text_chars:,} chars as text)"
    )
    summary = result.summary
    assert summary.rstrip().endswith("HISTORY\n=======")
    assert "Archived transcript scopes" in summary and "Reading HISTORY" in summary
    assert f"{len(frames)} pictures" in summary
    assert f"{1568 // 11} columns x {1568 // 16} rows" in summary
    # before-compaction.jsonl has an earlier text summary: it opens the archive.
    assert "[Summary of earlier history]" in summary
    assert archive["text"].startswith("[Summary of earlier history] ")
    # FILES lists every file of the details (basename, grouped under its directories).
    details = result.details
    files = [*details["readFiles"], *details["modifiedFiles"]]
    assert files and "\nFILES\n=====\n" in summary
    listed = summary.split("\nFILES\n=====\n", 1)[1].split("\n\nHISTORY", 1)[0]
    assert "<files>" not in listed
    shown = files if len(files) <= 20 else sorted(files)[:20]
    for file in shown:
        assert file.rsplit("/", 1)[-1] in listed


# -- unfolding and determinism -------------------------------------------------------------
def _continue_after(session: Session, compacted: Session, leaf_id: str) -> Session:
    """`compacted` (compaction appended under `leaf_id`) with the rest of the original
    path re-attached under the compaction, as if the agent had carried on."""
    path = session.path()
    ids = [e.id for e in path]
    rest = path[ids.index(leaf_id) + 1 :]
    compaction = compacted.leaf
    assert compaction is not None and compaction.type == "compaction"
    kept_ids = set(ids[: ids.index(leaf_id) + 1])
    head = [e for e in compacted.entries if e.id in kept_ids]
    moved = [rest[0].copy_with(parentId=compaction.id), *rest[1:]]
    return compacted.copy_with(entries=(*head, compaction, *moved))


def test_second_compaction_unfolds_the_first_archive() -> None:
    path = _fixture(PI_FIXTURES[1])
    session = _session(path)
    full_path = session.path()
    earlier = next(
        e.id
        for e in reversed(full_path[: len(full_path) * 3 // 5])
        if e.type == "message" and e.role == "user"
    )
    first = compact(session, "snapcompact", leaf_id=earlier)
    assert first is not None
    continued = _continue_after(session, first.apply(session), earlier)
    assert continued.leaf_id == session.leaf_id

    prep = _prepare(continued)
    assert prep.previous_preserve_data == dict(first.preserve_data)
    second = compact(continued, "snapcompact")
    assert second is not None
    first_text, second_text = _archive(first)["text"], _archive(second)["text"]
    new_history = normalize_archive_text(
        serialize_scoped(
            convert_to_llm([*prep.messages_to_summarize, *prep.turn_prefix_messages]),
            include_thinking=False,
            dim_tool_results=True,
        )
    )
    # Each page re-opens a dim span left open by the page before (as the release does), so
    # the archive may hold DIM_ON markers inside a span already dim: they print nothing.
    expected = f"{first_text}{NEWLINE}{new_history}"
    assert _without_reopened_dim(second_text) == _without_reopened_dim(expected)
    assert len(second_text) - len(expected) == second_text.count("\x0e") - expected.count("\x0e")
    assert "[Summary of earlier history]" not in second.summary
    _check_acceptance(continued, second)


def _without_reopened_dim(text: str) -> str:
    """The text without DIM_ON markers met while dim is already on (no-ops when printed)."""
    out, dim = [], False
    for ch in text:
        if ch == "\x0e":
            if dim:
                continue
            dim = True
        elif ch == "\x0f":
            dim = False
        out.append(ch)
    return "".join(out)


def test_same_input_gives_identical_bytes() -> None:
    path = _fixture(PI_FIXTURES[0])
    again = compact(_session(path), "snapcompact", counter=TokenCounter("musepi"))
    first = _result(path)
    assert again is not None
    assert orjson.dumps(dict(again.preserve_data)) == orjson.dumps(dict(first.preserve_data))
    assert again.summary == first.summary
    assert again.short_summary == first.short_summary


# -- the frame cap and foveation --------------------------------------------------------------
_WORDS = "alpha beta gamma delta ledger refund invoice parse check retry cache batch".split()


def _long_session(turns: int, chars: int, seed: int = 7) -> tuple[Session, dict[str, str]]:
    """A linear session of plain user/assistant turns; returns it and each entry's scoped
    part (`¶user:…` / `¶ai:…`) as the archive serializes it."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    parts: dict[str, str] = {}
    parent = None
    for turn in range(turns):
        for role in ("user", "assistant"):
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < chars:
                words.append(rng.choice(_WORDS))
            text = f"t{turn} " + " ".join(words)
            entry_id = f"{len(records):08x}"
            message = (
                user_message(text, 1_700_000_000_000 + len(records))
                if role == "user"
                else assistant_message(
                    [{"type": "text", "text": text}],
                    1_700_000_000_000 + len(records),
                    model="claude-sonnet-4-5",
                    provider="anthropic",
                )
            )
            records.append(message_record(entry_id, parent, None, message))
            parts[entry_id] = ("¶user:" if role == "user" else "¶ai:") + text
            parent = entry_id
    header = {"type": "session", "version": 3, "id": "long", "cwd": "/tmp"}
    return Session(header, [Entry.from_record(r) for r in records]), parts


@pytest.fixture(scope="module")
def long_history() -> tuple[Session, CompactionPreparation, str]:
    session, parts = _long_session(turns=160, chars=1500)
    prep = _prepare(session)
    archived = (*prep.summarize_entry_ids, *prep.turn_prefix_entry_ids)
    text = NEWLINE.join(parts[i] for i in archived)
    return session, prep, text


@pytest.mark.parametrize("max_frames", [80, 10])
def test_frame_cap_foveates_the_middle(
    long_history: tuple[Session, CompactionPreparation, str], max_frames: int
) -> None:
    session, prep, text = long_history
    size = 256  # small frames keep the test fast; the layout rules are size-independent
    hq = (size // 11) * (size // 16)  # 11on16-bw
    lq = (size // 8) * (size // 16)  # the denser 8on16-bw
    result = _run(session, Snapcompact(frame_size=size, max_frames=max_frames), prep)
    archive = _archive(result)
    frames = archive["frames"]

    edge = min(3, (max_frames - 1) // 2)
    dense_chars = len(text) - 2 * hq - 2 * edge * hq
    dense_pages = math.ceil(dense_chars / lq)
    assert dense_pages > max_frames - 2 * edge  # the cap is really hit
    dropped = (dense_pages - (max_frames - 2 * edge)) * lq

    assert len(frames) == max_frames
    assert [f["cols"] for f in frames] == (
        [size // 11] * edge + [size // 8] * (max_frames - 2 * edge) + [size // 11] * edge
    )
    assert [(f["cols"], f["rows"]) for f in frames[edge : edge + 1]] == [(size // 8, size // 16)]
    assert archive["truncatedChars"] == dropped
    keep_from = hq + edge * hq
    assert archive["text"] == text[:keep_from] + text[keep_from + dropped :]
    assert archive["totalChars"] == len(text) - dropped
    assert archive["textHead"] == text[:hq] and archive["textTail"] == text[-hq:]
    assert f"About {dropped:,} characters of the oldest history were dropped" in result.summary
    # Full pages fill the frame; each frame is as tall as the rows it prints.
    for frame in frames:
        rows = math.ceil(frame["chars"] / frame["cols"])
        assert (_png(frame).size, _png(frame).mode) == ((size, rows * 16), "P")


def test_max_frames_above_the_hard_cap_is_clamped(
    long_history: tuple[Session, CompactionPreparation, str],
) -> None:
    session, prep, _ = long_history
    result = _run(session, Snapcompact(frame_size=256, max_frames=500), prep)
    assert len(_archive(result)["frames"]) == 80


# -- billing, vision, edge cases ---------------------------------------------------------------
def test_billing_estimate_and_tokens_after() -> None:
    path = str(SAMPLES[0])
    session = _session(path)
    prep = _prepare(session)
    result = _run(session, Snapcompact(), prep)
    archive = _archive(result)
    frames = len(archive["frames"])
    assert frames >= 1
    params = result.params
    assert params["frame_billing_tokens"] == ANTHROPIC_FRAME_TOKENS == 3293
    assert params["image_tokens"] == frames * ANTHROPIC_FRAME_TOKENS
    assert params["frame_model"] == "claude-sonnet-4-5"
    assert params["prompts"] == PromptSet.default().label
    # The strategy reports no size of its own: `compact()` measures the rebuilt context
    # (tests/test_compact_uniform.py recomputes it independently).
    assert result.tokens_after is None


def test_openai_reader_gets_its_shape_billing_and_detail() -> None:
    path = str(SAMPLES[0])
    session = _session(path)
    result = _run(session, Snapcompact(model="gpt-5"), _prepare(session))
    frames = _archive(result)["frames"]
    assert frames
    assert {(f["font"], f["cols"], f["rows"], f["detail"]) for f in frames} == {
        ("8x13", 1568 // 8, 1568 // 22, "original")
    }
    assert result.params["frame_billing_tokens"] == OPENAI_FRAME_TOKENS == 2882


def test_text_only_model_is_refused_unless_asked() -> None:
    session = _session(str(SAMPLES[-1]))
    with pytest.raises(StrategyUnavailable, match=r"gpt-3\.5-turbo"):
        compact(session, "snapcompact", model="gpt-3.5-turbo")
    allowed = compact(session, "snapcompact", model="gpt-3.5-turbo", require_vision=False)
    assert allowed is not None and allowed.method == "snapcompact"
    unknown = compact(session, "snapcompact", model="my-local-model-7b")
    assert unknown is not None


def test_pi_profile_is_refused() -> None:
    session = _session(str(SAMPLES[-1]))
    with pytest.raises(StrategyUnavailable, match="musepi profile"):
        compact(session, "snapcompact", settings=CompactionSettings.pi())


def test_empty_history_says_no_prior_history() -> None:
    session = _session(str(SAMPLES[-1]))
    prep = dataclasses.replace(
        _prepare(session),
        messages_to_summarize=(),
        turn_prefix_messages=(),
        previous_summary=None,
        previous_preserve_data=None,
        file_ops=FileOperations(),
    )
    result = _run(session, Snapcompact(), prep)
    assert result.summary == "No prior history."
    assert result.short_summary == "Archived 0 chars of history onto 0 snapcompact frames"
    assert result.details == {"readFiles": [], "modifiedFiles": []}


def test_remote_payload_is_removed_and_other_preserved_data_kept() -> None:
    session = _session(str(SAMPLES[-1]))
    prep = _prepare(session)
    previous = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}
    prep = dataclasses.replace(prep, previous_preserve_data={**previous, "notes": [1, 2]})
    result = _run(session, Snapcompact(), prep)
    assert set(result.preserve_data) == {"notes", "snapcompact"}
    assert result.preserve_data["notes"] == [1, 2]


def test_thinking_is_left_out_for_anthropic_readers_only() -> None:
    path = str(SAMPLES[0])
    session = _session(path)
    prep = _prepare(session)
    has_thinking = any(
        isinstance(b, Mapping) and b.get("type") == "thinking" and str(b.get("thinking")).strip()
        for m in prep.messages_to_summarize
        if m.get("role") == "assistant"
        for b in m.get("content") or []
    )
    assert has_thinking
    claude = _archive(_result(path))
    assert "¶think:" not in claude["text"]
    assert claude["text"] == _kept(_expected_text(prep), claude, ANTHROPIC_CAPACITY)
    gpt = _archive(_run(session, Snapcompact(model="gpt-5"), prep))
    assert "¶think:" in gpt["text"]
    gpt_capacity = (1568 // 8) * (1568 // 22)
    assert gpt["text"] == _kept(_expected_text(prep, include_thinking=True), gpt, gpt_capacity)


def _kept(expected: str, archive: Mapping[str, Any], capacity: int) -> str:
    """The archive text kept: the expected text, its last `capacity` characters replaced by
    the stored tail (which re-opens a dim span the frames left open)."""
    if "textTail" not in archive:
        return expected
    return expected[:-capacity] + archive["textTail"]


def test_thinking_sections_are_scrubbed_from_a_previous_archive() -> None:
    # oh-my-pi stripThinkingSections: split on the newline glyph, drop each `¶think:` section
    # (a section starts a segment or follows a blank line), drop empty segments. A thinking
    # section's later lines are separate segments and stay, as in the release.
    text = f"¶user:a\n\n¶think:x\n\n¶ai:b{NEWLINE}¶think:one{NEWLINE}two{NEWLINE}¶call:c"
    assert strip_thinking_sections(text) == f"¶user:a\n\n¶ai:b{NEWLINE}two{NEWLINE}¶call:c"
    archive = {"snapcompact": {"text": text, "frames": []}}
    assert previous_archive_text(archive, include_thinking=True) == text
    assert previous_archive_text(archive, include_thinking=False) == strip_thinking_sections(text)

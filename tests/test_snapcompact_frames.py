"""Snapcompact frame geometry, billing (spec §6.2) and PNG rendering."""

from __future__ import annotations

import io
import math
import random

import numpy as np
import pytest
from PIL import Image

from musepi_lab.strategies.snapcompact._plan import (
    MAX_FRAMES_DEFAULT,
    SHAPE_NAMES,
    FrameShape,
    frame_shape,
    plan_archive,
)
from musepi_lab.strategies.snapcompact._providers import (
    frame_billing_tokens,
    image_budget,
    shape_for_model,
)
from musepi_lab.strategies.snapcompact._render import _cell_bitmap, render_frame


@pytest.mark.parametrize(
    ("model", "shape", "size"),
    [
        ("claude-sonnet-4-5", "11on16-bw", 1568),
        ("claude-opus-4-7", "11on16-bw", 1932),
        ("claude-opus-4-5-20251101", "11on16-bw", 1568),
        ("gemini-2.5-pro", "8on22-bw", 2048),
        ("gpt-5.1-codex", "8on22-bw", 1568),
        ("kimi-k2", "8on22-bw", 1568),
        ("glm-4.6", "8on16-bw", 1568),
        ("mystery-model", "8on22-bw", 1568),
    ],
)
def test_shape_for_model(model, shape, size):
    s = shape_for_model(model)
    assert (s.name, s.size_px) == (shape, size)


def test_billing_formulas_of_the_spec():
    # Anthropic: ceil(min(ceil(S/28)^2, 4784) * 1.05); Google 1120; OpenAI ceil(min(ceil(S/32)^2, 10000) * 1.2)
    assert frame_billing_tokens("anthropic", 1568) == math.ceil(56**2 * 1.05) == 3293
    assert frame_billing_tokens("anthropic", 1932) == math.ceil(69**2 * 1.05) == 5000
    assert frame_billing_tokens("anthropic", 4000) == math.ceil(4784 * 1.05)  # the cap
    assert frame_billing_tokens("google", 2048) == 1120
    assert frame_billing_tokens("openai", 1568) == math.ceil(49**2 * 1.2) == 2882
    assert [image_budget(p) for p in ("anthropic", "openai", "google", "umans", "who")] == [
        90,
        200,
        200,
        10,
        5,
    ]


def test_geometry():
    s = frame_shape("8on22-bw", 1568)
    assert (s.cols, s.rows, s.capacity) == (196, 71, 196 * 71)


def test_short_text_stays_text():
    s = frame_shape("8on22-bw", 1568)
    plan = plan_archive("x" * (2 * s.capacity), s)
    assert plan.frames == 0 and plan.text_head == "x" * (2 * s.capacity)


def test_middle_pages_become_frames():
    s = frame_shape("8on22-bw", 1568)
    text = "".join(chr(65 + i % 26) for i in range(7 * s.capacity + 5))
    plan = plan_archive(text, s)
    assert plan.text_head == text[: s.capacity] and plan.text_tail == text[-s.capacity :]
    assert plan.frames == math.ceil((len(text) - 2 * s.capacity) / s.capacity) == 6
    assert "".join(p.text for p in plan.pages) == text[s.capacity : -s.capacity]
    assert plan.truncated_chars == 0


def test_foveation_past_the_frame_cap():
    s = frame_shape("8on22-bw", 1568)
    dense = frame_shape("8on16-bw", 1568)
    text = "y" * (200 * s.capacity)
    plan = plan_archive(text, s, max_frames=MAX_FRAMES_DEFAULT)
    assert plan.frames == 80
    assert [p.shape.name for p in plan.pages[:3]] == ["8on22-bw"] * 3
    assert [p.shape.name for p in plan.pages[-3:]] == ["8on22-bw"] * 3
    assert {p.shape.name for p in plan.pages[3:-3]} == {"8on16-bw"}
    assert len(plan.pages[3:-3]) == 74
    assert all(len(p.text) <= dense.capacity for p in plan.pages)
    dense_region = len(text) - 2 * s.capacity - 6 * s.capacity
    kept_dense = sum(len(p.text) for p in plan.pages[3:-3])
    # The oldest dense pages are the ones dropped: everything kept is the newest part.
    assert plan.truncated_chars == dense_region - kept_dense > 0
    assert plan_archive(text, s, max_frames=500).frames == 80  # hard cap


def test_png_opens_at_planned_size_and_is_deterministic():
    s = frame_shape("11on16-bw", 1568)
    page = "def f(x):█    return x + 1█" * 50
    data = render_frame(page, s)
    img = Image.open(io.BytesIO(data))
    assert img.size == (1568, 1568) and img.mode == "1"
    assert render_frame(page, s) == data
    # Ink only where there is text: the bottom rows of this short page are blank (white).
    pixels = img.convert("L").load()
    assert all(pixels[x, 1560] == 255 for x in range(0, 1568, 7))
    assert any(pixels[x, y] == 0 for x in range(0, 200) for y in range(0, 16))


def reference_pixels(text: str, shape: FrameShape) -> np.ndarray:
    """White (True) / ink pixels of a page: each character's cell pasted with plain loops."""
    image = np.ones((shape.size_px, shape.size_px), dtype=bool)
    for i, ch in enumerate(text[: shape.capacity]):
        row, col = divmod(i, shape.cols)
        top, left = row * shape.cell_h, col * shape.cell_w
        image[top : top + shape.cell_h, left : left + shape.cell_w] = ~_cell_bitmap(ch, shape)
    return image


def decoded(png: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(png))
    assert img.mode == "1"
    return np.array(img, dtype=bool)


PAGE_CHARS = [
    *(chr(c) for c in range(0x20, 0x7F)),
    *(chr(c) for c in range(0xA0, 0x100)),
    "\u2588",  # newline mark: a solid cell
    "\x0e",  # outside the font: `?`
    "\u2192",
    "\U0001f600",
    "\ud800",  # a lone surrogate, as a cut through a pair leaves
]


@pytest.mark.parametrize("name", SHAPE_NAMES)
@pytest.mark.parametrize("size", [1568, 203, 37])
def test_frame_pixels_match_cell_by_cell_layout(name: str, size: int) -> None:
    # Sizes that leave a right and bottom margin (203, 37) or fill whole bytes (1568).
    shape = frame_shape(name, size)
    rng = random.Random(size)
    for length in (shape.capacity, shape.capacity // 3 + 1):
        page = "".join(rng.choice(PAGE_CHARS) for _ in range(length))
        got = decoded(render_frame(page, shape))
        assert got.shape == (size, size)
        assert np.array_equal(got, reference_pixels(page, shape))


def test_frame_smaller_than_a_cell_is_blank_paper() -> None:
    shape = frame_shape("11on16-bw", 10)
    assert shape.capacity == 0
    assert decoded(render_frame("ignored", shape)).all()


def test_text_beyond_the_page_is_not_drawn() -> None:
    shape = frame_shape("8on16-bw", 64)
    page = "x" * shape.capacity
    assert render_frame(page + "overflow", shape) == render_frame(page, shape)

"""Snapcompact frame geometry, billing (spec §6.2, oh-my-pi 18.2.3) and PNG rendering."""

from __future__ import annotations

import io
import math
import random

import numpy as np
import pytest
from PIL import Image

from musepi_lab.strategies.snapcompact._font import font_glyphs, parse_hex_font
from musepi_lab.strategies.snapcompact._plan import (
    MAX_FRAMES_DEFAULT,
    FrameShape,
    frame_shape,
    plan_archive,
)
from musepi_lab.strategies.snapcompact._providers import (
    frame_billing_tokens,
    image_billing_tokens,
    image_budget,
    max_frames_for_data_budget,
    provider_frame_budget,
    shape_for_model,
)
from musepi_lab.strategies.snapcompact._render import render_frame


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


@pytest.mark.parametrize(
    ("api", "shape"),
    [
        ("anthropic-messages", "11on16-bw"),
        ("bedrock-converse-stream", "11on16-bw"),
        ("openai-responses", "8on22-bw"),
        ("google-vertex", "8on22-bw"),
        ("some-other-api", "8on22-bw"),
    ],
)
def test_unmeasured_model_gets_its_api_familys_shape(api: str, shape: str) -> None:
    # oh-my-pi FAMILY_VARIANT: anthropic 11on16-bw, google/openai/unknown 8on22-bw, at 1568 px.
    s = shape_for_model("my-local-model", api)
    assert (s.name, s.size_px) == (shape, 1568)


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


def test_image_billing_by_provider_api() -> None:
    # oh-my-pi familyBilling: the wire API decides, a provider id maps to its API.
    assert image_billing_tokens("anthropic-messages", 1568, 1568) == 3293
    assert image_billing_tokens("bedrock-converse-stream", 1932, 1932) == 5000
    assert image_billing_tokens("openai-responses", 1568, 1568) == 2882
    assert image_billing_tokens("openai-codex", 1568, 1568) == 2882
    assert image_billing_tokens("google-generative-ai", 2048, 2048) == 1120
    assert image_billing_tokens("google", 100, 100) == 1120  # a flat budget per image
    # Unknown APIs are billed like Anthropic (the safe ceiling).
    assert image_billing_tokens("who-knows", 1568, 1568) == 3293
    # A cropped image counts its own patches: ceil(1568/28) x ceil(374/28) = 56 x 14.
    assert image_billing_tokens("anthropic", 1568, 374) == math.ceil(56 * 14 * 1.05)
    assert image_billing_tokens("openai", 1568, 374, detail="high") == math.ceil(49 * 12 * 1.2)
    assert image_billing_tokens("openai", 4000, 4000, detail="high") == math.ceil(2500 * 1.2)
    with pytest.raises(ValueError, match="detail"):
        image_billing_tokens("openai", 10, 10, detail="low")
    with pytest.raises(ValueError, match="negative"):
        image_billing_tokens("openai", -1, 10)


def test_frame_caps() -> None:
    # maxFramesForDataBudget: floor(3,000,000 / 170,000); providerFrameBudget: min(budget, 80).
    assert max_frames_for_data_budget() == 17
    assert [provider_frame_budget(p) for p in ("anthropic", "google-vertex", "groq")] == [80, 80, 5]


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
    # 1,350 characters on 142 columns print 10 rows of 16 px: the frame is cropped to them.
    assert img.size == (1568, 10 * 16) and img.mode == "P"
    # Nothing dim: a 1-bit palette of white and black (IHDR bit depth at byte 24).
    assert data[24] == 1 and img.getpalette() == [255, 255, 255, 0, 0, 0]
    assert render_frame(page, s) == data
    # Dim text adds gray (128) as a third color: 2-bit.
    dimmed = render_frame("<out>█\x0eok\x0f█</out>", s)
    assert dimmed[24] == 2
    assert Image.open(io.BytesIO(dimmed)).getpalette() == [255, 255, 255, 0, 0, 0, 128, 128, 128]


A_GLYPH = bytes.fromhex("000018244242427E424242" + "0000")
"""`A` in misc-fixed 8x13.bdf (ucs-fonts v1.57): rows 00 00 18 24 42 42 42 7E 42 42 42 00 00."""


def test_vendored_font_is_misc_fixed_8x13() -> None:
    glyphs = font_glyphs()
    assert len(glyphs) == 3703  # CHARS 3703 in the BDF
    assert glyphs[ord("A")] == A_GLYPH
    assert glyphs[ord(" ")] == bytes(13)
    assert all(len(rows) == 13 for rows in glyphs.values())


def test_bad_font_line_names_file_and_line() -> None:
    with pytest.raises(ValueError, match=r"font.hex:2: bad glyph line"):
        parse_hex_font("0041:" + "00" * 13 + "\n0042:zz", source="font.hex")


PAPER, INK, DIM = 0, 1, 2


def reference_pixels(text: str, shape: FrameShape) -> np.ndarray:
    """Palette indices of a page drawn with plain loops: each glyph's 8x13 bits at the top
    left of its cell, the newline mark a solid black cell, dim text gray, toggles 0-wide;
    the image as tall as the rows used."""
    glyphs = font_glyphs()
    placed: list[tuple[int, str, bool]] = []
    dim, cell = False, 0
    for ch in text:
        if ch in "\x0e\x0f":
            dim = ch == "\x0e"
            continue
        if cell >= shape.capacity:
            break
        placed.append((cell, ch, dim))
        cell += 1
    rows = max(1, math.ceil(cell / shape.cols)) if shape.cols else 1
    image = np.zeros((min(rows, max(shape.rows, 1)) * shape.cell_h, shape.size_px), np.uint8)
    for at, ch, dimmed in placed:
        row, col = divmod(at, shape.cols)
        top, left = row * shape.cell_h, col * shape.cell_w
        if ch == "\u2588":
            image[top : top + shape.cell_h, left : left + shape.cell_w] = INK
            continue
        bits = glyphs.get(ord(ch), glyphs[0])
        for y in range(min(13, shape.cell_h)):
            for x in range(min(8, shape.cell_w)):
                if bits[y] >> (7 - x) & 1:
                    image[top + y, left + x] = DIM if dimmed else INK
    return image


def decoded(png: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(png))
    assert img.mode == "P"
    return np.array(img)


PAGE_CHARS = [
    *(chr(c) for c in range(0x20, 0x7F)),
    *(chr(c) for c in range(0xA0, 0x100)),
    "\u2588",  # newline mark: a solid cell
    "\x0e",  # dim on: zero-width
    "\x0f",  # dim off
    "\u03bb",  # Greek lambda: misc-fixed draws it
    "\u2192",  # in the font too
    "\ue000",  # private use: not in the font, prints the default character
]


@pytest.mark.parametrize("name", ["8on22-bw", "8on16-bw", "11on16-bw"])
@pytest.mark.parametrize("size", [1568, 203, 37])
def test_frame_pixels_match_cell_by_cell_layout(name: str, size: int) -> None:
    # Sizes that leave a right margin (203, 37) or fill whole bytes (1568).
    shape = frame_shape(name, size)
    rng = random.Random(size)
    for length in (shape.capacity + 40, shape.capacity // 3 + 1):
        page = "".join(rng.choice(PAGE_CHARS) for _ in range(length))
        got = decoded(render_frame(page, shape))
        assert got.shape[1] == size
        assert np.array_equal(got, reference_pixels(page, shape))


def test_wide_character_takes_two_cells_and_never_straddles_a_row() -> None:
    shape = frame_shape("8on16-bw", 64)  # 8 columns
    # Seven narrow characters, then a wide one: it cannot start in the last column, so it
    # opens the second row, and the character after it sits two cells further.
    page = "abcdefg\u4e2dz"
    got = decoded(render_frame(page, shape))
    assert got.shape == (2 * 16, 64)
    z = reference_pixels("z", frame_shape("8on16-bw", 16))[:, :8]
    assert z.any() and np.array_equal(got[16:32, 16:24], z)
    assert not got[0:16, 56:64].any()  # the padded last cell of row one stays paper


def test_frame_smaller_than_a_cell_is_blank_paper() -> None:
    shape = frame_shape("11on16-bw", 10)
    assert shape.capacity == 0
    assert not decoded(render_frame("ignored", shape)).any()


def test_text_beyond_the_page_is_not_drawn() -> None:
    shape = frame_shape("8on16-bw", 64)
    page = "x" * shape.capacity
    assert render_frame(page + "overflow", shape) == render_frame(page, shape)


def test_cjk_heavy_text_goes_on_the_silver_grid() -> None:
    # oh-my-pi 18.2.3 resolveShapeForText: at least 8 wide characters making at least a
    # quarter of the graphic ones, and Silver drawing all but 5 %, choose `silver16-bw`.
    from musepi_lab.strategies.snapcompact._renderability import is_cjk_heavy, needs_silver

    assert needs_silver("記録 請求 返金 解析 確認 ok")
    assert not is_cjk_heavy("記録 請求 返金 解析 " + "x" * 100)  # 8 wide of 108
    assert not needs_silver("中文")  # fewer than 8 wide characters
    assert not needs_silver("\ue000" * 10 + "記録請求返金解析確認")  # private use: 50 % `?`


def test_silver_frames_are_rgb_pngs_one_cell_per_wide_character() -> None:
    # The release writes Silver frames as 8-bit RGB (its glyphs are anti-aliased); a wide
    # character takes one 16x16 cell there.
    s = frame_shape("silver16-bw", 64)  # 4 x 4 cells
    data = render_frame("記録請求返金", s)
    img = Image.open(io.BytesIO(data))
    assert (data[24], data[25]) == (8, 2) and img.mode == "RGB"
    assert img.size == (64, 2 * 16)  # six cells: two rows


def test_a_frame_printed_in_dim_ink_alone_is_a_one_bit_white_and_gray_png() -> None:
    # As oh-my-pi 18.2.3 writes such a frame (seen on a Codex rollout's last frame): the
    # palette holds only the colors used, white then gray, so one bit per pixel.
    from musepi_lab.strategies.snapcompact._render import DIM_INK, PAPER, encode_palette_png

    pixels = np.full((3, 10), PAPER, dtype=np.uint8)
    pixels[1, 2:7] = DIM_INK
    png = encode_palette_png(pixels)
    assert png[12:16] == b"IHDR" and png[24] == 1 and png[25] == 3  # 1-bit, palette
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P" and image.getpalette()[:6] == [255, 255, 255, 128, 128, 128]
    gray = np.array(image.convert("L"))
    assert sorted(np.unique(gray).tolist()) == [128, 255]
    assert (gray == 128).sum() == 5


# -- pagination ---------------------------------------------------------------------------------
_TOGGLES = ("\x0e", "\x0f")  # the zero-width dim-ink toggles (on, off)


@pytest.mark.parametrize("seed", range(40))
def test_pagination_of_narrow_text_with_ink_toggles_follows_the_cell_walk(seed):
    """`paginateCells` on one-cell characters: a page ends when the next visible character
    does not fit; toggles take no cell and stay with the page they follow. Checked on the
    pages' own counts, with no second implementation."""
    from musepi_lab.strategies.snapcompact._plan import paginate

    rng = random.Random(seed)
    alphabet = ["a", "b", " ", "\u2588", "\u00e9", *_TOGGLES]
    text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
    capacity = rng.randrange(1, 9)
    shape = FrameShape("t", 1, capacity, capacity)  # one row of `capacity` one-pixel cells
    assert shape.capacity == capacity
    pages = paginate(text, shape)

    def visible(page: str) -> int:
        return sum(ch not in _TOGGLES for ch in page)

    assert "".join(pages) == (text if visible(text) else "")
    assert all(0 < visible(p) <= capacity for p in pages)
    assert all(visible(p) == capacity for p in pages[:-1])
    assert all(p[0] not in _TOGGLES for p in pages[1:])

"""Per-provider facts for snapcompact frames (oh-my-pi 18.2.3): the billing family of a wire
API, what an image is billed, how many images a request may carry, the shape a model reads.

Billing follows the wire API carrying the request (`billingFamily`); the frame shape follows
the model id (`idealShapeVariant`), falling back to the API family's shape.
"""

from __future__ import annotations

import math
import re

from ...context._summaries import FRAME_DATA_BYTES_BUDGET
from ._plan import MAX_FRAMES_DEFAULT, FrameShape, frame_shape

API_FAMILIES: dict[str, str] = {
    "anthropic-messages": "anthropic",
    "bedrock-converse-stream": "anthropic",
    "openai-completions": "openai",
    "openai-responses": "openai",
    "openai-codex-responses": "openai",
    "azure-openai-responses": "openai",
    "google-generative-ai": "google",
    "google-gemini-cli": "google",
    "google-vertex": "google",
}
"""Billing family of each wire API (`billingFamily`); any other API is `unknown`."""

PROVIDER_APIS: dict[str, str] = {
    "anthropic": "anthropic-messages",
    "amazon-bedrock": "bedrock-converse-stream",
    "openai": "openai-responses",
    "openai-codex": "openai-codex-responses",
    "azure-openai": "azure-openai-responses",
    "google": "google-generative-ai",
    "google-gemini-cli": "google-gemini-cli",
    "google-vertex": "google-vertex",
}
"""The wire API a provider id speaks, for callers that know the provider only."""

BILLING_FAMILIES: tuple[str, ...] = ("anthropic", "google", "openai", "unknown")

IMAGE_DETAILS: tuple[str, ...] = ("original", "high")
"""OpenAI `detail` values billed here: `original` (10,000-patch budget, what snapcompact
sends) and `high` (2,500-patch budget, per the release's notes)."""

_OPENAI_PATCH_BUDGET = {"original": 10_000, "high": 2_500}

PROVIDER_IMAGE_BUDGETS: dict[str, int] = {
    "anthropic": 90,
    "amazon-bedrock": 90,
    "openai": 200,
    "openai-codex": 200,
    "google": 200,
    "google-vertex": 200,
    "google-gemini-cli": 200,
    "openrouter": 90,
    "umans": 10,
}
"""Images a single request may carry, per provider id (`PROVIDER_IMAGE_BUDGETS`)."""

DEFAULT_PROVIDER_IMAGE_BUDGET = 5
"""Image budget of a provider not listed (`DEFAULT_PROVIDER_IMAGE_BUDGET`)."""


def billing_family(provider_or_api: str | None) -> str:
    """The billing family of a wire API, a provider id or a family name.

    `anthropic`, `google`, `openai` or `unknown` (billed like Anthropic, the safe ceiling).
    """
    key = (provider_or_api or "").lower()
    if key in BILLING_FAMILIES:
        return key
    return API_FAMILIES.get(PROVIDER_APIS.get(key, key), "unknown")


def image_billing_tokens(
    provider_or_api: str | None, width: int, height: int, *, detail: str = "original"
) -> int:
    """Input tokens one image of `width` x `height` pixels is billed, per provider API.

    Anthropic (and unknown APIs): 28-px patches, at most 4,784, plus 5 %. Google (Gemini
    3.x): a fixed 1,120 per image. OpenAI: 32-px patches within the `detail` budget
    (`original` 10,000, `high` 2,500), times 1.2. For a square frame this is the release's
    `frameTokenEstimate`.

    Args:
        provider_or_api: A wire API (`anthropic-messages`), a provider id (`openai`) or a
            billing family.
        width: Image width in pixels.
        height: Image height in pixels.
        detail: OpenAI's `detail` (ignored by the other families).

    Raises:
        ValueError: A negative size, or an OpenAI `detail` not in `IMAGE_DETAILS`.
    """
    if width < 0 or height < 0:
        raise ValueError(f"image size {width}x{height} is negative")
    family = billing_family(provider_or_api)
    if family == "google":
        return 1120
    if family == "openai":
        if detail not in _OPENAI_PATCH_BUDGET:
            raise ValueError(f"unknown image detail {detail!r}; expected one of {IMAGE_DETAILS}")
        patches = min(math.ceil(width / 32) * math.ceil(height / 32), _OPENAI_PATCH_BUDGET[detail])
        return math.ceil(patches * 1.2)
    patches = min(math.ceil(width / 28) * math.ceil(height / 28), 4784)
    return math.ceil(patches * 1.05)


def frame_billing_tokens(provider_or_api: str | None, size_px: int) -> int:
    """Tokens one frame is billed (`frameTokenEstimate`): a square of the shape's frame size,
    whatever height the PNG was cropped to."""
    return image_billing_tokens(provider_or_api, size_px, size_px)


def image_detail(provider_or_api: str | None) -> str | None:
    """The `detail` hint frames carry: `original` for OpenAI APIs, else None."""
    return "original" if billing_family(provider_or_api) == "openai" else None


def image_budget(provider: str | None) -> int:
    """How many images one request to `provider` may carry (`providerImageBudget`)."""
    return PROVIDER_IMAGE_BUDGETS.get(provider or "", DEFAULT_PROVIDER_IMAGE_BUDGET)


FRAME_DATA_BYTES_ESTIMATE = 170_000
"""Upper bound of one frame's base64 payload (`FRAME_DATA_BYTES_ESTIMATE`)."""


def max_frames_for_data_budget(max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET) -> int:
    """Frames a request's image-data budget holds (`maxFramesForDataBudget`; 17 by default)."""
    return max(1, max_frame_data_bytes // FRAME_DATA_BYTES_ESTIMATE)


def provider_frame_budget(provider: str | None) -> int:
    """The archive frame cap for `provider`: its image budget, at most 80."""
    return min(image_budget(provider), MAX_FRAMES_DEFAULT)


_MODEL_PROVIDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"claude|anthropic|opus|sonnet|haiku", re.IGNORECASE), "anthropic"),
    (re.compile(r"gemini|gemma", re.IGNORECASE), "google"),
    (re.compile(r"gpt|codex|\bo[134]\b|\bo[134]-", re.IGNORECASE), "openai"),
)


def provider_for_model(model_id: str | None) -> str | None:
    """The first-party provider of a model line (`anthropic`, `google`, `openai`), or None:
    the billing guess for a reader named by model id alone."""
    for pattern, provider in _MODEL_PROVIDERS:
        if model_id and pattern.search(model_id):
            return provider
    return None


_FAMILY_SHAPE = {"anthropic": "11on16-bw", "google": "8on22-bw", "openai": "8on22-bw"}

_HIGH_RES_ANTHROPIC = ("11on16-bw", 1932)

_MODEL_SHAPES: tuple[tuple[re.Pattern[str], tuple[str, int | None]], ...] = (
    (re.compile(r"claude.*(fable|mythos)", re.IGNORECASE), _HIGH_RES_ANTHROPIC),
    (re.compile(r"claude", re.IGNORECASE), ("11on16-bw", None)),
    (re.compile(r"gemini", re.IGNORECASE), ("8on22-bw", 2048)),
    (re.compile(r"gpt|codex", re.IGNORECASE), ("8on22-bw", None)),
    (re.compile(r"kimi", re.IGNORECASE), ("8on22-bw", None)),
    (re.compile(r"glm", re.IGNORECASE), ("8on16-bw", None)),
)
"""First-match model-id rules (`MODEL_VARIANTS`): shape name and frame size (None: 1568)."""

_ANTHROPIC_LINE = re.compile(
    r"(?:^|[/_.:-])(?:claude-)?(opus|sonnet|haiku|fable|mythos)(?:[-_.](\d{1,2})(?!\d)(?:[-_.](\d{1,2})(?!\d))?)?",
    re.IGNORECASE,
)


def _high_res_anthropic(model_id: str) -> bool:
    """Opus 4.7 and later, Fable and Mythos (they read 1932-px frames natively)."""
    m = model_id.lower()
    if "claude" not in m and not re.search(r"(?:^|/)(opus|fable|mythos)", m):
        return False
    match = _ANTHROPIC_LINE.search(m)
    if match is None:
        return False
    family, major, minor = match.group(1), match.group(2), match.group(3)
    if family in ("fable", "mythos"):
        return True
    if family != "opus" or major is None:
        return False
    return (int(major), int(minor or 0)) >= (4, 7)


def shape_for_model(model_id: str | None, provider_or_api: str | None = None) -> FrameShape:
    """The frame shape a model reads best (`resolveShape` with `auto`).

    The model id picks the shape and frame size of its line; an unmeasured (or absent) model
    gets the shape of the API's billing family at 1,568 px.
    """
    if model_id:
        if _high_res_anthropic(model_id):
            return frame_shape(*_HIGH_RES_ANTHROPIC)
        for pattern, (name, size) in _MODEL_SHAPES:
            if pattern.search(model_id):
                return frame_shape(name, size or 1568)
    family = billing_family(provider_or_api)
    return frame_shape(_FAMILY_SHAPE.get(family, "8on22-bw"), 1568)

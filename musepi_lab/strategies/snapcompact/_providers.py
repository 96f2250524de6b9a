"""Per-provider facts for snapcompact frames: API family of a model, its frame shape, what a frame is billed."""

from __future__ import annotations

import math
import re

from ._plan import FrameShape, frame_shape


def api_family(model_id: str) -> str:
    """The billing family of a model id: anthropic, google, openai, kimi, glm or unknown."""
    m = model_id.lower()
    if "claude" in m or "anthropic" in m or "opus" in m or "sonnet" in m or "haiku" in m:
        return "anthropic"
    if "gemini" in m or "google" in m:
        return "google"
    if m.startswith(("gpt", "o1", "o3", "o4", "codex")) or "openai" in m or "codex" in m:
        return "openai"
    if "kimi" in m:
        return "kimi"
    if "glm" in m:
        return "glm"
    return "unknown"


def _opus_ge_47(model_id: str) -> bool:
    """True for Claude Opus 4.7 and later (`claude-opus-4-7`, `opus-4.8`, `opus-5`)."""
    match = _OPUS_VERSION.search(model_id)
    if match is None:
        return False
    major = int(match.group(1))
    minor = int(match.group(2)) if match.group(2) and len(match.group(2)) <= 2 else 0
    return (major, minor) >= (4, 7)


def frame_billing_tokens(family: str, size_px: int) -> int:
    """Estimated input tokens one frame is billed as, per API family (spec §6.2)."""
    if family == "anthropic":
        return math.ceil(min(math.ceil(size_px / 28) ** 2, 4784) * 1.05)
    if family == "google":
        return 1120
    if family in ("openai", "kimi"):
        return math.ceil(min(math.ceil(size_px / 32) ** 2, 10000) * 1.2)
    return math.ceil(min(math.ceil(size_px / 28) ** 2, 4784) * 1.05)


def image_budget(provider: str) -> int:
    """How many images one request to `provider` may carry."""
    return IMAGE_BUDGETS.get(provider.lower(), 5)


IMAGE_BUDGETS: dict[str, int] = {
    "anthropic": 90,
    "bedrock": 90,
    "openrouter": 90,
    "openai": 200,
    "codex": 200,
    "google": 200,
    "umans": 10,
}
"""Images a single request may carry, per provider; unknown providers get 5."""


_OPUS_VERSION = re.compile(r"opus[-_. ]?(\d+)(?:[-_.](\d+))?")


def shape_for_model(model_id: str) -> FrameShape:
    """The frame shape a model reads best (spec §6.2 "Shapes")."""
    m = model_id.lower()
    family = api_family(m)
    if family == "anthropic":
        big = ("opus" in m and _opus_ge_47(m)) or "fable" in m or "mythos" in m
        return frame_shape("11on16-bw", 1932 if big else 1568)
    if family == "google":
        return frame_shape("8on22-bw", 2048)
    if family in ("openai", "kimi"):
        return frame_shape("8on22-bw", 1568)
    if family == "glm":
        return frame_shape("8on16-bw", 1568)
    return frame_shape("8on22-bw", 1568)

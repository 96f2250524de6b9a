"""Token counting: pi and MusePi estimators and real BPE tokenizers, cached per entry."""

from ._counter import METHODS, TokenCounter
from ._estimate import (
    FRAME_TOKEN_ESTIMATE,
    MUSEPI_IMAGE_TOKENS,
    PI_IMAGE_CHARS,
    estimate_tokens_musepi,
    estimate_tokens_pi,
    js_stringify,
    text_fragments,
    utf8_len,
    utf16_len,
)

__all__ = [
    "FRAME_TOKEN_ESTIMATE",
    "METHODS",
    "MUSEPI_IMAGE_TOKENS",
    "PI_IMAGE_CHARS",
    "TokenCounter",
    "estimate_tokens_musepi",
    "estimate_tokens_pi",
    "js_stringify",
    "text_fragments",
    "utf16_len",
    "utf8_len",
]

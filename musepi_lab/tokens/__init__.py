"""Token counting: pi and MusePi estimators and real BPE tokenizers, cached per entry."""

from ._bpe import BPE_ENCODINGS, RankFileError, get_encoding
from ._composition import (
    COMPOSITION_KINDS,
    context_composition_of,
    message_composition,
    message_parts,
)
from ._counter import METHODS, TokenCounter
from ._estimate import (
    FRAME_TOKEN_ESTIMATE,
    MUSEPI_IMAGE_TOKENS,
    PI_IMAGE_CHARS,
    estimate_tokens_musepi,
    estimate_tokens_pi,
    extra_tokens,
    js_stringify,
    text_fragments,
    utf8_len,
    utf16_len,
)

__all__ = [
    "BPE_ENCODINGS",
    "COMPOSITION_KINDS",
    "FRAME_TOKEN_ESTIMATE",
    "METHODS",
    "MUSEPI_IMAGE_TOKENS",
    "PI_IMAGE_CHARS",
    "RankFileError",
    "TokenCounter",
    "context_composition_of",
    "estimate_tokens_musepi",
    "estimate_tokens_pi",
    "extra_tokens",
    "get_encoding",
    "js_stringify",
    "message_composition",
    "message_parts",
    "text_fragments",
    "utf8_len",
    "utf16_len",
]

"""The one measurement of a context's size, before and after a compaction.

`compact()` reports `tokens_after` for every strategy by rebuilding the context the model
would see (`build_session_context` in the settings' profile) and counting it here, so a
masked, pruned, truncated, summarized or imaged session is measured on equal terms with the
original. Strategies never report their own size.

What is counted:

- text, with the run's `TokenCounter` (images taken out first, so the counter's own image
  estimate never enters);
- provider-native history replayed from a remote compaction, as its JSON text (the
  counter's estimators do not see it, and leaving it out would make a remote compaction
  look free);
- every image (pasted images and snapcompact frames alike) by one declared billing rule,
  `billed_image_tokens`: the image's pixel size read from its PNG header, billed as the
  API family of the model in force bills it.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..compaction._result import CompactionResult
from ..context._build import UNSET, build_session_context
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ..tokens._estimate import MUSEPI_IMAGE_TOKENS, js_stringify
from ._context import CompactionContext
from .snapcompact._providers import image_billing_tokens, provider_for_model

# The measuring copy's entry gets a fixed time (the count never depends on it) and a fresh
# id drawn by `apply`, which also never collides with the session's ids.
_MEASURE_TIMESTAMP = "1970-01-01T00:00:00.000Z"

UNKNOWN_SIZE_IMAGE_TOKENS = MUSEPI_IMAGE_TOKENS
"""Tokens of an image whose pixel size cannot be read (not a PNG, or no data): oh-my-pi's
per-image estimate."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Signature (8) + IHDR length (4) + "IHDR" (4) + width (4) + height (4) = 24 bytes,
# which base64 encodes in the first 32 characters.
_PNG_HEAD_B64_CHARS = 32


def png_size(data: str) -> tuple[int, int] | None:
    """`(width, height)` of a base64 PNG from its IHDR header, or None if it is not one."""
    try:
        head = base64.b64decode(data[:_PNG_HEAD_B64_CHARS], validate=False)
    except (binascii.Error, ValueError):
        return None
    if len(head) < 24 or not head.startswith(_PNG_SIGNATURE) or head[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def billed_image_tokens(model_id: str | None, size: tuple[int, int] | None) -> int:
    """The one billing rule for an image in a measured context.

    Args:
        model_id: The model in force (its API family picks the rule); None: unknown family.
        size: `(width, height)` in pixels, or None when unknown.

    Returns:
        The tokens the image is billed as: `image_billing_tokens` of the model's provider
        API on a square of the image's longer side (a snapcompact frame is billed at its full
        frame size, however short its crop; spec §6.2), or `UNKNOWN_SIZE_IMAGE_TOKENS`
        without a size.
    """
    if size is None:
        return UNKNOWN_SIZE_IMAGE_TOKENS
    side = max(size)
    return image_billing_tokens(provider_for_model(model_id), side, side)


def _image_blocks(message: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("content", "blocks"):
        blocks = message.get(key)
        if isinstance(blocks, list):
            yield from (b for b in blocks if isinstance(b, Mapping) and b.get("type") == "image")


def _without_images(message: Mapping[str, Any]) -> Mapping[str, Any]:
    stripped: dict[str, Any] | None = None
    for key in ("content", "blocks"):
        blocks = message.get(key)
        if isinstance(blocks, list) and any(
            isinstance(b, Mapping) and b.get("type") == "image" for b in blocks
        ):
            stripped = dict(message) if stripped is None else stripped
            stripped[key] = [
                b for b in blocks if not (isinstance(b, Mapping) and b.get("type") == "image")
            ]
    return message if stripped is None else stripped


def _image_size(block: Mapping[str, Any]) -> tuple[int, int] | None:
    data = block.get("data")
    return png_size(data) if isinstance(data, str) else None


def measure_messages(
    messages: Sequence[Mapping[str, Any]], counter: TokenCounter, model_id: str | None
) -> int:
    """Tokens of a context's messages: text by `counter`, provider-native items as JSON
    text, images by `billed_image_tokens`."""
    total = counter.count_messages([_without_images(m) for m in messages])
    for message in messages:
        payload = message.get("providerPayload")
        if isinstance(payload, Mapping) and isinstance(payload.get("items"), list):
            total += counter.count_text(js_stringify(payload["items"]))
        for block in _image_blocks(message):
            total += billed_image_tokens(model_id, _image_size(block))
    return total


def first_path_entry_id(session: Session, leaf_id: str | None) -> str | None:
    """Id of the first entry (with an id) on the path to the leaf; None for an empty path.

    Rewrite-only results name it as their `first_kept_entry_id`: nothing is dropped.
    """
    return next((e.id for e in session.path(leaf_id) if e.id is not None), None)


def session_context_tokens(
    session: Session, counter: TokenCounter, *, profile: str, leaf_id: str | None = None
) -> int:
    """Tokens of the context the model sees at a leaf of `session` (`measure_messages`).

    Args:
        session: The session.
        counter: The run's token counter.
        profile: The profile whose context rules rebuild the messages.
        leaf_id: The leaf (None: the session leaf).
    """
    context = build_session_context(session, UNSET if leaf_id is None else leaf_id, profile=profile)
    model = context.model
    model_id = model.get("modelId") if isinstance(model, Mapping) else None
    return measure_messages(
        context.messages, counter, model_id if isinstance(model_id, str) else None
    )


def context_tokens(session: Session, ctx: CompactionContext, leaf_id: str | None = None) -> int:
    """Tokens of the context the model sees at a leaf of `session`, with `ctx`'s profile and
    counter (`session_context_tokens`)."""
    return session_context_tokens(
        session, ctx.counter, profile=ctx.settings.profile, leaf_id=leaf_id
    )


def applied_context_tokens(result: CompactionResult, ctx: CompactionContext) -> int:
    """Tokens of the context after `result` is applied to `ctx.session`.

    An appended compaction becomes the new leaf; a rewrite-only result keeps the leaf the
    compaction was made at.
    """
    after = result.apply(ctx.session, timestamp=_MEASURE_TIMESTAMP)
    return context_tokens(after, ctx, None if result.append_entry else ctx.leaf_id)

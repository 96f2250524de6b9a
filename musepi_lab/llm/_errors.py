"""The one error type of the model seam, and the one place API keys are redacted.

Every message that can reach a file (a benchmark's `error` column, a log, a traceback) is
built by `ModelCallError`, which passes it through `redact` first: the configured key, the
keys in the standard environment variables, and anything shaped like a bearer token or an
`sk-` key are replaced. `SummarizerError` is the same class under its older name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from .._errors import MusepiLabError

REDACTED = "[REDACTED]"

KEY_ENV_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "MUSEPI_LAB_REMOTE_API_KEY")
"""Environment variables whose values are always redacted, configured or not."""

# Shapes of secrets a server may echo although we never sent them under that name.
_SECRET_SHAPES = re.compile(
    r"(?i)(?P<bearer>bearer\s+)[^\s\"',;}]+"
    r"|\bsk-[A-Za-z0-9_\-]{8,}"
    r"|(?P<param>[?&](?:api[_-]?key|key|token|access_token)=)[^&\s\"']+"
)


def _shape(match: re.Match[str]) -> str:
    prefix = match.group("bearer") or match.group("param") or ""
    return f"{prefix}{REDACTED}"


def _known(secrets: Iterable[str | None]) -> list[str]:
    """The caller's keys and those of `KEY_ENV_VARS`, longest first (so a key that holds
    another is replaced whole)."""
    known = {s for s in secrets if s}
    known.update(v for v in (os.environ.get(name) for name in KEY_ENV_VARS) if v)
    return sorted(known, key=len, reverse=True)


def _replace_known(text: str, known: list[str]) -> str:
    for secret in known:
        text = text.replace(secret, REDACTED)
    return text


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every known secret and every key-shaped string replaced.

    Redact before cutting a text short: a key cut in half is no longer found.

    Args:
        text: Any message that may end up in an exception, a file or a log.
        secrets: Keys known to the caller (the configured API key); the values of
            `KEY_ENV_VARS` are always added.

    Returns:
        The text with `[REDACTED]` in place of each secret.
    """
    return _SECRET_SHAPES.sub(_shape, _replace_known(text, _known(secrets)))


def redacted_snippet(text: str, limit: int, secrets: Iterable[str | None] = ()) -> str:
    """The first `limit` characters of `text` once redacted (`redact` first, then the cut)."""
    return redact(text, secrets)[:limit]


def redact_answer(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A decoded JSON answer with the known secrets (as `redact`) replaced in every string,
    keys included, before it is read, returned or cached. Key shapes are left alone: an
    answer's prose may well say "Bearer" or "sk-"."""
    known = _known(secrets)
    if not known:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _replace_known(item, known)
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        return item

    return walk(value)


class SummarizerNotConfigured(MusepiLabError, RuntimeError):
    """No endpoint is configured for an LLM strategy (it is unavailable, not failing)."""


class ModelCallError(MusepiLabError, RuntimeError):
    """A model call failed: every exception that leaves the model seam is this type.

    The message names the endpoint and never holds an API key (see `redact`).

    Attributes:
        endpoint: The URL called (redacted), or None.
        status: The HTTP status that decided the failure, or None (timeouts, bad bodies).
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str | None = None,
        status: int | None = None,
        secrets: Iterable[str | None] = (),
    ) -> None:
        secrets = tuple(secrets)
        super().__init__(redact(message, secrets))
        self.endpoint = redact(endpoint, secrets) if endpoint else None
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        # Crosses process-pool boundaries: rebuild from the already redacted values.
        return (_rebuild, (type(self), str(self), self.endpoint, self.status))


def _rebuild(
    cls: type[ModelCallError], message: str, endpoint: str | None, status: int | None
) -> ModelCallError:
    return cls(message, endpoint=endpoint, status=status)


SummarizerError = ModelCallError
"""The name strategies and callers have always caught; the same class as `ModelCallError`."""

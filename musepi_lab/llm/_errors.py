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


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every known secret and every key-shaped string replaced.

    Args:
        text: Any message that may end up in an exception, a file or a log.
        secrets: Keys known to the caller (the configured API key); the values of
            `KEY_ENV_VARS` are always added.

    Returns:
        The text with `[REDACTED]` in place of each secret.
    """
    known = {s for s in secrets if s}
    known.update(v for v in (os.environ.get(name) for name in KEY_ENV_VARS) if v)
    # Longest first, so a key that contains another is replaced whole.
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _SECRET_SHAPES.sub(_shape, text)


class SummarizerNotConfigured(RuntimeError):
    """No endpoint is configured for an LLM strategy (it is unavailable, not failing)."""


class ModelCallError(RuntimeError):
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

"""HTTP for model calls: one POST with JSON, retried on 429/5xx/timeouts with `Retry-After`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from ._summarizer import (
    SummarizerError,
)


# -- retries -------------------------------------------------------------------------------
class _Retry(Exception):
    """A failure worth another attempt, with the server's Retry-After if it sent one."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    try:
        return min(float(value), _RETRY_AFTER_CAP_S) if value else None
    except ValueError:
        return None


def call_with_retries(
    call: Callable[[], Any],
    *,
    max_retries: int,
    backoff_s: float,
    sleep: Callable[[float], None],
    label: str,
) -> tuple[Any, int]:
    """Run `call`, retrying `_Retry` failures with doubling backoff (Retry-After wins).

    Returns:
        The call's value and the number of attempts made.

    Raises:
        SummarizerError: Every attempt failed.
    """
    attempt = 0
    while True:
        try:
            return call(), attempt + 1
        except _Retry as exc:
            if attempt >= max_retries:
                raise SummarizerError(
                    f"{label} failed after {attempt + 1} attempts: {exc}"
                ) from exc
            delay = exc.retry_after if exc.retry_after is not None else backoff_s * (2**attempt)
            sleep(delay)
            attempt += 1


# -- a custom remote endpoint as a summarizer ----------------------------------------------
def _post_json(url: str, body: Mapping[str, Any], *, api_key: str | None, timeout_s: float) -> Any:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 429 or exc.code >= 500:
            raise _Retry(f"HTTP {exc.code}", _retry_after(exc.headers.get("retry-after"))) from exc
        raise SummarizerError(f"remote endpoint answered HTTP {exc.code}") from exc
    except TimeoutError as exc:
        raise _Retry("timeout") from exc
    except urllib.error.URLError as exc:
        raise _Retry(f"connection failed ({type(exc.reason).__name__})") from exc
    except ConnectionError as exc:
        raise _Retry(f"connection failed ({type(exc).__name__})") from exc
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SummarizerError("remote endpoint answered with something that is not JSON") from exc


_RETRY_AFTER_CAP_S = 60.0

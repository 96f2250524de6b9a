"""The one client layer every model request goes through.

`ModelClient` posts JSON over the `openai` package's HTTP client (connection pooling,
timeouts, typed status errors; any absolute URL) and runs the one retry loop of the seam:
HTTP 408/409/429/5xx, timeouts and dropped connections are retried with doubling backoff, a
`Retry-After` header wins when it is a sane number of seconds (clamped to [0, 60]; negative,
NaN or garbage values fall back to the backoff). The loop is ours rather than the client's
own `max_retries` because the sleep must be injectable (tests assert exact delays) and
because the seam also judges bodies that arrive with status 200.

Every failure leaves as `ModelCallError` naming the endpoint, with keys redacted, and with
no chained exception (a chained `openai` error would carry the raw, unredacted body into
tracebacks); bodies are redacted before they are cut to a snippet, so no piece of a key
survives the cut. A usable answer has the known keys replaced before it is read, so an
endpoint that echoes the key puts it in no summary and no cache file. A `ModelClient` carries configuration only: its connection is made on first
use and dropped when pickled, so summarizers cross process pools.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from .._errors import MusepiLabError
from ._errors import ModelCallError, redact, redact_answer, redacted_snippet

T = TypeVar("T")

RETRY_AFTER_CAP_S = 60.0
"""The longest server-requested wait honoured before a retry."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Client statuses worth another attempt (every 5xx is too)."""

_SNIPPET_CHARS = 300
_REDACT_CHARS = 65536  # of a body, redacted before the snippet is cut (a key is far shorter)


def retryable_status(status: int) -> bool:
    """True for the statuses the seam retries: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUSES or status >= 500


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` value, clamped to [0, 60]; None if unusable.

    Accepts seconds (integer or decimal) or an HTTP date. Negative values clamp to 0;
    NaN, infinities and garbage give None, so the caller falls back to its backoff.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # HTTP dates are rare; the module is not paid for at import

        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        seconds = when - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


class BadAnswer(MusepiLabError):
    """Raised by an answer reader: the body arrived but is not a usable answer.

    Attributes:
        reason: What is wrong, for the error message.
        status: The status the body itself reports (an `{"error": {"code": 503}}`), which
            decides whether the call is retried; None: not retried.
    """

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class _Failure(MusepiLabError):
    def __init__(
        self, reason: str, *, status: int | None, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


def _response_type() -> type[Any]:
    """The response class of the HTTP library under the installed `openai` client."""
    # openai >= 3 runs on httpx2, older releases on httpx; asking for this class makes
    # `client.post` hand back the raw response, whose body the seam judges itself.
    try:
        module = importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - depends on the installed openai
        module = importlib.import_module("httpx")
    response: type[Any] = module.Response
    return response


@dataclass
class ModelClient:
    """Configuration of one model endpoint, and the retry loop that calls it.

    Args:
        base_url: Where relative paths go (`/chat/completions`); absolute URLs are used as is.
        api_key: Sent as `Authorization: Bearer ...` when set; with None no header is sent.
        timeout_s: Per-request timeout.
        max_retries: Retries after a retryable failure.
        backoff_s: First retry delay; doubles each retry (a sane `Retry-After` wins).
        sleep: Injected for tests.
    """

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 0.5
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        self._transport: Any = None
        self.requests_sent = 0

    def __getstate__(self) -> dict[str, Any]:
        # Configuration crosses processes; the open connection does not.
        return {**self.__dict__, "_transport": None}

    def endpoint(self, target: str) -> str:
        """The full URL a target names, redacted, for messages."""
        url = target if "://" in target else self.base_url.rstrip("/") + "/" + target.lstrip("/")
        return redact(url, (self.api_key,))

    def error(self, target: str, message: str, status: int | None = None) -> ModelCallError:
        """The seam's error for a call to `target`, naming the endpoint, keys redacted."""
        url = self.endpoint(target)
        return ModelCallError(
            f"model call to {url} {message}", endpoint=url, status=status, secrets=(self.api_key,)
        )

    def post_json(
        self, target: str, body: Mapping[str, Any], read: Callable[[Any], T]
    ) -> tuple[T, int]:
        """POST `body` as JSON and read the answer, retrying what is worth retrying.

        Args:
            target: A path under `base_url`, or an absolute URL.
            body: The JSON request body.
            read: Turns the decoded JSON answer into a value; raises `BadAnswer` when the
                answer is unusable (no text, a refusal, an error body).

        Returns:
            The value `read` made, and the number of attempts.

        Raises:
            ModelCallError: A non-retryable failure, or every attempt failed.
        """
        attempt = 0
        while True:
            try:
                return self._attempt(target, body, read), attempt + 1
            except _Failure as caught:
                failure = caught
            # Raised outside the handler, the error has no `__context__`: the client's own
            # exception (whose body may echo a key) never rides along, not even with
            # pickling that keeps exception chains (tblib's, which dask installs).
            if not failure.retryable:
                raise self.error(target, f"failed: {failure.reason}", failure.status)
            if attempt >= self.max_retries:
                raise self.error(
                    target,
                    f"failed after {attempt + 1} attempts: {failure.reason}",
                    failure.status,
                )
            wait = failure.retry_after
            self.sleep(wait if wait is not None else self.backoff_s * (2**attempt))
            attempt += 1

    def _attempt(self, target: str, body: Mapping[str, Any], read: Callable[[Any], T]) -> T:
        status, raw, content_type = self._send(target, body)
        # A 2xx that is not a JSON object comes from a wrong URL or a proxy page, which
        # another attempt does not fix: not retried.
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            kind = content_type or "no content type"
            text = raw[:_REDACT_CHARS].decode("utf-8", "replace")
            snippet = redacted_snippet(text, 80, (self.api_key,))
            raise _Failure(
                f"HTTP {status} with a body that is not JSON ({kind}): {snippet!r}",
                status=status,
                retryable=False,
            ) from None
        if not isinstance(data, Mapping):
            raise _Failure(
                f"HTTP {status} with JSON that is not an object ({type(data).__name__})",
                status=status,
                retryable=False,
            )
        data = redact_answer(data, (self.api_key,))
        try:
            return read(data)
        except BadAnswer as bad:
            retry = bad.status is not None and retryable_status(bad.status)
            raise _Failure(bad.reason, status=bad.status or status, retryable=retry) from None
        except Exception as exc:  # a reader tripping over an odd shape is a bad answer too
            reason = f"an answer of unexpected shape ({type(exc).__name__}: {exc})"
            raise _Failure(reason, status=status, retryable=False) from None

    def _client(self) -> Any:
        if self._transport is None:
            import openai

            self._transport = openai.OpenAI(
                base_url=self.base_url,
                # The openai client insists on a key and would read OPENAI_API_KEY from the
                # environment otherwise; with no key the header is omitted per request.
                api_key=self.api_key or "unused",
                max_retries=0,  # the retry loop is ours (see the module docstring)
                timeout=self.timeout_s,
            )
        return self._transport

    def _send(self, target: str, body: Mapping[str, Any]) -> tuple[int, bytes, str]:
        """One POST: status, raw body and content type of a 2xx answer, else a `_Failure`."""
        import openai

        headers: dict[str, Any] = {"Accept": "application/json"}
        if not self.api_key:
            headers["Authorization"] = openai.Omit()
        self.requests_sent += 1
        try:
            response = self._client().post(
                target,
                body=dict(body),
                cast_to=_response_type(),
                options={"headers": headers},
            )
        except openai.APIStatusError as exc:
            status = exc.status_code
            said = " ".join(exc.response.text[:_REDACT_CHARS].split())
            text = redacted_snippet(said, _SNIPPET_CHARS, (self.api_key,))
            raise _Failure(
                f"HTTP {status}: {text}",
                status=status,
                retryable=retryable_status(status),
                retry_after=parse_retry_after(exc.response.headers.get("retry-after")),
            ) from None
        except openai.APITimeoutError:
            raise _Failure("timeout", status=None, retryable=True) from None
        except openai.APIConnectionError as exc:
            reason = f"connection failed ({type(exc.__cause__ or exc).__name__})"
            raise _Failure(reason, status=None, retryable=True) from None
        except Exception as exc:  # anything else the client raises still leaves as our type
            raise _Failure(f"{type(exc).__name__}: {exc}", status=None, retryable=False) from None
        return response.status_code, response.content, response.headers.get("content-type", "")

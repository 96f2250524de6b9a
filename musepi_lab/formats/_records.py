"""Shared builders for importers: pi-shaped messages and records from other agents' data.

Every importer produces v3 records (`type`, `id`, `parentId`, `timestamp`, ...) whose
messages have pi's shapes (spec §1.5–1.7), and writes the source record's own id as
`sourceId` so it survives a write and a re-read.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..session._errors import ReadProblem
from ..session._session import CURRENT_SESSION_VERSION, Session, parse_timestamp_ms


def stable_id(*parts: object) -> str:
    """A deterministic 8-hex id from the given parts (for records that have no id)."""
    key = "\x1f".join(str(p) for p in parts).encode("utf-8", errors="surrogatepass")
    return hashlib.blake2b(key, digest_size=4).hexdigest()


class IdAllocator:
    """Hands out unique entry ids: the source id when free, else a stable derived one."""

    __slots__ = ("_seed", "_taken")

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._taken: set[str] = set()

    def take(self, preferred: str | None, *salt: object) -> str:
        """`preferred` if unused, else a stable id derived from seed, preferred and salt."""
        if preferred and preferred not in self._taken:
            self._taken.add(preferred)
            return preferred
        n = 0
        while True:
            candidate = stable_id(self._seed, preferred, *salt, n)
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
            n += 1


def epoch_ms(timestamp: Any) -> int:
    """Epoch milliseconds of an ISO timestamp or a number (seconds or ms), 0 when unknown."""
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
        return int(timestamp * 1000) if timestamp < 1e11 else int(timestamp)
    ms = parse_timestamp_ms(timestamp)
    return int(ms) if ms is not None else 0


def text_block(text: str) -> dict[str, Any]:
    """A pi text block."""
    return {"type": "text", "text": text}


def user_message(content: str | list[dict[str, Any]], timestamp_ms: int) -> dict[str, Any]:
    """A pi user message; a string becomes one text block."""
    blocks = [text_block(content)] if isinstance(content, str) else list(content)
    return {"role": "user", "content": blocks, "timestamp": timestamp_ms}


def tool_call_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A pi toolCall block; non-object arguments are wrapped as `{"input": ...}`."""
    args = dict(arguments) if isinstance(arguments, Mapping) else {"input": arguments}
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


_EXACT = 2**53


def token_count(value: Any) -> int:
    """A token count from a source field: a finite number below 2**53, else 0.

    Sources write what they like (strings, `1e999` kept as text, counts past 2**63 that
    no DataFrame holds); a usage count that is not a count is read as none.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(value) if -_EXACT < value < _EXACT else 0


def usage(
    input: Any = 0,
    output: Any = 0,
    cache_read: Any = 0,
    cache_write: Any = 0,
    total: Any = None,
) -> dict[str, Any]:
    """A pi usage object (costs zero: the source formats rarely record them per message).

    Each count goes through `token_count`, so a source value that is no count is 0.
    """
    counts = [token_count(v) for v in (input, output, cache_read, cache_write)]
    tot = token_count(total) if total is not None else sum(counts)
    return {
        "input": counts[0],
        "output": counts[1],
        "cacheRead": counts[2],
        "cacheWrite": counts[3],
        "totalTokens": tot,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def assistant_message(
    content: list[dict[str, Any]],
    timestamp_ms: int,
    *,
    model: str = "",
    provider: str = "",
    api: str = "",
    usage_: Mapping[str, Any] | None = None,
    stop_reason: str = "stop",
    error_message: str | None = None,
) -> dict[str, Any]:
    """A pi assistant message."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": dict(usage_) if usage_ is not None else usage(),
        "stopReason": stop_reason,
        "timestamp": timestamp_ms,
    }
    if error_message is not None:
        msg["errorMessage"] = error_message
    return msg


def tool_result_message(
    call_id: str,
    tool_name: str,
    content: str | list[dict[str, Any]],
    timestamp_ms: int,
    *,
    is_error: bool = False,
) -> dict[str, Any]:
    """A pi toolResult message; a string becomes one text block."""
    blocks = [text_block(content)] if isinstance(content, str) else list(content)
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool_name,
        "content": blocks,
        "isError": bool(is_error),
        "timestamp": timestamp_ms,
    }


def message_record(
    entry_id: str,
    parent_id: str | None,
    timestamp: str | None,
    message: Mapping[str, Any],
    *,
    source_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A v3 `message` entry record."""
    rec: dict[str, Any] = {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "message": dict(message),
    }
    if source_id is not None:
        rec["sourceId"] = source_id
    rec.update(extra)
    return rec


def chain(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Link records into a linear chain in order (each one's parent = the previous id)."""
    out: list[dict[str, Any]] = []
    prev: str | None = None
    for rec in records:
        rec["parentId"] = prev
        prev = rec["id"]
        out.append(rec)
    return out


def empty_session(
    path: str, errors: Iterable[ReadProblem], source_format: str, **header: Any
) -> Session:
    """A session of no entries for a `source_format` file that holds none, carrying its
    problems. `header` fields follow the session id (default: the file's stem)."""
    fields = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": Path(path).stem,
        **header,
        "sourceFormat": source_format,
    }
    return Session(fields, (), errors=errors, source_path=path, source_format=source_format)

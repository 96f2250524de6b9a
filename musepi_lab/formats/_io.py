"""Reading session files safely: path checks, bounded reads, binary sniffing, and a JSONL parser
that records problems (file and line) instead of raising."""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import orjson

from ..session._errors import ProblemLog, SessionReadError
from ._values import (
    MAX_NESTING,
    limit_nesting,
    loads_js,
    nesting_message,
    range_message,
)

_BINARY_SNIFF = 8192


_BOM = b"\xef\xbb\xbf"


_UNPARSED: Any = object()


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_session_path(path: str | os.PathLike[str]) -> str:
    """The path as a string, once it is known to name a regular file.

    Raises:
        SessionReadError: The path is missing (`not-found`), a directory
            (`is-a-directory`), not a regular file (`not-a-file`) or cannot be looked at
            (`unreadable`); the message names the path.
    """
    p = os.fspath(path)
    try:
        mode = os.stat(p).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise SessionReadError(p, None, "not-found", "no such file") from None
    except OSError as exc:
        raise SessionReadError(p, None, "unreadable", f"cannot read: {exc.strerror}") from None
    except ValueError as exc:  # e.g. an embedded NUL in the path
        raise SessionReadError(p, None, "not-found", f"not a usable path: {exc}") from None
    if stat.S_ISDIR(mode):
        raise SessionReadError(p, None, "is-a-directory", "is a directory, not a session file")
    if not stat.S_ISREG(mode):
        # FIFOs, sockets and devices would block or never end.
        raise SessionReadError(p, None, "not-a-file", "is not a regular file")
    return p


def read_bytes_checked(path: str | os.PathLike[str], limit: int | None = None) -> tuple[str, bytes]:
    """Read a whole file (or its first `limit` bytes), with a clear `SessionReadError`.

    Raises:
        SessionReadError: The path is not a readable regular file (see
            `check_session_path`).
    """
    p = check_session_path(path)
    try:
        with open(p, "rb") as fh:
            return p, fh.read() if limit is None else fh.read(limit)
    except FileNotFoundError:
        raise SessionReadError(p, None, "not-found", "no such file") from None
    except IsADirectoryError:
        raise SessionReadError(
            p, None, "is-a-directory", "is a directory, not a session file"
        ) from None
    except OSError as exc:
        raise SessionReadError(p, None, "unreadable", f"cannot read: {exc.strerror}") from None


def looks_binary(data: bytes) -> bool:
    """True when the head of the data holds NUL bytes (no JSON text does)."""
    return b"\x00" in data[:_BINARY_SNIFF]


def strip_bom(data: bytes) -> bytes:
    """The data without a leading UTF-8 byte-order mark (editors on Windows add one)."""
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _replace_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """`value` with unpaired UTF-16 surrogates in strings replaced by U+FFFD."""
    if isinstance(value, str):
        fixed_text, count = _SURROGATE.subn("\ufffd", value)
        return fixed_text, count > 0
    if isinstance(value, list):
        changed = False
        items = []
        for item in value:
            fixed, item_changed = _replace_lone_surrogates(item)
            items.append(fixed)
            changed = changed or item_changed
        return items, changed
    if isinstance(value, dict):
        changed = False
        out = {}
        for key, item in value.items():
            fixed_key, key_changed = _replace_lone_surrogates(key)
            fixed, item_changed = _replace_lone_surrogates(item)
            out[fixed_key] = fixed
            changed = changed or key_changed or item_changed
        return out, changed
    return value, False


def _parse_line_slowly(raw: bytes) -> tuple[Any, list[str], str, bool]:
    """Second chance for a line orjson refused.

    pi reads files as UTF-8 with replacement and parses with `JSON.parse`, which accepts
    escaped lone surrogates (JS string slicing cuts emoji in half) and numbers out of
    double range. We accept the same lines; lone surrogates become U+FFFD because no
    UTF-8 encoder (orjson, files, terminals) takes them.

    Returns:
        `(value, repairs, error, error_at_end)`: the value (or `_UNPARSED`), the problem
        kinds of the repairs made (or, for numbers kept as text, the message), and for an unparsed line the parser's message and
        whether it stopped at the end of the line (the sign of a cut-short write).
    """
    repairs: list[str] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        repairs.append("invalid-utf8")
    try:
        return orjson.loads(text), repairs, "", False
    except orjson.JSONDecodeError as exc:
        error, at_end = exc.msg, exc.pos >= len(text.rstrip())
    try:
        value, out_of_range = loads_js(text)
    except ValueError:
        return _UNPARSED, repairs, error, at_end
    if out_of_range:
        repairs.append(range_message(out_of_range))
    try:
        value, changed = _replace_lone_surrogates(value)
    except RecursionError:
        return _UNPARSED, repairs, "nested too deeply", False
    if changed:
        repairs.append("lone-surrogate")
    return value, repairs, "", False


_REPAIR_MESSAGES = {
    "invalid-utf8": "line is not valid UTF-8; bad bytes replaced with U+FFFD",
    "lone-surrogate": "line holds unpaired UTF-16 surrogate escapes; replaced with U+FFFD",
}


def within_nesting(value: Any, line: int | None, log: ProblemLog) -> Any:
    """`value` with what nests past `MAX_NESTING` cut, the cut recorded at `line`."""
    value, cut = limit_nesting(value)
    if cut:
        log.add(line, "nested-too-deeply", nesting_message(cut))
    return value


def parse_jsonl(data: bytes, log: ProblemLog, *, first_line: int = 1) -> list[tuple[int, Any]]:
    """Parse JSONL bytes into `(line_number, value)` pairs; bad lines become problems.

    Blank lines are skipped and a leading byte-order mark is ignored. `first_line` numbers
    the first line of `data`: more than 1 for the later lines of a file read piece by piece
    (`formats._tail`), where a byte-order mark is the line's content and not stripped. A line that does not
    parse is recorded as `truncated-line` when it is the last line, has no newline after
    it and the parser ran out of input (an interrupted write), else as `malformed-json`.
    Lines kept after a repair are recorded as `invalid-utf8`, `lone-surrogate` or
    `number-out-of-range` (kept as text), values nested past `MAX_NESTING` are cut there
    (`nested-too-deeply`), and a line deeper than the parsers go is dropped with that kind.
    """
    lines = (strip_bom(data) if first_line == 1 else data).split(b"\n")
    # The chunk after the final newline is the only line that can be an unfinished write.
    unterminated = len(lines) - 1
    loads = orjson.loads
    out: list[tuple[int, Any]] = []
    append = out.append
    count = bytes.count
    for index, raw in enumerate(lines):
        if not raw or raw.isspace():
            continue
        try:
            value = loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            # `may_nest_deeper`, inlined: a call per line costs twice the counting itself.
            if len(raw) > MAX_NESTING and count(raw, b"[") + count(raw, b"{") > MAX_NESTING:
                value = within_nesting(value, index + first_line, log)
            append((index + first_line, value))
            continue
        lineno = index + first_line
        value, repairs, error, at_end = _parse_line_slowly(raw)
        if value is not _UNPARSED:
            for kind in repairs:
                if kind in _REPAIR_MESSAGES:
                    log.add(lineno, kind, _REPAIR_MESSAGES[kind])
                else:
                    log.add(lineno, "number-out-of-range", kind)
            append((lineno, within_nesting(value, lineno, log)))
        elif "depth" in error or "deeply" in error:
            log.add(
                lineno,
                "nested-too-deeply",
                f"line nests deeper than any JSON parser here allows ({error}); skipped",
            )
        elif index == unterminated and at_end:
            log.add(
                lineno,
                "truncated-line",
                f"last line is cut short ({len(raw)} bytes, no newline): {error}; skipped",
            )
        else:
            utf8 = " (and not valid UTF-8)" if "invalid-utf8" in repairs else ""
            log.add(lineno, "malformed-json", f"not valid JSON{utf8}: {error}; skipped")
    return out

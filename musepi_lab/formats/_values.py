"""Parsed values every later step can handle: nesting cut to a depth, numbers kept in range.

A reader accepts what `JSON.parse` accepts, but not everything `JSON.parse` accepts survives
the steps after reading: orjson writes no value nested deeper than 255 levels, Python code
that walks a value recurses, `1e999` is Infinity (written back as `null`, so lost), and
pandas holds no integer past 2**63. So values are checked as they are parsed, and what is
changed is recorded as a problem naming the line and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

MAX_NESTING = 200
"""Deepest nesting kept (objects and arrays) of a value too deep to keep whole; no session
format nests anywhere near it, and orjson writes up to 254 levels."""

TOO_DEEP = "[value nested too deeply: cut by musepi-lab]"
"""What stands in for a container nested deeper than `MAX_NESTING`."""

_PATH_PARTS_SHOWN = 6

# A JSON string token or a bracket: enough to find where a value ends without parsing it.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def may_nest_deeper(raw: bytes | str, limit: int = MAX_NESTING) -> bool:
    """Whether raw JSON text holds enough brackets to nest past `limit` (a cheap filter)."""
    if len(raw) <= limit:  # fewer characters than the limit: fewer brackets too
        return False
    if isinstance(raw, bytes):
        return raw.count(b"[") + raw.count(b"{") > limit
    return raw.count("[") + raw.count("{") > limit


def _deeper_than(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


WRITE_HEADROOM = 16
"""Levels of nesting left free when a value is kept whole: a record's fields may sit a few
levels deeper once converted into the pi shape (a message, its content, `sourceFields`),
and the session must still be writable there."""


def _writable(value: Any) -> bool:
    """Whether orjson can write the value `WRITE_HEADROOM` levels down: a C-speed bound on
    its depth (254 levels in all).

    Walking every node in Python tripled read times; serializing costs a fraction.
    """
    for _ in range(WRITE_HEADROOM):
        value = [value]
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def _field_name(parts: list[str]) -> str:
    shown = parts[:_PATH_PARTS_SHOWN]
    text = "".join(shown).lstrip(".") or "(the value itself)"
    return text + ("…" if len(parts) > _PATH_PARTS_SHOWN else "")


def _cut(value: Any, depth: int, parts: list[str], cuts: list[str], limit: int) -> Any:
    # Recursion is bounded by `limit`, which is what makes it safe here.
    if not isinstance(value, (dict, list)):
        return value
    if depth > limit:
        cuts.append(_field_name(parts))
        return TOO_DEEP
    if isinstance(value, dict):
        return {k: _cut(v, depth + 1, [*parts, f".{k}"], cuts, limit) for k, v in value.items()}
    return [_cut(v, depth + 1, [*parts, f"[{i}]"], cuts, limit) for i, v in enumerate(value)]


def limit_nesting(value: Any, limit: int = MAX_NESTING) -> tuple[Any, list[str]]:
    """`value` with every container nested deeper than `limit` replaced by `TOO_DEEP`.

    With the default limit, a value orjson can write with `WRITE_HEADROOM` levels to spare
    is kept whole, since every step after reading takes it; only a deeper one is cut, at
    `MAX_NESTING`.

    Returns:
        `(value, fields)`: the value (the same object when nothing was cut) and the names
        of the fields that were cut (`a.b[0]…`).
    """
    if limit >= MAX_NESTING and _writable(value):
        return value, []  # orjson wrote it, so it nests at most 254 levels: cut only past that
    if not _deeper_than(value, limit):
        return value, []
    cuts: list[str] = []
    return _cut(value, 1, [], cuts, limit), cuts


def nesting_message(fields: list[str], limit: int = MAX_NESTING) -> str:
    """The problem message for the fields `limit_nesting` cut."""
    more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
    return (
        f"field {fields[0]}{more} nests deeper than {limit} levels; cut there and kept as "
        f"the text {TOO_DEEP!r}"
    )


def end_of_value(text: str, start: int) -> int | None:
    """Where the array or object starting at `text[start]` ends (one past it), or None."""
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return match.end()
    return None


# -- numbers -----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    # JSON.parse rejects NaN and Infinity literals; so do we.
    raise ValueError(f"{name} is not JSON")


def number_hooks() -> tuple[Callable[[str], Any], Callable[[str], Any], list[str]]:
    """`(parse_float, parse_int, out_of_range)` for `json.loads`.

    Numbers past double range are kept as their literal text (JSON.parse makes them
    Infinity, which every writer turns into `null`), and listed in `out_of_range`. An
    integer past 64 bits becomes a double, as in JS (orjson could not write it back).
    """
    out_of_range: list[str] = []

    def parse_float(literal: str) -> Any:
        value = float(literal)
        if math.isinf(value):
            out_of_range.append(literal)
            return literal
        return value

    def parse_int(literal: str) -> Any:
        value = int(literal)
        if -(2**63) <= value < 2**64:
            return value
        try:
            return float(value)
        except OverflowError:
            out_of_range.append(literal if len(literal) <= 40 else literal[:40] + "…")
            return literal

    return parse_float, parse_int, out_of_range


def loads_js(text: str) -> tuple[Any, list[str]]:
    """Parse JSON text as `JSON.parse` would, with numbers kept in range (see `number_hooks`).

    Raises:
        ValueError: The text is not JSON, or nests deeper than Python's parser can go.
    """
    parse_float, parse_int, out_of_range = number_hooks()
    try:
        value = json.loads(
            text, parse_float=parse_float, parse_int=parse_int, parse_constant=_reject_constant
        )
    except RecursionError:
        raise ValueError("nests too deeply to parse") from None
    return value, out_of_range


def range_message(literals: list[str]) -> str:
    """The problem message for numbers kept as text."""
    shown = ", ".join(literals[:3]) + (" …" if len(literals) > 3 else "")
    return f"number {shown} is beyond double range; kept as its text (a JSON string)"

"""JavaScript value semantics where they change the bytes: `for…in` key order,
`String(number)`, `JSON.stringify`, `JSON.parse`, `trim`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ...tokens._estimate import js_stringify
from .._serialize import JS_WHITESPACE


# -- JavaScript value semantics ---------------------------------------------------------------
def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) < 2**32 - 1


def js_keys(record: Mapping[str, Any]) -> list[str]:
    """An object's keys in JavaScript's `for…in` / `Object.entries` order.

    Integer-like keys (array indices) come first in ascending order, then the rest in
    insertion order.
    """
    keys = [str(k) for k in record]
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    if not indices:
        return keys
    return indices + [k for k in keys if not _is_array_index(k)]


def _js_ordered(value: Any) -> Any:
    """`value` with every object's keys in JavaScript order (for `JSON.stringify`)."""
    if isinstance(value, Mapping):
        return {k: _js_ordered(value[k]) for k in js_keys(value)}
    if isinstance(value, list | tuple):
        return [_js_ordered(v) for v in value]
    return value


def js_json(value: Any) -> str:
    """`JSON.stringify(value) ?? "null"` (compact, JavaScript key order)."""
    if value is None:
        return "null"
    return js_stringify(_js_ordered(value))


def js_number(value: float) -> str:
    """`String(number)`: JavaScript's shortest round-trip number text.

    Integers print in full below 1e21; otherwise the shortest digits are written as
    JavaScript does (exponent form below 1e-6 and from 1e21, `e+`/`e-` with no padding).
    """
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exp_text = repr(abs(number)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp_text) if exp_text else 0)  # decimal point after `point` digits
    if whole == "0":
        stripped = frac.lstrip("0")
        point = -(len(frac) - len(stripped)) + (int(exp_text) if exp_text else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    exp = f"e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def js_json_parse(text: str) -> Any:
    """`JSON.parse(text)`; raises ValueError where JavaScript would throw."""
    return json.loads(text, parse_constant=_reject_constant)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)

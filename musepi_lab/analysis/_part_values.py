"""A frame part's values as Arrow (`arrow_table`) and the unit pandas parses each of its
timestamp columns to (`timestamp_units`), so the joined frame is typed as `build_frame`
types it (a leaf of the file-by-file cache, `_cache`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ._columns import TIMESTAMP, Column
from ._load import typed_series

_ARROW_TYPES = {"string": "string", "Int64": "int64", "boolean": "bool", TIMESTAMP: "string"}


def arrow_table(values: Mapping[str, list[Any]], columns: Sequence[Column[Any]]) -> Any:
    """A part's extracted values as an Arrow table, untyped: a column whose values are not
    of its spec's type is kept as text (typed once, when the parts are joined)."""
    import pyarrow as pa

    arrays = []
    for column in columns:
        kind = _ARROW_TYPES.get(column.dtype or "")
        column_values = values[column.name]
        try:
            arrays.append(pa.array(column_values, type=kind))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # Values of another type than the spec's: kept as text, typed once joined.
            text = [None if v is None else str(v) for v in column_values]
            arrays.append(pa.array(text, type=pa.string()))
    return pa.table(arrays, names=[c.name for c in columns])


_DIGITS = str.maketrans("0123456789", "0000000000")
_UNIT_OF_SHAPES: dict[tuple[str, ...], str] = {}


def _shape(value: Any) -> str:
    return value.translate(_DIGITS) if isinstance(value, str) else f"<{type(value).__name__}>"


def timestamp_unit(values: list[Any]) -> str:
    """The unit pandas parses these timestamps to: found once per set of value shapes
    (digits made 0), from one value of each shape, as pandas infers it from the written
    precision; a per-file pandas parse cost more than reading a tiny file."""
    first: dict[str, Any] = {}
    for value in values:
        first.setdefault(_shape(value), value)
    key = tuple(sorted(first))
    if key not in _UNIT_OF_SHAPES:
        sample = [first[shape] for shape in key]
        parsed = typed_series(pd.Series(sample, dtype=object), TIMESTAMP)
        _UNIT_OF_SHAPES[key] = str(getattr(parsed.dtype, "unit", "s"))
    return _UNIT_OF_SHAPES[key]


def timestamp_units(
    values: Mapping[str, list[Any]], columns: Sequence[Column[Any]]
) -> dict[str, str]:
    """The unit pandas parses each timestamp column of a part to (`s` when empty)."""
    return {c.name: timestamp_unit(values[c.name]) for c in columns if c.dtype == TIMESTAMP}

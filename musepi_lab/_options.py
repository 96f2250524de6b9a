"""Options as values: the frozen option objects of the functions with many keywords.

A function that takes an `options=` value also takes each option as a keyword, as it did
before the options were a value; `given` merges the two (keywords over the value), so
`run_benchmark(..., executor="serial")` and
`run_benchmark(..., options=BenchmarkOptions(executor="serial"))` are the same call. An
unknown keyword is a `TypeError` naming the function and listing its options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self


class Options:
    """Base of the frozen option dataclasses: `copy_with` and `given`."""

    def copy_with(self, **changes: Any) -> Self:
        """A copy with the given options replaced.

        Raises:
            TypeError: A name that is not one of the options.
        """
        names = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(
                f"{type(self).__name__} has no option {', '.join(map(repr, unknown))}; "
                f"its options: {', '.join(sorted(names))}"
            )
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    @classmethod
    def given(cls, options: Self | None, keywords: Mapping[str, Any], where: str) -> Self:
        """The options of a call to `where`: `options` (default: all defaults) with the
        `keywords` given beside it replacing its fields.

        Raises:
            TypeError: `options` is not a `cls`, or a keyword is not one of the options.
        """
        if options is not None and not isinstance(options, cls):
            raise TypeError(f"{where}(options=...) takes a {cls.__name__}, not {options!r}")
        base = options if options is not None else cls()
        if not keywords:
            return base
        try:
            return base.copy_with(**keywords)
        except TypeError as exc:
            raise TypeError(f"{where}() got an unexpected keyword argument: {exc}") from None

"""What every frame function takes, checked before any work: a `Session`, a path to a
session file or folder, or a list of those; anything else is a `TypeError` saying so."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from ..session._session import Session

F = TypeVar("F", bound=Callable[..., Any])

EXPECTED_SOURCE = "a Session, a path to a session file or folder, or a list of those"
"""What a frame function's first argument may be, as its `TypeError` says."""


def _is_item(value: Any) -> bool:
    return isinstance(value, (Session, str, os.PathLike))


def check_source(source: Any, function: str) -> None:
    """Raise a `TypeError` naming `function` and what it expects, unless `source` is a
    Session, a path, or an iterable of those (a list or tuple is checked item by item; a
    generator when it is read).

    Raises:
        TypeError: `source` is none of those.
    """
    if _is_item(source):
        return
    if isinstance(source, (bytes, bytearray, Mapping)) or not isinstance(source, Iterable):
        raise TypeError(f"{function} expects {EXPECTED_SOURCE}; got {type(source).__name__}")
    if isinstance(source, (list, tuple)):
        for index, item in enumerate(source):
            if not _is_item(item):
                raise TypeError(
                    f"{function} expects {EXPECTED_SOURCE}; got a {type(source).__name__} "
                    f"whose item {index} is of type {type(item).__name__}"
                )


def takes_sources(function: F) -> F:
    """Check a frame function's first argument with `check_source` before it runs."""

    @functools.wraps(function)
    def checked(source: Any, *args: Any, **kwargs: Any) -> Any:
        check_source(source, function.__name__)
        return function(source, *args, **kwargs)

    return cast(F, checked)

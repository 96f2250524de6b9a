"""Checks of strategy parameters, shared by the strategies' `__post_init__`."""

from __future__ import annotations

from typing import Any


def check_count(name: str, value: Any, minimum: int) -> None:
    """`value` must be an int (not a bool) of at least `minimum`.

    Raises:
        TypeError: Not an int.
        ValueError: Below `minimum`.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_optional_count(name: str, value: Any, minimum: int) -> None:
    """`value` must be None (the settings' default) or an int of at least `minimum`.

    Raises:
        TypeError: Neither None nor an int.
        ValueError: Below `minimum`.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, not {type(value).__name__}")
    check_count(name, value, minimum)

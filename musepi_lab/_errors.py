"""The package's error family: every exception musepi-lab defines derives from `MusepiLabError`."""

from __future__ import annotations


class MusepiLabError(Exception):
    """The base of every exception musepi-lab defines.

    Each class keeps its standard-library base as well (`SessionReadError` is still a
    `ValueError`, `ModelCallError` a `RuntimeError`), so `except MusepiLabError` catches
    whatever the package raises of its own and older `except ValueError` code still works.
    One class stands outside on purpose: the benchmark's `CellTimeout` is a
    `BaseException`, raised into an abandoned cell so that no `except Exception` stops it.
    """

"""One error family: every exception class musepi-lab defines derives from `MusepiLabError`,
and keeps its standard-library base."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import musepi_lab
from musepi_lab import MusepiLabError


def _modules() -> list[str]:
    names = ["musepi_lab"]
    for info in pkgutil.walk_packages(musepi_lab.__path__, "musepi_lab."):
        if not info.name.endswith("__main__"):  # running it would start the command line
            names.append(info.name)
    return sorted(names)


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
            ):
                found[f"{name}.{value.__qualname__}"] = value
    return found


EXCEPTIONS = _defined_exceptions()


def test_the_walk_finds_the_package_exceptions() -> None:
    """The walk sees the classes the issue names (so a green run means something)."""
    names = {cls.__name__ for cls in EXCEPTIONS.values()}
    expected = {"SessionReadError", "ModelCallError", "StrategyUnavailable", "DatasetError"}
    expected |= {"FolderLockedError", "RankFileError", "UsageError"}
    assert expected <= names


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_exception_derives_from_the_base(name: str) -> None:
    cls = EXCEPTIONS[name]
    if not issubclass(cls, Exception):
        # A BaseException (the benchmark's CellTimeout) must stay outside `except Exception`.
        assert cls.__name__ == "CellTimeout", f"{name} is a BaseException outside the family"
        return
    assert issubclass(cls, MusepiLabError), f"{name} does not derive from MusepiLabError"


def test_standard_library_bases_are_kept() -> None:
    from musepi_lab.bench._dask import ResultsWriteError, SchedulerLostError
    from musepi_lab.datasets._registry import DatasetNotFound
    from musepi_lab.llm._errors import ModelCallError
    from musepi_lab.session import SessionReadError
    from musepi_lab.strategies._base import StrategyUnavailable

    assert issubclass(SessionReadError, ValueError)
    assert issubclass(ModelCallError, RuntimeError)
    assert issubclass(StrategyUnavailable, RuntimeError)
    assert issubclass(DatasetNotFound, FileNotFoundError)
    assert issubclass(SchedulerLostError, ConnectionError)
    assert issubclass(ResultsWriteError, OSError)


def test_the_base_catches_a_read_error(tmp_path) -> None:
    from musepi_lab import read_session

    with pytest.raises(MusepiLabError):
        read_session(tmp_path / "missing.jsonl")

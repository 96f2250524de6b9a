"""nbval over the notebooks: skip a notebook whose optional dependencies are missing.

Each notebook lists what it needs in `metadata.musepi_lab.requires` (the `musepi_lab:` key
in the YAML header of its `.py` source): `modules` that must import and `strategies` that must be registered. A
notebook that lacks one is skipped with the reason, instead of failing on its first cell.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

import pytest


@cache
def requirements(notebook: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`(modules, strategies)` a notebook declares it needs."""
    metadata = json.loads(Path(notebook).read_text(encoding="utf-8")).get("metadata", {})
    requires = metadata.get("musepi_lab", {}).get("requires", {})
    return tuple(requires.get("modules", ())), tuple(requires.get("strategies", ()))


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True


@cache
def missing(notebook: str) -> tuple[str, ...]:
    """What a notebook needs that this environment lacks (empty when it can run)."""
    modules, strategies = requirements(notebook)
    lacking = [f"module {m}" for m in modules if _module_missing(m)]
    if strategies:
        from musepi_lab.strategies import available

        registered = set(available())
        lacking += [f"strategy {s}" for s in strategies if s not in registered]
    return tuple(lacking)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if not path.endswith(".ipynb"):
            continue
        lacking = missing(path)
        if lacking:
            item.add_marker(pytest.mark.skip(reason="needs " + ", ".join(lacking)))

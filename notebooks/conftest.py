"""nbval over the notebooks: skip a notebook whose optional dependencies are missing.

Each notebook lists the third-party modules it needs in `metadata.musepi_lab.requires.modules`
(the `musepi_lab:` key in the YAML header of its `.py` source). A notebook that lacks one is
skipped with the reason, instead of failing on its first cell. Nothing else skips: a strategy
or a part of musepi_lab that is missing fails the notebook.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

import pytest


@cache
def required_modules(notebook: str) -> tuple[str, ...]:
    """The modules a notebook declares it needs."""
    metadata = json.loads(Path(notebook).read_text(encoding="utf-8")).get("metadata", {})
    return tuple(metadata.get("musepi_lab", {}).get("requires", {}).get("modules", ()))


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True


@cache
def missing(notebook: str) -> tuple[str, ...]:
    """The modules a notebook needs that this environment lacks (empty when it can run)."""
    return tuple(f"module {m}" for m in required_modules(notebook) if _module_missing(m))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if not path.endswith(".ipynb"):
            continue
        lacking = missing(path)
        if lacking:
            item.add_marker(pytest.mark.skip(reason="needs " + ", ".join(lacking)))

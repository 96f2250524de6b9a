"""The notebooks are kept as text: each `notebooks/NN-*.py` (jupytext percent format) is the
source of its paired `.ipynb`, which is stored clean. Neither can drift from the other.

`make notebooks` writes every `.ipynb` from its `.py` (`jupytext --to ipynb --update`, which
keeps the stored cell ids); this test does the same in memory and requires the bytes on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import pytest
from jupytext.combine import combine_inputs_with_outputs

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.py"))
STORED = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
FIX = "run `make notebooks` to write the .ipynb from its .py"


def test_every_notebook_has_its_text_source():
    assert SOURCES, "no notebooks found"
    assert [p.stem for p in SOURCES] == [p.stem for p in STORED]


def _regenerated(source: Path, folder: Path) -> str:
    """What `jupytext --to ipynb --update` writes for `source` over the stored notebook."""
    stored = jupytext.read(source.with_suffix(".ipynb"))
    target = folder / f"{source.stem}.ipynb"
    jupytext.write(combine_inputs_with_outputs(jupytext.read(source), stored), target)
    return target.read_text(encoding="utf-8")


def _without_ids(notebook: dict) -> dict:
    cells = [{k: v for k, v in cell.items() if k != "id"} for cell in notebook["cells"]]
    return {**notebook, "cells": cells}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_stored_notebook_is_its_source(source, tmp_path):
    stored = source.with_suffix(".ipynb").read_text(encoding="utf-8")
    assert _regenerated(source, tmp_path) == stored, FIX
    # From the .py alone (cell ids aside, which only the .ipynb keeps): nothing stored in the
    # .ipynb is missing from the text, metadata included.
    fresh = json.loads(jupytext.writes(jupytext.read(source), "ipynb"))
    assert _without_ids(fresh) == _without_ids(json.loads(stored)), FIX


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_stored_notebook_is_clean(source):
    notebook = json.loads(source.with_suffix(".ipynb").read_text(encoding="utf-8"))
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), FIX
    ids = [c["id"] for c in notebook["cells"]]
    assert len(ids) == len(set(ids)), "cell ids are unique"
    # papermill injects its parameters after the cell tagged `parameters`: the first code cell.
    assert code and code[0]["metadata"].get("tags") == ["parameters"]
    assert not any("parameters" in c["metadata"].get("tags", []) for c in code[1:])
    assert notebook["metadata"]["jupytext"]["formats"] == "ipynb,py:percent"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_notebook_skips_only_for_missing_third_party_modules(source):
    # notebooks/conftest.py skips a notebook whose `requires.modules` do not import; a missing
    # strategy or part of musepi_lab must fail the notebook instead.
    notebook = json.loads(source.with_suffix(".ipynb").read_text(encoding="utf-8"))
    requires = notebook["metadata"]["musepi_lab"]["requires"]
    assert set(requires) == {"modules"}
    assert not any(m.split(".")[0] == "musepi_lab" for m in requires["modules"])

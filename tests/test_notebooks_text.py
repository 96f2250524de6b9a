"""The notebooks are kept as text: each `notebooks/NN-*.py` (jupytext percent format) is the
source of its paired `.ipynb`, which is stored clean. Neither can drift from the other.

`make notebooks` writes every `.ipynb` from its `.py` with jupytext (`notebooks/_write_ipynb.py`:
only the cell ids come from the stored file); this test requires those bytes on disk.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FIX = "run `make notebooks` to write the .ipynb from its .py"


def _load_writer():
    spec = importlib.util.spec_from_file_location("_write_ipynb", NOTEBOOKS / "_write_ipynb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


writer = _load_writer()
SOURCES = writer.sources(NOTEBOOKS)


def _stored(source: Path) -> dict:
    return json.loads(source.with_suffix(".ipynb").read_text(encoding="utf-8"))


def test_every_notebook_has_its_text_source():
    stored = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    assert SOURCES, "no notebooks found"
    assert [p.stem for p in SOURCES] == [p.stem for p in stored]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_stored_notebook_is_its_source(source):
    assert writer.render(source) == source.with_suffix(".ipynb").read_text(encoding="utf-8"), FIX


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_stored_notebook_is_clean(source):
    notebook = _stored(source)
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
    requires = _stored(source)["metadata"]["musepi_lab"]["requires"]
    assert set(requires) == {"modules"}
    assert not any(m.split(".")[0] == "musepi_lab" for m in requires["modules"])


def test_writer_cleans_a_run_notebook_and_keeps_cell_ids(tmp_path):
    # A notebook saved after a run (outputs, counts, timings, language_info) and with one cell
    # edited in its .py comes back clean, every unchanged cell with its id.
    source = SOURCES[0]
    (tmp_path / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    run = _stored(source)
    run["metadata"]["language_info"] = {"name": "python", "version": "3.11"}
    for n, cell in enumerate(c for c in run["cells"] if c["cell_type"] == "code"):
        cell.update(
            execution_count=n + 1,
            outputs=[{"output_type": "stream", "name": "stdout", "text": "x"}],
        )
        cell["metadata"]["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    (tmp_path / f"{source.stem}.ipynb").write_text(json.dumps(run), encoding="utf-8")

    edited = jupytext.read(source)
    last = edited.cells[-1]
    last.source += "\nprint('edited')"
    jupytext.write(edited, tmp_path / source.name, fmt="py:percent")

    assert writer.write_all(tmp_path) == [tmp_path / f"{source.stem}.ipynb"]
    cleaned = json.loads((tmp_path / f"{source.stem}.ipynb").read_text(encoding="utf-8"))
    stored = _stored(source)
    assert "language_info" not in cleaned["metadata"]
    assert [c["id"] for c in cleaned["cells"][:-1]] == [c["id"] for c in stored["cells"][:-1]]
    assert cleaned["cells"][-1]["source"][-1] == "print('edited')"
    for cell in cleaned["cells"]:
        assert cell.get("outputs", []) == [] and cell.get("execution_count") is None
        assert "execution" not in cell["metadata"]
    assert writer.write_all(tmp_path) == []  # a second write changes nothing

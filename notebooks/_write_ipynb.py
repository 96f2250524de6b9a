"""Write each notebook's `.ipynb` from its source `NN-*.py` (run: `make notebooks`).

The `.py` files (jupytext percent format) are the notebooks' source; the paired `.ipynb` is
what jupytext reads from them, stored clean: no outputs, no execution counts, no metadata the
text does not hold. Only the cell ids come from the stored `.ipynb` (jupytext's own matching
of cells, as `jupytext --update` does), so a cell keeps its id from one write to the next.
`jupytext --update` alone would also keep the outputs and metadata a run left in the file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
from jupytext.combine import combine_inputs_with_outputs
from nbformat import NotebookNode

HERE = Path(__file__).resolve().parent


def sources(folder: Path = HERE) -> list[Path]:
    """The notebooks' source files, in order."""
    return sorted(folder.glob("[0-9][0-9]-*.py"))


def _ids_only(notebook: NotebookNode) -> NotebookNode:
    """The stored notebook with everything but its cells' ids, types and sources dropped."""
    cells = []
    for cell in notebook.cells:
        kept = NotebookNode(cell_type=cell.cell_type, id=cell.id, metadata={}, source=cell.source)
        if cell.cell_type == "code":
            kept.update(outputs=[], execution_count=None)
        cells.append(kept)
    return NotebookNode(
        cells=cells, metadata={}, nbformat=notebook.nbformat, nbformat_minor=notebook.nbformat_minor
    )


def render(source: Path) -> str:
    """The `.ipynb` text of a notebook source, cell ids kept from the stored `.ipynb`."""
    notebook = jupytext.read(source)
    stored = source.with_suffix(".ipynb")
    if stored.exists():
        notebook = combine_inputs_with_outputs(notebook, _ids_only(jupytext.read(stored)))
    text = jupytext.writes(notebook, "ipynb")
    return text if text.endswith("\n") else text + "\n"


def write_all(folder: Path = HERE) -> list[Path]:
    """Write the `.ipynb` of every source in `folder` whose text changed; returns those."""
    written = []
    for source in sources(folder):
        target = source.with_suffix(".ipynb")
        text = render(source)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            written.append(target)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)

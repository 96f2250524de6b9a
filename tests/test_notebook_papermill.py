"""The benchmark notebook under papermill with injected parameters, and the files it writes.

(Every notebook also runs top to bottom under `pytest --nbval-lax notebooks/`, which
`make test` runs beside this suite.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import papermill
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "04-benchmark-dataset.ipynb"


@pytest.mark.slow
def test_benchmark_notebook_with_injected_parameters(tmp_path):
    out_dir = tmp_path / "bench"
    strategies = ["truncate", "none"]
    budgets = [3000, 9000]
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(tmp_path / "executed.ipynb"),
        parameters={
            "dataset": str(REPO / "datasets" / "sample"),
            "strategies": strategies,
            "budgets": budgets,
            "output_dir": str(out_dir),
        },
        cwd=str(REPO / "notebooks"),
        kernel_name="python3",
        progress_bar=False,
    )
    executed = json.loads((tmp_path / "executed.ipynb").read_text())
    tags = [c["metadata"].get("tags", []) for c in executed["cells"] if c["cell_type"] == "code"]
    assert ["injected-parameters"] in tags  # papermill really injected them

    results = pd.read_parquet(out_dir / "results.parquet")
    sessions = sorted(p.stem for p in (REPO / "datasets" / "sample").glob("*.jsonl"))
    assert sorted(results["strategy"].unique()) == sorted(strategies)
    assert sorted(results["budget"].unique()) == budgets
    assert len(results) == len(sessions) * len(strategies) * len(budgets)
    assert results.loc[results.strategy == "none", "fact_retention"].eq(1.0).all()
    csv = pd.read_csv(out_dir / "results.csv")
    assert len(csv) == len(results)
    config = json.loads((out_dir / "config.json").read_text())
    assert sorted(config["budgets"]) == budgets

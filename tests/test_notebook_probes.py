"""Notebook 07 under papermill against an endpoint given by parameter (here a loopback
server started by the test, standing in for a real one)."""

from __future__ import annotations

import json
from pathlib import Path

import papermill
import pytest

from musepi_lab.probes._loopback import echo_reader, overlap_judge
from musepi_lab.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "07-probe-evaluation.ipynb"


@pytest.mark.slow
def test_probe_notebook_uses_the_endpoints_it_is_given(tmp_path):
    with (
        StubOpenAIServer(responder=echo_reader) as reader,
        StubOpenAIServer(responder=overlap_judge) as judge,
    ):
        papermill.execute_notebook(
            str(NOTEBOOK),
            str(tmp_path / "executed.ipynb"),
            parameters={
                "sessions": 1,
                "strategies": ["none", "truncate"],
                "reader_url": reader.base_url,
                "reader_model": "given-reader",
                "judge_url": judge.base_url,
                "judge_model": "given-judge",
            },
            cwd=str(REPO / "notebooks"),
            kernel_name="python3",
            progress_bar=False,
        )
        reader_models = {body["model"] for _, body in reader.requests}
        judge_models = {body["model"] for _, body in judge.requests}
    assert reader_models == {"given-reader"} and judge_models == {"given-judge"}
    executed = json.loads((tmp_path / "executed.ipynb").read_text())
    printed = "".join(
        "".join(out.get("text", ""))
        for cell in executed["cells"]
        for out in cell.get("outputs", [])
    )
    assert "reader given-reader, judge given-judge; 1 sessions" in printed

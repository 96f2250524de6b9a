"""Installable: the built wheel carries the prompts and the bundled sample, and
`musepi-lab demo` works from it in an empty folder, away from the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("musepi_lab-*.whl")
    return built


def test_wheel_holds_the_prompts_and_the_sample(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sample = sorted((REPO / "datasets" / "sample").iterdir())
    assert sample, "the repository's sample is missing"
    for file in sample:
        assert f"musepi_lab/datasets/bundled/sample/{file.name}" in names
    assert "musepi_lab/datasets/bundled/sample.manifest.json" in names
    prompts = sorted(p.name for p in (REPO / "prompts").glob("*.md"))
    assert prompts and all(f"musepi_lab/prompts/{p}" in names for p in prompts)
    assert not any(n.startswith(("tests/", "notebooks/", "perf/")) for n in names)


def test_demo_runs_from_the_installed_wheel_in_an_empty_folder(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    work = tmp_path / "empty"
    work.mkdir()
    # The wheel's package first on the path (the editable install's finder comes after the
    # path entries); dependencies from this environment.
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = subprocess.run(
        [sys.executable, "-c", "import musepi_lab; print(musepi_lab.__file__)"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert probe.stdout.strip().startswith(str(site))
    run = subprocess.run(
        [sys.executable, "-m", "musepi_lab.cli", "demo", "--out", "demo-output"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = work / "demo-output"
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert (out / "results.parquet").is_file() and (out / "results.csv").is_file()
    sessions = {Path(s).name for s in json.dumps(config).split('"') if s.endswith(".jsonl")}
    assert {f.name for f in (REPO / "datasets" / "sample").glob("*.jsonl")} <= sessions
    assert sorted(p.name for p in work.iterdir()) == ["demo-output"]

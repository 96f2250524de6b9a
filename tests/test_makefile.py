"""The Makefile's promises (issue 29 item 2): `make test` names a missing tool before it
installs anything, and `make lab` starts JupyterLab on the port asked, without a browser
when asked, also as root (JupyterLab refuses root without `--allow-root`, the usual user in
a container). Real `make`, real JupyterLab."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)  # the virtualenv running the tests

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


@needs_make
def test_make_test_names_a_missing_tool_before_installing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    started = time.monotonic()
    # PYTHON=false: a set-up that ran first would fail at once instead of installing.
    argv = ["make", "--no-print-directory", "test", f"VENV={venv}", "PYTHON=false"]
    done = subprocess.run(
        [*argv, "CHROMIUM=/nonexistent/chromium"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "missing chromium" in output
    assert not venv.exists() and "-m venv" not in output  # nothing was set up first
    assert time.monotonic() - started < 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@needs_make
@pytest.mark.slow
@pytest.mark.skipif(not (VENV / "bin" / "jupyter-lab").exists(), reason="no JupyterLab here")
def test_make_lab_serves_on_the_port_asked_without_a_browser(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "BROWSER": "false",  # were a browser opened, it would be this command
    }
    process = subprocess.Popen(
        ["make", "--no-print-directory", "lab-run", f"VENV={VENV}", f"PORT={port}", "BROWSER=no"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        answer = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=2) as reply:
                    answer = json.loads(reply.read())
                break
            except OSError:
                time.sleep(0.5)
        assert process.poll() is None, "JupyterLab ended (as root without --allow-root?)"
        assert answer is not None and "version" in answer
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
    assert "--no-browser" in output and f"port={port}" in output
    if os.geteuid() == 0:
        assert "--allow-root" in output

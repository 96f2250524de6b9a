"""A JupyterLab server for the browser check: 127.0.0.1, its own port, token and folders.

Everything the server writes (runtime files, user settings, workspaces, autosaved notebooks)
goes into one scratch folder the caller owns; the notebooks are copies, so the repository's
own `.ipynb` files are never touched. The kernel gets `PYTHONPATH=<repository>`, so it
imports the package from the tree under test.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0

# User settings written before start: no news toast; every cell kept in the DOM (the default
# windowing leaves off-screen cells unrendered, which hides their outputs); no kernel dialog.
USER_SETTINGS: dict[str, dict[str, object]] = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # Start the notebook's own kernel without the "Select Kernel" dialog.
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autoStartDefaultKernel": True},
}


class ServerStartError(RuntimeError):
    """JupyterLab exited or did not answer in time; the message holds its log's tail."""


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab: where it listens, its token and the folder it serves."""

    base_url: str
    token: str
    root: Path
    log: Path

    def notebook_url(self, name: str) -> str:
        """The JupyterLab URL that opens notebook `name` (a file in `root`) alone, in a
        fresh workspace of its own (JupyterLab otherwise restores every tab opened before)."""
        workspace = "".join(c if c.isalnum() else "-" for c in name)
        return f"{self.base_url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lab_command(port: int, token: str, root: Path) -> list[str]:
    """The command line: loopback only, fixed port (no retries), no browser, no update check."""
    # CI containers run as root; the server refuses that unless told.
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return [
        sys.executable,
        "-m",
        "jupyterlab",
        *as_root,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]


def lab_environment(scratch: Path, repo: Path) -> dict[str, str]:
    """The server's environment: every Jupyter folder it writes to under `scratch`."""
    env = dict(os.environ)
    env.update(
        JUPYTER_RUNTIME_DIR=str(scratch / "runtime"),
        JUPYTER_CONFIG_DIR=str(scratch / "config"),
        JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH", "")) if p),
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    return env


def write_user_settings(settings_dir: Path) -> None:
    """Write `USER_SETTINGS` as JupyterLab's user settings files."""
    for relative, values in USER_SETTINGS.items():
        target = settings_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return "(no log)"


@contextmanager
def run_lab(
    scratch: Path, repo: Path, notebooks: Sequence[Path], timeout_s: float = START_TIMEOUT_S
) -> Iterator[LabServer]:
    """Start JupyterLab over copies of `notebooks` in `scratch/notebooks`; stop it after.

    Args:
        scratch: An empty folder for everything the server writes. It must lie inside the
            repository, so notebooks that look for `datasets/…` upwards find it.
        repo: The repository root (put on the kernel's PYTHONPATH).
        notebooks: Notebook files to serve (copied).
        timeout_s: Longest wait for the server to answer.

    Yields:
        The running server.

    Raises:
        ServerStartError: The server exited or did not answer within `timeout_s`.
    """
    root = scratch / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    for notebook in notebooks:
        shutil.copy2(notebook, root / notebook.name)
    write_user_settings(scratch / "settings")
    port, token = free_port(), secrets.token_hex(16)
    log = scratch / "jupyterlab.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            lab_command(port, token, root),
            cwd=root,
            env=lab_environment(scratch, repo),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log)
    try:
        deadline = time.monotonic() + timeout_s
        while not _answers(f"{server.base_url}/api/status?token={token}"):
            if process.poll() is not None:
                raise ServerStartError(f"JupyterLab exited ({process.returncode}): {_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"JupyterLab silent after {timeout_s:.0f} s: {_tail(log)}")
            time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

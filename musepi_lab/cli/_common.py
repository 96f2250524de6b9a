"""Shared pieces of the command line: the usage error and the parser that reports in one
line, plain tables, problem lists, the model endpoint options."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .._errors import MusepiLabError

if TYPE_CHECKING:
    from ..llm._summarizer import OpenAICompatibleSummarizer


class UsageError(MusepiLabError):
    """A command-line argument that cannot be used (printed, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command and where its help
    is (argparse's own print the whole usage first), exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Print `musepi-lab CMD: message (see musepi-lab CMD --help)` and exit 2."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class RaisingParser(Parser):
    """A parser for arguments read a second time (`usage`'s options among its paths): an
    error is a `UsageError`, printed by `main` in one line."""

    def error(self, message: str) -> NoReturn:
        """Raise `UsageError(message)`."""
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def one_line(text: object) -> str:
    """An error message on one line (a message over several lines is joined)."""
    return " ".join(str(text).split())


def add_model_options(p: argparse.ArgumentParser, *, what: str) -> None:
    """`--base-url`, `--model`, `--api-key-env`: the OpenAI-compatible endpoint `what` calls.

    The key itself is never a flag (it would stay in the shell history): `--api-key-env`
    names the environment variable that holds it.
    """
    p.add_argument(
        "--base-url",
        metavar="URL",
        default=None,
        help=f"OpenAI-compatible endpoint for {what}, e.g. http://127.0.0.1:8080/v1 "
        "(default: $OPENAI_BASE_URL)",
    )
    p.add_argument(
        "--model",
        metavar="NAME",
        default=None,
        help="model name at that endpoint (default: $MUSEPI_LAB_MODEL, $OPENAI_MODEL, "
        "else gpt-4o-mini)",
    )
    p.add_argument(
        "--context-window",
        metavar="TOKENS",
        type=positive_int,
        default=None,
        help="the model's context window: inputs are fitted to it (default 128k; a local "
        "server's is its n_ctx)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help="environment variable holding the API key (default: OPENAI_API_KEY; a local "
        "server may need none)",
    )


def summarizer_from(
    args: argparse.Namespace, *, cache_dir: Any = None, required: str | None = None
) -> OpenAICompatibleSummarizer | None:
    """The endpoint `add_model_options` describes, or None when none is configured.

    Args:
        args: The parsed arguments (`base_url`, `model`, `api_key_env`).
        cache_dir: The summary cache folder (None: no cache).
        required: What needs the model (e.g. "navigate --summarize"); given, a missing
            endpoint is a `UsageError` saying which flags to pass instead of None.

    Raises:
        UsageError: `--api-key-env` names an unset variable, or `required` and no endpoint.
    """
    from ..llm import OpenAICompatibleSummarizer, SummarizerNotConfigured

    window = getattr(args, "context_window", None)
    sized = {"context_window": window} if window else {}
    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise UsageError(f"--api-key-env {args.api_key_env}: that variable is not set")
    try:
        return OpenAICompatibleSummarizer(
            model=args.model, base_url=args.base_url, api_key=key, cache_dir=cache_dir, **sized
        )
    except SummarizerNotConfigured:
        if required is None:
            return None
        raise UsageError(
            f"{required} calls a model and no endpoint is configured: pass --base-url URL "
            "(and --model NAME, --api-key-env VAR when the server needs them) or set "
            "OPENAI_BASE_URL / OPENAI_API_KEY"
        ) from None


def print_error(message: object) -> None:
    """`musepi-lab: message`, on one line, to stderr."""
    print(f"musepi-lab: {one_line(message)}", file=sys.stderr)


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    if not rows:
        return "(nothing found)"
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines.append("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        lines.append(
            "  ".join(
                str(r[c]).rjust(widths[c])
                if isinstance(r[c], (int, float)) and not isinstance(r[c], bool)
                else str(r[c]).ljust(widths[c])
                for c in cols
            )
        )
    return "\n".join(lines)


# -- inspect / convert --------------------------------------------------------------------


def print_problems(problems: Sequence[Any], limit: int, *, file: Any = None) -> None:
    """One `problem: ...` line per problem, at most `limit`, then how many more."""
    for problem in problems[:limit]:
        print(f"problem: {problem}", file=file)
    if len(problems) > limit:
        print(f"... and {len(problems) - limit} more problems", file=file)


def positive_int(text: str) -> int:
    """A token count argument: `20000`, `20_000` or `20k`, above zero."""
    try:
        value = int(text.replace("_", "").rstrip("kK")) * (1000 if text[-1:] in "kK" else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value

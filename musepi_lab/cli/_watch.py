"""`watch`: follow a session file an agent is still writing, one line per change."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ._common import UsageError

if TYPE_CHECKING:
    from ..formats._tail import TailState


def watch_line(state: TailState, line: str) -> str:
    """The printed line: the time, the live summary, and how the file was read."""
    notes = f" · file read anew ({state.restarts}×)" if state.restarts else ""
    return f"{time.strftime('%H:%M:%S')} {line}{notes}"


def _followed(step: Callable[[], TailState], path: str) -> TailState:
    """The tail after `step`; a file become one of a format a tail cannot follow (rotated
    to another agent's document, say) is a usage error naming the file."""
    from ..session._errors import SessionReadError

    try:
        return step()
    except ValueError as exc:
        if isinstance(exc, SessionReadError):
            raise
        raise UsageError(f"{path}: {exc}") from None


def cmd_watch(args: argparse.Namespace) -> int:
    """Print the live figures of a session file, then a line each time it changes.

    Only the bytes past the last offset are read; a truncated, rotated, rewritten or
    replaced file is read anew (its format detected again); a path become a FIFO, a device
    or a file of a format a tail cannot follow ends it with a one-line error. Ctrl-C (or `--seconds`) ends it; `--once` prints the current state and ends.
    """
    from ..analysis._live import live_summary
    from ..compaction._settings import CompactionSettings
    from ..formats._tail import poll, start_tail
    from ..tokens._counter import TokenCounter

    if args.interval <= 0:
        raise UsageError("--interval must be positive")
    settings = CompactionSettings.for_profile(args.profile)
    counter = TokenCounter.for_profile(args.profile)
    state = _followed(partial(start_tail, args.file), args.file)

    said: list[str] = []

    def show(current: TailState) -> None:
        summary = live_summary(
            current.session,
            settings=settings,
            counter=counter,
            window=args.window,
            pending_bytes=current.pending_bytes,
        )
        # Where the window came from, on the first line and again whenever it changes (one
        # line per change of the session; stderr is for errors).
        origin = f"window {summary.window:,}: {summary.window_reason}"
        line = watch_line(current, summary.line())
        if said[-1:] != [origin]:
            line += f" · {origin}"
            said.append(origin)
        print(line, flush=True)

    show(state)
    if args.once:
        return 0
    deadline = time.monotonic() + args.seconds if args.seconds else None
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(args.interval)
            after = _followed(partial(poll, state), args.file)
            if after.session is not state.session or after.pending != state.pending:
                show(after)
            state = after
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


def add_watch_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `watch` subcommand's arguments."""
    p = sub.add_parser("watch", help="follow a session file while an agent writes it")
    p.add_argument("file", help="a pi/MusePi, Claude Code or Codex JSONL session file")
    p.add_argument("--interval", type=float, default=0.25, help="seconds between looks")
    p.add_argument("--once", action="store_true", help="print the current state and end")
    p.add_argument("--seconds", type=float, default=None, help="end after this many seconds")
    p.add_argument(
        "--profile",
        choices=("musepi", "pi"),
        default="musepi",
        help="whose threshold and cut rules (default musepi)",
    )
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help="the model's context window (default: the session's own: recorded, else the "
        "harness's for its model, e.g. Claude Code's 200,000 for Opus 4.6, else pi-ai's table)",
    )
    p.set_defaults(func=cmd_watch)

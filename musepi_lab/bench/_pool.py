"""The default process pool, whose workers end when the process that started them ends.

`ProcessPoolExecutor` workers wait on a queue whose other end they hold themselves, so a
parent killed with `kill -9` leaves them running (and holding memory, files and locks).
Each worker therefore asks Linux to kill it when its parent dies (`PR_SET_PDEATHSIG`) and,
everywhere, runs a watchdog thread that ends it once the parent is gone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from ._process import pid_running

WATCH_SECONDS = 0.5
"""How often a worker's watchdog checks that its parent is still there."""

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl (another libc): the watchdog still ends the worker


def _watch(owner: int, parent: int) -> None:
    # A reparented worker (its parent died) or a dead owner (the run's process, which is
    # not the parent under the forkserver start method) ends the worker.
    while os.getppid() == parent and pid_running(owner):
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def end_with_owner(owner: int) -> None:
    """Pool initializer: end this worker when process `owner` (the run's) ends."""
    _set_parent_death_signal()
    parent = os.getppid()
    if not pid_running(owner):  # it died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(owner, parent), name="owner-watch", daemon=True).start()


def worker_pool(max_workers: int) -> ProcessPoolExecutor:
    """A process pool of `max_workers` whose workers end with this process."""
    return ProcessPoolExecutor(
        max_workers=max_workers, initializer=end_with_owner, initargs=(os.getpid(),)
    )

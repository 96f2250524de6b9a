"""Facts about processes that the writing, locking and pool modules share."""

from __future__ import annotations

import os
import sys


def pid_running(pid: int) -> bool:
    """True while process `pid` exists and has not exited (a zombie waiting to be reaped
    counts as ended). Never signals the process.

    On Windows, where `os.kill(pid, 0)` would end the process, every positive pid is
    taken as running.
    """
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            # The state follows the command name, which is in parentheses and may hold any byte.
            state = fh.read().rpartition(b")")[2].split()[:1]
        return state not in ([b"Z"], [b"X"])
    except FileNotFoundError:
        return False
    except OSError:
        pass  # no /proc (macOS): ask the kernel with the null signal
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

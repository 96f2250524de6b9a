"""One benchmark per output folder: a lock file that names its holder.

Two runs writing to the same folder would redo each other's cells and overwrite each
other's results. `folder_lock` holds `<folder>/.musepi-lab.lock` for the length of a run:
an exclusive `flock` (released by the kernel when the holder ends, however it ends, so a
lock left by a killed run is taken over at once) on a file that holds the holder's pid,
which the refusal names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._errors import MusepiLabError
from .._process import pid_running

try:
    import fcntl
except ImportError:  # Windows: an exclusive create instead (see `_acquire_exclusive`)
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".musepi-lab.lock"
"""The lock file's name inside the folder it guards."""


class FolderLockedError(MusepiLabError, RuntimeError):
    """Another process holds the folder's lock.

    Attributes:
        lock: The lock file.
        pid: The holder's pid, when the file names one.
    """

    def __init__(self, lock: Path, pid: int | None) -> None:
        self.lock = lock
        self.pid = pid
        holder = f"process {pid}" if pid is not None else "another process"
        if pid is not None and not pid_running(pid):
            holder += " (ended; processes it started still hold the lock)"
        super().__init__(
            f"{lock.parent} is in use by {holder}: lock file {lock}; wait for that run "
            "to end or choose another output folder"
        )


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _acquire_flock(path: Path) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise FolderLockedError(path, pid) from None
        # The previous holder removes the file as it releases it: if what we locked is no
        # longer the file at `path`, lock the new one instead.
        try:
            current = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            current = False
        if current:
            return fd
        os.close(fd)


def _acquire_exclusive(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        text = path.read_text(encoding="ascii", errors="replace").strip()
        raise FolderLockedError(path, int(text) if text.isdigit() else None) from None


@contextmanager
def folder_lock(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the folder's lock (creating the folder) until the block ends.

    Yields:
        The lock file.

    Raises:
        FolderLockedError: Another running process holds it (the message names the lock
            file and the holder's pid).
    """
    base = Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    path = base / LOCK_NAME
    fd = _acquire_flock(path) if fcntl is not None else _acquire_exclusive(path)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield path
    finally:
        # Removed while still held, so no one can take a lock on a file about to vanish.
        path.unlink(missing_ok=True)
        os.close(fd)

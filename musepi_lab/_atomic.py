"""Writing files so that a crash never leaves a half-written one.

Every file is written to a temporary name in its folder (`.<name>.<pid>.<n>.tmp`), synced
when asked, and renamed over its target, so a reader sees the old file or the new one,
never a part. Temporaries are created with the usual permissions (0666 less the umask):
what a reader writes is as readable as any file the user writes. Bottom layer: the session
writer, the model cache, manifests and the benchmark files all write through here.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping
from pathlib import Path

Writer = Callable[[Path], object]
"""Writes a file's whole content to the path it is given."""

_serial = itertools.count()


def temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{next(_serial)}.tmp")


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a folder; the rename is still atomic
    finally:
        os.close(fd)


def write_files_atomic(files: Mapping[Path, Writer], *, durable: bool = True) -> None:
    """Write several files so that each is either untouched or wholly new.

    Every file is first written to a temporary in its folder (and synced to disk when
    `durable`), then all are renamed over their targets; a writer that raises leaves
    every target as it was and no temporary behind.

    Args:
        files: Target path → function writing the content to the path it is given.
        durable: fsync each file and its folder (off for small caches, where losing the
            last file on power loss only means recomputing it).
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for path, write in files.items():
            tmp = temp_path(path)
            staged.append((tmp, path))
            write(tmp)
            if durable:
                _fsync(tmp)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    if durable:
        for folder in {path.parent for path in files}:
            _fsync(folder, directory=True)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """Write `data` to `path` atomically (see `write_files_atomic`)."""
    write_files_atomic({path: lambda tmp: tmp.write_bytes(data)}, durable=durable)
    return path

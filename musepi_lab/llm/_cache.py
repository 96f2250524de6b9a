"""The disk cache of model answers, keyed by the full request.

One folder of JSON files serves every lane (chat summaries, handoff, custom endpoints, the
Responses compact lane), so re-running a benchmark never pays twice. Only answers that
passed the seam's checks are stored; a file that is unreadable or of the wrong shape is a
miss, never an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._atomic import write_bytes_atomic
from ._cache_key import cache_key
from ._types import SummaryResponse

__all__ = ["DiskCache", "cache_key"]


@dataclass
class DiskCache:
    """A folder of JSON files, one per request key, written atomically.

    Attributes:
        folder: Where the files go (`<folder>/<key[:2]>/<key>.json`).
    """

    folder: Path

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get_json(self, key: str) -> dict[str, Any] | None:
        """The stored JSON object, or None (missing, unreadable, or not an object)."""
        try:
            data = orjson.loads(self._path(key).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def put_json(self, key: str, data: Mapping[str, Any]) -> None:
        """Store a JSON object (temporary file, then rename: readers never see half)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, orjson.dumps(dict(data)), durable=False)

    def get(self, key: str) -> SummaryResponse | None:
        """The cached `SummaryResponse`, or None (also for a file of the wrong shape)."""
        return SummaryResponse.from_record(self.get_json(key))

    def put(self, key: str, response: SummaryResponse) -> None:
        """Store a `SummaryResponse`."""
        self.put_json(key, response.to_record())

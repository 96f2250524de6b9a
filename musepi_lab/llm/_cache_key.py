"""The cache key: sha256 over a request's JSON with sorted keys."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson


def cache_key(payload: Mapping[str, Any]) -> str:
    """sha256 over a JSON payload with sorted keys (the endpoint identity and the full request).

    The payload never holds the API key.
    """
    return hashlib.sha256(orjson.dumps(dict(payload), option=orjson.OPT_SORT_KEYS)).hexdigest()

"""Independent reading of raw session files for the tests' expected values: plain `json`,
none of the package's readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def jsonl_records(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per line; lines that are not JSON objects
    (a cut last line, a bare value) are left out."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out

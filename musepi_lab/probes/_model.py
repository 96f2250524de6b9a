"""The probe value, its kinds, and the text a reader sees of a context.

A probe is one question asked after a compaction, with a reference answer taken from the
session itself. Four kinds, after the probe-based evaluations of summarization for coding
agents: `recall` (a fact from before the cut), `artifact` (which files were touched and how
they were left), `continuation` (what comes next after the point) and `decision` (why an
earlier action was taken).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PROBE_KINDS: tuple[str, ...] = ("recall", "artifact", "continuation", "decision")
"""The four probe kinds, in the order tables and plots show them."""


@dataclass(frozen=True)
class Probe:
    """One question about a compacted session, with its reference answer.

    Attributes:
        probe_id: Stable id: a hash of the session, the point, the cut and the question.
        session_id: The session's id.
        leaf_id: The entry the compaction was made at (the probe point).
        first_kept_entry_id: The engine's cut the probe was made for.
        kind: One of `PROBE_KINDS`.
        subkind: Finer kind: a fact kind (`path`, `identifier`, ...), `files-modified`,
            `files-read`, `file-state`, `next-user-request`, `next-tool-call`, `decision`.
        question: What the reader is asked.
        reference: The reference answer shown to the judge (and to people).
        exact: Strings the answer must contain, for probes scored by exact match; empty
            for probes the judge scores.
        source: Where the reference came from: `planted`, `extracted`, `file-ops`,
            `session`.
        entry_id: The entry the reference was taken from.
    """

    probe_id: str
    session_id: str
    leaf_id: str
    first_kept_entry_id: str
    kind: str
    subkind: str
    question: str
    reference: str
    exact: tuple[str, ...] = ()
    source: str = "session"
    entry_id: str | None = None

    @property
    def scoring(self) -> str:
        """`exact` when the reference is exact strings, else `judge`."""
        return "exact" if self.exact else "judge"


def probe_id(*parts: Any) -> str:
    """A 12-hex id from the parts (stable across runs and machines)."""
    raw = json.dumps([str(p) for p in parts], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def chat_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """Every text a reader sees in Chat Completions messages, one part per line.

    Message contents (strings, or the text parts of a list), and for each tool call its
    name and the string values of its arguments (decoded from their JSON), so a command or
    path reads as written, not JSON-escaped.
    """
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(
                p["text"]
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                continue
            parts.append(str(function.get("name", "")))
            parts.extend(_argument_strings(function.get("arguments")))
    return "\n".join(parts)


def _argument_strings(raw: Any) -> list[str]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return [str(raw)]
    out: list[str] = []
    _strings(value, out)
    return out


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif value is not None:
        out.append(json.dumps(value))

"""Facts of whole sessions: extracted once per session, and a second source for real ones.

Scoring runs many cells (strategies × budgets) on one session; each needs the facts of a
different part of it. `entry_facts` extracts them entry by entry once per session (kept in a
small cache keyed by `session_fingerprint`), and `facts_of_entries` assembles any part from
that cache without reading a message twice.

`corpus_facts` is a second fact source for real sessions, by fixed rules on the session's
records rather than regular expressions over every text: the files its tools touched, the
commands it ran, the errors it met, the user's standing instructions, and the identifiers
named in user and assistant prose.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..session._messages import entry_to_message
from ..session._model import Entry
from ..session._session import Session
from ._facts import _IDENT, _MIN_IDENT, Fact, extract_facts

_CACHE_SIZE = 16
_entry_cache: OrderedDict[tuple[Any, ...], Mapping[str, tuple[Fact, ...]]] = OrderedDict()

PATH_ARGUMENTS: tuple[str, ...] = ("path", "file_path", "filePath", "notebook_path")
"""Tool-call arguments that name a file the tool touches."""
COMMAND_ARGUMENTS: tuple[str, ...] = ("command", "cmd")
"""Tool-call arguments that hold a shell command."""
_INSTRUCTION = re.compile(r"(?i)^(always|never|don't|do not|please|use|make sure|must)\b")
_MAX_LINE = 200


def session_fingerprint(session: Session) -> tuple[Any, ...]:
    """A key that changes when the session does: its source file's path, size and
    modification time with its entry count and last entry id; for a session not read
    from a file, the ids of all its entries."""
    ids = (len(session.entries), session.entries[-1].id if session.entries else None)
    if session.source_path:
        try:
            st = os.stat(session.source_path)
        except OSError:
            pass
        else:
            return ("file", session.source_path, st.st_size, st.st_mtime_ns, *ids)
    return ("ids", hash(tuple(e.id for e in session.entries)), *ids)


def _regex_facts(entry: Entry) -> tuple[Fact, ...]:
    message = entry_to_message(entry)
    return extract_facts([message]) if message is not None else ()


def _rule_facts(entry: Entry) -> tuple[Fact, ...]:
    message = entry.message
    if message is None:
        return ()
    return tuple(Fact(text, kind) for kind, text in message_corpus_facts(message))


def _per_entry(
    session: Session, source: str, extract: Callable[[Entry], tuple[Fact, ...]]
) -> Mapping[str, tuple[Fact, ...]]:
    """`extract` of every entry, by entry id, once per (source, session fingerprint)."""
    key = (source, *session_fingerprint(session))
    cached = _entry_cache.get(key)
    if cached is not None:
        _entry_cache.move_to_end(key)
        return cached
    found = {e.id: facts for e in session.entries if e.id is not None and (facts := extract(e))}
    _entry_cache[key] = found
    while len(_entry_cache) > _CACHE_SIZE:
        _entry_cache.popitem(last=False)
    return found


def entry_facts(session: Session) -> Mapping[str, tuple[Fact, ...]]:
    """`extract_facts` of each entry's message, by entry id (entries without facts are
    left out), computed once per session fingerprint."""
    return _per_entry(session, "extract_facts", _regex_facts)


def clear_fact_cache() -> None:
    """Forget every session's cached facts (benchmarks call it to time cold runs)."""
    _entry_cache.clear()


def facts_of_entries(session: Session, entry_ids: Iterable[str]) -> tuple[Fact, ...]:
    """The facts of the given entries, in the order given, deduplicated (first wins).

    The same facts as `extract_facts` of those entries' messages, from the cache.
    """
    by_entry = entry_facts(session)
    seen: dict[str, Fact] = {}
    for entry_id in entry_ids:
        for fact in by_entry.get(entry_id, ()):
            seen.setdefault(fact.text, fact)
    return tuple(seen.values())


# -- corpus facts: fixed rules on the records ----------------------------------------------
def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:_MAX_LINE]
    return ""


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _block_text(message: Mapping[str, Any]) -> str:
    return "\n".join(
        b["text"]
        for b in _blocks(message)
        if b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _call_facts(arguments: Any) -> Iterable[tuple[str, str]]:
    if not isinstance(arguments, Mapping):
        return
    for key in PATH_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            yield "path", value.strip()
    for key in COMMAND_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and _first_line(value):
            yield "command", _first_line(value)


def _identifiers(text: str) -> Iterable[tuple[str, str]]:
    for m in _IDENT.finditer(text):
        if len(m.group(0)) >= _MIN_IDENT:
            yield "identifier", m.group(0)


def message_corpus_facts(message: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """`(kind, text)` of one runtime message by the rules of `corpus_facts`."""
    role = message.get("role")
    if role == "user":
        text = _block_text(message)
        for line in text.splitlines():
            line = line.strip()
            if 12 <= len(line) <= _MAX_LINE and _INSTRUCTION.match(line):
                yield "instruction", line
        yield from _identifiers(text)
    elif role == "assistant":
        for block in _blocks(message):
            if block.get("type") == "toolCall":
                yield from _call_facts(block.get("arguments"))
        yield from _identifiers(_block_text(message))
        error = message.get("errorMessage")
        if message.get("stopReason") == "error" and isinstance(error, str) and _first_line(error):
            yield "error", _first_line(error)
    elif role == "toolResult" and message.get("isError"):
        line = _first_line(_block_text(message))
        if line:
            yield "error", line
    elif role == "bashExecution":
        command = message.get("command")
        if isinstance(command, str) and _first_line(command):
            yield "command", _first_line(command)


def corpus_facts(
    session: Session, cut: str | None = None, *, leaf_id: str | None = None
) -> tuple[Fact, ...]:
    """Facts of a real session's records before a cut, by fixed rules.

    Rules, per message on the active path before the entry `cut` (all of it when None):
    - `path`: the `path` / `file_path` / `filePath` / `notebook_path` argument of a tool
      call (the files the tools touched);
    - `command`: the first line of a tool call's `command` or `cmd` argument, and of a
      user `!` command (`bashExecution`);
    - `error`: the first non-empty line of a tool result with `isError: true`, and of the
      `errorMessage` of an assistant message that stopped with an error;
    - `instruction`: user lines (12-200 chars) that start like a rule: always, never,
      don't, do not, please, use, make sure, must;
    - `identifier`: snake_case or camelCase names of at least 8 characters in the text
      blocks of user and assistant messages.
    Lines are capped at 200 characters. Deduplicated by text, first appearance wins.
    Each entry's facts are computed once per session fingerprint, so many cuts of one
    session cost one pass.

    Args:
        session: The session.
        cut: Id of the first entry not scored (the first kept entry of a compaction).
        leaf_id: The leaf whose path is read (default: the session's leaf).
    """
    by_entry = _per_entry(session, "corpus_facts", _rule_facts)
    seen: dict[str, Fact] = {}
    for entry in session.path(leaf_id):
        if cut is not None and entry.id == cut:
            break
        for fact in by_entry.get(entry.id or "", ()):
            seen.setdefault(fact.text, fact)
    return tuple(seen.values())

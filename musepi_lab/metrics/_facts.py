"""Facts: the exact strings a compaction should not lose, and how to find them in a context.

Sources of facts:
- planted facts of generated sessions (`musepi_lab.datasets`), known exactly;
- facts extracted from real sessions by `extract_facts`: file paths, identifiers, commands,
  error lines and user instructions found by regular expressions in the messages that were
  summarized away (cached per session: `entry_facts`, `facts_of_entries`);
- `corpus_facts`: facts of real sessions by fixed rules on their records (files the tools
  touched, commands run, failed results, user rules, identifiers named in prose).

A fact is retained when its exact string occurs in the text of the new context
(`context_text`): every text block, thinking block, tool-call argument and summary the model
would see. Snapcompact's imaged pages count only when their archives are passed
(`context_text(..., archives=session_archives(...))`): without them retention is the lower
bound (images unreadable), with them the upper bound (images read perfectly).
Membership is found with one multi-pattern pass per text (`_match`), not a scan per fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tokens._estimate import js_stringify
from ._archive import ArchiveText, imaged_text
from ._match import found_in

FACT_KINDS: tuple[str, ...] = ("path", "identifier", "command", "error", "instruction")


@dataclass(frozen=True)
class Fact:
    """A string to look for, and what kind of thing it is."""

    text: str
    kind: str


_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")
_IDENT = re.compile(r"\b(?:[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]|[a-z]+(?:[A-Z][a-z0-9]+){2,})\b")
_ERROR_LINE = re.compile(
    r"^.*\b(?:[A-Z][A-Za-z]*(?:Error|Exception)|FAILED|error(?:\[E\d+\])?:|fatal:|panic:).*$",
    re.MULTILINE,
)
_MIN_IDENT = 8
_MAX_LINE = 200


def _texts(message: Mapping[str, Any]) -> Iterable[str]:
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                yield block["text"]
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                yield block["thinking"]
            elif kind == "toolCall":
                yield js_stringify(block.get("arguments", {}))
    for key in ("summary", "command", "output"):
        value = message.get(key)
        if isinstance(value, str):
            yield value


def _commands(message: Mapping[str, Any]) -> Iterable[str]:
    if message.get("role") == "bashExecution" and isinstance(message.get("command"), str):
        yield message["command"]
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") == "toolCall":
            args = block.get("arguments")
            if isinstance(args, Mapping) and isinstance(args.get("command"), str):
                yield args["command"]


def _instruction_lines(message: Mapping[str, Any]) -> Iterable[str]:
    if message.get("role") != "user":
        return
    for text in _texts(message):
        for line in text.splitlines():
            line = line.strip()
            if 12 <= len(line) <= _MAX_LINE and re.match(
                r"(?i)^(always|never|don't|do not|please|use|make sure|must)\b", line
            ):
                yield line


def extract_facts(messages: Sequence[Mapping[str, Any]]) -> tuple[Fact, ...]:
    """Facts found in runtime messages, deduplicated, in order of first appearance.

    Kinds: `path` (slash-separated paths with an extension), `identifier` (snake_case or
    camelCase names of at least 8 chars), `command` (shell commands of tool calls and `!`
    executions, first line, capped at 200 chars), `error` (lines naming an Error/Exception,
    `FAILED`, `error:`, `fatal:`, `panic:`, capped at 200 chars), `instruction` (user lines
    that start like a rule: always, never, do not, please, use, make sure, must).
    """
    seen: dict[str, Fact] = {}

    def add(text: str, kind: str) -> None:
        text = text.strip()
        if text and text not in seen:
            seen[text] = Fact(text, kind)

    for message in messages:
        for line in _instruction_lines(message):
            add(line, "instruction")
        for command in _commands(message):
            add(command.strip().splitlines()[0][:_MAX_LINE] if command.strip() else "", "command")
        for text in _texts(message):
            for m in _PATH.finditer(text):
                add(m.group(0), "path")
            for m in _IDENT.finditer(text):
                if len(m.group(0)) >= _MIN_IDENT:
                    add(m.group(0), "identifier")
            if message.get("role") in ("toolResult", "bashExecution"):
                for m in _ERROR_LINE.finditer(text):
                    add(m.group(0)[:_MAX_LINE], "error")
    return tuple(seen.values())


def context_text(
    messages: Sequence[Mapping[str, Any]], *, archives: Sequence[ArchiveText] = ()
) -> str:
    """All text a model would read in a context, joined: text and thinking blocks, tool-call
    arguments, summaries, command output, and snapcompact's text head and tail.

    Snapcompact frames are images: by default they add nothing (the lower bound of what
    the model reads). With `archives` (`session_archives` of the session the messages were
    built from), the pages of the frames the messages carry count as read, with their
    archive's head and tail around them (the upper bound).
    """
    parts: list[str] = []
    for message in messages:
        parts.extend(_texts(message))
        for block in message.get("blocks") or ():
            # Snapcompact: the archive's text head and tail are text blocks the model reads.
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
    if archives:
        parts.append(imaged_text(messages, archives))
    return "\n".join(parts)


def retained(facts: Iterable[Fact | str], text: str) -> tuple[list[str], list[str]]:
    """Split facts into those present in `text` and those missing (exact substring match,
    found in one pass over `text`)."""
    strings = [fact.text if isinstance(fact, Fact) else fact for fact in facts]
    present = found_in(strings, text)
    kept = [s for s in strings if s in present]
    lost = [s for s in strings if s not in present]
    return kept, lost

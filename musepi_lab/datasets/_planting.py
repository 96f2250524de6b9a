"""Where the generator plants its test facts, and in which forms.

The placement is a fixed table and a seeded draw, written without reference to any
compaction method: every fact kind can land in several places of a coding-agent session,
and each session draws, per kind, a seeded shuffle of that kind's places and walks it task
by task, so every place is used about equally often. The places:

- `user-request`: a sentence of a user's request;
- `long-user-request`: the end of a long user message (after a paragraph of context);
- `thinking`: the assistant's reasoning before a tool call;
- `assistant-text`: a non-final assistant remark before a tool call;
- `tool-argument`: an argument of a tool call (grep pattern or path, a bash command);
- `tool-output-middle`: the middle of a long tool output (a grep listing, a test log);
- `file-content`: a line in the middle of a file the agent reads back;
- `error-message`: the output of a failing command (its traceback and error line);
- `changed-value`: a value stated, then changed later; the latest is current and the
  earlier one is recorded with `current: false`;
- `early-needed-late`: stated once at the start of the scored part of the session and
  referred to (without being repeated) in the last task.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType

_MODULES = ("billing", "ledger", "accounts", "reports", "auth", "sync", "export", "audit")
_NOUNS = ("invoice", "refund", "payment", "customer", "tax", "currency", "statement", "batch")
_VERBS = ("compute", "validate", "render", "merge", "resolve", "apply", "reconcile", "load")
_ERRORS = ("ValueError", "KeyError", "TypeError", "AssertionError", "ZeroDivisionError")
_WORDS = (
    "the value is checked before it is stored and the caller gets a typed error back "
    "when the input cannot be parsed or the record is missing from the cache so the "
    "request fails early instead of writing half a batch to disk"
).split()

PLACES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "path": (
            "user-request",
            "thinking",
            "assistant-text",
            "tool-argument",
            "tool-output-middle",
            "file-content",
            "error-message",
        ),
        "identifier": (
            "user-request",
            "thinking",
            "assistant-text",
            "tool-argument",
            "tool-output-middle",
            "file-content",
        ),
        "command": (
            "user-request",
            "thinking",
            "assistant-text",
            "tool-argument",
            "tool-output-middle",
            "file-content",
        ),
        "error": ("user-request", "thinking", "tool-output-middle", "error-message"),
        "instruction": ("user-request", "long-user-request", "file-content"),
    }
)
"""Per fact kind, the places a task may plant it (the seeded draw picks one per task)."""

SESSION_PLACES: tuple[str, ...] = ("changed-value", "early-needed-late")
"""Places planted once per session rather than per task."""

PLACE_DESCRIPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "user-request": "a sentence of a user's request",
        "long-user-request": "the end of a long user message, after a paragraph of context",
        "thinking": "the assistant's reasoning (a thinking block) before a tool call",
        "assistant-text": "a non-final assistant remark before a tool call",
        "tool-argument": "an argument of a tool call (grep pattern or path, bash command)",
        "tool-output-middle": "the middle of a long tool output (grep listing, passing test log)",
        "file-content": "a line in the middle of a file the agent reads back",
        "error-message": "the output of a failing command (traceback file or error line)",
        "changed-value": "a value stated and later changed: the old one has current=false",
        "early-needed-late": "stated once early in the scored part, referred to in the last task",
        "session-start": "the standing instruction of the session's first message",
    }
)
"""One line per place, for the dataset manifest."""


def sentence(rng: random.Random, n: int) -> str:
    """`n` filler words."""
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def paragraph(rng: random.Random, sentences: int) -> str:
    """A paragraph of filler sentences."""
    return " ".join(f"{sentence(rng, 15).capitalize()}." for _ in range(sentences))


def place_cycles(rng: random.Random) -> dict[str, list[str]]:
    """Per kind, a seeded shuffle of its places; task `t` takes item `t % len`."""
    cycles: dict[str, list[str]] = {}
    for kind, places in PLACES.items():
        order = list(places)
        rng.shuffle(order)
        cycles[kind] = order
    return cycles


def fact_string(rng: random.Random, kind: str, module: str, tag: str) -> str:
    """A fresh fact of `kind`, unique by its `tag`, in one of several realistic forms."""
    noun, noun2, verb = rng.choice(_NOUNS), rng.choice(_NOUNS), rng.choice(_VERBS)
    if kind == "path":
        return rng.choice(
            (
                f"src/{module}/{noun}_{tag}.py",
                f"config/{module}/{noun}_{tag}.toml",
                f"docs/{module}/{noun}-{tag}.md",
                f"tests/fixtures/{module}_{noun}_{tag}.json",
                f"scripts/{verb}_{noun}_{tag}.sh",
            )
        )
    if kind == "identifier":
        camel = f"{verb}{noun.capitalize()}{noun2.capitalize()}{tag.upper()}"
        return rng.choice((f"{verb}_{noun}_{tag}", f"{noun.upper()}_{noun2.upper()}_{tag}", camel))
    if kind == "command":
        return rng.choice(
            (
                f"pytest tests/test_{module}_{tag}.py -k {noun}_{tag} -x",
                f"make migrate DB={module}_{tag}",
                f"python -m scripts.backfill --{noun} {tag} --dry-run",
                f"ruff check src/{module} --select E{tag[:3]}",
                f"git bisect start {tag}{noun[:3]} HEAD~{len(noun)}",
            )
        )
    if kind == "error":
        err = rng.choice(_ERRORS)
        return rng.choice(
            (
                f"{err}: {noun} {tag} rejected by {verb}_{noun2}",
                f"ConnectionResetError: {module} replica {tag} closed the socket",
                f"error: migration {tag} conflicts with {module}_{noun}",
                f"{err}: {noun2} batch {tag} has no {noun} rate",
            )
        )
    if kind == "instruction":
        return rng.choice(
            (
                f"Never edit the generated files under src/{module}/gen_{tag}/ by hand.",
                f"Always round {noun} amounts with the banker's rule in {module} ({tag}).",
                f"Do not add dependencies to {module} without asking me first ({tag}).",
                f"Please keep {noun} logs at INFO level in {module} (ticket {tag}).",
                f"Make sure every {noun} test in {module} runs under seed {tag}.",
            )
        )
    raise ValueError(f"unknown fact kind {kind!r}")


def mention(kind: str, fact: str) -> str:
    """A sentence of a user or assistant message that carries `fact`."""
    return {
        "path": f"The settings for this live in {fact}.",
        "identifier": f"It is also called from {fact}.",
        "command": f"It can be reproduced with {fact} on a clean checkout.",
        "error": f"The nightly job failed with {fact} yesterday.",
        "instruction": fact,
    }[kind]


def file_line(kind: str, fact: str) -> str:
    """A line of a source file that carries `fact`."""
    return {
        "path": f"# Settings are loaded from {fact} at import time.",
        "identifier": f"def {fact}(record, *, strict=False):\n    return record",
        "command": f"# Regenerate the fixtures of this module with: {fact}",
        "instruction": f"# MAINTAINERS: {fact}",
    }[kind]


def grep_listing(rng: random.Random, module: str, ident: str, middle: list[str], lines: int) -> str:
    """A long grep result; `middle` lines sit in its middle."""
    out = []
    for _ in range(lines):
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        out.append(
            f"src/{module}/{rng.choice(_NOUNS)}.py:{rng.randint(5, 400)}:"
            f"    record = {name}(record)  # {sentence(rng, 5)}"
        )
    at = len(out) // 2
    return "\n".join([*out[:at], *middle, *out[at:], f"(pattern {ident})"])


def passing_log(rng: random.Random, test_path: str, middle: list[str], lines: int) -> str:
    """A long, passing test log; `middle` lines sit in its middle."""
    out = [
        "============================= test session starts ==============================",
        f"collected {lines} items",
    ]
    for i in range(lines):
        out.append(f"{test_path}::test_{rng.choice(_NOUNS)}_{i} PASSED [{(i + 1) * 100 // lines}%]")
    at = len(out) // 2
    tail = f"========================= {lines} passed in {rng.randint(1, 9)}.{rng.randint(10, 99)}s"
    return "\n".join([*out[:at], *middle, *out[at:], tail])


def log_line(kind: str, fact: str) -> str:
    """A line of a passing test log that carries `fact`."""
    return {
        "command": f"hint: fixture snapshots are stale; refresh them with {fact}",
        "error": f"WARNING  retrying after {fact} (attempt 1 of 3)",
    }[kind]

"""The building blocks of a generated session: the record builder, messages, and one task.

A task is a tool loop (request, grep, read, failing test, edit, passing test, report) whose
strings carry one planted fact per kind, at the place the session's seeded draw chose for
it (`_planting`). `_generator` assembles tasks into sessions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..tokens._estimate import estimate_tokens_musepi
from ._planting import (
    _ERRORS,
    _MODULES,
    _NOUNS,
    _VERBS,
    fact_string,
    file_line,
    grep_listing,
    log_line,
    mention,
    paragraph,
    passing_log,
    sentence,
)


@dataclass(frozen=True)
class PlantedFact:
    """A unique string planted in a generated session.

    Attributes:
        fact: The exact string.
        kind: One of `FACT_KINDS`.
        entry_id: The entry where it first appears.
        index: Position of that entry in file order (0-based, header excluded).
        place: Where it was planted (`_planting.PLACE_DESCRIPTIONS`).
        current: False for a value that a later message changed (its replacement is the
            fact whose `supersedes` names it).
        supersedes: For a changed value, the old value it replaces.
        needed_index: For a fact stated early, the position of the entry that needs it.
    """

    fact: str
    kind: str
    entry_id: str
    index: int
    place: str = ""
    current: bool = True
    supersedes: str | None = None
    needed_index: int | None = None


@dataclass(frozen=True)
class GeneratorConfig:
    """Shape of one generated session.

    Attributes:
        seed: Random seed; the same seed gives the same bytes.
        tasks: Number of user tasks (each is a tool loop of several requests).
        read_lines: Typical length of a file read (lines).
        window: The context window the usage figures assume (for the earlier compaction).
        with_branch: Add an abandoned branch and a branch summary.
        with_compaction: Add an earlier compaction halfway through.
        model: Model name written into assistant messages.
        session_id: The header id (default `sample-<seed>`, as the bundled sample).
        start_day: Days after 2026-03-02 the session starts (default: the seed).
    """

    seed: int
    tasks: int = 14
    read_lines: int = 220
    window: int = 128_000
    with_branch: bool = True
    with_compaction: bool = True
    model: str = "claude-sonnet-4-5"
    session_id: str | None = None
    start_day: int | None = None


@dataclass
class _Builder:
    """Accumulates records; ids and timestamps are deterministic."""

    rng: random.Random
    session_id: str
    clock: datetime
    records: list[dict[str, Any]] = field(default_factory=list)
    facts: list[PlantedFact] = field(default_factory=list)
    leaf: str | None = None
    ids: set[str] = field(default_factory=set)
    context_estimate: int = 0
    planting: bool = True
    cycles: dict[str, list[str]] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)

    def new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def tick(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def ms(self) -> int:
        return int(self.clock.timestamp() * 1000)

    def append(self, record: dict[str, Any], *, parent: str | bool | None = True) -> str:
        entry_id = self.new_id()
        parent_id = self.leaf if parent is True else (parent or None)
        full = {"type": record.pop("type"), "id": entry_id, "parentId": parent_id}
        full["timestamp"] = self.tick(record.pop("_dt", 2.0))
        full.update(record)
        self.positions[entry_id] = len(self.records)
        self.records.append(full)
        self.leaf = entry_id
        msg = full.get("message")
        if isinstance(msg, dict):
            self.context_estimate += estimate_tokens_musepi(msg)
        return entry_id

    def plant(self, fact: str, kind: str, entry_id: str, place: str, **extra: Any) -> None:
        if not self.planting or any(f.fact == fact for f in self.facts):
            return
        index = self.positions[entry_id]
        self.facts.append(PlantedFact(fact, kind, entry_id, index, place, **extra))

    def usage(self, output_tokens: int) -> dict[str, Any]:
        # Providers bill more than a bytes/4 estimate (system prompt, tool schemas,
        # tokenizer): model that as an overhead plus a ratio, with a cache split.
        prompt = int(self.context_estimate * 1.12) + 2400
        cache_read = int(prompt * 0.85)
        return {
            "input": prompt - cache_read,
            "output": output_tokens,
            "cacheRead": cache_read,
            "cacheWrite": 0,
            "totalTokens": prompt + output_tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }


def _code_file(rng: random.Random, module: str, ident: str, lines: int, extra: list[str]) -> str:
    out = [f'"""The {module} module."""', "", "from __future__ import annotations", ""]
    while len(out) < lines:
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        out.append(f"def {name}(record, *, strict=False):")
        out.append(f'    """{sentence(rng, 9).capitalize()}."""')
        for _ in range(rng.randint(3, 9)):
            out.append(f"    # {sentence(rng, 7)}")
            out.append(f"    record = record.{rng.choice(_VERBS)}({rng.randint(0, 99)})")
        out.append("    return record")
        out.append("")
    out.insert(len(out) // 2, f"def {ident}(amount, rate):\n    return round(amount * rate, 2)\n")
    out = out[:lines]
    # Planted lines sit in the middle of the file, far from its first and last page.
    for offset, line in enumerate(extra):
        out.insert(len(out) * (2 + offset) // (4 + len(extra)), line)
    return "\n".join(out)


def _assistant(
    b: _Builder, cfg: GeneratorConfig, content: list[dict[str, Any]], stop: str, out_tokens: int
) -> str:
    msg = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": cfg.model,
        "usage": b.usage(out_tokens),
        "stopReason": stop,
        "timestamp": b.ms(),
    }
    return b.append({"type": "message", "message": msg, "_dt": 6.0})


def _tool_result(b: _Builder, call_id: str, name: str, text: str, **flags: Any) -> str:
    msg = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": bool(flags.pop("is_error", False)),
        "timestamp": b.ms(),
    }
    msg.update(flags)
    return b.append({"type": "message", "message": msg, "_dt": 1.5})


def _user(b: _Builder, text: str) -> str:
    msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": b.ms()}
    return b.append({"type": "message", "message": msg, "_dt": 40.0})


@dataclass(frozen=True)
class _Task:
    """The strings of one task: its own names, and one fact per kind with its place."""

    t: int
    module: str
    tag: str
    path: str
    ident: str
    test_path: str
    command: str
    error: str
    err_name: str
    facts: dict[str, tuple[str, str]]

    def at(self, place: str) -> list[tuple[str, str]]:
        """`(kind, fact)` of the facts planted at `place`, in kind order."""
        return [(k, f) for k, (f, p) in self.facts.items() if p == place]

    def fact_or(self, kind: str, place: str, default: str) -> str:
        """The fact of `kind` when it is planted at `place`, else `default`."""
        fact, where = self.facts[kind]
        return fact if where == place else default


def _new_task(b: _Builder, t: int) -> _Task:
    rng = b.rng
    module = _MODULES[t % len(_MODULES)]
    tag = f"{rng.getrandbits(16):04x}"
    ident = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}_{tag}"
    test_path = f"tests/test_{module}_{tag}.py"
    err_name = rng.choice(_ERRORS)
    facts: dict[str, tuple[str, str]] = {}
    for kind, cycle in b.cycles.items():
        fact_tag = f"{rng.getrandbits(16):04x}"
        place = cycle[t % len(cycle)]
        if kind == "command" and place == "tool-argument":
            # The command the agent runs is the fact: a test run of this task.
            fact = f"pytest {test_path} -k {rng.choice(_NOUNS)}_{fact_tag} -x"
        else:
            fact = fact_string(rng, kind, module, fact_tag)
        facts[kind] = (fact, place)
    return _Task(
        t=t,
        module=module,
        tag=tag,
        path=f"src/{module}/{rng.choice(_NOUNS)}_{tag}.py",
        ident=ident,
        test_path=test_path,
        command=f"pytest {test_path} -k {rng.choice(_NOUNS)}_{tag} -x",
        error=f"{err_name}: {rng.choice(_NOUNS)} {tag} rejected by {ident}",
        err_name=err_name,
        facts=facts,
    )


def _plant_at(b: _Builder, task: _Task, place: str, entry_id: str) -> None:
    for kind, fact in task.at(place):
        b.plant(fact, kind, entry_id, place)


def _request(b: _Builder, task: _Task, preface: str) -> str:
    rng = b.rng
    text = (
        f"{preface}In {task.path}, {task.ident} gives wrong totals for {rng.choice(_NOUNS)} "
        f"records. {sentence(rng, 18).capitalize()}. Fix it and make {task.test_path} pass."
    )
    for kind, fact in task.at("user-request"):
        text += " " + mention(kind, fact)
    for _kind, fact in task.at("long-user-request"):
        text += "\n\nSome background first. " + paragraph(rng, 7) + "\n\nOne more thing: " + fact
    uid = _user(b, text)
    _plant_at(b, task, "user-request", uid)
    _plant_at(b, task, "long-user-request", uid)
    return uid


def _look_around(b: _Builder, cfg: GeneratorConfig, task: _Task) -> None:
    """A thinking block and a grep: reasoning, remarks and tool arguments carry facts."""
    rng = b.rng
    thinking = f"Find callers of {task.ident}. {sentence(rng, 12)}."
    for kind, fact in task.at("thinking"):
        thinking += " " + mention(kind, fact)
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": thinking}]
    remarks = [mention(kind, fact) for kind, fact in task.at("assistant-text")]
    if remarks:
        content.append({"type": "text", "text": "Noting before I search: " + " ".join(remarks)})
    grep_id = f"toolu_{b.new_id()}{task.t:02d}g"
    pattern = task.fact_or("identifier", "tool-argument", task.ident)
    where = task.fact_or("path", "tool-argument", "src")
    content.append(
        {
            "type": "toolCall",
            "id": grep_id,
            "name": "grep",
            "arguments": {"pattern": pattern, "path": where},
        }
    )
    aid = _assistant(b, cfg, content, "toolUse", 60)
    for place in ("thinking", "assistant-text"):
        _plant_at(b, task, place, aid)
    for kind, fact in task.at("tool-argument"):
        if kind in ("identifier", "path"):
            b.plant(fact, kind, aid, "tool-argument")
    middle = [
        f"{fact}:{rng.randint(10, 300)}:    total = {task.ident}(total, rate)"
        if kind == "path"
        else f"src/{task.module}/helpers.py:{rng.randint(10, 300)}:    total = {fact}(total)"
        for kind, fact in task.at("tool-output-middle")
        if kind in ("path", "identifier")
    ]
    if middle:
        listing = grep_listing(rng, task.module, pattern, middle, rng.randint(30, 70))
        rid = _tool_result(b, grep_id, "grep", listing)
        for kind, fact in task.at("tool-output-middle"):
            if kind in ("path", "identifier"):
                b.plant(fact, kind, rid, "tool-output-middle")
    elif rng.random() < 0.35:
        _tool_result(b, grep_id, "grep", "No matches found", useless=True)
    else:
        line = f"{task.path}:{rng.randint(10, 200)}: def {task.ident}(amount, rate):"
        _tool_result(b, grep_id, "grep", line)


def _read(b: _Builder, cfg: GeneratorConfig, task: _Task) -> None:
    """Read the task's file back: lines in its middle carry facts."""
    rng = b.rng
    read_id = f"toolu_{b.new_id()}{task.t:02d}r"
    _assistant(
        b,
        cfg,
        [
            {"type": "text", "text": f"Let me read {task.path}."},
            {"type": "toolCall", "id": read_id, "name": "read", "arguments": {"path": task.path}},
        ],
        "toolUse",
        40,
    )
    lines = max(20, int(rng.gauss(cfg.read_lines, cfg.read_lines / 4)))
    extra = [file_line(kind, fact) for kind, fact in task.at("file-content")]
    rid = _tool_result(b, read_id, "read", _code_file(rng, task.module, task.ident, lines, extra))
    _plant_at(b, task, "file-content", rid)


def _run_failing(b: _Builder, cfg: GeneratorConfig, task: _Task) -> str:
    """Run the failing test: the command is an argument, the traceback an error message."""
    rng = b.rng
    command = task.fact_or("command", "tool-argument", task.command)
    run_id = f"toolu_{b.new_id()}{task.t:02d}b"
    aid = _assistant(
        b,
        cfg,
        [{"type": "toolCall", "id": run_id, "name": "bash", "arguments": {"command": command}}],
        "toolUse",
        30,
    )
    if command != task.command:
        b.plant(command, "command", aid, "tool-argument")
    file = task.fact_or("path", "error-message", task.path)
    error = task.fact_or("error", "error-message", task.error)
    trace = "\n".join(
        [
            "============================= test session starts ==============================",
            f"collected {rng.randint(3, 40)} items",
            "",
            f"{task.test_path} F",
            "",
            "=================================== FAILURES ===================================",
            "Traceback (most recent call last):",
            f'  File "{task.test_path}", line {rng.randint(10, 90)}, in test_{task.ident}',
            f"    assert {task.ident}(100, 0.2) == 120",
            f'  File "{file}", line {rng.randint(10, 300)}, in {task.ident}',
            "    return round(amount * rate, 2)",
            error,
            f"FAILED {task.test_path}::test_{task.ident} - {task.err_name}",
        ]
    )
    rid = _tool_result(b, run_id, "bash", trace, is_error=True)
    _plant_at(b, task, "error-message", rid)
    return command


def _fix(b: _Builder, cfg: GeneratorConfig, task: _Task, command: str) -> None:
    """Edit, re-run green (a long log carries facts in its middle), and report."""
    rng = b.rng
    edit_id = f"toolu_{b.new_id()}{task.t:02d}e"
    edit = {
        "path": task.path,
        "oldText": "return round(amount * rate, 2)",
        "newText": "return round(amount * (1 + rate), 2)",
    }
    _assistant(
        b,
        cfg,
        [
            {"type": "text", "text": f"The rate is applied twice in {task.ident}; fixing."},
            {"type": "toolCall", "id": edit_id, "name": "edit", "arguments": edit},
        ],
        "toolUse",
        120,
    )
    _tool_result(b, edit_id, "edit", f"Successfully replaced text in {task.path}.")
    run2 = f"toolu_{b.new_id()}{task.t:02d}c"
    _assistant(
        b,
        cfg,
        [{"type": "toolCall", "id": run2, "name": "bash", "arguments": {"command": command}}],
        "toolUse",
        30,
    )
    middle = [
        log_line(kind, fact)
        for kind, fact in task.at("tool-output-middle")
        if kind in ("command", "error")
    ]
    if middle:
        log = passing_log(rng, task.test_path, middle, rng.randint(40, 80))
    else:
        log = f"{task.test_path} ....\n4 passed in 0.{rng.randint(10, 99)}s"
    rid = _tool_result(b, run2, "bash", log)
    for kind, fact in task.at("tool-output-middle"):
        if kind in ("command", "error"):
            b.plant(fact, kind, rid, "tool-output-middle")
    text = f"Fixed {task.ident} in {task.path}; {task.test_path} passes now. {sentence(rng, 14)}."
    _assistant(b, cfg, [{"type": "text", "text": text}], "stop", 90)


def _task(b: _Builder, cfg: GeneratorConfig, t: int, preface: str = "") -> str:
    """One user task (a tool loop); returns the id of its user request."""
    task = _new_task(b, t)
    uid = _request(b, task, preface)
    _look_around(b, cfg, task)
    _read(b, cfg, task)
    command = _run_failing(b, cfg, task)
    _fix(b, cfg, task, command)
    return uid

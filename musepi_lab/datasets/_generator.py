"""A deterministic generator of realistic coding-agent sessions with planted facts.

The bundled sample (`datasets/sample/`) is made by this module and committed; running the
generator again reproduces it byte for byte (`tests/test_generator.py` checks that).

A generated session is a pi/MusePi JSONL v3 file: a user works with an agent on a small
fictional code base over many turns; the agent reads large files, greps (sometimes with zero
matches, flagged `useless`), edits, runs tests that fail with real-looking tracebacks and then
pass, abandons a branch (with a branch summary), and the session already holds an earlier
compaction. Assistant messages carry usage figures derived from the context size, so
estimators and replay have something to be checked against.

Planted facts are unique strings (file paths, identifiers, commands, error lines, user
instructions) placed at known entries. `facts.json` beside each session lists them with the
entry where each first appears, so retention after a compaction can be scored exactly: a fact
is retained when its exact string is still in the rebuilt context.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ..session._model import Entry
from ..session._session import Session
from ..tokens._estimate import estimate_tokens_musepi

_MODULES = ("billing", "ledger", "accounts", "reports", "auth", "sync", "export", "audit")
_NOUNS = ("invoice", "refund", "payment", "customer", "tax", "currency", "statement", "batch")
_VERBS = ("compute", "validate", "render", "merge", "resolve", "apply", "reconcile", "load")
_WORDS = (
    "the value is checked before it is stored and the caller gets a typed error back "
    "when the input cannot be parsed or the record is missing from the cache so the "
    "request fails early instead of writing half a batch to disk"
).split()
_ERRORS = ("ValueError", "KeyError", "TypeError", "AssertionError", "ZeroDivisionError")


@dataclass(frozen=True)
class PlantedFact:
    """A unique string planted in a generated session.

    Attributes:
        fact: The exact string.
        kind: One of `FACT_KINDS`.
        entry_id: The entry where it first appears.
        index: Position of that entry in file order (0-based, header excluded).
    """

    fact: str
    kind: str
    entry_id: str
    index: int


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
    """

    seed: int
    tasks: int = 14
    read_lines: int = 220
    window: int = 128_000
    with_branch: bool = True
    with_compaction: bool = True
    model: str = "claude-sonnet-4-5"


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
        self.records.append(full)
        self.leaf = entry_id
        msg = full.get("message")
        if isinstance(msg, dict):
            self.context_estimate += estimate_tokens_musepi(msg)
        return entry_id

    def plant(self, fact: str, kind: str, entry_id: str) -> None:
        if not self.planting or any(f.fact == fact for f in self.facts):
            return
        self.facts.append(PlantedFact(fact, kind, entry_id, len(self.records) - 1))

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


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _code_file(rng: random.Random, module: str, ident: str, lines: int) -> str:
    out = [f'"""The {module} module."""', "", "from __future__ import annotations", ""]
    while len(out) < lines:
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        out.append(f"def {name}(record, *, strict=False):")
        out.append(f'    """{_sentence(rng, 9).capitalize()}."""')
        for _ in range(rng.randint(3, 9)):
            out.append(f"    # {_sentence(rng, 7)}")
            out.append(f"    record = record.{rng.choice(_VERBS)}({rng.randint(0, 99)})")
        out.append("    return record")
        out.append("")
    out.insert(len(out) // 2, f"def {ident}(amount, rate):\n    return round(amount * rate, 2)\n")
    return "\n".join(out[:lines])


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


def _task(b: _Builder, cfg: GeneratorConfig, t: int) -> None:
    rng = b.rng
    module = _MODULES[t % len(_MODULES)]
    tag = f"{rng.getrandbits(16):04x}"
    path = f"src/{module}/{rng.choice(_NOUNS)}_{tag}.py"
    ident = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}_{tag}"
    test_path = f"tests/test_{module}_{tag}.py"
    command = f"pytest {test_path} -k {rng.choice(_NOUNS)}_{tag} -x"
    err_name = rng.choice(_ERRORS)
    error = f"{err_name}: {rng.choice(_NOUNS)} {tag} rejected by {ident}"

    uid = _user(
        b,
        f"In {path}, {ident} gives wrong totals for {rng.choice(_NOUNS)} records. "
        f"{_sentence(rng, 18).capitalize()}. Fix it and make {test_path} pass.",
    )
    b.plant(path, "path", uid)
    b.plant(ident, "identifier", uid)

    # Look around: a grep (sometimes with nothing found), then a large read.
    grep_id = f"toolu_{b.new_id()}{t:02d}g"
    _assistant(
        b,
        cfg,
        [
            {"type": "thinking", "thinking": f"Find callers of {ident}. {_sentence(rng, 12)}."},
            {
                "type": "toolCall",
                "id": grep_id,
                "name": "grep",
                "arguments": {"pattern": ident, "path": "src"},
            },
        ],
        "toolUse",
        60,
    )
    if rng.random() < 0.35:
        _tool_result(b, grep_id, "grep", "No matches found", useless=True)
    else:
        _tool_result(
            b, grep_id, "grep", f"{path}:{rng.randint(10, 200)}: def {ident}(amount, rate):"
        )
    read_id = f"toolu_{b.new_id()}{t:02d}r"
    _assistant(
        b,
        cfg,
        [
            {"type": "text", "text": f"Let me read {path}."},
            {"type": "toolCall", "id": read_id, "name": "read", "arguments": {"path": path}},
        ],
        "toolUse",
        40,
    )
    lines = max(20, int(rng.gauss(cfg.read_lines, cfg.read_lines / 4)))
    _tool_result(b, read_id, "read", _code_file(rng, module, ident, lines))

    # Run the failing test: an error line to remember.
    run_id = f"toolu_{b.new_id()}{t:02d}b"
    aid = _assistant(
        b,
        cfg,
        [{"type": "toolCall", "id": run_id, "name": "bash", "arguments": {"command": command}}],
        "toolUse",
        30,
    )
    b.plant(command, "command", aid)
    trace = "\n".join(
        [
            "============================= test session starts ==============================",
            f"collected {rng.randint(3, 40)} items",
            "",
            f"{test_path} F",
            "",
            "=================================== FAILURES ===================================",
            f'  File "{path}", line {rng.randint(10, 300)}, in {ident}',
            "    return round(amount * rate, 2)",
            error,
            f"FAILED {test_path}::test_{ident} - {err_name}",
        ]
    )
    rid = _tool_result(b, run_id, "bash", trace, is_error=True)
    b.plant(error, "error", rid)

    # Edit, then re-run green.
    edit_id = f"toolu_{b.new_id()}{t:02d}e"
    _assistant(
        b,
        cfg,
        [
            {"type": "text", "text": f"The rate is applied twice in {ident}; fixing."},
            {
                "type": "toolCall",
                "id": edit_id,
                "name": "edit",
                "arguments": {
                    "path": path,
                    "oldText": "return round(amount * rate, 2)",
                    "newText": "return round(amount * (1 + rate), 2)",
                },
            },
        ],
        "toolUse",
        120,
    )
    _tool_result(b, edit_id, "edit", f"Successfully replaced text in {path}.")
    run2 = f"toolu_{b.new_id()}{t:02d}c"
    _assistant(
        b,
        cfg,
        [{"type": "toolCall", "id": run2, "name": "bash", "arguments": {"command": command}}],
        "toolUse",
        30,
    )
    _tool_result(b, run2, "bash", f"{test_path} ....\n4 passed in 0.{rng.randint(10, 99)}s")
    _assistant(
        b,
        cfg,
        [
            {
                "type": "text",
                "text": f"Fixed {ident} in {path}; {test_path} passes now. {_sentence(rng, 14)}.",
            }
        ],
        "stop",
        90,
    )


def _instruction(rng: random.Random) -> str:
    codename = f"{rng.choice(('ORCHID', 'BASALT', 'KESTREL', 'MARLIN'))}-{rng.randint(10, 99)}"
    return f"Always run ruff before committing and tag every commit with {codename}."


def generate_session(cfg: GeneratorConfig) -> tuple[Session, tuple[PlantedFact, ...]]:
    """Generate one session and its planted facts (pure: same config, same result)."""
    rng = random.Random(cfg.seed)
    session_id = f"sample-{cfg.seed:04d}"
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(days=cfg.seed)
    b = _Builder(rng, session_id, start)
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": b.tick(0),
        "cwd": f"/home/dev/projects/{rng.choice(_MODULES)}-service",
    }
    b.append(
        {"type": "model_change", "provider": "anthropic", "modelId": cfg.model, "_dt": 0.1},
        parent=None,
    )
    b.append({"type": "thinking_level_change", "thinkingLevel": "medium", "_dt": 0.1})
    instruction = _instruction(rng)
    first = _user(b, f"{instruction} We are fixing money bugs in this service today.")
    b.plant(instruction, "instruction", first)
    _assistant(
        b, cfg, [{"type": "text", "text": "Understood. What should I look at first?"}], "stop", 20
    )

    compaction_at = cfg.tasks // 2 if cfg.with_compaction else -1
    branch_at = cfg.tasks // 3 if cfg.with_branch else -1
    for t in range(cfg.tasks):
        if t == branch_at:
            fork_point = b.leaf
            # Explored, then abandoned: its strings are not facts of the active path.
            b.planting = False
            _task(b, cfg, 100 + t)
            b.planting = True
            b.leaf = fork_point
            b.append(
                {
                    "type": "branch_summary",
                    "fromId": fork_point,
                    "summary": "The user explored a different branch and came back.\n\n## Goal\n"
                    "Try a rewrite of the rounding helper.\n\n## Progress\n### Done\n- [x] Tried it; "
                    "rejected as too invasive.",
                    "details": {"readFiles": [], "modifiedFiles": []},
                    "_dt": 5.0,
                }
            )
        if t == compaction_at:
            path_ids = _path_ids(b)
            keep_from = path_ids[-12]
            b.append(
                {
                    "type": "compaction",
                    "summary": "## Goal\nFix money bugs in the service.\n\n## Progress\n### Done\n"
                    f"- [x] {t} earlier fixes landed.\n\n## Next Steps\n1. Continue with the next module.",
                    "firstKeptEntryId": keep_from,
                    "tokensBefore": int(b.context_estimate * 1.12) + 2400,
                    "details": {"readFiles": [], "modifiedFiles": []},
                    "_dt": 8.0,
                }
            )
            b.context_estimate = b.context_estimate // 4
        _task(b, cfg, t)
    b.append({"type": "label", "targetId": first, "label": "session start", "_dt": 1.0})
    b.append({"type": "session_info", "name": f"money bugs #{cfg.seed}", "_dt": 0.5})
    entries = [Entry.from_record(r) for r in b.records]
    return Session(header, entries, source_format="pi"), tuple(b.facts)


def _path_ids(b: _Builder) -> list[str]:
    by_id = {r["id"]: r for r in b.records}
    out: list[str] = []
    node = by_id.get(b.leaf) if b.leaf else None
    while node is not None:
        out.append(node["id"])
        node = by_id.get(node["parentId"]) if node["parentId"] else None
    out.reverse()
    return out


SAMPLE_CONFIGS: tuple[GeneratorConfig, ...] = (
    GeneratorConfig(seed=1, tasks=24, read_lines=420),
    GeneratorConfig(seed=2, tasks=18, read_lines=520),
    GeneratorConfig(seed=3, tasks=30, read_lines=330, with_branch=False),
    GeneratorConfig(seed=4, tasks=8, read_lines=300, with_compaction=False),
)
"""The bundled sample: three long sessions (about 130k-180k tokens on their active path,
so a 64k window compacts them several times and 128k at least once) and one short one for
quick runs."""


def facts_json(facts: tuple[PlantedFact, ...]) -> bytes:
    """The `facts.json` bytes of a session's planted facts."""
    return orjson.dumps([asdict(f) for f in facts], option=orjson.OPT_INDENT_2) + b"\n"


def iter_sample_files() -> Iterator[tuple[str, bytes]]:
    """`(relative_name, bytes)` of every file of the bundled sample, in a fixed order."""
    for cfg in SAMPLE_CONFIGS:
        session, facts = generate_session(cfg)
        yield f"{session.id}.jsonl", session.to_jsonl()
        yield f"{session.id}.facts.json", facts_json(facts)


def write_sample(folder: str | Path) -> list[Path]:
    """Write the bundled sample into `folder` (the generator's only IO)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in iter_sample_files():
        target = out / name
        target.write_bytes(data)
        written.append(target)
    return written


def read_facts(session_path: str | Path) -> tuple[PlantedFact, ...]:
    """The planted facts beside a generated session file (`<id>.facts.json`)."""
    p = Path(session_path)
    facts_path = p.with_name(p.name.removesuffix(".jsonl") + ".facts.json")
    return tuple(PlantedFact(**f) for f in orjson.loads(facts_path.read_bytes()))

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
instructions). Where each lands is drawn from a fixed table of places (`_planting.PLACES`:
user requests, the end of long user messages, assistant reasoning, tool arguments, the middle
of long tool outputs, files read back, failing command output), by a seeded shuffle per
session and kind; two per session are values that change later (the old one is recorded
with `current: false`) and two are stated early and needed in the last task. The placement
is a property of the data alone: this module imports nothing from the compaction methods it
is meant to test. `facts.json` beside each session lists every fact with its kind, place and
the entry where it first appears, so retention after a compaction can be scored exactly: a
fact is retained when its exact string is still in the rebuilt context.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ..session._model import Entry
from ..session._session import Session
from ._planting import _MODULES, _NOUNS, PLACE_DESCRIPTIONS, PLACES, place_cycles
from ._tasks import GeneratorConfig, PlantedFact, _assistant, _Builder, _task, _user

__all__ = [
    "SAMPLE_CONFIGS",
    "GeneratorConfig",
    "PlantedFact",
    "facts_json",
    "generate_session",
    "iter_sample_files",
    "placement_counts",
    "placement_manifest",
    "read_facts",
    "write_sample",
]


def _instruction(rng: random.Random) -> str:
    codename = f"{rng.choice(('ORCHID', 'BASALT', 'KESTREL', 'MARLIN'))}-{rng.randint(10, 99)}"
    return f"Always run ruff before committing and tag every commit with {codename}."


@dataclass(frozen=True)
class _SessionFacts:
    """The facts planted once per session: changed values and early facts needed late."""

    early_path: str
    early_ident: str
    old_tag: str
    new_tag: str
    old_serve: str
    new_serve: str

    @classmethod
    def draw(cls, rng: random.Random) -> _SessionFacts:
        tags = [f"{rng.getrandbits(16):04x}" for _ in range(4)]
        code = rng.choice(("ORCHID", "BASALT", "KESTREL", "MARLIN"))
        ports = rng.sample(range(8001, 8099), 2)
        return cls(
            early_path=f"tests/fixtures/golden_{rng.choice(_NOUNS)}_{tags[0]}.json",
            early_ident=f"ENABLE_{rng.choice(_NOUNS).upper()}_V2_{tags[1]}",
            old_tag=f"Tag every commit with {code}-{tags[2]}.",
            new_tag=f"Tag every commit with {code}-{tags[3]}.",
            old_serve=f"make serve PORT={ports[0]}",
            new_serve=f"make serve PORT={ports[1]}",
        )

    def early(self) -> str:
        return (
            f"Before we start: the golden fixture for today is {self.early_path} and the "
            f"feature flag is {self.early_ident}. Remember both; we need them at the end.\n\n"
        )

    def stated(self) -> str:
        return f"{self.old_tag} Start the dev server with {self.old_serve} when you need it.\n\n"

    def changed(self) -> str:
        return f"Change of plan. {self.new_tag} The dev server moved: use {self.new_serve}.\n\n"

    @staticmethod
    def late() -> str:
        return (
            "Last task: regenerate the golden fixture I gave you at the start, and switch on "
            "the feature flag I named then.\n\n"
        )


def _plant_session_facts(b: _Builder, sf: _SessionFacts, ids: dict[str, str]) -> None:
    if len(ids) < 4:
        return  # too few tasks to hold all four moments
    needed = b.positions[ids["late"]]
    b.plant(sf.early_path, "path", ids["early"], "early-needed-late", needed_index=needed)
    b.plant(sf.early_ident, "identifier", ids["early"], "early-needed-late", needed_index=needed)
    b.plant(sf.old_tag, "instruction", ids["stated"], "changed-value", current=False)
    b.plant(sf.old_serve, "command", ids["stated"], "changed-value", current=False)
    b.plant(sf.new_tag, "instruction", ids["changed"], "changed-value", supersedes=sf.old_tag)
    b.plant(sf.new_serve, "command", ids["changed"], "changed-value", supersedes=sf.old_serve)


def _compaction_record(b: _Builder, t: int) -> dict[str, Any]:
    keep_from = _path_ids(b)[-12]
    return {
        "type": "compaction",
        "summary": "## Goal\nFix money bugs in the service.\n\n## Progress\n### Done\n"
        f"- [x] {t} earlier fixes landed.\n\n## Next Steps\n1. Continue with the next module.",
        "firstKeptEntryId": keep_from,
        "tokensBefore": int(b.context_estimate * 1.12) + 2400,
        "details": {"readFiles": [], "modifiedFiles": []},
        "_dt": 8.0,
    }


def _abandoned_branch(b: _Builder, cfg: GeneratorConfig, t: int) -> None:
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


def _session_prefaces(cfg: GeneratorConfig, sf: _SessionFacts) -> dict[int, tuple[str, str]]:
    """Task index → (role of the preface, its text) for the once-per-session facts.

    The early facts open the scored part (the first task after the earlier compaction);
    the changed values are stated right after and changed three tasks before the end.
    """
    first = cfg.tasks // 2 if cfg.with_compaction else 0
    return {
        first: ("early", sf.early()),
        first + 1: ("stated", sf.stated()),
        cfg.tasks - 3: ("changed", sf.changed()),
        cfg.tasks - 1: ("late", sf.late()),
    }


def generate_session(cfg: GeneratorConfig) -> tuple[Session, tuple[PlantedFact, ...]]:
    """Generate one session and its planted facts (pure: same config, same result)."""
    rng = random.Random(cfg.seed)
    session_id = cfg.session_id or f"sample-{cfg.seed:04d}"
    day = cfg.seed if cfg.start_day is None else cfg.start_day
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(days=day)
    b = _Builder(rng, session_id, start)
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": b.tick(0),
        "cwd": f"/home/dev/projects/{rng.choice(_MODULES)}-service",
    }
    b.cycles = place_cycles(rng)
    sf = _SessionFacts.draw(rng)
    prefaces = _session_prefaces(cfg, sf)
    b.append(
        {"type": "model_change", "provider": "anthropic", "modelId": cfg.model, "_dt": 0.1},
        parent=None,
    )
    b.append({"type": "thinking_level_change", "thinkingLevel": "medium", "_dt": 0.1})
    instruction = _instruction(rng)
    first = _user(b, f"{instruction} We are fixing money bugs in this service today.")
    b.plant(instruction, "instruction", first, "session-start")
    _assistant(
        b, cfg, [{"type": "text", "text": "Understood. What should I look at first?"}], "stop", 20
    )
    compaction_at = cfg.tasks // 2 if cfg.with_compaction else -1
    branch_at = cfg.tasks // 3 if cfg.with_branch else -1
    ids: dict[str, str] = {}
    for t in range(cfg.tasks):
        if t == branch_at:
            _abandoned_branch(b, cfg, t)
        if t == compaction_at:
            b.append(_compaction_record(b, t))
            b.context_estimate = b.context_estimate // 4
        role, preface = prefaces.get(t, ("", ""))
        uid = _task(b, cfg, t, preface)
        if role:
            ids[role] = uid
    _plant_session_facts(b, sf, ids)
    b.append({"type": "label", "targetId": first, "label": "session start", "_dt": 1.0})
    b.append({"type": "session_info", "name": f"money bugs #{cfg.seed}", "_dt": 0.5})
    entries = [Entry.from_record(r) for r in b.records]
    facts = tuple(sorted(b.facts, key=lambda f: f.index))
    return Session(header, entries, source_format="pi"), facts


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
    GeneratorConfig(seed=4, tasks=8, read_lines=200, with_compaction=False),
)
"""The bundled sample: three long sessions (about 90k-120k tokens on their active path by
the MusePi estimate; their providers' usage figures run 12% higher plus 2,400 tokens of
overhead) and one short one (about 23k tokens) for quick runs."""


def placement_counts(facts: Iterable[PlantedFact]) -> dict[str, dict[str, int]]:
    """How many facts each place holds, per kind: `{place: {kind: count}}`, sorted."""
    counts = Counter((f.place, f.kind) for f in facts)
    out: dict[str, dict[str, int]] = {}
    for (place, kind), n in sorted(counts.items()):
        out.setdefault(place, {})[kind] = n
    return out


def placement_manifest(facts: Iterable[PlantedFact]) -> dict[str, Any]:
    """The `placement` section of the sample's manifest: the scheme and the counts."""
    return {
        "scheme": "Per session and fact kind, a seeded shuffle of the kind's places; task t "
        "plants one fact of each kind at place t mod len. Once per session: two values that "
        "change later (old ones current=false) and two facts stated early and needed in the "
        "last task. Chosen from the data alone, independent of any compaction method's code.",
        "places_by_kind": {kind: list(places) for kind, places in PLACES.items()},
        "places": dict(PLACE_DESCRIPTIONS),
        "counts": placement_counts(facts),
    }


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

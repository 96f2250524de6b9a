"""A small seeded generator of sessions with nested branches, for measuring branch summaries.

A session is a trunk of turns on a fictional code base. At every fork the agent first explores
a branch that is later abandoned (it reads a file, runs a command that fails, and the user
names the helper involved): those four strings are planted facts, found nowhere else in the
session. Every other abandoned branch holds a nested fork of its own (a second abandoned leaf
below its first reply), so leaves sit at several depths. The user then returns to the fork
and the trunk continues; its next user message asks for what the abandoned side found,
without repeating it, so a context that lost the facts cannot answer.

The main leaf is the trunk's end (last in file order). Each other leaf is a branch point: an
agent there navigating back to the trunk abandons the entries from that leaf to the fork.
Like the sample generator, this module imports nothing from the compaction or navigation
code it is meant to measure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..session._model import Entry
from ..session._session import Session
from ._planting import _MODULES, fact_string
from ._tasks import PlantedFact

BRANCH_FACT_KINDS: tuple[str, ...] = ("path", "command", "error", "identifier")
"""The kinds planted on each abandoned branch: a file read, a command run, its error, and
a helper named by the user."""

_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class BranchSession:
    """A generated session and its planted facts.

    Attributes:
        session: The session (leaf: the trunk's end, last in file order).
        facts: Every planted fact, with the entry it is planted in (all on abandoned
            branches).
    """

    session: Session
    facts: tuple[PlantedFact, ...]


class _Records:
    """An append-only list of entry records with ids, parents and increasing times."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.records: list[dict[str, Any]] = []
        self.facts: list[PlantedFact] = []

    def add(self, parent: str | None, message: dict[str, Any]) -> str:
        index = len(self.records)
        entry_id = f"{index:08x}"
        moment = _START + timedelta(seconds=7 * index)
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        self.records.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": stamp,
                "message": {**message, "timestamp": int(moment.timestamp() * 1000)},
            }
        )
        return entry_id

    def plant(self, fact: str, kind: str, entry_id: str) -> None:
        index = int(entry_id, 16)
        self.facts.append(PlantedFact(fact, kind, entry_id, index, place="abandoned-branch"))


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(
    text: str, calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content.extend(
        {"type": "toolCall", "id": cid, "name": name, "arguments": args}
        for cid, name, args in calls
    )
    return {
        "role": "assistant",
        "content": content,
        "stopReason": "toolUse" if calls else "stop",
        "model": "gen-model",
        "provider": "gen",
        "api": "openai-completions",
    }


def _result(call_id: str, name: str, text: str, *, error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


def _trunk_turn(r: _Records, parent: str | None, rng: random.Random, step: int, ask: str) -> str:
    module = rng.choice(_MODULES)
    user = r.add(parent, _user(f"{ask} Next, tidy the {module} module (step {step})."))
    return r.add(user, _assistant(f"Tidied {module}: renamed two locals, no behaviour change."))


def _explore(r: _Records, fork: str, rng: random.Random, tag: str) -> tuple[str, str]:
    """An explored branch under `fork` with four planted facts; returns (first reply, leaf)."""
    module = rng.choice(_MODULES)
    path = fact_string(rng, "path", module, tag)
    command = fact_string(rng, "command", module, tag)
    error = fact_string(rng, "error", module, tag)
    helper = fact_string(rng, "identifier", module, tag)
    user = r.add(fork, _user(f"Try another way: start from the helper {helper} and see."))
    r.plant(helper, "identifier", user)
    reply = r.add(user, _assistant("Reading it first.", ((f"r{tag}", "read", {"path": path}),)))
    r.plant(path, "path", reply)
    read = r.add(reply, _result(f"r{tag}", "read", f"def {module}_entry():\n    return None\n"))
    run = r.add(
        read, _assistant("Running the check.", ((f"b{tag}", "bash", {"command": command}),))
    )
    r.plant(command, "command", run)
    failed = r.add(run, _result(f"b{tag}", "bash", f"Traceback (most recent call last):\n{error}"))
    r.plant(error, "error", failed)
    leaf = r.add(failed, _assistant("That route fails; the check errors out."))
    return reply, leaf


def _nested(r: _Records, under: str, rng: random.Random, tag: str) -> None:
    """A second abandoned leaf below `under` (its own fact: a command run there)."""
    module = rng.choice(_MODULES)
    command = fact_string(rng, "command", module, tag)
    run = r.add(under, _assistant("Or first this.", ((f"n{tag}", "bash", {"command": command}),)))
    r.plant(command, "command", run)
    done = r.add(run, _result(f"n{tag}", "bash", "exit status 1"))
    r.add(done, _assistant("No better."))


def generate_branch_session(seed: int, *, forks: int = 3) -> BranchSession:
    """A session with `forks` abandoned branches (every other one with a nested fork).

    Args:
        seed: Seeds every choice: equal seeds give equal sessions.
        forks: Number of forks along the trunk.

    Raises:
        ValueError: `forks` is less than 1.
    """
    if forks < 1:
        raise ValueError(f"forks must be at least 1, not {forks}")
    rng = random.Random(seed)
    session_id = f"branches-{seed:04d}"
    r = _Records(session_id)
    leaf = _trunk_turn(r, None, rng, 0, "We are cleaning up this code base.")
    for fork_no in range(forks):
        tag = f"{seed % 1000:03d}{fork_no}{rng.randint(100, 999)}"
        reply, _ = _explore(r, leaf, rng, tag)
        if fork_no % 2 == 1:
            _nested(r, reply, rng, f"{tag}n")
        ask = "Go back to before that attempt. Use what the other attempt found about the helper."
        leaf = _trunk_turn(r, leaf, rng, fork_no + 1, ask)
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": _START.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "cwd": "/work/project",
    }
    # The trunk's last turn was written last, so its end is the session leaf.
    entries = [Entry.from_record(rec) for rec in r.records]
    return BranchSession(Session(header, entries), tuple(r.facts))

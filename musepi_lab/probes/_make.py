"""Probes from the session itself: deterministic, model-free.

For one compaction point (a leaf and the engine's cut there), the part compacted away is the
preparation's summarized messages and split-turn prefix. From it:

- `recall`: one probe per fact (planted facts of a generated session, else the facts
  `extract_facts` finds), as a cloze: the sentence the fact first appeared in, the fact
  blanked out and every other probed fact hidden, so the question never gives an answer
  away. Scored by exact match.
- `artifact`: the files modified, and the files only read, before the cut (file operations
  of `read`/`write`/`edit` calls), scored by exact match of every path; and for the most
  recently modified files, their last change (judged).
- `decision`: an assistant message that reasons (visible text, else its thinking) and then
  calls a tool: "why did you do this?", the reasoning as the reference (judged).
- `continuation`: from what follows the point on the session's path: the next user request,
  and the next tool call (given that request, when one comes first) (judged).

Only facts and paths the uncompacted context shows the reader are probed, so the `none`
strategy is the ceiling every score is read against. Order and ids are stable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._prompts import PromptSet
from ..compaction._file_ops import compute_file_lists, file_ops_from_messages
from ..compaction._prepare import CompactionPreparation
from ..compaction._serialize import render_tool_call
from ..metrics._facts import FACT_KINDS, Fact, extract_facts
from ..session._model import Entry
from ..session._session import Session
from ._context import reader_messages
from ._model import Probe, chat_text, probe_id

BLANK = "[BLANK]"
HIDDEN = "[...]"
_SNIPPET_CHARS = 90
_REFERENCE_CHARS = 600
_CALL_CHARS = 240

_FACT_NOUNS: Mapping[str, str] = {
    "path": "file path",
    "identifier": "identifier (a function, class or variable name)",
    "command": "command",
    "error": "error message",
    "instruction": "instruction",
}


@dataclass(frozen=True)
class ProbeLimits:
    """How many probes of each kind one point gets (the earliest ones win).

    Attributes:
        recall_per_kind: Recall probes per fact kind.
        file_states: Files whose last change is asked about (the last modified first).
        decisions: Decision probes (spread evenly over the part compacted away).
        max_paths: Paths an artifact list asks for at most.
    """

    recall_per_kind: int = 2
    file_states: int = 2
    decisions: int = 2
    max_paths: int = 20


@dataclass(frozen=True)
class _Part:
    """The part compacted away, and the point it was compacted at."""

    session: Session
    leaf_id: str
    cut: str
    entries: tuple[Entry, ...]
    messages: tuple[Mapping[str, Any], ...]
    profile: str
    visible: str

    def probe(self, kind: str, subkind: str, question: str, reference: str, **kw: Any) -> Probe:
        pid = probe_id(self.session.id, self.leaf_id, self.cut, kind, subkind, question, reference)
        return Probe(
            probe_id=pid,
            session_id=str(self.session.id),
            leaf_id=self.leaf_id,
            first_kept_entry_id=self.cut,
            kind=kind,
            subkind=subkind,
            question=question,
            reference=reference,
            **kw,
        )


def _clip(text: str, limit: int = _REFERENCE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _texts(message: Mapping[str, Any]) -> list[str]:
    """Texts of a message as a reader would meet them: text blocks, rendered tool calls."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif block.get("type") == "toolCall":
            out.append(render_tool_call(block))
    for key in ("summary", "command", "output"):
        if isinstance(message.get(key), str):
            out.append(message[key])
    return out


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _who(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "user":
        return "the user"
    if role == "assistant":
        return "you (the assistant)"
    return "a tool result"


def _neighbourhood(messages: Sequence[Mapping[str, Any]], index: int) -> str:
    """A message's text with the end of the one before and the start of the one after,
    so a fact alone in its message (a command as a call's only argument) still has context
    around its blank."""
    before = "\n".join(_texts(messages[index - 1]))[-_SNIPPET_CHARS:] if index > 0 else ""
    after = (
        "\n".join(_texts(messages[index + 1]))[:_SNIPPET_CHARS] if index + 1 < len(messages) else ""
    )
    return "\n".join(t for t in (before, "\n".join(_texts(messages[index])), after) if t)


def _cloze(part: _Part, fact: Fact, others: Sequence[str]) -> str:
    noun = _FACT_NOUNS.get(fact.kind, fact.kind)
    for index, message in enumerate(part.messages):
        if not any(fact.text in t for t in _texts(message)):
            continue
        text = _neighbourhood(part.messages, index)
        at = text.find(fact.text)
        lo = max(0, at - _SNIPPET_CHARS)
        hi = min(len(text), at + len(fact.text) + _SNIPPET_CHARS)
        snippet = text[lo:at] + BLANK + text[at + len(fact.text) : hi]
        for other in sorted(others, key=len, reverse=True):
            if other != fact.text and len(other) >= 4:
                snippet = snippet.replace(other, HIDDEN)
        snippet = snippet.replace(fact.text, BLANK)
        snippet = ("…" if lo else "") + snippet.strip() + ("…" if hi < len(text) else "")
        return (
            f"Earlier in this session, {_who(message)} wrote the passage below (with a little "
            f"of what came before and after); {_article(noun)} {noun} in it is replaced by {BLANK}. Give that "
            f"{noun} exactly as it was written.\n\n«{snippet}»"
        )
    return f"Earlier in this session {_article(noun)} {noun} came up. Give it exactly as it was written."


def _select_facts(facts: Sequence[Fact], per_kind: int) -> list[Fact]:
    chosen: list[Fact] = []
    for kind in FACT_KINDS:
        chosen.extend([f for f in facts if f.kind == kind][:per_kind])
    return chosen


def recall_probes(
    part: _Part, facts: Sequence[tuple[Fact, str]], limits: ProbeLimits
) -> list[Probe]:
    """One cloze probe per fact (see the module docstring)."""
    visible = [(f, src) for f, src in facts if f.text in part.visible]
    source = {f.text: src for f, src in visible}
    chosen = _select_facts([f for f, _ in visible], limits.recall_per_kind)
    others = [f.text for f, _ in visible]
    probes: list[Probe] = []
    asked: set[str] = set()
    for fact in chosen:
        question = _cloze(part, fact, others)
        if question in asked:
            continue  # two facts with one passage: asking twice would have two answers
        asked.add(question)
        probes.append(
            part.probe(
                "recall",
                fact.kind,
                question,
                fact.text,
                exact=(fact.text,),
                source=source[fact.text],
            )
        )
    return probes


def _file_calls(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    calls: list[Mapping[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "toolCall"
                and block.get("name") in ("write", "edit")
                and isinstance((block.get("arguments") or {}).get("path"), str)
            ):
                calls.append(block)
    return calls


def artifact_probes(part: _Part, limits: ProbeLimits) -> list[Probe]:
    """File lists (exact) and the last change of the last modified files (judged)."""
    ops = file_ops_from_messages(part.messages, profile=part.profile)
    read_only, modified = compute_file_lists(ops, profile=part.profile)
    probes: list[Probe] = []
    asks = (
        ("files-modified", modified, "Which files were edited or written"),
        ("files-read", read_only, "Which files were read but not modified"),
    )
    for subkind, paths, ask in asks:
        shown = tuple(p for p in paths if p in part.visible)[: limits.max_paths]
        if shown:
            question = f"{ask} earlier in this session? List every path exactly as written."
            probes.append(
                part.probe(
                    "artifact", subkind, question, "\n".join(shown), exact=shown, source="file-ops"
                )
            )
    last: dict[str, Mapping[str, Any]] = {}
    for call in _file_calls(part.messages):
        path = call["arguments"]["path"]
        last.pop(path, None)
        last[path] = call  # re-inserted: dict order is the order of last change
    for path in list(reversed(last))[: limits.file_states]:
        question = (
            f"What was the last change made to {path} earlier in this session, and what "
            "state did it leave the file in?"
        )
        reference = _clip(render_tool_call(last[path]))
        probes.append(part.probe("artifact", "file-state", question, reference, source="file-ops"))
    return probes


def _reasoning(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
    if text.strip():
        return text.strip()
    thinking = "\n".join(
        b["thinking"] for b in blocks if b.get("type") == "thinking" and b.get("thinking")
    )
    return thinking.strip()


def _first_call(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") == "toolCall":
            return block
    return None


def decision_probes(part: _Part, limits: ProbeLimits) -> list[Probe]:
    """Reasoning followed by an action, spread evenly over the part (judged)."""
    found: list[tuple[str, Mapping[str, Any], str]] = []
    for entry, message in zip(part.entries, part.messages, strict=True):
        call = _first_call(message) if message.get("role") == "assistant" else None
        reasoning = _reasoning(message) if call is not None else ""
        if call is not None and len(reasoning) >= 20:
            found.append((str(entry.id), call, reasoning))
    if not found or limits.decisions <= 0:
        return []
    step = max(1, len(found) // limits.decisions)
    probes: list[Probe] = []
    for entry_id, call, reasoning in found[::step][: limits.decisions]:
        question = (
            f"Earlier in this session you called {_clip(render_tool_call(call), _CALL_CHARS)}. "
            "Why did you take that action: what did you want to find out or achieve?"
        )
        probes.append(
            part.probe("decision", "decision", question, _clip(reasoning), entry_id=entry_id)
        )
    return probes


def _after(session: Session, leaf_id: str) -> list[Entry]:
    path = session.path()
    ids = [e.id for e in path]
    if leaf_id not in ids:
        return []
    return [e for e in path[ids.index(leaf_id) + 1 :] if e.message is not None]


def continuation_probes(part: _Part) -> list[Probe]:
    """The next user request and the next tool call after the point (judged)."""
    following = _after(part.session, part.leaf_id)
    request: str | None = None
    probes: list[Probe] = []
    for entry in following:
        message = entry.message or {}
        role = message.get("role")
        if role == "user" and request is None:
            request = "\n".join(_texts(message)).strip()
            if not probes:
                question = (
                    "The work pauses here. What is the next thing the user is likely to ask "
                    "you to do?"
                )
                probes.append(
                    part.probe(
                        "continuation",
                        "next-user-request",
                        question,
                        _clip(request),
                        entry_id=entry.id,
                    )
                )
            continue
        call = _first_call(message) if role == "assistant" else None
        if call is None:
            continue
        lead = f"The user now writes: «{_clip(request)}». " if request else ""
        question = f"{lead}What is the very next action you take? Name the tool and its arguments."
        probes.append(
            part.probe(
                "continuation",
                "next-tool-call",
                question,
                _clip(render_tool_call(call)),
                entry_id=entry.id,
            )
        )
        break
    return probes


# -- the public face -----------------------------------------------------------------------
def probe_point(session: Session) -> str | None:
    """The default probe point: the entry before the session's last user request that the
    agent answers with a tool call, so the continuation has both a request and an action;
    the session leaf when there is none."""
    path = session.path()
    last: int | None = None
    for index, entry in enumerate(path):
        message = entry.message
        if message is None or message.get("role") != "user" or index == 0:
            continue
        later = path[index + 1 :]
        if any(e.message is not None and _first_call(e.message) is not None for e in later):
            last = index
    if last is None:
        return session.leaf_id
    return path[last - 1].id


def planted_facts_of(session: Session) -> tuple[tuple[Fact, str], ...] | None:
    """The planted facts beside a generated session's file (`<id>.facts.json`), each with
    the id of the entry where it first appears; None when there is no such file."""
    if session.source_path is None:
        return None
    from pathlib import Path

    from ..datasets._generator import read_facts

    path = Path(session.source_path)
    if not path.with_name(path.name.removesuffix(".jsonl") + ".facts.json").exists():
        return None
    return tuple((Fact(f.fact, f.kind), f.entry_id) for f in read_facts(path))


def _facts(
    session: Session, prep: CompactionPreparation, ids: set[str], source: str
) -> list[tuple[Fact, str]]:
    planted = planted_facts_of(session) if source in ("auto", "planted") else None
    if source == "planted" and planted is None:
        raise FileNotFoundError(f"{session.source_path}: no planted facts beside the session")
    if planted is not None:
        return [(fact, "planted") for fact, entry_id in planted if entry_id in ids]
    messages = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
    return [(fact, "extracted") for fact in extract_facts(messages)]


def make_probes(
    session: Session,
    preparation: CompactionPreparation,
    *,
    facts: str = "auto",
    limits: ProbeLimits | None = None,
    prompts: PromptSet | None = None,
) -> tuple[Probe, ...]:
    """The probes of one compaction point: recall, artifact, decision, continuation.

    Args:
        session: The session (not changed).
        preparation: The engine's preparation at the point (`prepare_compaction(session,
            settings, counter, leaf_id=point)`): its leaf is the point, its summarized
            messages and split-turn prefix the part compacted away.
        facts: `auto` (planted facts when a `.facts.json` lies beside the session file,
            else extracted), `planted` or `extracted`.
        limits: How many probes of each kind.
        prompts: Prompt set for the summaries the uncompacted context wraps.

    Returns:
        Probes in a stable order: recall (by fact kind), artifact, decision, continuation.
    """
    if facts not in ("auto", "planted", "extracted"):
        raise ValueError(f"facts must be auto, planted or extracted, not {facts!r}")
    limits = limits or ProbeLimits()
    ids = [*preparation.summarize_entry_ids, *preparation.turn_prefix_entry_ids]
    by_id = {e.id: e for e in preparation.path}
    leaf = preparation.leaf_id or session.leaf_id or ""
    visible = chat_text(
        reader_messages(session, leaf, profile=preparation.profile, prompts=prompts)
    )
    part = _Part(
        session=session,
        leaf_id=leaf,
        cut=preparation.first_kept_entry_id,
        entries=tuple(by_id[i] for i in ids),
        messages=(*preparation.messages_to_summarize, *preparation.turn_prefix_messages),
        profile=preparation.profile,
        visible=visible,
    )
    return (
        *recall_probes(part, _facts(session, preparation, set(ids), facts), limits),
        *artifact_probes(part, limits),
        *decision_probes(part, limits),
        *continuation_probes(part),
    )

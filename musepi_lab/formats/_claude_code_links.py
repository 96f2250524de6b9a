"""Links the Claude Code tree cannot take from `parentUuid` alone (split from the builder).

- **Compaction boundaries.** A `compact_boundary` has a null `parentUuid` and names the line
  it continues in `logicalParentUuid`. Three shapes are read:

  1. The logical parent is a line before it (Claude Code 1.x and most of 2.x): that line.
  2. A preserved segment (Claude Code 2.1: `compactMetadata.preservedSegment.{headUuid,
     anchorUuid, tailUuid}` and `preservedMessages.uuids`): the messages kept verbatim stay
     where they are in the file, and the tail may be written again after the summary, under
     it, so `logicalParentUuid` (the tail) names a later line that descends from the boundary.
     The boundary then continues after the last preserved message that is not below it (as
     claude-code-log threads it), and `firstKeptEntryId` names the segment's head, so the
     preserved messages stay in the context (pi's kept region, spec §2.1 step 5). A valid
     file: no problem.
  3. A logical parent that names no line (Claude Code writes ids it never persists) and no
     preserved message to continue from: the boundary is attached to the last main-chain
     message or compaction before it in file order and a `bridged` problem says so. Every
     reader problem is one `strict=True` raises on (README, "Formats"): this one marks a
     link the file does not hold, made by the reader. Never a second root: tree, context,
     replay and usage see one conversation.

- **Inline sidechains** (Claude Code 1.x and 2.0 subagents written into the main file): the
  root of each sidechain block names the Task call that started it in `parentToolCallId`,
  found by the `agentId` its lines carry (2.0: the call's result line carries the same
  `agentId`) or, failing that, by its first prompt being the call's `prompt` argument (1.x).

- **Steering** (`queue-operation` lines, no uuid): a queued text that no user line holds
  (the person typed it while the agent worked, and it was handed to the running turn)
  becomes a `custom_message` entry (`customType: "claude-code:queue-operation"`) on the
  chain where it was written, between the entry before it and the next line hanging there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..session._errors import ProblemLog


class TreeBuilder(Protocol):
    """What the links need of the builder (`_claude_code_tree.TreeBuilder`): its state and
    the few steps they call. A protocol, so this module imports nothing of the tree's."""

    log: ProblemLog
    linked_file: bool
    values: list[tuple[int, Any]]
    records: list[dict[str, Any]]
    source_records: list[dict[str, Any]]
    title: str | None
    agent_calls: dict[str, str]
    boundary_links: list[BoundaryLink]
    side_agents: dict[str, str]
    spawn_prompts: list[tuple[str, str]]
    steering: set[str]
    user_text: str | None
    splice: tuple[str | None, str] | None
    _last_main: str | None
    _alias: dict[str, str]
    _by_id: dict[str, dict[str, Any]]
    _dissolved: dict[str, str | None]

    def _resolve(
        self, rec: Mapping[str, Any], lineno: int, *, splice: bool = True
    ) -> tuple[str | None, str | None]: ...

    def _tail_of(self, entry_id: str) -> str: ...

    def _is_below(self, entry_id: str, ancestor: str) -> bool: ...

    def _add(
        self,
        record: dict[str, Any],
        lineno: int,
        rec: Mapping[str, Any],
        *,
        foreign_parent: str | None = None,
    ) -> str: ...

    def _take_id(self, uuid: Any, lineno: int, *salt: object) -> str: ...


STEERING_TYPE = "claude-code:queue-operation"
_SPAWN_TOOLS = frozenset({"Task", "Agent"})


@dataclass(frozen=True)
class BoundaryLink:
    """A boundary whose parent is settled once the whole file is read."""

    entry_id: str
    line: int
    logical: str | None
    preserved: tuple[str, ...]  # preserved message uuids, head first
    before: str | None  # the last main-chain entry before the boundary, in file order


def boundary_parent(
    b: TreeBuilder, lineno: int, rec: Mapping[str, Any], meta: Mapping[str, Any], entry_id: str
) -> tuple[str | None, str | None]:
    """A boundary's parent now (a logical parent written before it: the usual case), or
    None and a link settled by `link_boundaries` once the whole file is read."""
    has_parent = isinstance(rec.get("parentUuid"), str) and rec.get("parentUuid")
    if b.linked_file or has_parent:
        return b._resolve(rec, lineno)
    logical = rec.get("logicalParentUuid")
    logical = logical if isinstance(logical, str) else None
    if logical is not None and (logical in b._alias or b._dissolved.get(logical) is not None):
        return b._resolve(rec, lineno)
    before = b._tail_of(b._last_main) if b._last_main is not None else None
    b.boundary_links.append(BoundaryLink(entry_id, lineno, logical, preserved_uuids(meta), before))
    return None, None


def preserved_uuids(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The uuids a boundary kept verbatim, head first: `preservedMessages.uuids`, else the
    segment's head and tail (the lines between them are found through their parents)."""
    kept = meta.get("preservedMessages")
    uuids = kept.get("uuids") if isinstance(kept, Mapping) else None
    if isinstance(uuids, list) and uuids:
        return tuple(u for u in uuids if isinstance(u, str))
    segment = meta.get("preservedSegment")
    if not isinstance(segment, Mapping):
        return ()
    ends = (segment.get("headUuid"), segment.get("tailUuid"))
    return tuple(dict.fromkeys(u for u in ends if isinstance(u, str)))


def _entry_of(b: TreeBuilder, uuid: str | None) -> str | None:
    """The entry a source uuid ended up in (the tail of its reply's region), if any."""
    if uuid is None:
        return None
    target = b._dissolved.get(uuid) if uuid in b._dissolved else b._alias.get(uuid)
    return b._tail_of(target) if target is not None else None


def link_boundaries(b: TreeBuilder) -> None:
    """Settle each deferred boundary's parent (module docstring, shapes 1-3)."""
    for link in b.boundary_links:
        record = b._by_id[link.entry_id]
        candidates = [link.logical, *reversed(link.preserved)]
        parent = next(
            (
                target
                for target in map(lambda u: _entry_of(b, u), candidates)
                if target is not None and not b._is_below(target, link.entry_id)
            ),
            None,
        )
        if parent is not None:
            record["parentId"] = parent
        elif link.before is not None and not b._is_below(link.before, link.entry_id):
            record["parentId"] = link.before
            record["bridged"] = True
            named = (
                f"logicalParentUuid {link.logical!r} names no line it can continue from"
                if link.logical is not None
                else "no logicalParentUuid"
            )
            b.log.add(
                link.line,
                "bridged",
                f"compact_boundary has {named}; attached to the last main-chain entry before "
                f"it ({link.before!r}) so the session stays one conversation",
            )
        else:
            b.log.add(
                link.line,
                "dangling-parent",
                f"logicalParentUuid {link.logical!r} names no line and nothing comes before "
                "the boundary; the compaction becomes a root",
            )


def preserved_heads(b: TreeBuilder) -> dict[str, str]:
    """Compaction id → the entry its preserved segment starts at, where that entry is on
    the compaction's own path (else the kept messages were all written after it)."""
    heads: dict[str, str] = {}
    for link in b.boundary_links:
        parent = b._by_id[link.entry_id].get("parentId")
        for uuid in link.preserved:
            head = _entry_of(b, uuid)
            if head is not None and parent is not None and b._is_below(parent, head):
                heads[link.entry_id] = head
                break
    return heads


# -- inline sidechains --------------------------------------------------------------------


def link_sidechains(b: TreeBuilder) -> None:
    """Name the Task call on the root entry of every inline sidechain block."""
    children: dict[str, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    for record in b.records:
        if record.get("isSidechain") is not True:
            continue
        parent = record.get("parentId")
        parent_side = parent is not None and b._by_id[parent].get("isSidechain") is True
        if parent_side:
            children.setdefault(str(parent), []).append(record)
        else:
            roots.append(record)
    taken: set[str] = set()
    for root in roots:
        call = _call_by_agent(b, root, children) or _call_by_prompt(b, root, taken)
        if call is not None:
            root["parentToolCallId"] = call
            taken.add(call)


def _call_by_agent(
    b: TreeBuilder, root: dict[str, Any], children: Mapping[str, list[dict[str, Any]]]
) -> str | None:
    stack = [root]
    while stack:
        record = stack.pop()
        agent = b.side_agents.get(str(record["id"]))
        if agent is not None and agent in b.agent_calls:
            return b.agent_calls[agent]
        stack.extend(children.get(str(record["id"]), ()))
    return None


def _call_by_prompt(b: TreeBuilder, root: dict[str, Any], taken: set[str]) -> str | None:
    message = root.get("message")
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return None
    text = "\n".join(
        str(block.get("text", ""))
        for block in message.get("content", ())
        if isinstance(block, Mapping) and block.get("type") == "text"
    )
    for call_id, prompt in b.spawn_prompts:
        if call_id not in taken and prompt == text:
            return call_id
    return None


def spawn_prompt(block: Mapping[str, Any], raw: Any) -> str | None:
    """The `prompt` argument of a Task/Agent call block (its raw Anthropic block), if any."""
    if block.get("type") != "toolCall" or block.get("name") not in _SPAWN_TOOLS:
        return None
    arguments = raw.get("input") if isinstance(raw, Mapping) else None
    prompt = arguments.get("prompt") if isinstance(arguments, Mapping) else None
    return prompt if isinstance(prompt, str) else None


# -- lines without a uuid, steering ------------------------------------------------------


def line_without_uuid(b: TreeBuilder, lineno: int, rec: dict[str, Any], kind: Any) -> str | None:
    """What to do with a line without a uuid: the kind to read it as, or None when it was
    kept already (header `sourceRecords`, the title, a steering entry).

    Messages, lines that record usage (ccusage's test lines have no `type` either) and
    compaction boundaries are kept with a fresh id and a `missing-id` problem: usage rows
    need no uuid, and a compaction stays a compaction.
    """
    message = rec.get("message")
    has_usage = isinstance(message, dict) and isinstance(message.get("usage"), dict)
    if kind in ("user", "assistant") or (kind is None and has_usage):
        kind = kind or "assistant"
        b.log.add(lineno, "missing-id", f"{kind} line has no uuid; kept with a fresh id")
        return str(kind)
    if kind == "system" and rec.get("subtype") == "compact_boundary":
        b.log.add(lineno, "missing-id", "compact_boundary has no uuid; kept with a fresh id")
        return "system"
    if kind == "summary" and isinstance(rec.get("summary"), str):
        b.title = rec["summary"]
    if kind == "queue-operation" and _is_steering(b, rec):
        _steer(b, lineno, rec)
        return None
    b.source_records.append({"line": lineno, "record": rec})
    return None


def _is_steering(b: TreeBuilder, rec: Mapping[str, Any]) -> bool:
    text = rec.get("content")
    if b.linked_file or not isinstance(text, str) or not text.strip() or text in b.steering:
        return False
    if b.user_text is None:  # only files with queued texts pay for this
        b.user_text = user_texts(b.values)
    return text not in b.user_text


def _steer(b: TreeBuilder, lineno: int, rec: Mapping[str, Any]) -> None:
    b.steering.add(str(rec["content"]))
    parent = b._tail_of(b._last_main) if b._last_main is not None else None
    entry_id = b._take_id(None, lineno, "steering")
    b._add(steering_record(entry_id, parent, rec), lineno, rec)
    if parent is not None:
        b.splice = (parent, entry_id)


def user_texts(values: list[tuple[int, Any]]) -> str:
    """Every user line's text, joined: where a queued text handed over as a message is.
    Compaction summaries are left out: they quote the person's messages, steering included."""
    parts: list[str] = []
    for _, rec in values:
        if not isinstance(rec, dict) or rec.get("type") != "user":
            continue
        if rec.get("isCompactSummary") is True:
            continue
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(_block_texts(content))
    return "\0".join(parts)


def _block_texts(blocks: list[Any]) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            out.append(block)
        elif isinstance(block, dict):
            inner = block.get("content")
            if isinstance(block.get("text"), str):
                out.append(block["text"])
            if isinstance(inner, str):
                out.append(inner)
            elif isinstance(inner, list):
                out.extend(_block_texts(inner))
    return out


def steering_record(entry_id: str, parent: str | None, rec: Mapping[str, Any]) -> dict[str, Any]:
    """The `custom_message` entry of a steering `queue-operation` line."""
    return {
        "type": "custom_message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": rec.get("timestamp"),
        "customType": STEERING_TYPE,
        "content": [{"type": "text", "text": str(rec.get("content"))}],
        "display": True,
        "details": {"operation": rec.get("operation")},
        "data": dict(rec),
        "sourceId": None,
    }

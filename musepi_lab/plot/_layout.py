"""Tree layout: a pure function from a session to node positions (no matplotlib here).

Entries are laid out like a git graph: x is the column along a branch, y is the lane. Three
steps keep a session of any length legible in a bounded figure:

1. **Fold.** Metadata entries (model changes, labels, Claude Code progress lines, anything
   that is not a message, a compaction or a branch summary) join the node of the nearest
   message above them (or, before the first message, the first message below them). A side
   leaf made only of metadata is then no branch at all.
2. **Branches.** A branch is a fork in the folded tree: every child subtree holds a message.
   The active path (root → leaf) runs along lane 0; each other branch takes the lowest lane
   free over its columns; branches past `max_lanes` fold into their fork node.
3. **Runs.** When a branch has more nodes than its column budget, linear runs collapse
   into `run` nodes (`_runs.group_chain`). A branch is drawn at the active path's scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ..session._model import Entry
from ..session._session import Session
from ._runs import group_chain

NODE_KINDS: tuple[str, ...] = (
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "compaction",
    "branch_summary",
    "meta",
    "run",
)
"""What a node can be: a message role, a summary entry, metadata, or a collapsed run."""

_HARD_KINDS = frozenset({"compaction", "branch_summary"})


def node_kind(entry: Entry) -> str:
    """The colour class of an entry."""
    if entry.type == "message":
        role = entry.role or "custom"
        if role in ("user", "assistant", "toolResult", "bashExecution"):
            return role
        return "custom"
    if entry.type in ("compaction", "branch_summary"):
        return entry.type
    if entry.type == "custom_message":
        return "custom"
    return "meta"


@dataclass(frozen=True)
class TreeNode:
    """One drawn node: an entry (with the metadata folded into it), or a collapsed run.

    Attributes:
        key: The head entry id, or `run:<first head id>` for a collapsed run.
        entry_ids: Every entry the node stands for (messages and folded metadata).
        x: Column (position along the branch).
        y: Lane (0 = the active path; branches go to 1, 2, ...).
        kind: One of `NODE_KINDS`.
        tokens: Tokens of the entries the node stands for.
        on_path: True when the node is on the active path.
        label: The resolved label of the entry (or of an entry folded into it), if any.
        parent: Key of the parent node, None for a root.
        messages: Message-level entries the node stands for (the `×N` of a run).
        folded: Metadata entries folded into the node.
        path_index: Active-path index of the node's first entry (None off the path).
        hidden_branches: Branches past the lane limit folded into this node.
    """

    key: str
    entry_ids: tuple[str, ...]
    x: int
    y: int
    kind: str
    tokens: int
    on_path: bool
    label: str | None
    parent: str | None
    messages: int = 1
    folded: int = 0
    path_index: int | None = None
    hidden_branches: int = 0


def branch_summary_links(
    session: Session, index: Mapping[str, str], nodes: Mapping[str, Mapping[str, object]]
) -> tuple[tuple[str, str], ...]:
    """`(branch_summary_key, from_key)` of every drawn branch summary whose `fromId` (the
    abandoned leaf) is drawn too, on another node."""
    links = []
    for entry in session.entries:
        source = entry.get("fromId") if entry.type == "branch_summary" else None
        a = index.get(entry.id or "")
        b = index.get(source) if isinstance(source, str) else None
        if a is not None and b is not None and a != b and nodes[a]["kind"] == "branch_summary":
            links.append((a, b))
    return tuple(links)


@dataclass(frozen=True)
class TreeLayout:
    """Positions of every node, the edges, and compaction → first-kept links.

    Attributes:
        nodes: Nodes in drawing order.
        edges: `(parent_key, child_key)` pairs.
        links: `(compaction_key, first_kept_key)` pairs, where the kept entry is drawn.
        from_links: `(branch_summary_key, from_key)` pairs: each branch summary and the
            abandoned leaf it summarizes (`fromId`), where that leaf is drawn.
        index: Entry id → key of the node that shows it (folded entries included).
        width: Number of columns.
        lanes: Number of lanes.
        hidden_branches: Branches left out (past `max_lanes`), folded into their forks.
        path_range: The `[start, stop)` active-path indices shown.
    """

    nodes: tuple[TreeNode, ...]
    edges: tuple[tuple[str, str], ...]
    links: tuple[tuple[str, str], ...]
    index: Mapping[str, str] = field(repr=False)
    width: int
    lanes: int
    hidden_branches: int = 0
    path_range: tuple[int, int] = (0, 0)
    from_links: tuple[tuple[str, str], ...] = ()
    by_key: Mapping[str, TreeNode] = field(init=False, repr=False, compare=False)
    _offset: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_key", MappingProxyType({n.key: n for n in self.nodes}))
        offsets = {
            i: k for n in self.nodes if len(n.entry_ids) > 1 for k, i in enumerate(n.entry_ids)
        }
        object.__setattr__(self, "_offset", MappingProxyType(offsets))

    def node(self, entry_id: str) -> TreeNode | None:
        """The node that shows an entry (itself, its collapsed run, or its host)."""
        key = self.index.get(entry_id)
        return self.by_key.get(key) if key is not None else None

    def x_span(self, entry_ids: Collection[str]) -> tuple[float, float] | None:
        """The column range covering the given entries (for shading regions).

        Inside a run, the range covers the run's share of those entries, so a cut that
        falls inside a run is drawn where it falls, without relaying out the tree.
        """
        lo: float | None = None
        hi: float | None = None
        for entry_id in entry_ids:
            node = self.node(entry_id)
            if node is None:
                continue
            size = len(node.entry_ids)
            k = self._offset.get(entry_id, 0)
            left = node.x - 0.5 + k / size
            right = node.x - 0.5 + (k + 1) / size
            lo = left if lo is None else min(lo, left)
            hi = right if hi is None else max(hi, right)
        return None if lo is None or hi is None else (lo, hi)


# -- step 1: folding -------------------------------------------------------------------------
@dataclass(frozen=True)
class FoldedTree:
    """The session's tree with metadata folded into message-level units.

    A unit is one message-level entry (its head) plus the metadata entries folded into it;
    a root component holding no message at all is one unit of kind `meta`. Independent of
    the leaf, so a view that redraws often computes it once (`fold_tree`).

    Attributes:
        heads: Head entry of each unit, units in depth-first order.
        members: Entry ids of each unit, head first.
        parents: Parent unit of each unit (None for a root).
        children: Child units of each unit, in the session's child order.
        unit_of: Entry id → unit.
    """

    heads: tuple[Entry, ...]
    members: tuple[tuple[str, ...], ...]
    parents: tuple[int | None, ...]
    children: tuple[tuple[int, ...], ...]
    unit_of: Mapping[str, int] = field(repr=False)

    @property
    def forks(self) -> tuple[int, ...]:
        """Units with at least two children: the real branch points."""
        return tuple(u for u, kids in enumerate(self.children) if len(kids) > 1)


def fold_tree(session: Session) -> FoldedTree:
    """Fold every metadata entry of a session into its nearest message (pure)."""
    heads: list[Entry] = []
    members: list[list[str]] = []
    parents: list[int | None] = []
    host: dict[str, int | None] = {}
    pending: list[str] = []  # metadata met before any message of the current root

    def new_unit(head: Entry, parent: int | None) -> int:
        heads.append(head)
        members.append([head.id])  # type: ignore[list-item]
        parents.append(parent)
        return len(heads) - 1

    def flush_pending() -> None:
        if pending:
            unit = new_unit(session.by_id[pending[0]], None)
            members[unit].extend(pending[1:])
            for entry_id in pending:
                host[entry_id] = unit
            pending.clear()

    for depth, entry in session.walk():
        if depth == 0:
            flush_pending()  # a root component that held no message
        parent = entry.parent_id
        up = host.get(parent) if parent is not None and parent != entry.id else None
        if node_kind(entry) == "meta":
            if up is None:
                pending.append(entry.id)  # type: ignore[arg-type]
            else:
                members[up].append(entry.id)  # type: ignore[arg-type]
            host[entry.id] = up  # type: ignore[index]
            continue
        unit = new_unit(entry, up)
        if up is None and pending:
            # Metadata opening the session (model, thinking level, hooks) joins its first
            # message rather than standing alone.
            members[unit].extend(pending)
            pending.clear()
        host[entry.id] = unit  # type: ignore[index]
    flush_pending()

    children: list[list[int]] = [[] for _ in heads]
    for unit, parent_unit in enumerate(parents):
        if parent_unit is not None:
            children[parent_unit].append(unit)
    unit_of = {entry_id: u for u, ids in enumerate(members) for entry_id in ids}
    return FoldedTree(
        heads=tuple(heads),
        members=tuple(tuple(m) for m in members),
        parents=tuple(parents),
        children=tuple(tuple(c) for c in children),
        unit_of=MappingProxyType(unit_of),
    )


# -- step 2 and assembly -----------------------------------------------------------------------
@dataclass(frozen=True)
class _Chain:
    units: tuple[int, ...]
    fork: int | None  # unit it forks from (None: the active path, or another root)
    active: bool


def _chains(
    folded: FoldedTree, path_units: Sequence[int], shown: set[int], on_path: set[int]
) -> list[_Chain]:
    """Split the shown units into chains (lanes before packing), parents first."""
    chains: list[_Chain] = []
    starts: list[tuple[int, int | None]] = []
    if path_units:
        chains.append(_Chain(tuple(path_units), None, True))
        for u in path_units:
            starts.extend((k, u) for k in folded.children[u] if k not in on_path and k in shown)
    roots = [u for u, p in enumerate(folded.parents) if p is None and u in shown]
    starts.extend((r, None) for r in roots if r not in on_path)
    queue = list(reversed(starts))
    while queue:
        head, fork = queue.pop()
        units = [head]
        while True:
            kids = [k for k in folded.children[units[-1]] if k in shown]
            if not kids:
                break
            queue.extend((k, units[-1]) for k in reversed(kids[1:]))
            units.append(kids[0])
        chains.append(_Chain(tuple(units), fork, False))
    return chains


def _pack(intervals: list[list[tuple[int, int]]], lo: int, hi: int, limit: int) -> int | None:
    """The lowest lane in `[1, limit)` free over `[lo, hi]`, opening one if needed."""
    for lane in range(1, limit):
        if lane >= len(intervals):
            intervals.append([])
        if all(hi < a or lo > b for a, b in intervals[lane]):
            intervals[lane].append((lo, hi))
            return lane
    return None


def _shown_units(
    folded: FoldedTree, path: Sequence[Entry], start: int, stop: int
) -> tuple[list[int], set[int], set[int]]:
    """Active-path units in `[start, stop)`, every unit to show (their branches too), and
    the units of the whole active path."""
    path_units: list[int] = []
    for entry in path[start:stop]:
        unit = folded.unit_of.get(entry.id)  # type: ignore[arg-type]
        if unit is not None and (not path_units or path_units[-1] != unit):
            path_units.append(unit)
    whole = {u for e in path if (u := folded.unit_of.get(e.id)) is not None}  # type: ignore[arg-type]
    if start == 0 and stop >= len(path):
        return path_units, set(range(len(folded.heads))), whole
    shown = set(path_units)
    stack = [k for u in path_units for k in folded.children[u] if k not in whole]
    while stack:
        u = stack.pop()
        shown.add(u)
        stack.extend(folded.children[u])
    return path_units, shown, whole


def _resolve(bound: int | str | None, path: Sequence[Entry], default: int, end: bool) -> int:
    if bound is None:
        return default
    if isinstance(bound, str):
        for i, entry in enumerate(path):
            if entry.id == bound:
                return i + 1 if end else i  # an id end is included
        raise KeyError(f"entry {bound!r} is not on the active path")
    return max(0, min(len(path), bound + len(path) if bound < 0 else bound))


def path_bounds(
    path: Sequence[Entry], start: int | str | None, end: int | str | None
) -> tuple[int, int]:
    """`[start, stop)` indices of the active path from ints (slice semantics) or ids
    (both ends included).

    Raises:
        KeyError: An id is not on the active path.
    """
    lo = _resolve(start, path, 0, end=False)
    hi = _resolve(end, path, len(path), end=True)
    return lo, max(lo, hi)


def _priorities(
    session: Session, folded: FoldedTree, keep: Collection[str], shown: set[int]
) -> dict[int, int]:
    """How strongly each shown unit resists collapsing (see `group_chain`)."""
    first_kept = {e.get("firstKeptEntryId") for e in session.entries if e.type == "compaction"}
    sticky = set(keep) | set(session.labels) | {k for k in first_kept if isinstance(k, str)}
    out: dict[int, int] = {}
    for u in shown:
        kind = node_kind(folded.heads[u])
        if (
            kind in _HARD_KINDS
            or sum(1 for k in folded.children[u] if k in shown) > 1
            or any(i in sticky for i in folded.members[u])
        ):
            out[u] = 2
        else:
            out[u] = 1 if kind == "user" else 0
    return out


@dataclass
class _Assembly:
    """Mutable state while nodes are placed (kept out of the pure result)."""

    nodes: dict[str, dict[str, object]] = field(default_factory=dict)
    node_of_unit: dict[int, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    hidden: int = 0


def _place_chain(
    asm: _Assembly,
    chain: _Chain,
    spans: Sequence[tuple[int, int]],
    x0: int,
    lane: int,
    unit_info: Callable[[Sequence[int]], dict[str, object]],
) -> None:
    """Turn a chain's spans into nodes at `(x0 + i, lane)`, linked to the fork."""
    previous = asm.node_of_unit.get(chain.fork) if chain.fork is not None else None
    for i, (a, b) in enumerate(spans):
        units = chain.units[a:b]
        head_id = str(unit_info([units[0]])["head_id"])
        key = head_id if len(units) == 1 else f"run:{head_id}"
        info = unit_info(units)
        info.pop("head_id")
        asm.nodes[key] = {
            **info,
            "key": key,
            "x": x0 + i,
            "y": lane,
            "on_path": chain.active,
            "parent": previous,
        }
        for u in units:
            asm.node_of_unit[u] = key
        if previous is not None:
            asm.edges.append((previous, key))
        previous = key


@dataclass(frozen=True)
class _UnitInfo:
    """What a node made of some units shows: ids, kind, tokens, label, counts."""

    folded: FoldedTree
    path_index: Mapping[str | None, int]
    labels: Mapping[str, str]
    by_id: Mapping[str, Entry]
    count: Callable[[Entry], int]

    def __call__(self, units: Sequence[int]) -> dict[str, object]:
        heads = self.folded.heads
        ids = [i for u in units for i in self.folded.members[u]]
        on = [self.path_index[i] for i in ids if i in self.path_index]
        single = len(units) == 1
        return {
            "head_id": ids[0],
            "entry_ids": tuple(ids),
            "kind": node_kind(heads[units[0]]) if single else "run",
            "tokens": sum(self.count(self.by_id[i]) for i in ids),
            "label": next((self.labels[i] for i in ids if i in self.labels), None)
            if single
            else None,
            "messages": sum(1 for u in units if node_kind(heads[u]) != "meta"),
            "folded": len(ids) - len(units),
            "path_index": min(on) if on else None,
        }


def _chain_budget(chain: _Chain, x0: int, max_columns: int | None, density: float) -> int | None:
    """Columns a chain may use: what is left of the width, and for a branch no more than
    its length at the active path's scale (at least two, so its start shows)."""
    if max_columns is None:
        return None
    room = max(1, max_columns - x0)
    if chain.active:
        return room
    scaled = max(min(len(chain.units), 2), math.ceil(len(chain.units) * density))
    return min(room, scaled)


def tree_layout(
    session: Session,
    *,
    leaf_id: str | None = None,
    tokens: Callable[[Entry], int] | None = None,
    collapse: int | None = None,
    pinned: Collection[str] = (),
    start: int | str | None = None,
    end: int | str | None = None,
    path_range: tuple[int, int] | None = None,
    max_columns: int | None = None,
    max_lanes: int = 24,
    folded: FoldedTree | None = None,
) -> TreeLayout:
    """Lay out the entry tree of a session (metadata folded, runs collapsed to fit).

    Args:
        session: The session.
        leaf_id: The leaf whose path is the active one (default: the session leaf).
        tokens: Tokens of an entry (for node sizes); default: all zero.
        collapse: Runs of at least this many ordinary nodes always collapse (None: only
            as far as `max_columns` needs).
        pinned: Entry ids that should stay visible as their own node (cut points).
        start: First active-path entry shown: an index (negative counts from the end) or
            an entry id.
        end: Where the shown part of the active path ends: an index, exclusive as in a
            slice, or an entry id, included. Branches forking inside the range are shown.
        path_range: `(start, end)` as indices (the older spelling of the two above).
        max_columns: Most columns the layout may use (None: no limit).
        max_lanes: Most lanes; branches past them fold into their fork node.
        folded: `fold_tree(session)`, when the caller keeps it between calls.

    Returns:
        The layout; pure: the same inputs give the same layout.

    Raises:
        KeyError: `start` or `end` is an id not on the active path.
    """
    count = tokens or (lambda _e: 0)
    folded = folded or fold_tree(session)
    path = session.path(leaf_id)
    if path_range is not None:
        start, end = path_range
    lo, hi = path_bounds(path, start, end)
    path_units, shown, whole = _shown_units(folded, path, lo, hi)
    priority = _priorities(session, folded, pinned, shown)
    unit_info = _UnitInfo(
        folded, {e.id: i for i, e in enumerate(path)}, session.labels, session.by_id, count
    )
    asm = _Assembly()
    lanes: list[list[tuple[int, int]]] = [[]]
    # Columns per unit on the active path: branches are drawn at the same scale, so a
    # short branch stays short and branches that do not overlap can share a lane.
    density = min(1.0, max_columns / len(path_units)) if max_columns and path_units else 1.0
    for chain in _chains(folded, path_units, shown, whole):
        if chain.fork is not None and chain.fork not in asm.node_of_unit:
            continue  # its parent branch was left out: folded with it
        fork_node = asm.nodes.get(asm.node_of_unit.get(chain.fork, ""))  # type: ignore[arg-type]
        x0 = int(fork_node["x"]) + 1 if fork_node is not None else 0  # type: ignore[call-overload]
        budget = _chain_budget(chain, x0, max_columns, density)
        ranks = [priority[u] for u in chain.units]
        ranks[-1] = 2  # a branch's tip stays visible
        spans = group_chain(ranks, budget, collapse)
        lane = 0 if chain.active else _pack(lanes, x0 - 1, x0 + len(spans) - 1, max_lanes)
        if lane is None:
            asm.hidden += 1
            if fork_node is not None:
                fork_node["hidden_branches"] = int(fork_node.get("hidden_branches", 0)) + 1  # type: ignore[call-overload]
            continue
        _place_chain(asm, chain, spans, x0, lane, unit_info)
    return _finish(session, folded, asm, shown, (lo, hi))


def _finish(
    session: Session,
    folded: FoldedTree,
    asm: _Assembly,
    shown: set[int],
    path_range: tuple[int, int],
) -> TreeLayout:
    nodes = tuple(TreeNode(**spec) for spec in asm.nodes.values())  # type: ignore[arg-type]
    index: dict[str, str] = {}
    for unit, key in asm.node_of_unit.items():
        for entry_id in folded.members[unit]:
            index[entry_id] = key
    # Entries of branches left out point at the node of their nearest shown ancestor.
    for unit in shown - asm.node_of_unit.keys():
        ids = folded.members[unit]
        up = folded.parents[unit]
        while up is not None and up not in asm.node_of_unit:
            up = folded.parents[up]
        if up is not None:
            for entry_id in ids:
                index[entry_id] = asm.node_of_unit[up]
    links = []
    for entry in session.entries:
        kept = entry.get("firstKeptEntryId") if entry.type == "compaction" else None
        a, b = index.get(entry.id or ""), index.get(kept) if isinstance(kept, str) else None
        if a is not None and b is not None and a != b and asm.nodes[a]["kind"] == "compaction":
            links.append((a, b))
    return TreeLayout(
        from_links=branch_summary_links(session, index, asm.nodes),
        nodes=nodes,
        edges=tuple(asm.edges),
        links=tuple(links),
        index=MappingProxyType(index),
        width=max((n.x for n in nodes), default=-1) + 1,
        lanes=max((n.y for n in nodes), default=-1) + 1,
        hidden_branches=asm.hidden,
        path_range=path_range,
    )

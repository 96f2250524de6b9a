"""Tree layout: a pure function from a session to node positions (no matplotlib here).

Entries are laid out like a git graph: x is the column along a branch, y is the lane. The
active path (root → leaf) runs along lane 0; every other branch takes a new lane below the
point where it forks. Long linear runs of ordinary entries collapse into one `run` node so a
session of thousands of entries stays legible; special entries (user messages, which start
turns; compactions; branch summaries; labelled entries; fork points; leaves; entries the
caller pins) never collapse.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..session._model import Entry
from ..session._session import Session

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
    """One drawn node: an entry, or a collapsed run of entries.

    Attributes:
        key: The entry id, or `run:<first id>` for a collapsed run.
        entry_ids: The entries the node stands for, in order.
        x: Column (position along the branch).
        y: Lane (0 = the active path; branches go to 1, 2, ...).
        kind: One of `NODE_KINDS`.
        tokens: Tokens of the entries the node stands for.
        on_path: True when the node is on the active path.
        label: The resolved label of the entry, if any.
        parent: Key of the parent node, None for a root.
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


@dataclass(frozen=True)
class TreeLayout:
    """Positions of every node, the edges, and compaction → first-kept links.

    Attributes:
        nodes: Nodes in drawing order.
        edges: `(parent_key, child_key)` pairs.
        links: `(compaction_key, first_kept_key)` pairs, where the kept entry is drawn.
        index: Entry id → key of the node that shows it.
        width: Number of columns.
        lanes: Number of lanes.
    """

    nodes: tuple[TreeNode, ...]
    edges: tuple[tuple[str, str], ...]
    links: tuple[tuple[str, str], ...]
    index: Mapping[str, str] = field(repr=False)
    width: int
    lanes: int
    by_key: Mapping[str, TreeNode] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_key", MappingProxyType({n.key: n for n in self.nodes}))

    def node(self, entry_id: str) -> TreeNode | None:
        """The node that shows an entry (itself or its collapsed run)."""
        key = self.index.get(entry_id)
        return self.by_key.get(key) if key is not None else None

    def x_span(self, entry_ids: Collection[str]) -> tuple[float, float] | None:
        """The column range covering the given entries (for shading regions)."""
        xs = [n.x for e in entry_ids if (n := self.node(e)) is not None]
        if not xs:
            return None
        return min(xs) - 0.5, max(xs) + 0.5


def tree_layout(
    session: Session,
    *,
    leaf_id: str | None = None,
    tokens: Callable[[Entry], int] | None = None,
    collapse: int | None = 12,
    pinned: Collection[str] = (),
    path_range: tuple[int, int] | None = None,
) -> TreeLayout:
    """Lay out the entry tree of a session.

    Args:
        session: The session.
        leaf_id: The leaf whose path is the active one (default: the session leaf).
        tokens: Tokens of an entry (for node sizes); default: all zero.
        collapse: Collapse linear runs of at least this many ordinary entries into one node
            (None: never collapse).
        pinned: Entry ids that must stay visible (cut points, entries of interest).
        path_range: Zoom: only entries whose depth on their branch is within
            `[start, stop)` of the active path's indices.

    Returns:
        The layout; pure: the same inputs give the same layout.
    """
    count = tokens or (lambda _e: 0)
    path = session.path(leaf_id)
    on_path = {e.id for e in path}
    labels = session.labels
    first_kept = {e.get("firstKeptEntryId") for e in session.entries if e.type == "compaction"} - {
        None
    }
    keep_visible = set(pinned) | first_kept | set(labels)
    if path:
        keep_visible.add(path[-1].id)  # type: ignore[arg-type]

    # Depth of every entry (its index along its own branch), for zooming.
    depth: dict[str, int] = {}
    lane_of: dict[str, int] = {}
    order: list[Entry] = []
    next_lane = 0

    def child_order(entry_id: str) -> list[Entry]:
        kids = list(session.children(entry_id))
        # The child on the active path continues the lane; the others fork below it.
        kids.sort(key=lambda c: 0 if c.id in on_path else 1)
        return kids

    roots = sorted(session.roots, key=lambda r: 0 if r.id in on_path else 1)
    stack: list[tuple[Entry, int, int]] = []
    for root in reversed(roots):
        stack.append((root, 0, -1))
    while stack:
        entry, d, lane = stack.pop()
        if entry.id in depth:
            continue
        if lane < 0:
            lane = next_lane
            next_lane += 1
        depth[entry.id] = d  # type: ignore[index]
        lane_of[entry.id] = lane  # type: ignore[index]
        order.append(entry)
        kids = child_order(entry.id)  # type: ignore[arg-type]
        for i, kid in reversed(list(enumerate(kids))):
            stack.append((kid, d + 1, lane if i == 0 else -1))

    if path_range is not None:
        lo, hi = path_range
        order = [e for e in order if lo <= depth[e.id] < hi]  # type: ignore[index]
    visible = {e.id for e in order}

    def collapsible(e: Entry) -> bool:
        kids = session.children(e.id)  # type: ignore[arg-type]
        return (
            node_kind(e) not in ("compaction", "branch_summary", "user")
            and e.id not in keep_visible
            and len(kids) == 1
        )

    # Group consecutive collapsible entries of one lane into runs.
    nodes: list[TreeNode] = []
    placed: dict[str, TreeNode] = {}
    index: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    column: dict[int, int] = {}
    pending: list[Entry] = []

    def parent_key_of(e: Entry) -> str | None:
        parent = e.parent_id
        if parent is None or parent not in visible or parent == e.id:
            return None
        return index.get(parent)

    def place(entries: list[Entry], kind: str | None) -> None:
        first = entries[0]
        lane = lane_of[first.id]  # type: ignore[index]
        pkey = parent_key_of(first)
        if lane not in column:
            parent_node = placed.get(pkey) if pkey is not None else None
            column[lane] = parent_node.x + 1 if parent_node is not None else 0
        x = column[lane]
        column[lane] = x + 1
        ids = tuple(e.id for e in entries)  # type: ignore[misc]
        key = ids[0] if len(ids) == 1 else f"run:{ids[0]}"
        node = TreeNode(
            key=key,
            entry_ids=ids,
            x=x,
            y=lane,
            kind=kind or node_kind(first),
            tokens=sum(count(e) for e in entries),
            on_path=first.id in on_path,
            label=labels.get(first.id) if len(ids) == 1 else None,  # type: ignore[arg-type]
            parent=pkey,
        )
        nodes.append(node)
        placed[key] = node
        for i in ids:
            index[i] = key
        if pkey is not None:
            edges.append((pkey, key))

    def flush() -> None:
        if not pending:
            return
        if collapse is not None and len(pending) >= collapse:
            place(list(pending), "run")
        else:
            for e in pending:
                place([e], None)
        pending.clear()

    prev_lane: int | None = None
    for e in order:
        lane = lane_of[e.id]  # type: ignore[index]
        contiguous = pending and lane == prev_lane and e.parent_id == pending[-1].id
        if not contiguous:
            flush()
        if collapse is not None and collapsible(e):
            pending.append(e)
        else:
            flush()
            place([e], None)
        prev_lane = lane
    flush()

    links = []
    for e in order:
        if e.type == "compaction":
            kept = e.get("firstKeptEntryId")
            if isinstance(kept, str) and kept in index:
                links.append((index[e.id], index[kept]))  # type: ignore[index]

    width = max((n.x for n in nodes), default=-1) + 1
    return TreeLayout(
        nodes=tuple(nodes),
        edges=tuple(edges),
        links=tuple(links),
        index=MappingProxyType(index),
        width=width,
        lanes=next_lane,
    )

"""Properties of the cut and of `prepare_compaction` over generated session trees.

Sessions are generated with user turns, assistant tool loops and their results, bash
executions, metadata entries, extension messages (`custom_message`), branch summaries,
earlier compactions and branches, then prepared with both profiles and many keep budgets.
The cut itself is checked against a direct transcription of pi's `findCutPoint` loop
(spec §4.2), written here independently of the implementation's window tables.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musepi_lab.compaction._cut import CutPointResult, find_cut_point
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._result import CompactionResult
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._build import build_session_context
from musepi_lab.session._messages import entry_to_message
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.tokens._counter import TokenCounter

PROFILES = ("pi", "musepi")
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BEARING = frozenset({"message", "custom_message", "branch_summary"})
CUT_ROLES = {
    "pi": {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"},
    # oh-my-pi 18.2.3 findValidCutPoints: no `custom` role.
    "musepi": {
        "user",
        "assistant",
        "bashExecution",
        "branchSummary",
        "compactionSummary",
        "hookMessage",
    },
}


# -- generator ----------------------------------------------------------------------------
class Builder:
    """Appends records like a live session: each a child of the current leaf."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.parent: dict[str, str | None] = {}
        self.kind: dict[str, str] = {}
        self.role: dict[str, str | None] = {}
        self.leaf: str | None = None
        self.turn_ends: list[str] = []
        self.calls = 0

    def add(self, kind: str, **fields: Any) -> str:
        entry_id = f"{len(self.records):08x}"
        self.records.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": self.leaf,
                "timestamp": f"2026-01-01T00:{len(self.records) // 60:02d}:{len(self.records) % 60:02d}.000Z",
                **fields,
            }
        )
        self.parent[entry_id] = self.leaf
        self.kind[entry_id] = kind
        message = fields.get("message")
        self.role[entry_id] = message.get("role") if isinstance(message, dict) else None
        self.leaf = entry_id
        return entry_id

    def message(self, **message: Any) -> str:
        return self.add("message", message={"timestamp": 0, **message})

    def path(self) -> list[str]:
        out, node = [], self.leaf
        while node is not None:
            out.append(node)
            node = self.parent[node]
        return out[::-1]


def text(tokens: int) -> str:
    return "abcd" * tokens


def usage(context: int) -> dict[str, Any]:
    return {
        "input": context,
        "output": 50,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": context + 50,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


ACTIONS = st.sampled_from(
    [
        "turn",
        "turn",
        "turn",
        "bash",
        "meta",
        "custom_message",
        "branch_summary",
        "compaction",
        "branch",
    ]
)
SIZES = st.integers(min_value=0, max_value=250)


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    b = Builder()
    for action in draw(st.lists(ACTIONS, min_size=1, max_size=14)):
        if action == "turn":
            b.message(role="user", content=text(draw(SIZES)))
            for _ in range(draw(st.integers(0, 3))):
                calls = []
                for _ in range(draw(st.integers(1, 2))):
                    b.calls += 1
                    name = draw(st.sampled_from(["read", "edit", "write", "bash"]))
                    args = (
                        {"command": "ls"}
                        if name == "bash"
                        else {"path": f"src/f{draw(st.integers(0, 5))}.py"}
                    )
                    calls.append(
                        {
                            "type": "toolCall",
                            "id": f"call{b.calls}",
                            "name": name,
                            "arguments": args,
                        }
                    )
                b.message(
                    role="assistant",
                    content=[{"type": "text", "text": text(draw(SIZES))}, *calls],
                    stopReason="toolUse",
                )
                for c in calls:
                    b.message(
                        role="toolResult",
                        toolCallId=c["id"],
                        toolName=c["name"],
                        content=[{"type": "text", "text": text(draw(SIZES))}],
                        isError=False,
                    )
            final: dict[str, Any] = {
                "role": "assistant",
                "content": [{"type": "text", "text": text(draw(SIZES))}],
                "stopReason": "stop",
            }
            if draw(st.booleans()):
                final["usage"] = usage(draw(st.integers(0, 6000)))
            b.message(**final)
            b.turn_ends.append(b.leaf)  # type: ignore[arg-type]
        elif action == "bash":
            b.message(
                role="bashExecution",
                command="make",
                output=text(draw(SIZES)),
                exitCode=0,
                cancelled=False,
                truncated=False,
            )
        elif action == "meta":
            kind = draw(
                st.sampled_from(
                    ["thinking_level_change", "model_change", "label", "custom", "session_info"]
                )
            )
            fields = {
                "thinking_level_change": {"thinkingLevel": "high"},
                "model_change": {"provider": "p", "modelId": "m"},
                "label": {"targetId": b.leaf or "x", "label": "mark"},
                "custom": {"customType": "state", "data": {"k": 1}},
                "session_info": {"name": "n"},
            }[kind]
            b.add(kind, **fields)
        elif action == "custom_message":
            b.add("custom_message", customType="note", content=text(draw(SIZES)), display=True)
        elif action == "branch_summary":
            b.add("branch_summary", fromId=b.leaf or "root", summary=text(draw(SIZES)))
        elif action == "compaction":
            path = b.path()
            last = max((i for i, e in enumerate(path) if b.kind[e] == "compaction"), default=-1)
            candidates = [e for e in path[last + 1 :] if b.role[e] in ("user", "assistant")]
            if not candidates or b.kind.get(b.leaf or "") == "compaction":
                continue
            extra: dict[str, Any] = {}
            if draw(st.booleans()):
                extra["details"] = {"readFiles": ["seed.py"], "modifiedFiles": ["seed2.py"]}
            if draw(st.booleans()):
                extra["fromHook"] = True
            b.add(
                "compaction",
                summary=text(draw(st.integers(0, 80))),
                firstKeptEntryId=draw(st.sampled_from(candidates)),
                tokensBefore=1000,
                **extra,
            )
        elif action == "branch" and b.turn_ends:
            b.leaf = draw(st.sampled_from([None, *b.turn_ends]))
    return Session(
        {"type": "session", "version": 3, "id": "gen"}, [Entry.from_record(r) for r in b.records]
    )


# -- oracle ---------------------------------------------------------------------------------
def reference_cut(entries, start, end, keep, counter, profile) -> CutPointResult:
    """pi's findCutPoint as written in spec §4.2; MusePi's as oh-my-pi 18.2.3 writes it."""
    if profile == "musepi":
        return musepi_reference_cut(entries, start, end, keep, counter)

    def is_cut_point(e: Entry) -> bool:
        if e.type == "message":
            return e.role in CUT_ROLES[profile]
        return e.type in ("branch_summary", "custom_message")

    cps = [i for i in range(start, end) if is_cut_point(entries[i])]
    if not cps:
        return CutPointResult(start, -1, False)
    acc, cut = 0, cps[0]
    for i in range(end - 1, start - 1, -1):
        e = entries[i]
        if e.type != "message" and not (profile == "musepi" and e.type in BEARING):
            continue
        acc += counter.count_message(entry_to_message(e))
        if acc >= keep:
            for c in cps:
                if c >= i:
                    cut = c
                    break
            break
    while cut > start and entries[cut - 1].type not in ("message", "compaction"):
        cut -= 1
    e = entries[cut]
    if e.type == "message" and e.role == "user":
        return CutPointResult(cut, -1, False)
    turn = -1
    for i in range(cut, start - 1, -1):
        x = entries[i]
        if x.type in ("branch_summary", "custom_message") or (
            x.type == "message" and x.role in ("user", "bashExecution")
        ):
            turn = i
            break
    return CutPointResult(cut, turn, turn != -1)


def _turn_start(e: Entry) -> bool:
    return e.type in ("branch_summary", "custom_message") or (
        e.type == "message" and e.role in ("user", "bashExecution")
    )


def musepi_reference_cut(entries, start, end, keep, counter) -> CutPointResult:
    """oh-my-pi 18.2.3 `findCutPoint` (pi-agent-core compaction.ts), line for line."""
    cps = [
        i
        for i in range(start, end)
        if (entries[i].type == "message" and entries[i].role in CUT_ROLES["musepi"])
        or entries[i].type in ("branch_summary", "custom_message")
    ]
    if not cps:
        return CutPointResult(start, -1, False)
    acc, k = 0, len(cps) - 1
    cut = cps[k]
    for i in range(end - 1, start - 1, -1):
        e = entries[i]
        if e.type in BEARING:
            acc += counter.count_message(entry_to_message(e))
        if k < 0 or i != cps[k]:
            continue
        if acc > keep:
            break
        cut = i
        k -= 1
    is_turn_start = _turn_start(entries[cut])
    turn = -1
    if not is_turn_start:
        for i in range(cut, start - 1, -1):
            if _turn_start(entries[i]):
                turn = i
                break
    while cut > start:
        prev = entries[cut - 1]
        if prev.type in ("compaction", "reset_boundary") or prev.type in BEARING:
            break
        cut -= 1
    return CutPointResult(cut, turn, not is_turn_start and turn != -1)


# -- properties -----------------------------------------------------------------------------
@FAST
@given(session=sessions(), data=st.data())
def test_cut_matches_the_reference_loop(session, data):
    path = session.path()
    start = data.draw(st.integers(0, len(path)))
    for profile in PROFILES:
        counter = TokenCounter(profile)
        for keep in data.draw(st.lists(st.integers(0, 3000), min_size=1, max_size=6)):
            got = find_cut_point(path, start, len(path), keep, counter=counter, profile=profile)
            assert got == reference_cut(path, start, len(path), keep, counter, profile)


def bearing_ids(entries) -> list[str]:
    return [e.id for e in entries if e.type in BEARING]


@FAST
@given(session=sessions(), keeps=st.lists(st.integers(0, 2500), min_size=1, max_size=5))
def test_preparation_invariants(session, keeps):
    path = session.path()
    for profile in PROFILES:
        counter = TokenCounter(profile)
        for keep in keeps:
            s = CompactionSettings.for_profile(profile, keep_recent_tokens=keep)
            prep = prepare_compaction(session, s, counter)
            if prep is None:
                continue
            assert prep.path == path
            cut = path[prep.cut_index]
            # The cut is never at a tool result.
            assert cut.role != "toolResult"
            assert cut.id == prep.first_kept_entry_id
            # Kept entries: a contiguous suffix of the path after the boundary.
            assert prep.cut_index >= prep.boundary_start
            assert list(prep.kept_entry_ids) == bearing_ids(path[prep.cut_index :])
            # Every message of the region lands in exactly one part, in order.
            region = bearing_ids(path[prep.boundary_start :])
            parts = prep.summarize_entry_ids + prep.turn_prefix_entry_ids + prep.kept_entry_ids
            assert list(parts) == region
            if profile == "pi":
                assert prep.boundary_start == prep.previous_compaction_index + 1
            else:
                assert prep.messages_to_summarize or prep.turn_prefix_messages
            # Every tool result kept has its call kept.
            kept_calls = {
                b["id"]
                for m in prep.recent_messages
                if m.get("role") == "assistant"
                for b in m.get("content", [])
                if b.get("type") == "toolCall"
            }
            for m in prep.recent_messages:
                if m.get("role") == "toolResult":
                    assert m["toolCallId"] in kept_calls
            if prep.is_split_turn:
                assert prep.turn_start_index <= prep.cut_index
            else:
                assert prep.turn_prefix_messages == ()


@FAST
@given(session=sessions(), keep=st.integers(0, 2500))
def test_same_input_same_output(session, keep):
    for profile in PROFILES:
        s = CompactionSettings.for_profile(profile, keep_recent_tokens=keep)
        shared = TokenCounter(profile)
        first = prepare_compaction(session, s, shared)
        assert first == prepare_compaction(session, s, TokenCounter(profile))
        assert first == prepare_compaction(session, s, shared)  # from the cached plan


def context_tokens(session: Session, profile: str, counter: TokenCounter) -> int:
    messages = build_session_context(session, profile=profile).messages
    return sum(counter.count_message(m) for m in messages)


@FAST
@given(session=sessions(), keep=st.integers(0, 2500))
def test_applying_a_short_summary_never_grows_the_context(session, keep):
    summary = "Short summary."
    for profile in PROFILES:
        counter = TokenCounter(profile)
        prep = prepare_compaction(
            session, CompactionSettings.for_profile(profile, keep_recent_tokens=keep), counter
        )
        if prep is None:
            continue
        replaced = sum(
            counter.count_message(m) for m in prep.messages_to_summarize + prep.turn_prefix_messages
        )
        if prep.previous_summary is not None:
            replaced += counter.count_message(
                {"role": "compactionSummary", "summary": prep.previous_summary}
            )
        new = counter.count_message({"role": "compactionSummary", "summary": summary})
        after = CompactionResult.from_preparation(prep, summary).apply(session, entry_id="c0ffee00")
        assert len(after.entries) == len(session.entries) + 1
        if new <= replaced:
            assert context_tokens(after, profile, counter) <= context_tokens(
                session, profile, counter
            )
        # The rebuilt context starts with the new summary, then exactly the kept messages
        # (a branch summary with an empty text is kept but never shown, spec §2.1 step 4).
        rebuilt = build_session_context(after, profile=profile)
        assert rebuilt.messages[0]["summary"] == summary
        visible = [
            entry_id
            for entry_id, message in zip(prep.kept_entry_ids, prep.recent_messages, strict=True)
            if not (message.get("role") == "branchSummary" and not message.get("summary"))
        ]
        assert list(rebuilt.entry_ids[1:]) == visible

"""The fit/judge split of the corpus: which sessions the calibration is fitted on, which it
is judged on, fixed here with each file's digest so a changed corpus file is detected.

The rule (`split_sides`), by session, never by request: the corpus sessions that record
usage (pi fixtures and Claude Code on Anthropic, Codex on OpenAI) are grouped by harness
and version (major.minor, the granularity the system prompt is fitted at); within a group,
in order of their start time, the sessions alternate train, judge, train, ... (so the fit
comes first in time, and a group of one is only fitted on: its judged twin would have no
fitted system prompt of its own). A file that holds the same session as another (the same
session id: oh-my-pi's copies of the pi fixtures) goes with it and is judged once. Every
format and provider is on both sides.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..formats._registry import read_session
from ..session._session import Session
from ._cache import harness_version

TRAIN = "train"
JUDGE = "judge"


@dataclass(frozen=True, slots=True)
class SplitEntry:
    """One corpus session of the split.

    Attributes:
        path: The session file, relative to the corpus root (a Claude Code session's
            subagent files, in the folder of its name, are read with it).
        sha256: `session_digest` of the file (and its subagent files).
        session_id: The session's id (copies of one session share it).
        side: `train` or `judge`.
        why: Its group and place in it, or the session it is a copy of.
    """

    path: str
    sha256: str
    session_id: str
    side: str
    why: str


CALIBRATION_SPLIT: tuple[SplitEntry, ...] = (
    SplitEntry(
        "pi/large-session.jsonl",
        "cf73261911d2357108adc2d599751e0f19480e0af5a56e20c1e7a7e72aff41fe",
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        TRAIN,
        "pi (anthropic): 1st of 3 by start time",
    ),
    SplitEntry(
        "pi/oh-my-pi/large-session.jsonl",
        "1ea38ae976c1d1c3756338750cd36ec4c5f58bd82a57d57802144f6bbc177ef2",
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        TRAIN,
        "copy of pi/large-session.jsonl",
    ),
    SplitEntry(
        "pi/before-compaction.jsonl",
        "56f9cf221541c09091cf082ad2ed0c4b4931ef5e8857a42dc623afae35a2e59c",
        "ffae836b-9420-4060-ac13-7745215f90ff",
        JUDGE,
        "pi (anthropic): 2nd of 3",
    ),
    SplitEntry(
        "pi/oh-my-pi/before-compaction.jsonl",
        "1350e4bb514a511b3f64c21cf294ef481b050653410293cf535b2b4500ca7fa5",
        "ffae836b-9420-4060-ac13-7745215f90ff",
        JUDGE,
        "copy of pi/before-compaction.jsonl",
    ),
    SplitEntry(
        "pi/earendil-works-pi/prompt-cache-replay-session.jsonl",
        "605942548974040f8b96b3c0ec56322558e1d37b215a39abbdefb87ea278b6d3",
        "replay-session-1",
        TRAIN,
        "pi (anthropic): 3rd of 3",
    ),
    SplitEntry(
        "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "f668bb6537eeb5ccd2d291454a6fa711d3d0136032f6914d4cec243a8842f5dd",
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        TRAIN,
        "claude-code 1.0 (anthropic): 1st of 2",
    ),
    SplitEntry(
        "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "8cce2fac5f598346c277e071e1a410a4f12b96dfde1581c9722d32b54dd613e6",
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b",
        JUDGE,
        "claude-code 1.0 (anthropic): 2nd of 2",
    ),
    SplitEntry(
        "claude-code/spotter_short.jsonl",
        "237dc80e7f705386591cee61b21fa209a59a11c6366d20fda227ec878848c74b",
        "55604662-cf2a-4331-851a-ec234028f8ca",
        TRAIN,
        "claude-code 2.1 (anthropic): 1st of 6",
    ),
    SplitEntry(
        "claude-code/spotter_subagent.jsonl",
        "7aa8136f89c556fc06c2d2cc4cc2b303146d26a8fc15e23dd43b184d96fcaaed",
        "491e126e-1e71-469c-ade2-fcc8af567c74",
        JUDGE,
        "claude-code 2.1 (anthropic): 2nd of 6",
    ),
    SplitEntry(
        "claude-code/spotter_tool_heavy.jsonl",
        "036f9a476f513bb56bad7b9e8d15826aacc8515a57d531487799a51deb41d8cb",
        "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
        TRAIN,
        "claude-code 2.1 (anthropic): 3rd of 6",
    ),
    SplitEntry(
        "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "7f1481fb5b1cb6680be468c3fc60aacd02e6894d88db13decefa4a8311867d5a",
        "258c7280-ae70-4798-800f-63464d01a85d",
        JUDGE,
        "claude-code 2.1 (anthropic): 4th of 6",
    ),
    SplitEntry(
        "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "3152afeac163b8c808b060fd56b65b9fa607dd00dd3ce969c302c5dd9bb30084",
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
        TRAIN,
        "claude-code 2.1 (anthropic): 5th of 6",
    ),
    SplitEntry(
        "claude-code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        "64861256abd52ae4f11d9b77224f0b4d6949dd1976353e5d5fcf9485ea109b41",
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
        JUDGE,
        "claude-code 2.1 (anthropic): 6th of 6",
    ),
    SplitEntry(
        "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        "5ae1f0a6f6858d19910deea0a12e297a603ee17cf8ba025a69ccf22b7ac8999a",
        "019a93b9-f380-7600-98ff-940e6b99603c",
        TRAIN,
        "codex 0.58 (openai): 1st of 1",
    ),
    SplitEntry(
        "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
        "2a78d2c2bfa815123f8be9815c58abe4b718b0b56ab60bc1265a8f694ab76662",
        "019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
        TRAIN,
        "codex 0.104 (openai): 1st of 2",
    ),
    SplitEntry(
        "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        "ab30a4bb68e5a30c26c1ff5e298da523f5c77b067ea6af261d51a7f0d3628855",
        "019c8a59-e9dd-71f0-9ae3-4079fe9726a9",
        JUDGE,
        "codex 0.104 (openai): 2nd of 2",
    ),
)
"""The split, fixed (`split_sides` of the corpus as it was when the fit was made)."""


def session_digest(file: str | os.PathLike[str]) -> str:
    """SHA-256 of a session file, followed (when present) by each file of the folder of its
    name (Claude Code's subagents, read with it), by relative path in sorted order."""
    path = Path(file)
    digest = hashlib.sha256(path.read_bytes())
    folder = path.with_suffix("")
    for extra in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if extra.is_file():
            digest.update(extra.relative_to(folder).as_posix().encode())
            digest.update(extra.read_bytes())
    return digest.hexdigest()


def split_sides(sessions: Iterable[tuple[str, Session]]) -> dict[str, str]:
    """The rule of the module notes: `{path: side}` for `(path, session)` pairs (paths
    relative to the corpus; a later path holding an earlier one's session id goes with
    it). Pure: only the sessions' headers, ids and first timestamps are read."""
    groups: dict[tuple[str, tuple[int, ...]], list[tuple[str, str, str]]] = {}
    first_path: dict[str, str] = {}
    copies: dict[str, str] = {}
    for path, session in sorted(sessions, key=lambda p: p[0]):
        if session.id in first_path:
            copies[path] = first_path[session.id]
            continue
        first_path[session.id] = path
        harness, version = harness_version(session.header)
        start = str(session.header.get("timestamp") or "")
        groups.setdefault((harness, version[:2]), []).append((start, path, session.id))
    sides: dict[str, str] = {}
    for members in groups.values():
        for i, (_, path, _id) in enumerate(sorted(members)):
            sides[path] = TRAIN if i % 2 == 0 else JUDGE
    for path, original in copies.items():
        sides[path] = sides[original]
    return sides


def split_paths(side: str, split: Sequence[SplitEntry] = CALIBRATION_SPLIT) -> list[str]:
    """The corpus-relative paths of one side (`train` or `judge`), copies left out."""
    return [e.path for e in split if e.side == side and not e.why.startswith("copy of")]


def read_split(
    root: str | os.PathLike[str], side: str, split: Sequence[SplitEntry] = CALIBRATION_SPLIT
) -> list[tuple[str, Session]]:
    """`(path, session)` of one side of the split, read from the corpus at `root`.

    Raises:
        ValueError: A file's digest differs from the split's (the corpus changed: the
            fit and its judgement are no longer of the sessions listed).
    """
    base = Path(root)
    by_path = {e.path: e for e in split}
    out = []
    for path in split_paths(side, split):
        file = base / path
        digest = session_digest(file)
        if digest != by_path[path].sha256:
            raise ValueError(
                f"{file}: sha256 {digest} is not the split's {by_path[path].sha256}; the "
                "corpus changed since the calibration was fitted (refit and update the split)"
            )
        out.append((path, read_session(file)))
    return out

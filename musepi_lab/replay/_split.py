"""The corpus the calibration is fitted and judged on, by source: which sessions, with
each file's digest (so a changed corpus file is detected) and its source (the upstream
repository, or the user a repository copies, from each folder's `PROVENANCE.md`:
`_provenance.corpus_sources`).

The judgement is by source, never by request or session alone (`judge_sources`): each
source's sessions are judged under a fit on every other source's, so a judged figure says
what the fit does for a folder it has never seen (a user's own), not for a sibling session
of the same user and day. A file holding a session another file already holds (the same
session id: oh-my-pi's copies of the pi fixtures) goes with that file's source and is judged
once. The shipped defaults (`DEFAULT_CALIBRATION`) are the fit on every source.

The corpus folders of harnesses that record per-request prompt-cache usage are in it
(`CORPUS_FOLDERS`): pi (Anthropic and OpenAI), Claude Code (with its subagent files; a
subagent file whose parent is absent is a session of its own), Codex and Gemini CLI; every
session file there with at least one recorded request.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..formats._registry import iter_session_files, read_session
from ..session._session import Session
from ._coverage import recorded_requests

CORPUS_FOLDERS: tuple[str, ...] = ("pi", "claude-code", "codex", "gemini-cli")
"""The corpus folders whose sessions the calibration uses (module notes)."""


@dataclass(frozen=True, slots=True)
class SplitEntry:
    """One corpus session of the calibration.

    Attributes:
        path: The session file, relative to the corpus root (a Claude Code session's
            subagent files, in the folder of its name, are read with it).
        sha256: `session_digest` of the file (and its subagent files).
        session_id: The session's id (copies of one session share it).
        source: Its source (module notes).
        why: "" or the file it is a copy of (`copy of <path>`).
    """

    path: str
    sha256: str
    session_id: str
    source: str
    why: str = ""

    @property
    def copy(self) -> bool:
        """Whether the file holds a session an earlier entry already holds."""
        return self.why.startswith("copy of")


CALIBRATION_SPLIT: tuple[SplitEntry, ...] = (
    SplitEntry(
        "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "f668bb6537eeb5ccd2d291454a6fa711d3d0136032f6914d4cec243a8842f5dd",
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "d-kimuson/claude-code-viewer",
    ),
    SplitEntry(
        "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "7f1481fb5b1cb6680be468c3fc60aacd02e6894d88db13decefa4a8311867d5a",
        "258c7280-ae70-4798-800f-63464d01a85d",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/6adcf0da-e8ac-4760-8026-66fb75b5ee45.jsonl",
        "3d8082c090495f6d20c2cc1f5406072ed53c30c6cc9ce4bfac448897e922c210",
        "6adcf0da-e8ac-4760-8026-66fb75b5ee45",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl",
        "0d93164ba1658bb548fa7a4727f7c9e8f549ce5429a9b4ca1b47f0fc71d4850f",
        "6c2214d7-b87e-4432-8e41-22ba294ea584/agent-afc096d",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "3152afeac163b8c808b060fd56b65b9fa607dd00dd3ce969c302c5dd9bb30084",
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/agtrace_claude_session.jsonl",
        "dd7bb3c2ba030c0073c1cbb8b53f731da6d66cbefeadd8d75a90d6bc202a4e66",
        "7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9",
        "lanegrid/agtrace",
    ),
    SplitEntry(
        "claude-code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        "64861256abd52ae4f11d9b77224f0b4d6949dd1976353e5d5fcf9485ea109b41",
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "8cce2fac5f598346c277e071e1a410a4f12b96dfde1581c9722d32b54dd613e6",
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b",
        "d-kimuson/claude-code-viewer",
    ),
    SplitEntry(
        "claude-code/spotter_short.jsonl",
        "237dc80e7f705386591cee61b21fa209a59a11c6366d20fda227ec878848c74b",
        "55604662-cf2a-4331-851a-ec234028f8ca",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/spotter_subagent.jsonl",
        "7aa8136f89c556fc06c2d2cc4cc2b303146d26a8fc15e23dd43b184d96fcaaed",
        "491e126e-1e71-469c-ade2-fcc8af567c74",
        "marot/spotter",
    ),
    SplitEntry(
        "claude-code/spotter_tool_heavy.jsonl",
        "036f9a476f513bb56bad7b9e8d15826aacc8515a57d531487799a51deb41d8cb",
        "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
        "marot/spotter",
    ),
    SplitEntry(
        "codex/agtrace_codex_session.jsonl",
        "9aa7428277f05b51fc20862bf7c8bf926903b3380f24603ee6d9b425eb22b56b",
        "019b04ae-b1c6-7c72-a134-a4c2de66058c",
        "lanegrid/agtrace",
    ),
    SplitEntry(
        "codex/rollout-2025-09-26T17-01-04-019985ca-7ef7-7580-a921-c20ac619f40b.jsonl",
        "3ce9e810eedf667f8765713213b8572d067c69f0a4b1b5f95d8d9540c6093635",
        "019985ca-7ef7-7580-a921-c20ac619f40b",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-26T19-38-50-0199865a-ee71-7ae3-b232-87583b038e9f.jsonl",
        "0f29c8ca410a6fb03e0e51ac894ce7af899e6bd001b29fde2d67c4f037495171",
        "0199865a-ee71-7ae3-b232-87583b038e9f",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-26T20-11-25-01998678-c228-73e1-86d1-ff72b4845b64.jsonl",
        "38b2749e1ecf4551e143c0ce98afdfa4658c6fc7bbc06bbc0a88a86b24292aad",
        "01998678-c228-73e1-86d1-ff72b4845b64",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T13-03-00-01999463-9d68-7d43-bf46-2d9a23eb7251.jsonl",
        "0c8160191ba3c2398ff216c2f79a77ec2aa6e1dd5f450e13ceb90b38f9942a46",
        "01999463-9d68-7d43-bf46-2d9a23eb7251",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T13-03-34-01999464-2158-7d41-8186-eb12afa3a28b.jsonl",
        "3be46be05f3fe8ce9e582cf8ff3df11abcb4bd259499701fb246a536c37f32c4",
        "01999464-2158-7d41-8186-eb12afa3a28b",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T13-07-08-01999467-65bf-7281-8ab6-73bb53989041.jsonl",
        "6d1b0d881942e71971916d46b1b21dced1cfcbde7a85b0e2affb5fe7e617af6e",
        "01999467-65bf-7281-8ab6-73bb53989041",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T13-07-55-01999468-1fc0-7cd2-8a47-8a939333acf7.jsonl",
        "7ec16d23bc6d8a0aefad5976ab3c03d2ce03920c61caaa604b70880b8447b1fb",
        "01999468-1fc0-7cd2-8a47-8a939333acf7",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T13-09-19-01999469-65fd-7fa2-ab93-d24bb4c714cb.jsonl",
        "fe8f8dadd4d02d92a1c595e7f2dd5af67a3d5028e44d7e0328030ae39655a981",
        "01999469-65fd-7fa2-ab93-d24bb4c714cb",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-09-29T17-33-37-0199955b-5deb-72e2-9988-4b1b799e1206.jsonl",
        "f8b821d29c9468e06f2efabd7107ace0fb165dbd81b8077d882eebc371a92548",
        "0199955b-5deb-72e2-9988-4b1b799e1206",
        "Python-AI-Solutions/agentic-neurodata-conversion",
    ),
    SplitEntry(
        "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        "5ae1f0a6f6858d19910deea0a12e297a603ee17cf8ba025a69ccf22b7ac8999a",
        "019a93b9-f380-7600-98ff-940e6b99603c",
        "AcidicSoil/codex-session-view",
    ),
    SplitEntry(
        "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
        "2a78d2c2bfa815123f8be9815c58abe4b718b0b56ab60bc1265a8f694ab76662",
        "019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
        "madshn/localpush",
    ),
    SplitEntry(
        "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        "ab30a4bb68e5a30c26c1ff5e298da523f5c77b067ea6af261d51a7f0d3628855",
        "019c8a59-e9dd-71f0-9ae3-4079fe9726a9",
        "madshn/localpush",
    ),
    SplitEntry(
        "gemini-cli/agtrace_gemini_session.json",
        "bb89c81f01bdb1f4d831a9fe09e563217818f9b4893b9fe3b2db7886b67368f0",
        "f0a689a6-b0ac-407f-afcc-4fafa9e14e8a",
        "lanegrid/agtrace",
    ),
    SplitEntry(
        "pi/before-compaction.jsonl",
        "56f9cf221541c09091cf082ad2ed0c4b4931ef5e8857a42dc623afae35a2e59c",
        "ffae836b-9420-4060-ac13-7745215f90ff",
        "badlogic/pi-mono",
    ),
    SplitEntry(
        "pi/earendil-works-pi/prompt-cache-replay-session.jsonl",
        "605942548974040f8b96b3c0ec56322558e1d37b215a39abbdefb87ea278b6d3",
        "replay-session-1",
        "earendil-works/pi",
    ),
    SplitEntry(
        "pi/elithrar-dotfiles/--Users-matt-repos-dotfiles--/2026-06-30T01-19-24-737Z_019f161c-0c41-7243-b010-956d89242e31.jsonl",
        "e1b6a4fbb19956b44e53592507f19d7bb2decb9599a66a87e83acea602a1e2f8",
        "019f161c-0c41-7243-b010-956d89242e31",
        "elithrar/dotfiles",
    ),
    SplitEntry(
        "pi/elithrar-dotfiles/--Users-matt-repos-dotfiles--/2026-06-30T01-21-37-622Z_019f161e-1356-7337-8e7b-4d1c280cb517.jsonl",
        "3b2186d7586b79dea7342e745890360ce45b34154e28a8692f5812b6fc921bd7",
        "019f161e-1356-7337-8e7b-4d1c280cb517",
        "elithrar/dotfiles",
    ),
    SplitEntry(
        "pi/elithrar-dotfiles/--Users-matt-repos-minipro-tui--/2026-06-30T01-14-04-480Z_019f1617-2940-7693-92f6-91fbcdef4a5e.jsonl",
        "2a9ad1d841d5afaadfe95e7378e7a0b15e4503b708f574661bead78a0935b130",
        "019f1617-2940-7693-92f6-91fbcdef4a5e",
        "elithrar/dotfiles",
    ),
    SplitEntry(
        "pi/large-session.jsonl",
        "cf73261911d2357108adc2d599751e0f19480e0af5a56e20c1e7a7e72aff41fe",
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        "badlogic/pi-mono",
    ),
    SplitEntry(
        "pi/oh-my-pi/before-compaction.jsonl",
        "1350e4bb514a511b3f64c21cf294ef481b050653410293cf535b2b4500ca7fa5",
        "ffae836b-9420-4060-ac13-7745215f90ff",
        "badlogic/pi-mono",
        "copy of pi/before-compaction.jsonl",
    ),
    SplitEntry(
        "pi/oh-my-pi/large-session.jsonl",
        "1ea38ae976c1d1c3756338750cd36ec4c5f58bd82a57d57802144f6bbc177ef2",
        "d703a1a9-1b7b-4fb1-b512-c9738b1fe617",
        "badlogic/pi-mono",
        "copy of pi/large-session.jsonl",
    ),
)
"""The corpus, fixed (`corpus_split` of the corpus as it was when the fit was made)."""


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


def corpus_files(root: str | os.PathLike[str]) -> list[str]:
    """Session files of `CORPUS_FOLDERS` (corpus-relative, sorted), with subagent files
    whose parent session file is absent."""
    base = Path(root)
    out: set[str] = set()
    for folder in CORPUS_FOLDERS:
        if not (base / folder).is_dir():
            continue
        for file in iter_session_files(base / folder):
            out.add(file.relative_to(base).as_posix())
        for sub in (base / folder).rglob("subagents/agent-*.jsonl"):
            parent = sub.parent.parent.with_suffix(".jsonl")
            if not parent.is_file():
                out.add(sub.relative_to(base).as_posix())
    return sorted(out)


def split_sources(
    sessions: Iterable[tuple[str, Session]], sources: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """`(path, source, why)` of `(path, session)` pairs (module notes): the source from
    `sources` (`corpus_sources`), a later path holding an earlier one's session id going
    with it. Pure: only the sessions' ids are read.

    Raises:
        ValueError: A path no `PROVENANCE.md` names.
    """
    first: dict[str, str] = {}
    out = []
    for path, session in sorted(sessions, key=lambda p: p[0]):
        if session.id in first:
            original = first[session.id]
            out.append((path, sources[original], f"copy of {original}"))
            continue
        if path not in sources:
            raise ValueError(f"{path}: no PROVENANCE.md of the corpus names this file")
        first[session.id] = path
        out.append((path, sources[path], ""))
    return out


def corpus_split(root: str | os.PathLike[str], sources: Mapping[str, str]) -> list[SplitEntry]:
    """The calibration's entries of the corpus at `root` as it is now: every file of
    `corpus_files` with a recorded request, its digest, session id and source."""
    base = Path(root)
    pairs = []
    for path in corpus_files(base):
        session = read_session(base / path)
        if recorded_requests(session):
            pairs.append((path, session))
    ids = {path: session.id for path, session in pairs}
    return [
        SplitEntry(path, session_digest(base / path), ids[path], source, why)
        for path, source, why in split_sources(pairs, sources)
    ]


def read_split(
    root: str | os.PathLike[str], split: Sequence[SplitEntry] = CALIBRATION_SPLIT
) -> list[tuple[str, str, Session]]:
    """`(path, source, session)` of the calibration's sessions, copies left out, read from
    the corpus at `root`.

    Raises:
        ValueError: A file's digest differs from the split's (the corpus changed: the
            fit and its judgement are no longer of the sessions listed).
    """
    base = Path(root)
    out = []
    for entry in split:
        if entry.copy:
            continue
        file = base / entry.path
        digest = session_digest(file)
        if digest != entry.sha256:
            raise ValueError(
                f"{file}: sha256 {digest} is not the split's {entry.sha256}; the "
                "corpus changed since the calibration was fitted (refit and update the split)"
            )
        out.append((entry.path, entry.source, read_session(file)))
    return out


def split_source(entries: Sequence[SplitEntry]) -> str:
    """The Python text of `CALIBRATION_SPLIT` for entries (what `perf/calibration_judge.py
    --write-split` puts in this module, in ruff's format)."""

    def text(value: str) -> str:
        return json.dumps(value)

    rows = "".join(
        "    SplitEntry(\n"
        + "".join(
            f"        {text(v)},\n"
            for v in (e.path, e.sha256, e.session_id, e.source, *((e.why,) if e.why else ()))
        )
        + "    ),\n"
        for e in entries
    )
    return f"CALIBRATION_SPLIT: tuple[SplitEntry, ...] = (\n{rows})\n"

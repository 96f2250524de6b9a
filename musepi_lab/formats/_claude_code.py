"""Claude Code session transcripts (`~/.claude/projects/<cwd>/<sessionId>.jsonl`) as Sessions.

Claude Code writes one JSON record per line: `user` and `assistant` messages in the
Anthropic Messages shape, `system` lines (compaction boundaries, hook summaries, turn
durations), `progress` lines (hooks, subagent progress), and records without a `uuid`
(`file-history-snapshot`, `queue-operation`, `summary`). Every record with a `uuid` names its
parent in `parentUuid`, so a file is a tree, and the importer keeps that tree, with these
choices (each one forced by what the files hold):

- **One assistant reply, one entry.** Claude Code writes one line per content block
  (thinking, text, tool_use), all with the same `message.id`. They are merged, blocks in
  order, usage from the reply's last line. Its lines carry `stop_reason: null` almost always
  (they are written mid-stream), so the last non-null one wins and a reply without one stops
  with `toolUse` when it holds tool calls, else `stop`.
- **Tool results chain after their reply.** With parallel tool calls Claude Code interleaves
  block lines and results (`tool_use A`, `result A`, `tool_use B` whose parent is `result A`,
  `result B`), and sometimes hangs a result off an earlier block line, which leaves it on a
  dead branch. Literally re-parenting children of merged lines to the merged entry would make
  the results siblings and drop all but one from the path. So every reply owns a *region*:
  the merged entry, the tool results attached under it, and the non-message lines hanging off
  them. A line whose parent lies in a region attaches to the region's *tail* (its latest
  tool result, or the reply itself), and a tool result becomes the new tail. The path then
  reads reply, result A, result B, next message, as pi stores it.
- **Compaction.** A `system` line with `subtype: "compact_boundary"` (`parentUuid: null`,
  `logicalParentUuid` = the last line before it, `compactMetadata.preTokens`) and the
  `isCompactSummary` user line under it become one `compaction` entry whose parent is the
  logical parent, so the session path runs through the compaction. `summary` is the text of
  the summary line verbatim (what the model saw afterwards); `tokensBefore` is `preTokens`.
  Without a preserved segment Claude Code keeps nothing from before the boundary, so
  `firstKeptEntryId` names the first message after the compaction: pi's
  buildSessionContext looks for it before the compaction, does not find it, and emits
  nothing from there (spec §2.1 step 5); the newest omp contract reads an id after the
  compaction the same way (spec §4.5). A compaction with no message after it names itself.
  A 2.1 preserved segment, and a logical parent that names no line (`bridged`), are read
  as `_claude_code_links` says.
- **Progress lines** (hook runs, subagent steps: most lines of a long file) are metadata,
  not entries: each is kept verbatim under `progress` (`{"line": n, "record": {...}}`) on
  the entry it hangs from, and lines hanging from it hang from that entry. As entries they
  were one-entry side branches, about 1,300 of them in a linear session.
- **Everything else with a `uuid`** (`system` lines other than boundaries, unknown types)
  is a `custom` entry in the tree (`customType: "claude-code:<type>"`, `data`: the raw
  record): it never reaches the LLM context. Records **without a `uuid`** cannot sit in a
  tree; they are kept in the header under `sourceRecords` (`{"line": n, "record": {...}}`,
  with progress lines that hang from no entry), and the last `summary` record's text
  becomes the header `title`.
- **Parents written later.** A parent (`parentUuid`, or a boundary's `logicalParentUuid`)
  written after its child is linked once the file is read, unless that would make a
  cycle; a parent that names no line is a `dangling-parent` problem naming the field (a
  boundary's is bridged instead, see above).
- **Lines without a uuid** that record usage, and boundaries without one, are kept with a
  fresh id and a `missing-id` problem; a steering `queue-operation` becomes a
  `custom_message` entry (`_claude_code_links`). Each assistant entry keeps the reply's
  `message.id` and `requestId` as `sourceMessageId` and `sourceRequestId`.
- **Sidechains.** Inline sidechain lines (`isSidechain: true`, Claude Code 1.x) keep their
  own roots, so they form separate branches, flagged `isSidechain: true` in their records;
  each root names the Task call that started it in `parentToolCallId` when it can be found.
  The last message of the main thread is moved to the end of `entries` when sidechain or
  non-message lines follow it, because `Session.leaf_id` is the last entry in file order.
  Subagent transcripts in `<sessionId>/subagents/agent-*.jsonl` (and 2.1's Workflow agents
  in `subagents/workflows/<runId>/`) are read with this same function and returned in
  `Session.linked` (`_claude_code_header`); `agent-acompact-*` files (the compaction runs)
  are marked `subagentKind: "compaction"`, `agent-aside_question-*` `"side-question"`,
  Workflow agents `"workflow"`, the others `"subagent"`. In a subagent file
  every line is a sidechain, and the lines whose `parentUuid` lives in the parent session
  are chained after the previous entry (keeping the foreign id as `sourceParentId`); its
  header id is `<sessionId>/agent-<agentId>` (`<sessionId>/<file stem>` without an
  `agentId`), read with its parent or alone. In a main file such a parent is a
  `dangling-parent` problem and the entry becomes a root, as in pi.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog
from ..session._session import Session
from ._claude_code_header import linked_header, session_header, subagent_paths
from ._claude_code_tree import TreeBuilder
from ._detect import claude_code_sidecar
from ._io import looks_binary, parse_jsonl, read_bytes_checked

SOURCE_FORMAT = "claude-code"


def session_from_claude_code_values(
    path: str,
    values: list[tuple[int, Any]],
    log: ProblemLog,
    *,
    strict: bool = False,
    read_linked: bool = True,
) -> Session:
    """Build a `Session` from parsed Claude Code lines (`(line_number, value)` pairs).

    Args:
        path: The file the lines came from (for problems and the subagent folder).
        values: Parsed JSONL values in file order.
        log: Where problems go; its `finish()` gives this file's part of `errors`.
        strict: Passed on to the readers of subagent files.
        read_linked: Read `<stem>/subagents/agent-*.jsonl` beside `path` into `linked`.
    """
    # A subagent file: every line with a uuid is a sidechain (vacuously, for none). A main
    # file tells on its first such line.
    linked_file = all(
        rec.get("isSidechain") is True
        for _, rec in values
        if isinstance(rec, dict) and isinstance(rec.get("uuid"), str)
    )
    builder = TreeBuilder(Path(path).stem, log, linked_file=linked_file, values=values)
    for lineno, rec in values:
        builder.add_line(lineno, rec)
    entries = builder.finish()
    header = session_header(
        path,
        values,
        linked_file=linked_file,
        has_entries=bool(entries),
        title=builder.title,
        source_records=builder.source_records,
    )
    linked = []
    # This file's problems in file order (strict: its earliest raised) before the subagents'.
    problems = list(log.finish())
    if read_linked:
        for sub_path in subagent_paths(path):
            sub = read_claude_code(sub_path, strict=strict)
            linked.append(
                linked_header(
                    sub,
                    builder.agent_calls,
                    builder.compaction_by_logical_parent,
                    builder.workflow_calls,
                )
            )
            # Reading the session read these files too; their problems name their own path.
            problems.extend(sub.errors)
    return Session(
        header,
        entries,
        errors=problems,
        source_path=path,
        source_format=SOURCE_FORMAT,
        linked=linked,
    )


def read_claude_code(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a Claude Code session transcript (JSONL) into a `Session`.

    The tree follows Claude Code's `parentUuid` links, with one assistant entry per reply,
    tool results chained after their reply, one `compaction` entry per compaction, and
    non-message lines kept as `custom` entries or header `sourceRecords` (see the module
    docstring). Subagent transcripts in `<sessionId>/subagents/` become `Session.linked`,
    and their problems (naming their own files) are listed in `errors` too.

    Args:
        path: The `<sessionId>.jsonl` file (or a subagent's `agent-*.jsonl`).
        strict: Raise `SessionReadError` for the earliest problem in the file (a subagent
            file's only when the main file has none) instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    # Deferred: strict mode raises the problem earliest in the file (the one lenient mode
    # lists first), after the whole file has been looked at.
    log = ProblemLog(p, strict=strict, deferred=True)
    sidecar = claude_code_sidecar(Path(p).name, data[:65536])
    if sidecar is not None:
        log.add(None, "not-a-session", f"{sidecar}, not a session transcript; nothing read")
        values: list[tuple[int, Any]] = []
    elif looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a JSONL session")
        values = []
    elif not data.strip():
        log.add(None, "empty-file", "file is empty")
        values = []
    else:
        values = parse_jsonl(data, log)
    return session_from_claude_code_values(p, values, log, strict=strict)

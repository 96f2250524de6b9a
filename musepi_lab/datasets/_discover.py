"""Discovery of session files: where the agents keep a user's own sessions, and any folder.

Where each agent writes its sessions (spec §1.1 and §1.11; the agents' own docs):

- pi (and MusePi on the pi layout): `<agentDir>/sessions/--<cwd>--/*.jsonl`, agent dir
  `~/.pi/agent`, moved by `PI_CODING_AGENT_DIR` (`~` expanded).
- oh-my-pi (and MusePi on the omp layout): `~/.omp/agent/sessions/--<cwd>--/*.jsonl`, agent
  dir moved by `OMP_CODING_AGENT_DIR`.
- Claude Code: `~/.claude/projects/<encoded cwd>/<sessionId>.jsonl` (config dir moved by
  `CLAUDE_CONFIG_DIR`); subagent transcripts under `<sessionId>/subagents/` are read with
  their parent session and not listed.
- Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (home moved by `CODEX_HOME`).

Discovery only lists files (with size and modification time); nothing is read except, in
`discover_folder`, the first bytes of each file to detect its format.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..formats._codex_family import is_linked_child
from ..formats._registry import detect_format, iter_session_files
from ..session._errors import SessionReadError
from ._registry import is_manifest_file

AGENTS: tuple[str, ...] = ("pi", "oh-my-pi", "claude-code", "codex")
"""Agents whose session folders `discover_sessions` knows."""


@dataclass(frozen=True)
class DiscoveredSession:
    """A session file found on disk.

    Attributes:
        agent: Which agent wrote it (one of `AGENTS`), or the detected format for files
            found by `discover_folder`.
        path: The file.
        project: The project folder as the agent encoded it in the folder name (pi and
            omp `--<cwd>--`, Claude Code's dashed path), or None.
        size: Size in bytes.
        modified: Modification time (seconds since the epoch).
    """

    agent: str
    path: Path
    project: str | None
    size: int
    modified: float


def _expand(value: str, home: Path) -> Path:
    # pi expands a leading `~` against the home directory (spec §1.1).
    if value == "~":
        return home
    if value.startswith("~/"):
        return home / value[2:]
    return Path(value)


def _found(agent: str, path: Path, project: str | None) -> DiscoveredSession | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return DiscoveredSession(agent, path, project, stat.st_size, stat.st_mtime)


def _pi_layout(agent: str, agent_dir: Path) -> Iterator[DiscoveredSession]:
    sessions = agent_dir / "sessions"
    if not sessions.is_dir():
        return
    for folder in sorted(sessions.iterdir()):
        if not folder.is_dir():
            continue
        name = folder.name
        project = name[2:-2] if name.startswith("--") and name.endswith("--") else name
        for path in sorted(folder.glob("*.jsonl")):
            if path.is_file() and (found := _found(agent, path, project)) is not None:
                yield found


def _claude_code(config_dir: Path) -> Iterator[DiscoveredSession]:
    projects = config_dir / "projects"
    if not projects.is_dir():
        return
    for folder in sorted(projects.iterdir()):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.jsonl")):
            if path.is_file() and (found := _found("claude-code", path, folder.name)) is not None:
                yield found


def _codex(codex_home: Path) -> Iterator[DiscoveredSession]:
    sessions = codex_home / "sessions"
    if not sessions.is_dir():
        return
    for path in sorted(sessions.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/rollout-*.jsonl")):
        if is_linked_child(path):
            continue  # a spawned or review agent: read with the session beside it
        if path.is_file() and (found := _found("codex", path, None)) is not None:
            yield found


def discover_sessions(
    home: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    agents: tuple[str, ...] = AGENTS,
) -> list[DiscoveredSession]:
    """The user's own sessions, where pi/MusePi, oh-my-pi, Claude Code and Codex keep them.

    Args:
        home: The home folder (default: the user's).
        environ: Environment to read `PI_CODING_AGENT_DIR`, `OMP_CODING_AGENT_DIR`,
            `CLAUDE_CONFIG_DIR` and `CODEX_HOME` from (default: `os.environ`).
        agents: Which agents to look for.

    Returns:
        Every session file found, agent by agent in `AGENTS` order, paths sorted. Missing
        folders are simply skipped.

    Raises:
        ValueError: An unknown agent name.
    """
    unknown = set(agents) - set(AGENTS)
    if unknown:
        raise ValueError(f"unknown agents {sorted(unknown)}; expected some of {AGENTS}")
    base = Path(home) if home is not None else Path.home()
    env = os.environ if environ is None else environ
    found: list[DiscoveredSession] = []
    if "pi" in agents:
        pi_dir = env.get("PI_CODING_AGENT_DIR")
        found.extend(_pi_layout("pi", _expand(pi_dir, base) if pi_dir else base / ".pi" / "agent"))
    if "oh-my-pi" in agents:
        omp_dir = env.get("OMP_CODING_AGENT_DIR")
        found.extend(
            _pi_layout("oh-my-pi", _expand(omp_dir, base) if omp_dir else base / ".omp" / "agent")
        )
    if "claude-code" in agents:
        claude_dir = env.get("CLAUDE_CONFIG_DIR")
        found.extend(_claude_code(_expand(claude_dir, base) if claude_dir else base / ".claude"))
    if "codex" in agents:
        codex_home = env.get("CODEX_HOME")
        found.extend(_codex(_expand(codex_home, base) if codex_home else base / ".codex"))
    return found


def discover_folder(path: str | os.PathLike[str]) -> list[DiscoveredSession]:
    """Every session file under a folder (or the one file given), with its detected format
    as `agent`. Claude Code subagent files, planted-facts sidecars and dataset manifests
    are left out.

    Raises:
        SessionReadError: The path does not exist.
    """
    base = Path(path)
    if not base.exists():
        raise SessionReadError(os.fspath(base), None, "not-found", "no such file or folder")
    files = [base] if base.is_file() else list(iter_session_files(base))
    found: list[DiscoveredSession] = []
    for file in files:
        if is_manifest_file(file):
            continue
        try:
            fmt = detect_format(file)
        except SessionReadError:
            continue  # unreadable (permissions, vanished): not a session we can offer
        if (item := _found(fmt, file, None)) is not None:
            found.append(item)
    return found

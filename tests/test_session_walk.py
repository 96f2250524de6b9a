"""The folder walk behind every folder read (`iter_session_files`, issue 30).

The walk lists folders with `os.scandir` and judges what depends on a folder once per
folder. Each test holds its output equal, path for path and in order, to `rules_walk`
below: a plain `os.walk` statement of the documented rules, judged file by file with
pathlib, as the walk used to be. The trees: the real corpus, the repository's test data
(opencode storage, Codex families, Claude Code sidecars), and a tmp folder holding
symlinks to files and folders (in and out of the tree, broken, a loop), hidden files and
folders, sidecars, foreign JSON and a Claude Code session with subagents and workflows.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from _corpus import CORPUS, REPO_ROOT, needs_corpus

from musepi_lab.analysis._cache import iter_inputs
from musepi_lab.analysis._load import session_files
from musepi_lab.formats._codex_family import is_linked_child
from musepi_lab.formats._detect import is_opencode_db_name
from musepi_lab.formats._registry import (
    SESSION_SUFFIXES,
    _read_with_parent,
    is_foreign_json,
    iter_session_files,
)

PI_LINE = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z"}\n'


def _storage_keeps(file: Path) -> bool:
    """An opencode storage root (a folder with `session/` and `message/`) up to three
    folders above: only its `session/<project>/<file>` files are sessions."""
    for folder in list(file.parents)[:3]:
        if (folder / "session").is_dir() and (folder / "message").is_dir():
            parts = file.relative_to(folder).parts
            return len(parts) == 3 and parts[0] == "session"
    return True


def _kept(file: Path, base: Path) -> bool:
    name = file.name
    if not file.is_file():  # follows links; a broken link or a loop is no file
        return False
    if file.suffix not in SESSION_SUFFIXES and not is_opencode_db_name(name):
        return False
    if name.endswith((".facts.json", "manifest.json")) or _read_with_parent(file, base):
        return False
    if file.suffix == ".json" and is_foreign_json(file):
        return False
    return not is_linked_child(file) and _storage_keeps(file)


def rules_walk(root: Path) -> list[Path]:
    """Every file under real folders (symlinked folders listed, not entered), kept by the
    rules, sorted as paths sort."""
    found = [
        Path(folder) / name
        for folder, _, names in os.walk(root, followlinks=False)
        for name in names
    ]
    # os.walk lists a symlink to a folder among the folders: it is no file either way.
    return sorted(f for f in found if _kept(f, root))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    outside = tmp_path / "outside"
    write(outside / "far.jsonl", PI_LINE)
    write(outside / "folder" / "inner.jsonl", PI_LINE)
    write(root / "a.jsonl", PI_LINE)
    write(root / "b" / "c.jsonl", PI_LINE)
    write(root / "b.jsonl", PI_LINE)  # sorts after b/c.jsonl, as sorted paths do
    write(root / "b-c.jsonl", PI_LINE)
    write(root / ".hidden.jsonl", PI_LINE)
    write(root / ".jsonl", PI_LINE)  # no suffix: a hidden name
    write(root / ".git" / "x.jsonl", PI_LINE)
    write(root / "notes.txt", "not a session")
    write(root / "trailing.", "no suffix")
    write(root / "x.facts.json", "{}")
    write(root / "dataset" / "manifest.json", "{}")
    write(root / "package.json", json.dumps({"name": "x", "version": "1.0.0"}))
    write(root / "cut.json", '{"name": ')  # broken: kept, its reader says why
    write(root / "run.traj", json.dumps({"trajectory": []}))
    write(root / "opencode.db", "")
    (root / "links").mkdir()
    os.symlink(root / "a.jsonl", root / "links" / "to-a.jsonl")
    os.symlink(outside / "far.jsonl", root / "links" / "to-far.jsonl")
    os.symlink(outside / "folder", root / "links" / "to-folder")
    os.symlink(root / "b", root / "links" / "to-b")
    os.symlink(root / "links" / "loop.jsonl", root / "links" / "loop.jsonl")
    os.symlink(root / "missing.jsonl", root / "links" / "broken.jsonl")
    os.symlink(root, root / "links" / "up")  # a folder loop
    # Claude Code: a session with subagents and a workflow; an orphan subagent.
    project = root / "projects" / "-w"
    write(project / "S.jsonl", PI_LINE)
    write(project / "S" / "subagents" / "agent-1.jsonl", PI_LINE)
    write(project / "S" / "subagents" / "agent-1.meta.json", json.dumps({"agentType": "x"}))
    write(project / "S" / "subagents" / "workflows" / "r1" / "journal.jsonl", "{}\n")
    write(project / "S" / "workflows" / "r1.json", json.dumps({"workflowName": "w"}))
    write(project / "T" / "subagents" / "agent-2.jsonl", PI_LINE)
    write(project / "U" / "workflows" / "r2.json", json.dumps({"history": []}))
    # opencode storage: only session/<project>/<file> is a session.
    storage = root / "opencode" / "storage"
    write(storage / "session" / "proj" / "ses_1.json", json.dumps({"id": "ses_1"}))
    write(storage / "session" / "ses_2.json", json.dumps({"id": "ses_2"}))
    write(storage / "message" / "ses_1" / "msg_1.json", json.dumps({"id": "msg_1"}))
    write(storage / "part" / "msg_1" / "prt_1.json", json.dumps({"id": "prt_1"}))
    # Codex: a family whose children are read with their parent.
    shutil.copytree(REPO_ROOT / "tests" / "data" / "codex-family", root / "codex")
    return root


def test_the_walk_keeps_the_rules_on_a_folder_of_edge_cases(tree: Path) -> None:
    expected = rules_walk(tree)
    names = {p.name for p in expected}
    # The rules themselves, so that the reference cannot drift into agreeing with anything.
    assert {"to-a.jsonl", "to-far.jsonl", ".hidden.jsonl", "x.jsonl", "cut.json"} <= names
    assert {"agent-2.jsonl", "ses_1.json", "opencode.db", "run.traj"} <= names
    assert not {"loop.jsonl", "broken.jsonl", "inner.jsonl", ".jsonl", "package.json"} & names
    assert not {"agent-1.jsonl", "journal.jsonl", "r1.json", "msg_1.json", "prt_1.json"} & names
    assert not {"ses_2.json", "manifest.json", "x.facts.json"} & names
    assert "r2.json" in names  # no U.jsonl beside its folder
    assert sum(p.is_relative_to(tree / "codex") for p in expected) < sum(
        1 for p in (tree / "codex").rglob("*.jsonl")
    )  # linked children left out
    assert list(iter_session_files(tree)) == expected


def test_the_walk_keeps_the_rules_from_a_relative_root(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree.parent)
    assert list(iter_session_files("tree")) == rules_walk(Path("tree"))
    monkeypatch.chdir(tree / "opencode" / "storage" / "session")
    # A relative path's parents stop at ".": the storage root above is not seen.
    expected = [Path("proj/ses_1.json"), Path("ses_2.json")]
    assert list(iter_session_files(".")) == rules_walk(Path(".")) == expected


def test_the_walk_keeps_the_rules_on_the_test_data() -> None:
    data = REPO_ROOT / "tests" / "data"
    assert list(iter_session_files(data)) == rules_walk(data)


@needs_corpus
def test_the_walk_keeps_the_rules_on_the_corpus() -> None:
    expected = rules_walk(CORPUS)
    assert expected
    assert list(iter_session_files(CORPUS)) == expected


def test_a_cache_inside_the_folder_is_left_out_even_through_a_link(tree: Path) -> None:
    cache = tree / "cache"
    write(cache / "v1" / "part.jsonl", PI_LINE)
    os.symlink(cache / "v1" / "part.jsonl", tree / "links" / "into-cache.jsonl")
    resolved = cache.resolve()
    expected = [f for f in session_files(tree) if not f.resolve().is_relative_to(resolved)]
    assert tree / "a.jsonl" in expected
    assert not any("cache" in f.name or f.parent.name == "v1" for f in expected)
    assert list(iter_inputs(tree, cache)) == expected
    assert list(iter_inputs([tree / "a.jsonl", tree], cache)) == [tree / "a.jsonl", *expected]

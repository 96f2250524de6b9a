"""Where each corpus session comes from: its source (the upstream repository, or the user
whose sessions a repository copies), read from each corpus folder's `PROVENANCE.md`.

A `PROVENANCE.md` holds markdown tables. A file table has a first column naming the file
(`file`, `Local file`) and a column naming where it came from: `repository`, `Source repo`,
or `source`, a key into a sources table (`| key | repository | ... |`). A sources table's
notes may say a repository is a copy of another (`Org copy of marot/spotter`): its files
are then of that other repository's source, since a leave-one-source-out judgement must not
fit on one copy of a user's sessions and judge another.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_COPY_OF = re.compile(r"copy of\s+`?([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)", re.IGNORECASE)
FILE_HEADERS = ("file", "local file")
SOURCE_HEADERS = ("repository", "source repo", "source")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    """`(header, rows)` of each markdown table of a text (lower-cased header cells)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.startswith("|") and re.fullmatch(r"\|[\s:|-]+\|?", following):
            header = [c.lower() for c in _cells(line)]
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            yield header, rows
            continue
        i += 1


def _repository(cell: str) -> str | None:
    found = _REPO.search(cell.replace("`", ""))
    return found.group(0) if found else None


def folder_sources(text: str) -> dict[str, str]:
    """`{file as written: source}` of one `PROVENANCE.md` (module notes)."""
    keys: dict[str, str] = {}
    copies: dict[str, str] = {}
    tables = list(markdown_tables(text))
    for header, rows in tables:
        if "repository" not in header or header[0] in FILE_HEADERS:
            continue
        repo_at = header.index("repository")
        notes_at = header.index("notes") if "notes" in header else None
        for row in rows:
            if len(row) <= repo_at:
                continue
            repo = _repository(row[repo_at])
            if repo is None:
                continue
            if header[0] == "key":
                keys[row[0].replace("`", "")] = repo
            notes = row[notes_at] if notes_at is not None and notes_at < len(row) else ""
            copy = _COPY_OF.search(notes)
            if copy:
                copies[repo] = copy.group(1)
    out: dict[str, str] = {}
    for header, rows in tables:
        if header[0] not in FILE_HEADERS:
            continue
        column = next((header.index(h) for h in SOURCE_HEADERS if h in header), None)
        if column is None:
            continue
        for row in rows:
            if len(row) <= column:
                continue
            value = row[column].replace("`", "")
            repo = keys.get(value) or _repository(value)
            if repo is not None:
                out[row[0].replace("`", "")] = copies.get(repo, repo)
    return out


def corpus_sources(root: str | os.PathLike[str]) -> dict[str, str]:
    """`{path relative to the corpus root: source}` of every file a corpus folder's
    `PROVENANCE.md` names (module notes)."""
    base = Path(root)
    out: dict[str, str] = {}
    for provenance in sorted(base.glob("*/PROVENANCE.md")):
        folder = provenance.parent.relative_to(base).as_posix()
        for file, source in folder_sources(provenance.read_text(encoding="utf-8")).items():
            out[f"{folder}/{file}"] = source
    return out

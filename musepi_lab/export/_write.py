"""The transcript export: a session (or its file) to an HTML or Markdown file, atomically."""

from __future__ import annotations

import os
from pathlib import Path

from .._atomic import write_bytes_atomic
from ..formats._registry import read_session
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._document import transcript_document
from ._html import render_html
from ._markdown import render_markdown

EXPORT_FORMATS: dict[str, str] = {"html": ".html", "md": ".md"}
"""Export formats and the file suffix each is written with."""
_SUFFIXES = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md"}


def transcript_html(
    session: Session,
    *,
    leaf_id: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
) -> str:
    """A session's transcript as one self-contained HTML page (no script, no external
    resource): a header with its facts and token figures labelled by source, each message
    with its time, id and tokens, tool calls and results folded, compactions marked and
    the cut a compaction would make now drawn between two messages.

    Args:
        session: The session (not changed).
        leaf_id: The leaf whose path is exported (default: the session leaf).
        profile: Which context and cut (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).
    """
    document = transcript_document(session, leaf_id=leaf_id, profile=profile, counter=counter)
    return render_html(document)


def transcript_markdown(
    session: Session,
    *,
    leaf_id: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
) -> str:
    """A session's transcript as GitHub-flavoured Markdown, with what `transcript_html`
    shows; the session's text is escaped, never read as markup.

    Args:
        session: The session (not changed).
        leaf_id: The leaf whose path is exported (default: the session leaf).
        profile: Which context and cut (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).
    """
    document = transcript_document(session, leaf_id=leaf_id, profile=profile, counter=counter)
    return render_markdown(document)


def export_format(out: str | os.PathLike[str], format: str | None = None) -> str:
    """The format of an export: the one given, else the one `out`'s suffix names.

    Raises:
        ValueError: An unknown format, or none given and the suffix names none.
    """
    if format is not None:
        if format not in EXPORT_FORMATS:
            raise ValueError(f"unknown export format {format!r}; expected html or md")
        return format
    suffix = Path(out).suffix.lower()
    if suffix not in _SUFFIXES:
        raise ValueError(f"{out}: say --format html or md (the suffix {suffix!r} names neither)")
    return _SUFFIXES[suffix]


def write_transcript(
    source: Session | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    format: str | None = None,
    leaf_id: str | None = None,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
) -> Path:
    """Write a session's transcript as HTML or Markdown, atomically (a reader never sees a
    half-written file, and a failure leaves any earlier file as it was).

    Args:
        source: A `Session`, or a session file of any supported format (read, not changed).
        out: The file to write.
        format: `"html"` or `"md"` (default: from `out`'s suffix).
        leaf_id: The leaf whose path is exported (default: the session leaf).
        profile: Which context and cut (`"musepi"` or `"pi"`).
        counter: Token counter (default: the profile's estimator).

    Returns:
        The path written.

    Raises:
        ValueError: No format given or implied by the suffix, or `out` is the session file.
        SessionReadError: `source` cannot be read.
    """
    kind = export_format(out, format)
    target = Path(out)
    if not isinstance(source, Session):
        if target.exists() and target.resolve() == Path(source).resolve():
            raise ValueError(f"{target}: the export would overwrite the session file")
        source = read_session(source)
    render = transcript_html if kind == "html" else transcript_markdown
    text = render(source, leaf_id=leaf_id, profile=profile, counter=counter)
    return write_bytes_atomic(target, text.encode("utf-8"))

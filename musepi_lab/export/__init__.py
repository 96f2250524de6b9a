"""Transcript exports: a session as a self-contained HTML page or a Markdown file, with its
compactions and the cut a compaction would make now marked (`musepi-lab export`)."""

from ._write import transcript_html, transcript_markdown, write_transcript

__all__ = [
    "transcript_html",
    "transcript_markdown",
    "write_transcript",
]

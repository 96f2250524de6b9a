"""Where the real corpus lives (../shared/corpus beside the repository), for every test.

A plain module rather than `conftest.py`, so tests can import it by name even when pytest
also collects `notebooks/`, which has a conftest of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MUSEPI_LAB_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))
HAS_CORPUS = CORPUS.is_dir()

needs_corpus = pytest.mark.skipif(not HAS_CORPUS, reason=f"corpus not found at {CORPUS}")


def corpus_file(*parts: str) -> Path:
    """A corpus file; the calling test is skipped when it is absent."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"corpus file not found: {path}")
    return path


# The pi sessions every reader test walks, in the order their test ids have always had.
PI_FILES = [
    ("pi", "large-session.jsonl"),
    ("pi", "before-compaction.jsonl"),
    ("pi", "oh-my-pi", "large-session.jsonl"),
    ("pi", "oh-my-pi", "before-compaction.jsonl"),
    ("pi", "earendil-works-pi", "prompt-cache-replay-session.jsonl"),
]

# The pi sessions large enough to compact, for the strategies' shared acceptance.
PI_FIXTURES = [
    ("pi", "before-compaction.jsonl"),
    ("pi", "large-session.jsonl"),
    ("pi", "oh-my-pi", "before-compaction.jsonl"),
    ("pi", "oh-my-pi", "large-session.jsonl"),
]

# The sample sessions bundled with the repository (these need no corpus).
SAMPLES = sorted((REPO_ROOT / "datasets" / "sample").glob("*.jsonl"))

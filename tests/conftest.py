"""Shared fixtures; the corpus helpers themselves live in `_corpus.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
from _corpus import CORPUS, HAS_CORPUS


@pytest.fixture
def corpus_dir() -> Path:
    """The corpus folder (skips the test when absent)."""
    if not HAS_CORPUS:
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS

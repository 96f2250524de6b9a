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


_AGREEMENT = Path(__file__).resolve().parents[1] / "test-output" / "ccusage-agreement.txt"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Forget an agreement table from an earlier run (only this run's is printed)."""
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        _AGREEMENT.unlink(missing_ok=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the ccusage agreement table tests/conformance/test_ccusage.py wrote this run."""
    if _AGREEMENT.is_file():
        terminalreporter.section("usage reports against ccusage 18.0.11")
        terminalreporter.write_line(_AGREEMENT.read_text(encoding="utf-8").rstrip())

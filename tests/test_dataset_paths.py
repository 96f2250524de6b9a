"""Finding data from a notebook: `find_up` from the working directory, `corpus_path`."""

from __future__ import annotations

from pathlib import Path

import pytest
from _corpus import CORPUS, needs_corpus

from musepi_lab.datasets import corpus_path, find_up

REPO = Path(__file__).resolve().parents[1]


def test_find_up_from_the_repository_root_and_from_notebooks(monkeypatch):
    sample = (REPO / "datasets" / "sample").resolve()
    assert find_up("datasets/sample", start=REPO) == sample
    assert find_up("datasets/sample", start=REPO / "notebooks") == sample
    monkeypatch.chdir(REPO / "notebooks")
    assert find_up("datasets/sample") == sample  # the working directory by default


def test_find_up_takes_the_nearest_match(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "a" / "data").mkdir(parents=True)
    (tmp_path / "a" / "b").mkdir()
    assert find_up("data", start=tmp_path / "a" / "b") == (tmp_path / "a" / "data").resolve()
    assert find_up("data", start=tmp_path) == (tmp_path / "data").resolve()


def test_find_up_returns_an_existing_absolute_path(tmp_path):
    target = tmp_path / "sessions"
    target.mkdir()
    assert find_up(str(target), start=REPO) == target.resolve()


@pytest.mark.parametrize("relative", ["", "no/such/folder-anywhere"])
def test_find_up_raises_when_nothing_matches(tmp_path, relative):
    with pytest.raises(FileNotFoundError):
        find_up(relative, start=tmp_path)


def test_corpus_path_follows_the_environment(tmp_path):
    (tmp_path / "pi").mkdir()
    environ = {"MUSEPI_LAB_CORPUS": str(tmp_path)}
    assert corpus_path(environ=environ) == tmp_path
    assert corpus_path("pi", environ=environ) == tmp_path / "pi"
    assert corpus_path("no-such-format", environ=environ) is None


@needs_corpus
def test_corpus_path_finds_the_shared_corpus():
    found = corpus_path("pi")
    assert found is not None and found.resolve() == (CORPUS / "pi").resolve()

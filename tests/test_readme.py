"""The README's examples run: every fenced Python block is executed in order in one
namespace (as a reader would paste them), from the repository root, with model calls going
to the loopback OpenAI-compatible stub; a block followed by an unlabelled fenced block must
print exactly that text. So a stale figure in the README fails the build."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

from musepi_lab.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
CORPUS = REPO.parent / "shared" / "corpus"

_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


def readme_examples(text: str) -> list[tuple[str, str | None]]:
    """`(code, expected output or None)` for every ```python block, in order."""
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]
    examples: list[tuple[str, str | None]] = []
    for i, (lang, body, _, end) in enumerate(blocks):
        if lang != "python":
            continue
        expected = None
        if i + 1 < len(blocks):
            next_lang, next_body, next_start, _ = blocks[i + 1]
            if next_lang == "" and not text[end:next_start].strip():
                expected = next_body
        examples.append((body, expected))
    return examples


def test_the_parser_pairs_code_with_its_output() -> None:
    text = "```python\nprint(1)\n```\n\n```\n1\n```\n\nprose\n```python\nx = 2\n```\n"
    assert readme_examples(text) == [("print(1)\n", "1\n"), ("x = 2\n", None)]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_readme_examples_run_and_print_what_the_readme_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    examples = readme_examples(README.read_text(encoding="utf-8"))
    assert examples, "README.md has no Python examples"
    namespace: dict[str, object] = {"__name__": "__readme__"}
    with StubOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-readme")
        monkeypatch.chdir(REPO)
        cache = REPO / ".summaries"
        cache_existed = cache.exists()
        ran = 0
        for number, (code, expected) in enumerate(examples, 1):
            if "../shared/corpus" in code and not CORPUS.is_dir():
                continue  # the corpus lives beside the repository; absent here
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"README.md example {number}", "exec"), namespace)
            ran += 1
            if expected is not None:
                assert _lines(out.getvalue()) == _lines(expected), f"README example {number}"
        assert ran >= len(examples) - 1
    if not cache_existed:  # the examples' summary cache is theirs, not the repository's
        shutil.rmtree(cache, ignore_errors=True)
    # The examples write nothing into the repository.
    assert not (REPO / "out.ipynb").exists()

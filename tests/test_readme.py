"""The README's examples run as a user runs them: every fenced Python block, in order, in one
namespace (as a reader pastes them into a notebook), from an empty folder outside the
repository, with no `../shared` beside it and no model endpoint in the environment (the
examples that call a model start their own loopback server); a block followed by an
unlabelled fenced block must print exactly that text. A block that opens with
`import musepi_lab` is a whole example: it also runs alone, saved as a script, in a fresh
interpreter (the Dask example needs its `__main__` guard there). So a stale figure, a path
into the repository or the shared corpus, or an example that needs a key fails the build."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
_ENDPOINT_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "MUSEPI_LAB_MODEL")


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


EXAMPLES = readme_examples(README.read_text(encoding="utf-8"))


def test_the_parser_pairs_code_with_its_output() -> None:
    text = "```python\nprint(1)\n```\n\n```\n1\n```\n\nprose\n```python\nx = 2\n```\n"
    assert readme_examples(text) == [("print(1)\n", "1\n"), ("x = 2\n", None)]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_no_example_reads_outside_what_a_clone_or_an_install_has() -> None:
    assert EXAMPLES, "README.md has no Python examples"
    for number, (code, _) in enumerate(EXAMPLES, 1):
        assert "../shared" not in code, f"README example {number} reads the shared corpus"
        assert '"datasets/' not in code, f"README example {number} reads the repository"


@pytest.fixture
def as_a_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty working folder, no endpoint or corpus in the environment."""
    for name in (*_ENDPOINT_VARIABLES, "MUSEPI_LAB_CORPUS"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.slow
def test_readme_examples_run_and_print_what_the_readme_says(as_a_user: Path) -> None:
    repo_cache_before = (REPO / ".summaries").exists()
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, (code, expected) in enumerate(EXAMPLES, 1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md example {number}", "exec"), namespace)
        if expected is not None:
            assert _lines(out.getvalue()) == _lines(expected), f"README example {number}"
    # What the examples write (the summary cache, the Dask run's parts) is where they ran.
    assert (as_a_user / ".summaries").is_dir() and (as_a_user / "bench-output").is_dir()
    assert (REPO / ".summaries").exists() == repo_cache_before


WHOLE = [
    (n, code, expected)
    for n, (code, expected) in enumerate(EXAMPLES, 1)
    if code.startswith("import musepi_lab")
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("number", "code", "expected"), WHOLE, ids=[f"example {n}" for n, *_ in WHOLE]
)
def test_whole_examples_run_as_scripts(
    number: int, code: str, expected: str | None, tmp_path: Path
) -> None:
    script = tmp_path / f"readme_example_{number}.py"
    script.write_text(code, encoding="utf-8")
    env = {
        k: v for k, v in os.environ.items() if k not in (*_ENDPOINT_VARIABLES, "MUSEPI_LAB_CORPUS")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if expected is not None:
        assert _lines(done.stdout) == _lines(expected), f"README example {number}"

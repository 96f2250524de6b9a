"""Prompt sets: the Markdown texts strategies send, loaded from a folder, named and hashed.

The default set is the project's `prompts/` folder (shipped in the wheel as
`musepi_lab/prompts`). A researcher can point at a copy to experiment; every result records
the set's `name` and `sha256`, so a change of wording is never silent.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

PROMPT_NAMES: tuple[str, ...] = (
    "auto-handoff-threshold-focus",
    "branch-summary",
    "branch-summary-context",
    "branch-summary-preamble",
    "compaction-short-summary",
    "compaction-summary",
    "compaction-summary-context",
    "compaction-turn-prefix",
    "compaction-update-summary",
    "handoff-context",
    "handoff-document",
    "handoff-summary-context",
    "snapcompact-archive-context",
    "snapcompact-summary",
    "summarization-system",
)
"""Every prompt a complete set must hold (file name without `.md`)."""

_PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")


@dataclass(frozen=True)
class PromptSet:
    """A named, hashed set of prompt texts.

    Attributes:
        name: The set's name (the folder name, or `default`).
        texts: Prompt name → text. Texts are used as stored, except that a single trailing
            newline of the file is dropped (editors add one).
        sha256: Hash over the sorted names and texts: identifies the exact wording.
    """

    name: str
    texts: Mapping[str, str]
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "texts", MappingProxyType(dict(self.texts)))
        digest = hashlib.sha256()
        for key in sorted(self.texts):
            digest.update(key.encode() + b"\0" + self.texts[key].encode() + b"\0")
        object.__setattr__(self, "sha256", digest.hexdigest())

    @classmethod
    def from_dir(cls, folder: str | os.PathLike[str], *, name: str | None = None) -> PromptSet:
        """Load every `*.md` prompt of a folder (README.md excluded).

        Raises:
            FileNotFoundError: The folder lacks one of `PROMPT_NAMES`.
        """
        base = Path(folder)
        texts = {
            p.stem: _strip_final_newline(p.read_text(encoding="utf-8"))
            for p in sorted(base.glob("*.md"))
            if p.name != "README.md"
        }
        missing = [n for n in PROMPT_NAMES if n not in texts]
        if missing:
            raise FileNotFoundError(f"{base}: prompt set lacks {', '.join(missing)}")
        return cls(name or base.name, texts)

    @classmethod
    def default(cls) -> PromptSet:
        """The project's own prompt set."""
        return _default_set()

    def text(self, prompt: str) -> str:
        """The raw text of one prompt."""
        try:
            return self.texts[prompt]
        except KeyError:
            raise KeyError(f"prompt set {self.name!r} has no prompt {prompt!r}") from None

    def render(self, prompt: str, **values: str) -> str:
        """A prompt with its `{{placeholders}}` filled (see `fill_placeholders`).

        Raises:
            KeyError: A placeholder has no value.
        """
        return fill_placeholders(self.text(prompt), **values)

    def placeholders(self, prompt: str) -> tuple[str, ...]:
        """The placeholder names a prompt uses, in order of first use."""
        return tuple(dict.fromkeys(_PLACEHOLDER.findall(self.text(prompt))))

    @property
    def label(self) -> str:
        """`name@hash12`, the form stored in results."""
        return f"{self.name}@{self.sha256[:12]}"


def fill_placeholders(template: str, **values: str) -> str:
    """Fill `{{name}}` placeholders in one pass; a placeholder without a value is an error.

    One pass, so a value that itself holds `{{...}}` (a summary quoting a template) is left
    as it is.

    Raises:
        KeyError: The template names a placeholder that was not given.
    """

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template placeholder {{{{{key}}}}} has no value")
        return values[key]

    return _PLACEHOLDER.sub(fill, template)


def _strip_final_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


@cache
def _default_set() -> PromptSet:
    folder = resources.files("musepi_lab") / "prompts"
    with resources.as_file(folder) as path:
        return PromptSet.from_dir(path, name="default")


def resolve_prompts(prompts: PromptSet | str | os.PathLike[str] | None) -> PromptSet:
    """A `PromptSet` from a set, a folder path, or None (the default set)."""
    if prompts is None:
        return PromptSet.default()
    if isinstance(prompts, PromptSet):
        return prompts
    return PromptSet.from_dir(prompts)

"""Prompt sets: complete, named and hashed, swappable, and used by the context templates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from musepi_lab._prompts import PROMPT_NAMES, PromptSet, fill_placeholders, resolve_prompts
from musepi_lab.context._llm import convert_to_llm

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


def test_default_set_is_complete_and_matches_the_repository_folder():
    default = PromptSet.default()
    assert set(PROMPT_NAMES) <= set(default.texts)
    on_disk = PromptSet.from_dir(PROMPTS)
    assert on_disk.sha256 == default.sha256
    assert default.label == f"default@{default.sha256[:12]}"


def test_context_templates_have_a_summary_placeholder():
    default = PromptSet.default()
    for name in ("compaction-summary-context", "handoff-summary-context", "branch-summary-context"):
        assert default.placeholders(name) == ("summary",)
    assert default.placeholders("snapcompact-summary") == (
        "frame_notes",
        "dropped_chars",
        "files_section",
    )


def test_fill_is_one_pass_and_strict():
    assert fill_placeholders("<{{a}}>", a="{{a}}") == "<{{a}}>"
    with pytest.raises(KeyError, match="b"):
        fill_placeholders("{{a}}{{b}}", a="x")


def test_own_prompt_folder_changes_hash_and_context(tmp_path):
    mine = tmp_path / "my-prompts"
    shutil.copytree(PROMPTS, mine)
    (mine / "compaction-summary-context.md").write_text("OLD WORK:\n{{summary}}\n")
    custom = resolve_prompts(mine)
    assert custom.name == "my-prompts" and custom.sha256 != PromptSet.default().sha256
    msg = {"role": "compactionSummary", "summary": "S1"}
    assert convert_to_llm([msg], prompts=custom)[0]["content"][0]["text"] == "OLD WORK:\nS1"
    assert "<summary>\nS1\n</summary>" in convert_to_llm([msg])[0]["content"][0]["text"]


def test_incomplete_folder_is_a_clear_error(tmp_path):
    (tmp_path / "compaction-summary.md").write_text("x")
    with pytest.raises(FileNotFoundError, match="summarization-system"):
        PromptSet.from_dir(tmp_path)

"""The texts that wrap summaries and archives when a context is sent to a model.

All of them are ours (none is copied from pi, oh-my-pi or MusePi); their *structure* follows
spec §2.2 and §2.3. They live together here so that moving them into `prompts/*.md` later is
a change to this one module. The MusePi templates use `{{summary}}` placeholders, as the
files in `prompts/` do.
"""

from __future__ import annotations

import re

# -- pi profile (spec §2.2): a one-sentence framing, a blank line, then the summary tags. ---
COMPACTION_SUMMARY_PREFIX = (
    "Earlier turns of this conversation were condensed into the summary below.\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "Below is a summary of another branch of this conversation, explored before coming "
    "back to this point.\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

# -- MusePi profile (spec §2.3), the same texts as prompts/*-context.md. --------------------
MUSEPI_COMPACTION_SUMMARY_TEMPLATE = (
    "Earlier turns of this session were compacted into the summary below. The work and tool "
    "results\nit describes really happened: build on them and do not redo them.\n\n"
    "<summary>\n{{summary}}\n</summary>"
)
MUSEPI_HANDOFF_SUMMARY_TEMPLATE = (
    "The text below is a handoff document written by a previous instance of you when this "
    'session\'s\ncontext filled up; "I" and "me" in it refer to that instance. Treat its '
    "next steps as\nsuggestions to re-check against the latest user message, and do not write "
    "another handoff.\n\n<handoff>\n{{summary}}\n</handoff>"
)
MUSEPI_BRANCH_SUMMARY_TEMPLATE = (
    "Summary of a branch this conversation returned from:\n\n<summary>\n{{summary}}\n</summary>"
)

# -- Display transcript (spec §2.3): what a compaction superseded by a later one shows. -----
SUPERSEDED_COMPACTION_SUMMARY = "[Older compaction summary, replaced by a later compaction]"
SUPERSEDED_COMPACTION_SHORT_SUMMARY = "Older compaction (replaced)"

# -- Snapcompact archive rebuild (spec §6.2, `historyBlocks`). ------------------------------
SNAPCOMPACT_IMAGES_BELOW = "\n-------------- archive pages follow as images\n"
SNAPCOMPACT_IMAGES_ABOVE = "-------------- end of archive pages\n"
SNAPCOMPACT_MIDDLE_DROPPED = "\n-------------- older middle of the archive not included\n"
SNAPCOMPACT_FRAMES_OMITTED = (
    "-------------- archive pages left out\n"
    "{{frames}} archived page image(s) ({{bytes}} of base64) did not fit this request's image "
    "budget; the summary and the text at both ends of the archive are still here.\n"
    "--------------"
)

# -- Tool results (spec §2.3). --------------------------------------------------------------
PRUNED_TOOL_RESULT_TEXT = "[Output truncated]"
"""The text of a pruned tool result that kept no text at all (format token of the spec)."""
SYNTHETIC_TOOL_RESULT_TEXT = "No result provided"
"""The text of the error result pi's provider layer makes up for a call without a result."""


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def render(template: str, **values: str) -> str:
    """Fill `{{name}}` placeholders in one pass; a placeholder without a value is an error.

    One pass, so a value that itself holds `{{...}}` (a summary quoting a template) is left
    as it is.

    Args:
        template: The template text.
        **values: One string per placeholder.

    Raises:
        KeyError: The template names a placeholder that was not given.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(f"template placeholder {{{{{name}}}}} has no value")
        return values[name]

    return _PLACEHOLDER.sub(fill, template)

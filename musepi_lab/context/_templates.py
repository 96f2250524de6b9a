"""The texts that wrap summaries and archives when a context is sent to a model.

All of them are ours (none is copied from pi, oh-my-pi or MusePi); their *structure* follows
spec §2.2 and §2.3. The MusePi context templates are prompts (`prompts/*-context.md`), read
through `musepi_lab._prompts.PromptSet`; what stays here are pi's fixed wrappers and the
notices of the snapcompact rebuild.
"""

from __future__ import annotations

from .._prompts import fill_placeholders

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

# -- MusePi profile (spec §2.3): the context templates live in the prompt set
# (`prompts/compaction-summary-context.md`, `handoff-summary-context.md`,
# `branch-summary-context.md`), so a researcher's own prompt folder changes them too.

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


render = fill_placeholders
"""Fill `{{name}}` placeholders (the one implementation lives in `musepi_lab._prompts`)."""

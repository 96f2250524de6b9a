"""Conformance with the agents' published code (issue 11): the reference runner, our side in
the same shape, and the field-by-field comparison.

- `run_reference` / `cached_reference` (`_reference`): install the pinned npm packages into a
  cache outside the repository and run a driver of ours on a session file (pi 0.58.3 on node,
  oh-my-pi on Bun), returning its JSON document;
- `our_document` (`_ours`): the same document from our profiles;
- `compare_all` (`_compare`): rows of agreement per measure (`MeasureRow`), and rows marked
  `seed_difference` where the profile follows the seed, not the release
  (`compare_seed_boundary`). Comparisons are
  plain functions `compare_x(reference: dict, session, budgets) -> list[MeasureRow]` listed in
  `COMPARISONS`: registering another is one line there. The text measures (`_texts`): the
  summarizer input in every dialect (`compare_dialects`, registered) and snapcompact's
  archives and frames (`snapcompact_rows`, run by `compare_file` on a reference that wrote
  its frames);
- `compare_usage`, `compare_usage_corpus`, `usage_agreement_table` (`_ccusage`): ccusage's
  usage reports (ccusage 20.0.24, `@ccusage/codex` and `@ccusage/pi` 18.0.11) on corpus
  folders against `analysis.usage_df`, each difference with its causes (`CAUSES`) and their
  sizes measured from the raw lines (`_ccusage_causes`), what is left `unexplained`;
- `compare_file`, `format_table` (`_run`): the IO edge the `musepi-lab conformance` command uses;
- `_unicode`: snapcompact's text normalization against the release's on every code point (the
  `unicode/*` rows the command adds when MusePi is compared), and the regeneration of the
  normalizer's package data from the installed release.
"""

from ._compare import compare_all
from ._reference import ReferenceRunError, ReferenceToolMissing
from ._run import compare_file, format_table
from ._snapcompact import compare_snapcompact

__all__ = [
    "ReferenceRunError",
    "ReferenceToolMissing",
    "compare_all",
    "compare_file",
    "compare_snapcompact",
    "format_table",
]

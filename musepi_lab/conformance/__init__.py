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

from ._ccusage import (
    AgreementRow,
    PriceRow,
    compare_usage,
    compare_usage_corpus,
    run_ccusage,
)
from ._ccusage_causes import CAUSES
from ._ccusage_table import usage_agreement_table
from ._compare import (
    COMPARISONS,
    SEED_BOUNDARY_REASON,
    compare_all,
    compare_engine,
    compare_seed_boundary,
    merge_rows,
)
from ._dialects import compare_summarizer_inputs
from ._ours import our_budgets, our_document
from ._reference import (
    DEFAULT_BUDGETS,
    ReferenceRunError,
    ReferenceToolMissing,
    cached_reference,
    ensure_installed,
    run_reference,
)
from ._rows import MeasureRow
from ._run import FileReport, compare_file, format_table
from ._snapcompact import compare_snapcompact
from ._texts import compare_dialects, snapcompact_rows

__all__ = [
    "CAUSES",
    "COMPARISONS",
    "DEFAULT_BUDGETS",
    "SEED_BOUNDARY_REASON",
    "AgreementRow",
    "FileReport",
    "MeasureRow",
    "PriceRow",
    "ReferenceRunError",
    "ReferenceToolMissing",
    "cached_reference",
    "compare_all",
    "compare_dialects",
    "compare_engine",
    "compare_file",
    "compare_seed_boundary",
    "compare_snapcompact",
    "compare_summarizer_inputs",
    "compare_usage",
    "compare_usage_corpus",
    "ensure_installed",
    "format_table",
    "merge_rows",
    "our_budgets",
    "our_document",
    "run_ccusage",
    "run_reference",
    "snapcompact_rows",
    "usage_agreement_table",
]

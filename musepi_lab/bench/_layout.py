"""The names of a benchmark result folder's files: a leaf the writers (`_files`, `_parts`)
both read, so neither imports the other for them."""

from __future__ import annotations

RESULTS_PARQUET = "results.parquet"
"""The joined result rows (Parquet)."""
RESULTS_CSV = "results.csv"
"""The joined result rows (CSV)."""
CONFIG_JSON = "config.json"
"""The run's configuration, as written beside the rows."""

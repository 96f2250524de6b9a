"""The `musepi-lab` command line: inspect, convert, datasets, bench, report, navigate,
conformance, demo.

One module per group of commands (`_sessions`, `_bench`, `_conformance`), shared pieces in
`_common`, the parser and `main` in `_parser`.
"""

from ._bench import DEMO_STRATEGIES, model_free_strategies
from ._parser import build_parser, main

__all__ = ["DEMO_STRATEGIES", "build_parser", "main", "model_free_strategies"]

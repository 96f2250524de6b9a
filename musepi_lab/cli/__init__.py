"""The `musepi-lab` command line: inspect, convert, datasets, bench, report, navigate,
conformance, demo.

One module per group of commands (`_sessions`, `_bench`, `_conformance`), shared pieces in
`_common`, the parser and `main` in `_parser`.
"""

from ._parser import main

__all__ = [
    "main",
]

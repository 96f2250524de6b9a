"""Command line of the reference runner; the code lives in `musepi_lab.conformance._reference`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from musepi_lab.conformance._reference import main

if __name__ == "__main__":
    sys.exit(main())

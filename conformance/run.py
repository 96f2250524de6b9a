"""Command line of the reference runner; the code lives in `musepi_lab.conformance._reference`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from musepi_lab.conformance._reference import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["ccusage"]:  # the usage reports against ccusage (issue 22)
        from musepi_lab.conformance._ccusage import main as ccusage_main

        sys.exit(ccusage_main(sys.argv[2:]))
    if sys.argv[1:2] == ["unicode"]:  # snapcompact's normalizer on every code point (issue 33)
        from musepi_lab.conformance._unicode import main as unicode_main

        sys.exit(unicode_main(sys.argv[2:]))
    sys.exit(main())

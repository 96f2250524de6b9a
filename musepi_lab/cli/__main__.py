"""`python -m musepi_lab.cli`."""

from ._parser import main

raise SystemExit(main())

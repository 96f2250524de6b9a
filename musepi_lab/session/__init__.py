"""The session model: immutable entries, the `Session` tree, and reading problems.

Readers for the agents' file formats live in `musepi_lab.formats`; what the model sees at a
leaf lives in `musepi_lab.context`.
"""

from ._errors import ReadProblem, SessionReadError
from ._model import Entry
from ._session import Session

__all__ = [
    "Entry",
    "ReadProblem",
    "Session",
    "SessionReadError",
]

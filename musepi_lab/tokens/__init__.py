"""Token counting: pi and MusePi estimators and real BPE tokenizers, cached per entry."""

from ._bpe import RankFileError
from ._counter import TokenCounter

__all__ = [
    "RankFileError",
    "TokenCounter",
]

"""The character facts snapcompact's normalizer reads, as oh-my-pi 18.2.3's runtime has them.

The release's normalizer asks its JavaScript runtime (Bun 1.3.14) which characters are format
characters (`\\p{Cf}`), which it skips (`[\\p{Cc}\\p{Mn}\\p{Me}\\p{Cs}]`), which are marks
(`\\p{M}`), which are emoji pictographs (`\\p{Extended_Pictographic}`), and what a character's
NFKD decomposition is. JavaScriptCore answers the regular expressions from Unicode 17.0 tables
and ICU 75.1 the decomposition from Unicode 15.1; Python's `unicodedata` has the version of
whatever Python runs (14.0 on 3.11), so where the versions differ (marks added since, the
narrower `Extended_Pictographic` of Unicode 17, newer decompositions) it gives other answers.
The answers therefore ship as package data (`fonts/unicode-properties.txt.gz`, see
`fonts/PROVENANCE.md`), one line per run of code points, `<property> XXXX[-YYYY]`, and one
line per decomposition, `nfkd XXXX YYYY [ZZZZ ...]`.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

PROPERTIES_RESOURCE = "fonts/unicode-properties.txt.gz"

PROPERTIES: tuple[str, ...] = ("format", "unrenderable", "mark", "pictographic", "space")
"""The properties the table lists: `format` (Cf), `unrenderable` (Cc, Mn, Me, Cs), `mark` (M),
`pictographic` (Extended_Pictographic), `space` (JavaScript's `\\s`)."""


@dataclass(frozen=True, slots=True)
class CharacterTable:
    """Code points per property and the NFKD decompositions that differ from the character."""

    properties: Mapping[str, frozenset[int]]
    nfkd: Mapping[int, str]


def _span(text: str) -> range:
    first, _, last = text.partition("-")
    lo, hi = int(first, 16), int(last or first, 16)
    if hi < lo or hi > 0x10FFFF:
        raise ValueError(f"bad code point run {text!r}")
    return range(lo, hi + 1)


def parse_character_table(text: str, *, source: str = PROPERTIES_RESOURCE) -> CharacterTable:
    """The table from its text form.

    Raises:
        ValueError: A malformed line, naming `source` and the line number.
    """
    found: dict[str, set[int]] = {name: set() for name in PROPERTIES}
    nfkd: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line:
            continue
        name, _, rest = line.partition(" ")
        try:
            if name == "nfkd":
                code, *parts = rest.split(" ")
                if not parts:
                    raise ValueError("a decomposition needs at least one code point")
                nfkd[int(code, 16)] = "".join(chr(int(p, 16)) for p in parts)
            elif name in found:
                found[name].update(_span(rest))
            else:
                raise ValueError(f"unknown property {name!r}")
        except ValueError as exc:
            raise ValueError(f"{source}:{number}: bad line {line[:40]!r}: {exc}") from None
    return CharacterTable({n: frozenset(cps) for n, cps in found.items()}, nfkd)


@cache
def character_table() -> CharacterTable:
    """The release runtime's character facts, read once from package data."""
    data = resources.files(__package__).joinpath(PROPERTIES_RESOURCE).read_bytes()
    return parse_character_table(gzip.decompress(data).decode("ascii"))


@cache
def code_points(name: str) -> frozenset[int]:
    """The code points with one property of `PROPERTIES`."""
    try:
        return character_table().properties[name]
    except KeyError:
        raise ValueError(f"unknown property {name!r}; known: {PROPERTIES}") from None


def nfkd(ch: str) -> str:
    """A character's NFKD decomposition as ICU 75.1 gives it (the character when it has none)."""
    return character_table().nfkd.get(ord(ch), ch)

"""ANSI escape sequences removed as the release's runtime removes them (`Bun.stripANSI`).

oh-my-pi's normalizer strips a text that holds an ESC with Bun 1.3.14's own stripper, a state
machine (`consumeANSI` in Bun's `ANSIHelpers.h`), not the `ansi-regex` pattern: it finds each
introducer (ESC, or the C1 controls CSI U+009B, OSC U+009D, DCS U+0090, SOS U+0098, PM U+009E,
APC U+009F) and consumes the sequences that follow it back to back:

- ESC `[` or CSI: everything up to and including the next final byte (U+0040-U+007E),
  whatever lies between (no check of parameter bytes);
- ESC `]` or OSC: up to BEL, ST (U+009C) or ESC `\\`;
- ESC `P`/`X`/`^`/`_` or DCS/SOS/PM/APC: up to ST or ESC `\\` (a BEL does not end them);
- ESC followed by one of ` #%()*+./`: that and one more character;
- ESC followed by any other character (a control or a non-ASCII one too): the two.

Bun counts in UTF-16 code units: where "one more character" is outside the Basic
Multilingual Plane, only its high surrogate goes and the low one stays in the text (which
the normalizer then drops, but not before it has split a whitespace run).

A sequence still open at the end of the text takes the rest of it; a trailing ESC goes too.
Checked on every code point by the conformance measure `unicode/text`
(`musepi_lab.conformance._unicode`).
"""

from __future__ import annotations

import re

ESC = "\x1b"

# One escape sequence of Bun's state machine. A chain of them back to back is consumed one
# after another, so removing each on its own gives the same text. In order: CSI up to its
# final byte (or the end); OSC up to BEL, ST or ESC `\`, the other strings up to ST or ESC
# `\` (an ESC followed by anything else stays inside, with that character), or the end; ESC
# with one intermediate and one more character; ESC with any one character. Group 1: an
# astral character the sequence ends inside. Every alternative opens with one literal
# character, so the regex engine skips the text between introducers in C.
_CSI_BODY = "[^\x40-\x7e]*+[\x40-\x7e]?"
_OSC_BODY = "(?:[^\x07\x1b\x9c]|\x1b[^\\\\])*+(?:[\x07\x9c]|\x1b\\\\?)?"
_ST_BODY = "(?:[^\x1b\x9c]|\x1b[^\\\\])*+(?:\x9c|\x1b\\\\?)?"
_SEQUENCE_RE = re.compile(
    "|".join(
        [
            f"\x1b\\[{_CSI_BODY}",
            f"\x9b{_CSI_BODY}",
            f"\x1b\\]{_OSC_BODY}",
            f"\x9d{_OSC_BODY}",
            f"\x1b[PX^_]{_ST_BODY}",
            *(f"{c}{_ST_BODY}" for c in ("\x90", "\x98", "\x9e", "\x9f")),
            "\x1b[ #%()*+./]?(?:([\U00010000-\U0010ffff])|[\\s\\S])?",
        ]
    )
)

_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")


def _low_surrogate(ch: str) -> str:
    return chr(0xDC00 + ((ord(ch) - 0x10000) & 0x3FF))


def _sequence(match: re.Match[str]) -> str:
    astral = match.group(1)
    return _low_surrogate(astral) if astral else ""


def strip_ansi(text: str) -> str:
    """`Bun.stripANSI`: the text without its escape sequences (see the module docstring)."""
    if _ASTRAL_RE.search(text) is None:
        return _SEQUENCE_RE.sub("", text)
    return _SEQUENCE_RE.sub(_sequence, text)

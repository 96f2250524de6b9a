"""What the model sees: the LLM context of a session at a leaf, in the MusePi and pi profiles.

`build_session_context` rebuilds the runtime messages (spec §2.1, §2.3), `convert_to_llm`
turns them into provider roles (§2.2), `provider_messages` applies the provider-layer repairs,
and `transcript` is the display view with compactions inline.
"""

from ._build import SessionContext, build_session_context
from ._llm import convert_to_llm
from ._transcript import transcript

__all__ = [
    "SessionContext",
    "build_session_context",
    "convert_to_llm",
    "transcript",
]

"""What a reader is sent: a session's context at a leaf, as the profile would send it."""

from __future__ import annotations

from typing import Any

from .._prompts import PromptSet
from ..compaction._result import CompactionResult, derived_entry_id
from ..context._build import UNSET, build_session_context
from ..context._llm import convert_to_llm, provider_messages
from ..session._session import Session, timestamp_after
from ..strategies._chat_format import to_chat_messages

# The probe run appends compactions with a fixed time and a derived id, so two runs of the
# same grid send byte-identical contexts (and hit the request cache).
_PROBE_ENTRY_SALT = "probe"


def reader_messages(
    session: Session,
    leaf_id: str | None = None,
    *,
    profile: str = "musepi",
    prompts: PromptSet | None = None,
    images: bool = False,
) -> list[dict[str, Any]]:
    """The Chat Completions messages of the context at a leaf (no system message).

    `build_session_context` → `convert_to_llm` (summaries wrapped by the prompt set's
    context templates) → `provider_messages` (pi's provider-layer repairs) →
    `to_chat_messages` (thinking dropped; images as data URLs when `images`, else a
    placeholder).
    """
    leaf = UNSET if leaf_id is None else leaf_id
    context = build_session_context(session, leaf, profile=profile)
    llm = provider_messages(convert_to_llm(context.messages, profile=profile, prompts=prompts))
    return to_chat_messages(llm, images=images)


def compacted_session(
    session: Session, result: CompactionResult | None
) -> tuple[Session, str | None]:
    """The session after a result, and the leaf whose context the agent would send next.

    An appended compaction is the new leaf; a rewrite-only result (masking, `none`) keeps
    the leaf it was made at; no result leaves the session as it is.
    """
    if result is None:
        return session, None
    after = result.apply(
        session,
        timestamp=timestamp_after(session.leaf),
        entry_id=derived_entry_id(session, _PROBE_ENTRY_SALT),
    )
    return after, (None if result.append_entry else result.leaf_id)

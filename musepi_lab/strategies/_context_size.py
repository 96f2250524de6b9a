"""Context size before and after a compaction, counted the same way for every baseline.

The research baselines report `tokens_after` by rebuilding the context the model would see
(`build_session_context` in the settings' profile) and counting it with the run's
`TokenCounter`, so a masked, pruned, truncated or summarized session is measured on equal
terms with the original.
"""

from __future__ import annotations

from ..compaction._result import CompactionResult
from ..context._build import UNSET, build_session_context
from ..session._session import Session
from ._base import CompactionContext

# The measuring copy's entry gets a fixed time (the count never depends on it) and a fresh
# id drawn by `apply`, which also never collides with the session's ids.
_MEASURE_TIMESTAMP = "1970-01-01T00:00:00.000Z"


def first_path_entry_id(session: Session, leaf_id: str | None) -> str | None:
    """Id of the first entry (with an id) on the path to the leaf; None for an empty path.

    Rewrite-only results name it as their `first_kept_entry_id`: nothing is dropped.
    """
    return next((e.id for e in session.path(leaf_id) if e.id is not None), None)


def context_tokens(session: Session, ctx: CompactionContext, leaf_id: str | None = None) -> int:
    """Tokens of the context the model sees at a leaf of `session`.

    Args:
        session: The session.
        ctx: The compaction context (its settings' profile and counter are used).
        leaf_id: The leaf (None: the session leaf).
    """
    context = build_session_context(
        session, UNSET if leaf_id is None else leaf_id, profile=ctx.settings.profile
    )
    return ctx.counter.count_messages(context.messages)


def applied_context_tokens(result: CompactionResult, ctx: CompactionContext) -> int:
    """Tokens of the context after `result` is applied to `ctx.session`.

    An appended compaction becomes the new leaf; a rewrite-only result keeps the leaf the
    compaction was made at.
    """
    after = result.apply(ctx.session, timestamp=_MEASURE_TIMESTAMP)
    return context_tokens(after, ctx, None if result.append_entry else ctx.leaf_id)


def with_tokens_after(result: CompactionResult, ctx: CompactionContext) -> CompactionResult:
    """`result` with `tokens_after` measured by applying it (see `applied_context_tokens`)."""
    return result.copy_with(tokens_after=applied_context_tokens(result, ctx))

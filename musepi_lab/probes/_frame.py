"""Probes as DataFrames: `probes_frame` for probes in hand, `probes_df` for sessions.

`probes_df` takes what every frame function takes (a `Session`, a session file or folder,
or a list of those) and returns the frame, its read problems on it (`problems_of`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..compaction._prepare import prepare_compaction
from ..compaction._settings import CompactionSettings
from ..tokens._counter import TokenCounter
from ._make import ProbeLimits, make_probes, probe_point
from ._model import Probe

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis._load import SessionSource

PROBE_COLUMNS: tuple[str, ...] = (
    "probe_id",
    "session_id",
    "leaf_id",
    "first_kept_entry_id",
    "kind",
    "subkind",
    "scoring",
    "question",
    "reference",
    "exact",
    "source",
    "entry_id",
)
"""Columns of `probes_frame` and `probes_df`, in order."""


def probes_frame(probes: Iterable[Probe]) -> pd.DataFrame:
    """Probes in hand (from `make_probes`) as a DataFrame, one row each, in the order given.

    Raises:
        TypeError: An item is not a `Probe` (for sessions, use `probes_df`).
    """
    import pandas as pd

    rows = []
    for probe in probes:
        if not isinstance(probe, Probe):
            raise TypeError(
                f"probes_frame expects Probes (from make_probes); got {type(probe).__name__}"
                " (probes_df makes the probes of sessions)"
            )
        rows.append(
            {c: (list(probe.exact) if c == "exact" else getattr(probe, c)) for c in PROBE_COLUMNS}
        )
    return pd.DataFrame(rows, columns=list(PROBE_COLUMNS))


def probes_df(
    source: SessionSource,
    *,
    strict: bool = False,
    budget: int | None = None,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    point: str | None = "last-request",
    facts: str = "auto",
    limits: ProbeLimits | None = None,
) -> pd.DataFrame:
    """The probes of each session at one compaction point, one row each (`PROBE_COLUMNS`).

    Each session is prepared for a compaction at the point (`prepare_compaction` with the
    settings at `budget`) and probed with `make_probes`; a session with nothing to compact
    there has no rows. `session_id` is the header id made unique within the call, as in
    `entries_df`; the probes' own ids are unchanged.

    Args:
        source: A `Session`, a session file or folder, or a list of those.
        strict: Raise on read problems instead of keeping them on the frame.
        budget: The keep-recent budget (default: the settings').
        settings: Compaction settings (default: MusePi's).
        counter: Token counter (default: the profile's estimator).
        point: `last-request` (`probe_point`: before the last request answered with a
            tool call), `leaf` or None (the session leaf), or an entry id.
        facts: `auto`, `planted` or `extracted` (as `make_probes`).
        limits: How many probes of each kind.

    Returns:
        The frame, the read problems on it as on every frame (`problems_of(frame)`).

    Raises:
        TypeError: `sessions` is none of those.
        KeyError: `point` is an id that names no entry of a session.
        SessionReadError: A path does not exist; with `strict=True`, a read problem.
    """
    # The frame machinery (and pandas) load on the first call: `import musepi_lab.probes`
    # stays light.
    import pandas as pd

    from ..analysis._load import load_sessions
    from ..analysis._problems import with_problems
    from ..analysis._rows import frame_session_ids
    from ..analysis._sources import check_source

    check_source(source, "probes_df")
    settings = settings or CompactionSettings.musepi()
    if budget is not None:
        settings = settings.copy_with(keep_recent_tokens=budget)
    counter = counter or TokenCounter.for_profile(settings.profile)
    loaded, problems = load_sessions(source, strict=strict)
    frames = []
    for session_id, session in zip(frame_session_ids(loaded), loaded, strict=True):
        if point == "last-request":
            leaf = probe_point(session)
        elif point in (None, "leaf"):
            leaf = session.leaf_id
        elif point in session:
            leaf = point
        else:
            raise KeyError(f"probe point {point!r} is not an entry of session {session.id!r}")
        prep = prepare_compaction(session, settings, counter, leaf_id=leaf) if leaf else None
        if prep is None:
            continue
        frame = probes_frame(make_probes(session, prep, facts=facts, limits=limits))
        frames.append(frame.assign(session_id=session_id))
    frame = pd.concat(frames, ignore_index=True) if frames else probes_frame(())
    return with_problems(frame, problems)

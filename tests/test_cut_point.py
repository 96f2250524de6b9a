"""Cut points, turn starts and `find_cut_point` (spec §4.1, §4.2, §4.6, §8.1, §10).

Token sizes are made exact: an ASCII text of 4·n characters is n tokens for both the pi
estimator (ceil(UTF-16 chars / 4)) and the MusePi one ((UTF-8 bytes + 3) >> 2), so every
expected cut below is worked out by hand in the comments.

The MusePi expectations follow oh-my-pi 18.2.3's `findCutPoint` (pi-agent-core
`src/compaction/compaction.ts`): the oldest valid cut point whose suffix (every entry from it
to the end) is at most the budget, the newest cut point when none is; the turn is judged at
that cut point (user, bashExecution, custom_message and branch_summary start a turn), then
metadata before it is pulled in.
"""

from __future__ import annotations

from typing import Any

import pytest

from musepi_lab.compaction._cut import (
    CutPointResult,
    cut_window,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    is_valid_cut_point,
)
from musepi_lab.session._model import Entry
from musepi_lab.tokens._counter import TokenCounter

PROFILES = ("pi", "musepi")


def words(tokens: int) -> str:
    """A text of exactly `tokens` tokens for both estimators."""
    return "abcd" * tokens


class Chain:
    """Builds a linear list of entries with ids e0, e1, ... (as pi's test helpers)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def add(self, kind: str, **fields: Any) -> int:
        index = len(self.entries)
        record = {
            "type": kind,
            "id": f"e{index}",
            "parentId": f"e{index - 1}" if index else None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            **fields,
        }
        self.entries.append(Entry.from_record(record))
        return index

    def user(self, tokens: int = 1) -> int:
        return self.add(
            "message", message={"role": "user", "content": words(tokens), "timestamp": 0}
        )

    def assistant(self, tokens: int = 1, calls: tuple[str, ...] = ()) -> int:
        content: list[dict] = [{"type": "text", "text": words(tokens)}]
        content += [{"type": "toolCall", "id": c, "name": "read", "arguments": {}} for c in calls]
        return self.add(
            "message",
            message={"role": "assistant", "content": content, "stopReason": "stop", "timestamp": 0},
        )

    def result(self, call: str, tokens: int = 1) -> int:
        return self.add(
            "message",
            message={
                "role": "toolResult",
                "toolCallId": call,
                "toolName": "read",
                "content": [{"type": "text", "text": words(tokens)}],
                "isError": False,
                "timestamp": 0,
            },
        )

    def message(self, role: str, **fields: Any) -> int:
        return self.add("message", message={"role": role, "timestamp": 0, **fields})

    def custom_message(self, tokens: int = 1) -> int:
        return self.add("custom_message", customType="note", content=words(tokens), display=True)

    def branch_summary(self, tokens: int = 1) -> int:
        return self.add("branch_summary", fromId="e0", summary=words(tokens))


def cut(chain: Chain, keep: int, profile: str, start: int = 0, end: int | None = None):
    entries = chain.entries
    end = len(entries) if end is None else end
    return find_cut_point(entries, start, end, keep, counter=TokenCounter(profile), profile=profile)


# -- §8.1 findCutPoint ------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_cut_lands_on_user_or_assistant(profile):
    # pi's test: 10 turns of user + assistant, keep 2500. Tiny messages all fit, so the
    # cut is the first cut point; the role check is what pi asserts.
    chain = Chain()
    for _ in range(10):
        chain.user()
        chain.assistant()
    result = cut(chain, 2500, profile)
    assert chain.entries[result.first_kept_entry_index].role in ("user", "assistant")


@pytest.mark.parametrize(
    ("profile", "expected"),
    [("pi", CutPointResult(3, 2, True)), ("musepi", CutPointResult(4, -1, False))],
)
def test_cut_by_token_differences(profile, expected):
    # Same shape with sizes that matter: users 100 tokens, assistants 200. Walking back
    # from e19: 200, 300, 500, ... e4 → 2400, e3 (assistant) → 2600 ≥ 2500. pi cuts at 3,
    # inside the turn that e2 starts; MusePi keeps the oldest suffix that fits: from e4.
    chain = Chain()
    for _ in range(10):
        chain.user(100)
        chain.assistant(200)
    assert cut(chain, 2500, profile) == expected
    # A budget reached exactly on a user message: e18 + e19 = 300 → cut at the user e18.
    assert cut(chain, 300, profile) == CutPointResult(18, -1, False)


@pytest.mark.parametrize("profile", PROFILES)
def test_single_assistant_keeps_start(profile):
    # pi's "no valid cut points" test uses one assistant message (which *is* a cut
    # point); the budget is never reached, so the default first cut point, 0, is kept.
    chain = Chain()
    chain.assistant()
    assert cut(chain, 1000, profile).first_kept_entry_index == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_no_valid_cut_points_returns_start(profile):
    chain = Chain()
    chain.result("c1", 50)
    chain.add("thinking_level_change", thinkingLevel="high")
    chain.result("c2", 50)
    assert cut(chain, 10, profile) == CutPointResult(0, -1, False)
    assert cut(chain, 10, profile, start=1) == CutPointResult(1, -1, False)


@pytest.mark.parametrize("profile", PROFILES)
def test_everything_fits_keeps_from_first_cut_point(profile):
    chain = Chain()
    chain.user()
    chain.assistant()
    chain.user()
    chain.assistant()
    assert cut(chain, 50000, profile).first_kept_entry_index == 0


@pytest.mark.parametrize(
    ("profile", "expected"),
    [("pi", CutPointResult(4, 2, True)), ("musepi", CutPointResult(5, 2, True))],
)
def test_split_turn_at_assistant_in_turn_two(profile, expected):
    # pi's split-turn test with sizes that force the cut into turn 2:
    # e0 Turn 1, e1 A1, e2 Turn 2, e3 A2-1, e4 A2-2 (2000), e5 A2-3 (2000); keep 3000.
    # Walk: e5 → 2000, e4 → 4000 ≥ 3000 → pi cuts at e4 (assistant); MusePi keeps e5, the
    # oldest group that fits. Either way a split, the turn starts at e2.
    chain = Chain()
    chain.user()
    chain.assistant()
    chain.user()
    chain.assistant(10)
    chain.assistant(2000)
    chain.assistant(2000)
    result = cut(chain, 3000, profile)
    assert chain.entries[result.first_kept_entry_index].role == "assistant"
    assert result == expected


# -- §4.1 cut points and turn starts ----------------------------------------------------
def test_valid_cut_points_by_entry_kind():
    chain = Chain()
    chain.user()  # 0 yes
    chain.assistant(calls=("c",))  # 1 yes
    chain.result("c")  # 2 never a tool result
    chain.message("bashExecution", command="ls", output="x")  # 3 yes
    chain.message("custom", customType="n", content="x", display=True)  # 4 pi only
    chain.message("branchSummary", summary="s", fromId="e0")  # 5 yes
    chain.message("compactionSummary", summary="s", tokensBefore=1)  # 6 yes
    chain.message("hookMessage", customType="n", content="x")  # 7 MusePi only
    chain.custom_message()  # 8 yes
    chain.branch_summary()  # 9 yes
    chain.add("compaction", summary="s", firstKeptEntryId="e0", tokensBefore=1)  # 10 no
    chain.add("model_change", provider="p", modelId="m")  # 11 no
    chain.add("label", targetId="e0", label="x")  # 12 no
    chain.add("custom", customType="state", data={})  # 13 no
    entries = chain.entries
    assert find_valid_cut_points(entries, 0, len(entries), profile="pi") == [0, 1, 3, 4, 5, 6, 8, 9]
    # oh-my-pi 18.2.3 findValidCutPoints: no case for the `custom` role.
    assert find_valid_cut_points(entries, 0, len(entries), profile="musepi") == [
        0, 1, 3, 5, 6, 7, 8, 9,
    ]  # fmt: skip
    assert find_valid_cut_points(entries, 2, 5, profile="pi") == [3, 4]
    assert is_valid_cut_point(entries[7], profile="musepi")
    assert not is_valid_cut_point(entries[7], profile="pi")


def test_turn_start_index():
    chain = Chain()
    chain.user()  # 0
    chain.assistant(calls=("c",))  # 1
    chain.result("c")  # 2
    chain.message("bashExecution", command="ls", output="")  # 3
    chain.assistant()  # 4
    chain.custom_message()  # 5
    chain.assistant()  # 6
    entries = chain.entries
    assert find_turn_start_index(entries, 2, 0) == 0
    assert find_turn_start_index(entries, 4, 0) == 3  # bashExecution starts a turn
    assert find_turn_start_index(entries, 6, 0) == 5  # custom_message starts a turn
    assert find_turn_start_index(entries, 2, 1) == -1  # nothing in [1, 2]
    assert find_turn_start_index(entries, 0, 0) == 0


# -- §4.2 details and the quirks of §10 -------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_cut_never_at_tool_result(profile):
    # e4 (result, 500) crosses keep 300 → next cut point at or after it is e5.
    chain = Chain()
    chain.user()
    chain.assistant(calls=("a", "b"))
    chain.result("a", 10)
    chain.result("b", 500)
    chain.assistant(10)
    chain.user(10)
    assert chain.entries[3].role == "toolResult"
    result = cut(chain, 300, profile)
    assert result.first_kept_entry_index == 4
    assert chain.entries[4].role == "assistant"


@pytest.mark.parametrize(
    ("profile", "expected"),
    [("pi", CutPointResult(0, -1, False)), ("musepi", CutPointResult(1, 0, True))],
)
def test_trailing_tool_result_over_budget_keeps_everything(profile, expected):
    # The crossing entry (e2, a tool result) lies after the last cut point (e1): pi's loop
    # finds no cut point at or after it and keeps its default, the first cut point. MusePi
    # keeps the newest group (from e1) even though it alone is over the budget.
    chain = Chain()
    chain.user()
    chain.assistant(calls=("a",))
    chain.result("a", 5000)
    assert cut(chain, 100, profile) == expected


def test_pi_walk_counts_only_message_entries():
    # e1 custom_message of 1000 tokens. pi: e2 100, (e1 skipped), e0 → 200 ≥ 150: cut at
    # e0. MusePi (§4.6): e2 100 fits, e1 → 1100 does not: keep from e2, whose turn the
    # custom_message e1 starts.
    chain = Chain()
    chain.user(100)
    chain.custom_message(1000)
    chain.assistant(100)
    assert cut(chain, 150, "pi") == CutPointResult(0, -1, False)
    assert cut(chain, 150, "musepi") == CutPointResult(2, 1, True)
    # With room for it the custom_message is the cut, and it starts a turn: no split.
    assert cut(chain, 1100, "musepi") == CutPointResult(1, -1, False)


def test_branch_summary_counts_only_for_musepi():
    chain = Chain()
    chain.user(100)
    chain.branch_summary(1000)
    chain.assistant(100)
    assert cut(chain, 150, "pi").first_kept_entry_index == 0
    assert cut(chain, 150, "musepi") == CutPointResult(2, 1, True)
    assert cut(chain, 1100, "musepi") == CutPointResult(1, -1, False)


def test_cut_at_bash_execution_is_a_split_with_empty_prefix():
    # e2 bashExecution (command+output 400 chars = 100 tokens) crosses keep 150 with e3.
    chain = Chain()
    chain.user(100)
    chain.assistant(100)
    chain.message("bashExecution", command="ls", output=words(100)[:-2])
    chain.assistant(100)
    assert cut(chain, 150, "pi") == CutPointResult(2, 2, True)
    # MusePi: only e3 fits 150; its turn starts at the bash command e2. With room for e2
    # (100 + 101: the MusePi estimate of a bash message adds a token), the cut is the bash
    # command, which starts a turn: no split.
    assert cut(chain, 150, "musepi") == CutPointResult(3, 2, True)
    assert cut(chain, 205, "musepi") == CutPointResult(2, -1, False)


def test_metadata_before_user_turns_previous_turn_into_prefix():
    # Crossing at the user e3; the thinking change e2 is pulled into the kept region, so
    # the cut entry is no longer a user message and the previous turn (from e0) becomes
    # the split turn's prefix — the pi quirk of §4.2 step 5.
    chain = Chain()
    chain.user(10)
    chain.assistant(500)
    chain.add("thinking_level_change", thinkingLevel="high")
    chain.user(100)
    chain.assistant(100)
    assert cut(chain, 150, "pi") == CutPointResult(2, 0, True)
    # MusePi judges the turn before the pull-back: the user e3 fits 200, starts a turn, and
    # the thinking change joins the kept region without making it a split.
    assert cut(chain, 200, "musepi") == CutPointResult(2, -1, False)


@pytest.mark.parametrize(("profile", "keep"), [("pi", 150), ("musepi", 250)])
def test_pull_back_gathers_several_metadata_entries(profile, keep):
    chain = Chain()
    chain.user(10)
    chain.assistant(500)
    chain.add("model_change", provider="p", modelId="m")  # 2
    chain.add("label", targetId="e0", label="x")  # 3
    chain.add("custom", customType="state", data={})  # 4
    chain.assistant(100)  # 5
    chain.assistant(100)  # 6
    # pi: crossing at e5 (150). MusePi: e5 is the oldest cut point that fits (200 ≤ 250).
    # Then pulled back over e4, e3, e2 to e2 (e1 is a message).
    result = cut(chain, keep, profile)
    assert result.first_kept_entry_index == 2
    assert result == CutPointResult(2, 0, True)


@pytest.mark.parametrize(("profile", "keep"), [("pi", 150), ("musepi", 205)])
def test_pull_back_stops_at_compaction_and_start(profile, keep):
    chain = Chain()
    chain.user(10)
    chain.add("compaction", summary="s", firstKeptEntryId="e0", tokensBefore=1)  # 1
    chain.add("thinking_level_change", thinkingLevel="low")  # 2
    chain.user(100)  # 3
    chain.assistant(100)  # 4
    # pi crosses at e3 (200 ≥ 150); in MusePi e3 is the oldest fit (200 ≤ 205, e0 adds 10).
    assert cut(chain, keep, profile).first_kept_entry_index == 2  # stops after e1
    # With the window starting at e2, the pull-back cannot pass the window start.
    assert cut(chain, keep, profile, start=2).first_kept_entry_index == 2


def test_musepi_accepts_hook_message_cut_points():
    chain = Chain()
    chain.user(10)
    chain.assistant(10)
    chain.message("hookMessage", customType="n", content=words(100))  # 2
    chain.assistant(100)  # 3
    # pi: e3 100, e2 (a message, counted) → 200 ≥ 150; e2 is no pi cut point, so pi moves
    # on to e3. MusePi with keep 205: e2's suffix 200 fits, e1's 210 does not → cut at e2.
    assert cut(chain, 205, "musepi").first_kept_entry_index == 2
    assert cut(chain, 150, "pi").first_kept_entry_index == 3


def test_bad_arguments_raise():
    chain = Chain()
    chain.user()
    with pytest.raises(IndexError):
        find_cut_point(chain.entries, 0, 5, 10)
    with pytest.raises(IndexError):
        find_cut_point(chain.entries, 1, 0, 10)
    with pytest.raises(ValueError):
        find_cut_point(chain.entries, 0, 1, 10, profile="omp")
    with pytest.raises(ValueError):
        cut_window(chain.entries, 0, 1, counts=[1, 2])

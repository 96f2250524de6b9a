"""Judge agreement (issue 16 item 5): a labelled set of answers of known quality for the
sample's judged probes; the loopback judge must rank every probe's answers in the labelled
order, through the real judge request on the loopback server."""

from __future__ import annotations

import itertools
import json

import pytest
from _corpus import REPO_ROOT

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.formats import read_session
from musepi_lab.llm import OpenAICompatibleSummarizer
from musepi_lab.probes import make_probes
from musepi_lab.probes._ask import exact_score, judge_request, parse_judgement
from musepi_lab.probes._loopback import overlap_judge
from musepi_lab.probes._make import probe_point
from musepi_lab.testing import StubOpenAIServer
from musepi_lab.tokens import TokenCounter

LABELS = json.loads((REPO_ROOT / "tests" / "data" / "probe-judge-labels.json").read_text())


@pytest.fixture(scope="module")
def probes():
    session = read_session(REPO_ROOT / LABELS["session"])
    # The labels were written for the probes of this preparation under the release's boundary
    # rule (the summarized span re-opens the previous compaction's kept region); the judge's
    # agreement does not depend on which span the probes come from.
    settings = CompactionSettings.musepi(boundary="release", keep_recent_tokens=LABELS["budget"])
    prep = prepare_compaction(
        session, settings, TokenCounter("musepi"), leaf_id=probe_point(session)
    )
    return {p.probe_id: p for p in make_probes(session, prep)}


def test_the_labelled_set_covers_the_judged_kinds(probes) -> None:
    labelled = [probes[item["probe_id"]] for item in LABELS["probes"]]
    assert all(p.scoring == "judge" for p in labelled)
    assert {p.kind for p in labelled} == {"artifact", "decision", "continuation"}
    for item in LABELS["probes"]:
        assert probes[item["probe_id"]].subkind == item["subkind"]
        assert sorted(a["quality"] for a in item["answers"]) == [0, 1, 2, 3]


def test_loopback_judge_ranks_every_labelled_pair(probes) -> None:
    prompts = PromptSet.default()
    pairs = agreed = inverted = 0
    with StubOpenAIServer(responder=overlap_judge) as server:
        judge = OpenAICompatibleSummarizer(base_url=server.base_url, model="stub-judge")
        for item in LABELS["probes"]:
            probe = probes[item["probe_id"]]
            scored = []
            for labelled in item["answers"]:
                reply = judge.summarize(judge_request(probe, labelled["answer"], prompts))
                judgement = parse_judgement(reply.text)
                assert judgement.error is None
                scored.append((labelled["quality"], judgement.score))
            for (qa, sa), (qb, sb) in itertools.combinations(scored, 2):
                pairs += 1
                agreed += (sa > sb) == (qa > qb) and sa != sb
                inverted += (sa - sb) * (qa - qb) < 0
    assert pairs == 6 * len(LABELS["probes"])
    # The word-overlap judge never ranks a worse answer above a better one; it ties a vague
    # answer with a wrong one when neither shares words with the reference (5 of 36 pairs on
    # this set: 86% strict agreement).
    assert inverted == 0
    assert agreed / pairs >= 0.8


def test_unreadable_judge_replies_are_errors_not_scores() -> None:
    assert parse_judgement("great answer").error is not None
    assert parse_judgement('{"correctness": 5, "completeness": "high"}').error is not None
    bad = parse_judgement('{"correctness": 9, "completeness": -1, "specificity": 2.6}')
    assert dict(bad.scores) == {"correctness": 5, "completeness": 0, "specificity": 3}
    assert bad.score == pytest.approx(8 / 15)


def test_exact_scores_are_shares_of_verbatim_strings() -> None:
    assert exact_score(("a/b.py", "c/d.py"), "I touched a/b.py only") == 0.5
    assert exact_score(("KeyError: x",), "`KeyError: x`") == 1.0
    with pytest.raises(ValueError):
        exact_score((), "anything")

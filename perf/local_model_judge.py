"""Judge agreement on the labelled probe pairs (issue 28): the local model against the
word-overlap stub judge.

`tests/data/probe-judge-labels.json` holds four hand-written answers of known quality (right,
partial, vague, wrong) for each of the sample's judged probes (36 ordered pairs in all). Each
answer is judged through the real judge request (`judge_request` + `parse_judgement`) by the
stub judge (`overlap_judge` behind `StubOpenAIServer`) and by SmolLM2-135M-Instruct on
llama-cpp-python's server (`LocalModelServer`, temperature 0). Prints, per judge: pairs
ordered as labelled, inverted, tied, replies that were not the JSON asked for, and the
seconds per judgement.

    python perf/local_model_judge.py          # needs `make install-local`
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time

from _harness import REPO

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction import CompactionSettings, prepare_compaction
from musepi_lab.formats import read_session
from musepi_lab.llm import LocalModelMissing, LocalModelServer, OpenAICompatibleSummarizer
from musepi_lab.probes import (
    judge_request,
    make_probes,
    overlap_judge,
    parse_judgement,
    probe_point,
)
from musepi_lab.testing import StubOpenAIServer
from musepi_lab.tokens import TokenCounter

LABELS = json.loads((REPO / "tests" / "data" / "probe-judge-labels.json").read_text())
JUDGE_CAP = 96


def labelled_probes() -> list[tuple[object, list[dict[str, object]]]]:
    """Each labelled probe (made as tests/test_probes_judge.py makes it) and its answers."""
    session = read_session(REPO / LABELS["session"])
    settings = CompactionSettings.musepi(boundary="release", keep_recent_tokens=LABELS["budget"])
    prep = prepare_compaction(
        session, settings, TokenCounter("musepi"), leaf_id=probe_point(session)
    )
    probes = {p.probe_id: p for p in make_probes(session, prep)}
    return [(probes[item["probe_id"]], item["answers"]) for item in LABELS["probes"]]


def agreement(judge: OpenAICompatibleSummarizer) -> dict[str, float]:
    """Pairs agreed, inverted, tied; unreadable replies; seconds per judgement."""
    prompts = PromptSet.default()
    counts = {"pairs": 0, "agreed": 0, "inverted": 0, "tied": 0, "unreadable": 0, "judged": 0}
    started = time.perf_counter()
    for probe, answers in labelled_probes():
        scored = []
        for labelled in answers:
            reply = judge.summarize(judge_request(probe, str(labelled["answer"]), prompts))
            judgement = parse_judgement(reply.text)
            counts["judged"] += 1
            counts["unreadable"] += judgement.error is not None
            scored.append((int(labelled["quality"]), judgement.score))
        for (qa, sa), (qb, sb) in itertools.combinations(scored, 2):
            counts["pairs"] += 1
            if math.isnan(sa) or math.isnan(sb) or sa == sb:
                counts["tied"] += 1
            elif (sa > sb) == (qa > qb):
                counts["agreed"] += 1
            else:
                counts["inverted"] += 1
    seconds = time.perf_counter() - started
    return {**counts, "s_per_judgement": seconds / max(1, counts["judged"])}


def main() -> int:
    rows = {}
    with StubOpenAIServer(responder=overlap_judge) as stub:
        rows["word-overlap stub"] = agreement(
            OpenAICompatibleSummarizer(base_url=stub.base_url, model="stub-judge")
        )
    try:
        with LocalModelServer() as local:
            rows[f"{local.alias} (local)"] = agreement(
                local.summarizer(temperature=0.0, max_output_tokens=JUDGE_CAP)
            )
    except LocalModelMissing as exc:
        print(f"note: {exc}", file=sys.stderr)
    print(
        "| judge | pairs | ordered as labelled | inverted | tied or unreadable | unreadable replies | s / judgement |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['pairs']} | {r['agreed']} ({r['agreed'] / r['pairs']:.0%}) | "
            f"{r['inverted']} | {r['tied']} | {r['unreadable']} of {r['judged']} | "
            f"{r['s_per_judgement']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

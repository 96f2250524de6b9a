"""Probe-based evaluation of compactions: questions from the session, a reader, a judge.

`make_probes` turns one compaction point into questions of four kinds (recall, artifact,
continuation, decision) with reference answers from the part compacted away; `run_probes`
compacts sessions with strategies at budgets, asks a reader model each probe over the
compacted context and scores the answers (exact match where the reference is exact, a judge
model on a declared rubric elsewhere), through the one model seam.
"""

from ._ask import (
    JUDGE_DIMENSIONS,
    Judgement,
    judge_prompt,
    judge_request,
    parse_judgement,
    reader_request,
)
from ._frame import PROBE_COLUMNS, probes_df, probes_frame
from ._loopback import echo_reader, overlap_judge
from ._make import ProbeLimits, make_probes, probe_point
from ._model import PROBE_KINDS, Probe
from ._options import ProbeOptions
from ._run import (
    ProbeModels,
    answer_probe,
    cell_probes,
    probe_cells,
    probe_score_table,
    run_probe_answers,
    run_probes,
    score_probes,
)

__all__ = [
    "JUDGE_DIMENSIONS",
    "PROBE_COLUMNS",
    "PROBE_KINDS",
    "Judgement",
    "Probe",
    "ProbeLimits",
    "ProbeModels",
    "ProbeOptions",
    "answer_probe",
    "cell_probes",
    "echo_reader",
    "judge_prompt",
    "judge_request",
    "make_probes",
    "overlap_judge",
    "parse_judgement",
    "probe_cells",
    "probe_point",
    "probe_score_table",
    "probes_df",
    "probes_frame",
    "reader_request",
    "run_probe_answers",
    "run_probes",
    "score_probes",
]

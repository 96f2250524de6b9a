"""Probe-based evaluation of compactions: questions from the session, a reader, a judge.

`make_probes` turns one compaction point into questions of four kinds (recall, artifact,
continuation, decision) with reference answers from the part compacted away; `run_probes`
compacts sessions with strategies at budgets, asks a reader model each probe over the
compacted context and scores the answers (exact match where the reference is exact, a judge
model on a declared rubric elsewhere), through the one model seam.
"""

from ._frame import probes_df, probes_frame
from ._make import ProbeLimits, make_probes
from ._model import Probe
from ._options import ProbeOptions
from ._run import ProbeModels, probe_score_table, run_probes, score_probes

__all__ = [
    "Probe",
    "ProbeLimits",
    "ProbeModels",
    "ProbeOptions",
    "make_probes",
    "probe_score_table",
    "probes_df",
    "probes_frame",
    "run_probes",
    "score_probes",
]

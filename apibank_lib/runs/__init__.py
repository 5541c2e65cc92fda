"""Run folders: planning, answering, storing, scoring, merging shards, trials and costs.

* :mod:`~apibank_lib.runs.folder`: ``RunConfig``, ``plan``, ``RunFolder`` and its typed records.
* :mod:`~apibank_lib.runs.runner`: ``run`` (answer, resume, summarise); :mod:`~apibank_lib.runs.scoring`: ``score_run``, ``scored``.
* :mod:`~apibank_lib.runs.merge`, :mod:`~apibank_lib.runs.shards`, :mod:`~apibank_lib.runs.subsets`,
  :mod:`~apibank_lib.runs.trials`, :mod:`~apibank_lib.runs.costs`.
* :mod:`~apibank_lib.runs.toolrl`, :mod:`~apibank_lib.runs.toolalpaca`: other benchmarks' files answered as runs.
"""

from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import JudgmentRecord, PredictionRecord
from apibank_lib.runs.runner import RunResult, RunStopped, run
from apibank_lib.runs.scoring import score_run

__all__ = ["RunConfig", "RunFolder", "PredictionRecord", "JudgmentRecord", "run", "RunResult", "RunStopped", "score_run"]

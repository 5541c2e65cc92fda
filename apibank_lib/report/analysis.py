"""Tables of results: the paper's layouts, with confidence intervals, breakdowns, errors and the step funnel.

Everything a notebook shows comes from here, as pandas DataFrames; notebooks
only call these functions, and :func:`save_table` writes any of them as CSV and
Markdown under the results folder. This module gathers them; each subject has a
module of its own in :mod:`apibank_lib.report`: :mod:`.files` (where tables go),
:mod:`.loading` (which runs), :mod:`.main_table`, :mod:`.comparisons`
(breakdowns, paired tests, trials), :mod:`.failures` (errors and the step
funnel), :mod:`.data_tables` and :mod:`.training_tables`.

Conventions:

* A run is a scored run folder (:class:`ScoredRun`), labelled by its model (as
  the backend names it), prompt mode (chat, tools, completion, reference),
  protocol and data (``bundled`` or the release folder's name).
* Accuracy is in percent, as in the paper; intervals are 95% cluster-bootstrap
  intervals over dialogues (level-3 items), seeded (:mod:`apibank_lib.core.stats`).
* "Total" accuracy is the micro average over every API-call sample of the three
  levels (level-3 steps included); "Total" ROUGE-L the mean over every reply.
  The paper does not say how it aggregated its Total columns.
* Figures from elsewhere carry ``source = "reported"``; ours ``"measured here"``.
"""

from apibank_lib.core.paths import figures_dir, results_dir
from apibank_lib.report.comparisons import breakdown, paired_table, paired_tables, sample_success_rates, trials_table
from apibank_lib.report.data_tables import calls_by_domain, check_release, level_statistics_table, statistics_table
from apibank_lib.report.failures import (
    FUNNEL_STAGES,
    PAPER_SEVEN,
    error_counts,
    error_distribution,
    failure_examples,
    funnel,
)
from apibank_lib.report.files import save_table, use_data
from apibank_lib.report.loading import by_model, load_runs, on_common_samples, select
from apibank_lib.report.main_table import (
    ABILITIES,
    COST_COLUMNS,
    EPISODES_COLUMN,
    ITEMS_COLUMN,
    REPORTED_COLUMNS,
    TIMED_COLUMNS,
    compact_main_table,
    compare_runs,
    count_column,
    main_table,
    units_column,
)
from apibank_lib.report.training_tables import (
    adapter_training_samples,
    corpus_vocabulary,
    seen_in_training,
    toolalpaca_table,
    training_data_table,
    training_statistics_table,
)
from apibank_lib.runs.scoring import ScoredRun

__all__ = [
    "ScoredRun",
    "load_runs",
    "results_dir",
    "figures_dir",
    "use_data",
    "save_table",
    "main_table",
    "compact_main_table",
    "COST_COLUMNS",
    "TIMED_COLUMNS",
    "count_column",
    "units_column",
    "ITEMS_COLUMN",
    "EPISODES_COLUMN",
    "REPORTED_COLUMNS",
    "compare_runs",
    "breakdown",
    "paired_table",
    "paired_tables",
    "trials_table",
    "sample_success_rates",
    "select",
    "by_model",
    "on_common_samples",
    "error_counts",
    "error_distribution",
    "failure_examples",
    "funnel",
    "FUNNEL_STAGES",
    "statistics_table",
    "level_statistics_table",
    "calls_by_domain",
    "check_release",
    "toolalpaca_table",
    "corpus_vocabulary",
    "seen_in_training",
    "ABILITIES",
    "PAPER_SEVEN",
    "adapter_training_samples",
    "training_data_table",
    "training_statistics_table",
]

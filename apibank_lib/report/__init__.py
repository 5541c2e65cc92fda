"""Tables, figures, the explorer and the notebooks' helpers.

* :mod:`~apibank_lib.report.analysis`: every table the notebooks show, gathered from one module per subject:
  :mod:`~.files` (CSV and Markdown under the results folder), :mod:`~.loading` (scored runs), :mod:`~.cells`
  (a cell with its interval), :mod:`~.main_table`, :mod:`~.comparisons` (breakdowns, paired tests, trials),
  :mod:`~.failures` (errors, the step funnel), :mod:`~.data_tables`, :mod:`~.training_tables`;
  :mod:`~apibank_lib.report.plots`: the figures.
* :mod:`~apibank_lib.report.compounding`, :mod:`~apibank_lib.report.transfer`, :mod:`~apibank_lib.report.retrieval`,
  :mod:`~apibank_lib.report.toolrl_cross`: the tables of one question each.
* :mod:`~apibank_lib.report.workbench` (running models), :mod:`~apibank_lib.report.sandbox_demo` (notebook 01),
  :mod:`~apibank_lib.report.explorer`: what the notebooks call.
* :mod:`~apibank_lib.report.reproduce`, :mod:`~apibank_lib.report.notebook_files`: executing and pairing the notebooks.
"""

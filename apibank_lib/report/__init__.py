"""Tables, figures, the explorer and the notebooks' helpers.

* :mod:`~apibank_lib.report.analysis`: the tables (main table with intervals, breakdowns, paired tests ...),
  written as CSV and Markdown; :mod:`~apibank_lib.report.plots`: the figures.
* :mod:`~apibank_lib.report.compounding`, :mod:`~apibank_lib.report.transfer`, :mod:`~apibank_lib.report.retrieval`,
  :mod:`~apibank_lib.report.toolrl_cross`: the tables of one question each.
* :mod:`~apibank_lib.report.workbench`, :mod:`~apibank_lib.report.explorer`: what the notebooks call.
* :mod:`~apibank_lib.report.reproduce`, :mod:`~apibank_lib.report.notebook_files`: executing and pairing the notebooks.
"""

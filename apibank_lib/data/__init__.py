"""Benchmarks and corpora: official releases and our files read, errata, our benchmark built from its sources,
figures reported elsewhere, the training-data standards.

* :mod:`~apibank_lib.data.datasets`: ``Benchmark`` (``load_benchmark``), sample cutting, statistics.
* :mod:`~apibank_lib.data.formats`: the official layout, our corpus, ToolAlpaca's and ToolRL's files.
* :mod:`~apibank_lib.data.errata`, :mod:`~apibank_lib.data.authoring`, :mod:`~apibank_lib.data.reported`,
  :mod:`~apibank_lib.data.check_train` (``apibank check-train``).
"""

from apibank_lib.data.datasets import Benchmark, cut_samples, load_benchmark, statistics

__all__ = ["Benchmark", "cut_samples", "load_benchmark", "statistics"]

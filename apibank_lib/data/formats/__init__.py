"""On-disk formats: readers and writers of the official API-Bank layout, the harvesters, and training-data formats.

* :mod:`apibank_lib.data.formats.official`: dialogue JSONL files, ``level-3.json``,
  rendered test data, API descriptions read from a release's sources.
* :mod:`apibank_lib.data.formats.harvest`: databases rebuilt from a release's gold results.
* :mod:`apibank_lib.data.formats.train_corpus`: our training corpus (one YAML file per domain).
* :mod:`apibank_lib.data.formats.toolalpaca`: ToolAlpaca's training and evaluation files, converted to ours.
"""

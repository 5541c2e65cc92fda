"""On-disk formats: readers and writers of the official API-Bank layout, and the harvesters.

* :mod:`apibank_lib.formats.official`: dialogue JSONL files, ``level-3.json``,
  rendered test data, API descriptions read from a release's sources.
* :mod:`apibank_lib.formats.harvest`: databases rebuilt from a release's gold results.
"""

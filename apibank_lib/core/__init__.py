"""What every other stage stands on: plain data types, the one exception hierarchy, every path, call text parsed
and formatted, cluster-bootstrap intervals, ROUGE-L.

* :mod:`~apibank_lib.core.types`: ``ApiCall``, ``Dialogue``, ``Context``, the typed samples, ``Episode``.
* :mod:`~apibank_lib.core.errors`: ``ApibankError`` and its subclasses.
* :mod:`~apibank_lib.core.paths`: the project, its data, runs, results and figures per data source.
* :mod:`~apibank_lib.core.calls`: ``[Api(key='value')]`` text, ours and the original's reading.
* :mod:`~apibank_lib.core.stats`: intervals over dialogues, paired tests, ``MIN_CLUSTERS``.
* :mod:`~apibank_lib.core.replies`: ROUGE-L; :mod:`~apibank_lib.core.shares`, :mod:`~apibank_lib.core.yamlfile`: small readers.
"""

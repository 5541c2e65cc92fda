"""The engines ToolSearcher searches with: the packaged MiniLM encoder (numpy, ONNX), embedders and their cache,
the embedding search over tool metadata, and the retrievers by name (``embedding``, ``bm25``, ``hybrid`` ...).
The retrieval benchmark that compares them is :mod:`apibank_lib.report.retrieval`."""

"""The workbench from the tools researchers already use, each a thin layer over the stages below it.

* :mod:`~apibank_lib.integrations.hf_datasets`: the benchmark and the training corpora as Hugging Face ``datasets``
  in the OpenAI messages-and-tools layout (``apibank export --format hf``), rendered by the chat prompt the
  evaluation uses.
* :mod:`~apibank_lib.integrations.inspect_task`: API-Bank as inspect_ai tasks (``inspect eval
  apibank_lib/api_bank``), judged by our :class:`~apibank_lib.grading.grader.Grader`; an inspect log becomes one of
  our run folders (``apibank import-inspect``).
* :mod:`~apibank_lib.integrations.mcp_server`: a level's tools served over the Model Context Protocol
  (``apibank mcp``), one isolated sandbox per session, every session written as an episode our grader scores.

Each needs an optional extra (``datasets``, ``inspect``, ``mcp``); importing this package needs none of them.
"""

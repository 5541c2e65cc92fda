"""Training-data synthesis: the five agents (domains, APIs, requests, dialogues, tester) and their pipeline.

* :mod:`apibank_lib.synthesis.agents`: the four model agents' prompts and strict parsers, and the tester as stage 5.
* :mod:`apibank_lib.synthesis.pipeline`: the stages run in order over any backend, resumable, deduplicated,
  with per-stage counts and token cost (``apibank synthesize``).
* :mod:`apibank_lib.data.check_train`: the tester's rules, usable on any corpus file (``apibank check-train PATH``).
"""

"""Training-data synthesis: the five agents (domains, APIs, requests, dialogues, tester) and their pipeline.

* :mod:`apibank_lib.synthesis.tester`: the tester's rules, usable on any corpus
  file (``apibank check-train PATH``).
"""

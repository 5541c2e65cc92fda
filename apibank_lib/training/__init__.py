"""Improving models: training examples from dialogues, the fine-tuning recipe, shipped adapters.

* :mod:`apibank_lib.training.export`: (prompt, target) pairs rendered as evaluation renders samples.
* :mod:`apibank_lib.training.recipe`: LoRA (or full) fine-tuning, loss on the target only, resumable.
* :mod:`apibank_lib.models.gguf_lora`: a PEFT adapter as a llama.cpp adapter, for fast evaluation.
* :mod:`apibank_lib.models.catalog`: the shipped small Lynx and ``base+adapter`` model targets.
"""

"""What a model is shown and how its answer is read.

* :mod:`~apibank_lib.prompting.modes`: the prompt modes (``chat``, ``paper``, ``completion``).
* :mod:`~apibank_lib.prompting.prompts`: the paper's text prompt and the target text of a sample.
* :mod:`~apibank_lib.prompting.chat`, :mod:`~apibank_lib.prompting.chat_template`: chat turns with tools as JSON
  Schema, rendered by a model's own template.
* :mod:`~apibank_lib.prompting.toolcalls`: tool calls read from every answer format.
* :mod:`~apibank_lib.prompting.schemas`: API descriptions without implementations.
"""

from apibank_lib.prompting.prompts import Prompt, build_prompt, target_text

__all__ = ["Prompt", "build_prompt", "target_text"]

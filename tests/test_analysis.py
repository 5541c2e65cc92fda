"""Tables of results: ROUGE-L under both protocols, the funnel on scripted predictions, labels, the main table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apibank_lib.core.replies import rouge_l, rouge_score_l
from apibank_lib.core.stats import MIN_CLUSTERS
from apibank_lib.core.types import ResponseSample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.data.reported import PAPER_MAIN_RESULTS
from apibank_lib.env.protocols import PAPER, V2
from apibank_lib.grading.grader import Grader
from tests.scripted import ScriptedBackend
from apibank_lib.prompting.prompts import target_text
from apibank_lib.report import analysis
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.runner import run


def test_rouge_l_of_both_packages_by_hand() -> None:
    # hypothesis "the cat sat", reference "the cat sat on the mat": the longest common subsequence has 3 tokens.
    # rouge-score: P = 3/3, R = 3/6, F = 2/3. The rouge package counts the reference's tokens as a set
    # (the, cat, sat, on, mat: 5), so R = 3/5 and F = 0.75.
    assert rouge_score_l("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)
    assert rouge_l("the cat sat", "the cat sat on the mat") == pytest.approx(0.75, abs=1e-6)
    # rouge-score lower-cases and drops punctuation; the rouge package does neither (only "sat" matches).
    assert rouge_score_l("The Cat sat.", "the cat sat") == 1.0
    assert rouge_l("The Cat sat.", "the cat sat") == pytest.approx(1 / 3, abs=1e-6)
    assert rouge_score_l("...", "a reference") == 0.0 and rouge_l("...", "a reference") == 0.0


def test_replies_under_each_protocol(bench: Benchmark) -> None:
    sample = ResponseSample(1, "d", 1, (), (), "the cat sat")
    # paper: the rouge package, "AI:" kept as a word (P = 3/4, R = 1), rounded to 4 decimals as the original did.
    paper = Grader(bench, PAPER).reply_scores(sample, "AI: the cat sat")
    assert paper == {"rouge": 0.8571, "rouge-score": pytest.approx(6 / 7)}
    assert Grader(bench, PAPER).judge_response(sample, "AI: the cat sat") == 0.8571
    # v2: a leading "AI:" removed, then rouge-score, not rounded.
    assert Grader(bench, V2).judge_response(sample, "AI: the cat sat") == 1.0
    assert Grader(bench, V2).reply_scores(sample, "AI: the cat sat")["rouge"] == 1.0


def _funnel_run(bench: Benchmark, tmp_path: Path):  # noqa: ANN202
    """The first dialogue (8 samples), answered so that each gold call stops at a known stage."""
    d = "AddAgenda-AddAlarm-AddReminder-level-2-1"
    samples = {s.key: s for s in bench.samples(1)[:8]}
    answers = {
        f"L1/api/{d}/0": target_text(samples[f"L1/api/{d}/0"]),  # GetUserToken: right; a call follows, no reply
        # AddAgenda: right ... (sample 1, its duplicate, has the same prompt: the runner reuses the first answer)
        f"L1/api/{d}/1": target_text(samples[f"L1/api/{d}/2"]),
        f"L1/response/{d}/3": "no",  # ... but its reply is poor
        f"L1/api/{d}/4": "[AddAlarm(token='eaez4jqn3vme7smldp', time='2023-04-05 08:00:00')]",  # a wrong value
        f"L1/api/{d}/6": "[AddAlarm(token='eaez4jqn3vme7smldp', time='2023-04-04 20:00:00')]",  # the wrong API
    }
    backend = ScriptedBackend(lambda req: answers.get(req.item.key, "nothing"))
    # draw="first": the answers above are written for the first dialogue's samples in file order, not a random draw.
    config = RunConfig("scripted", levels=(1,), limit=8, draw="first", out=str(tmp_path / "f"))
    result = run(config, backend=backend, bench=bench, progress=False)
    return analysis.load_runs([result.path], bench=bench)[0]


def test_the_funnel_on_scripted_predictions(bench: Benchmark, tmp_path: Path) -> None:
    funnel = analysis.funnel(_funnel_run(bench, tmp_path), bench)
    assert list(funnel["stage"]) == list(analysis.FUNNEL_STAGES)
    # 4 gold calls (the duplicate sample is left out): AddReminder stops at the API name, AddAlarm at the values,
    # AddAgenda at the reply; GetUserToken goes all the way.
    assert list(funnel["samples"]) == [4, 4, 3, 3, 2, 2, 2, 1]
    assert list(funnel["share (%)"])[-1] == 25.0


def test_comparison_labels_say_model_prompt_mode_protocol_and_data(bench: Benchmark, release: Benchmark, tmp_path: Path) -> None:
    made = [
        run(RunConfig("oracle", levels=(1,), limit=4, out=str(tmp_path / "a")), bench=bench, progress=False).path,
        run(RunConfig("oracle", levels=(1,), limit=4, protocol="paper", out=str(tmp_path / "b")), bench=release, progress=False).path,
        run(RunConfig("scripted", levels=(1,), limit=4, out=str(tmp_path / "c")), backend=ScriptedBackend("x"), bench=bench, progress=False).path,
    ]
    table = analysis.compare_runs(analysis.load_runs(made))
    labels = table[["model", "prompt mode", "protocol", "data"]].values.tolist()
    assert labels == [["oracle", "reference", "v2.2", "bundled"], ["oracle", "reference", "paper-1", "official"], ["scripted", "completion", "v2.2", "bundled"]]
    assert {"L1 ROUGE-L (rouge)", "L1 ROUGE-L (rouge-score)", "partial"} <= set(table.columns)
    assert table["empty answers"].tolist() == [0, 0, 0]
    assert table["subset"].tolist() == ["L1 4 (random dialogues, seed 0)"] * 3  # what each folder holds


def test_main_table_has_the_papers_layout_and_rows(bench: Benchmark, release: Benchmark, tmp_path: Path) -> None:
    result = run(RunConfig("oracle", limit=6, level3="both", out=str(tmp_path / "o")), bench=bench, progress=False)
    runs = analysis.load_runs([result.path])
    # On the bundled data the paper's figures are left out by default: they were measured on the official release,
    # and beside runs on it they are shown.
    assert list(analysis.main_table(runs, n_boot=20, dated=False)["source"]) == ["measured here"]
    official = run(RunConfig("oracle", levels=(1,), limit=2, out=str(tmp_path / "r")), bench=release, progress=False)
    sources = analysis.main_table(analysis.load_runs([official.path]), n_boot=20, dated=False)["source"].tolist()
    assert sources[0] == "measured here" and set(sources[1:]) == {"reported"} and len(sources) > 1
    table = analysis.main_table(runs, reported_rows=True, n_boot=100, dated=False)
    assert list(table.columns[:6]) == ["model", "prompt mode", "protocol", "data", "subset", "source"]
    ours = table[table["source"] == "measured here"].iloc[0]
    assert ours["Call acc"] == 100.0 and ours["Total ROUGE-L"] == 1.0
    assert (ours["Total acc low"] == 100.0) == (ours["Total dialogues"] >= MIN_CLUSTERS)
    assert ours["Plan+Retrieve+Call episodes"] == 100.0 and "date" not in table.columns
    judged = runs[0].judgments
    assert ours["Call n"] == sum(1 for j in judged if j.level == 1 and j.kind == "api")
    episodes = sum(1 for j in judged if j.kind == "episode")
    assert ours["Total n"] == sum(1 for j in judged if j.kind == "api") and ours["Plan+Retrieve+Call episodes n"] == episodes >= 6
    compact = analysis.compact_main_table(table).set_index("model")
    n, dialogues = int(ours["Call n"]), int(ours["Call dialogues"])
    if dialogues >= MIN_CLUSTERS:
        assert compact.loc["oracle", "Call acc"] == f"100.00 [100.00, 100.00] (n={n}, {dialogues} dialogues)"
    else:
        assert compact.loc["oracle", "Call acc"] == f"100.00 (n={n}, {dialogues} dialogues: too few for an interval)"
    assert compact.loc["GPT-4", "Call acc"] == "63.66"  # reported rows have no count to show
    assert ours[analysis.ITEMS_COLUMN] == 100.0 and ours[f"{analysis.ITEMS_COLUMN} n"] >= 1


def test_the_papers_figures_stand_under_the_column_that_measures_the_same(bench: Benchmark, tmp_path: Path) -> None:
    """The paper's level-3 accuracy is the original evaluator's item accuracy (GPT-4's 70.00 = 35 of 50 items whose
    every teacher-forced step is right): it goes under the items column, never under steps or episodes."""
    assert analysis.REPORTED_COLUMNS == {"l1_acc": "Call acc", "l2_acc": "Retrieve+Call acc", "l3_acc": analysis.ITEMS_COLUMN}
    result = run(RunConfig("oracle", levels=(3,), limit=4, level3="both", out=str(tmp_path)), bench=bench, progress=False)
    table = analysis.main_table(analysis.load_runs([result.path]), reported_rows=True, n_boot=20, dated=False)
    reported = table[table["source"] == "reported"].set_index("model")
    for model, figures in PAPER_MAIN_RESULTS.items():
        assert reported.loc[model, "Call acc"] == figures["l1_acc"]
        assert reported.loc[model, "Retrieve+Call acc"] == figures["l2_acc"]
        assert reported.loc[model, analysis.ITEMS_COLUMN] == figures["l3_acc"]
    assert reported["Plan+Retrieve+Call acc"].isna().all() and reported[analysis.EPISODES_COLUMN].isna().all()
    assert reported.loc["GPT-4", analysis.ITEMS_COLUMN] == 70.0
    compared = analysis.compare_runs(analysis.load_runs([result.path])).iloc[0]
    assert compared["L3 items right"] == 100.0 and compared["L3 items"] == table.iloc[0][f"{analysis.ITEMS_COLUMN} n"]


def test_an_interval_over_fewer_than_ten_dialogues_is_blank_and_says_why(bench: Benchmark, tmp_path: Path) -> None:
    result = run(RunConfig("oracle", levels=(3,), limit=4, out=str(tmp_path)), bench=bench, progress=False)
    row = analysis.main_table(analysis.load_runs([result.path]), n_boot=20, dated=False).iloc[0]
    items = int(row[f"{analysis.ITEMS_COLUMN} n"])
    assert row["Plan+Retrieve+Call dialogues"] == items < MIN_CLUSTERS
    assert pd.isna(row["Plan+Retrieve+Call acc low"]) and pd.isna(row[f"{analysis.ITEMS_COLUMN} low"])
    compact = analysis.compact_main_table(pd.DataFrame([row])).iloc[0]
    assert compact["Plan+Retrieve+Call acc"].endswith(f"{items} items: too few for an interval)")
    assert compact[analysis.ITEMS_COLUMN] == f"100.00 ({items} items: too few for an interval)"


def test_tables_are_saved_as_csv_and_markdown(tmp_path: Path) -> None:
    paths = analysis.save_table(analysis.toolalpaca_table(), "toolalpaca", tmp_path)
    assert paths["csv"].read_text().startswith("model,training samples,Call acc")
    assert "| Lynx " in paths["md"].read_text() and "reported" in paths["md"].read_text()


def test_toolalpaca_table_names_runs_and_gives_intervals(bench: Benchmark, tmp_path: Path) -> None:
    result = run(RunConfig("oracle", levels=(1,), limit=60, out=str(tmp_path / "o")), bench=bench, progress=False)
    runs = analysis.load_runs([result.path])
    table = analysis.toolalpaca_table(runs, names={"oracle": "the gold"}, training_samples={"oracle": 123}, n_boot=50)
    ours = table[table["source"] != "reported"].iloc[0]
    assert ours["model"] == "the gold" and ours["training samples"] == 123
    assert ours["Call acc"] == ours["Call acc low"] == ours["Call acc high"] == 100.0
    assert ours["API-call samples"] == sum(1 for j in runs[0].judgments if j.kind == "api")
    assert ours["dialogues"] == len({j.dialogue_id for j in runs[0].judgments if j.kind == "api"}) >= MIN_CLUSTERS
    assert list(table[table["source"] == "reported"]["model"]) == ["Alpaca fine-tuned on ToolAlpaca (converted)", "Lynx"]


def test_training_samples_come_from_the_adapters_record(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    (folder / "adapter").mkdir(parents=True)
    (folder / "training.json").write_text('{"result": {"examples_seen": 240}}')
    assert analysis.adapter_training_samples(f"llamacpp:gemma-3-270m+{folder / 'adapter'}") == 240
    assert analysis.adapter_training_samples("llamacpp:gemma-3-270m") is None
    assert analysis.adapter_training_samples(f"llamacpp:gemma-3-270m+{tmp_path / 'none' / 'adapter'}") is None


def test_toolalpaca_table_compares_the_samples_every_run_answered(bench: Benchmark, tmp_path: Path) -> None:
    small = run(RunConfig("oracle", levels=(1,), limit=4, out=str(tmp_path / "small")), bench=bench, progress=False)
    large = run(RunConfig("no-call", levels=(1,), limit=12, out=str(tmp_path / "large")), bench=bench, progress=False)
    runs = analysis.load_runs([small.path, large.path])
    shared = analysis.toolalpaca_table(runs, n_boot=20)
    alone = analysis.toolalpaca_table(runs, common=False, n_boot=20)
    measured = shared[shared["source"] != "reported"]["API-call samples"].tolist()
    assert measured[0] == measured[1] == sum(1 for j in runs[0].judgments if j.kind == "api")
    assert alone[alone["source"] != "reported"]["API-call samples"].tolist()[1] > measured[1]


def test_the_training_data_table_gives_each_ability_on_the_samples_every_run_answered(bench: Benchmark, tmp_path: Path) -> None:
    gold = run(RunConfig("oracle", levels=(1, 2), limit=6, tasks=("api",), out=str(tmp_path / "gold")), bench=bench, progress=False)
    none = run(RunConfig("no-call", levels=(1, 2), limit=9, tasks=("api",), out=str(tmp_path / "none")), bench=bench, progress=False)
    runs = analysis.load_runs([gold.path, none.path])
    table = analysis.training_data_table(runs, names={"oracle": "gold"}, training_samples={"oracle": 96}, n_boot=20).set_index("model")
    calls = [j for j in runs[0].judgments if j.kind == "api"]
    assert table.loc["gold", "Call n"] == sum(j.level == 1 for j in calls) and table.loc["gold", "Total n"] == len(calls)
    assert table.loc["no-call", "Total n"] == len(calls)  # its extra samples are left out
    assert table.loc["gold", "Retrieve+Call acc"] == table.loc["gold", "Total acc"] == 100.0
    # Six samples a level rest on a few dialogues: no interval, and the count says so.
    assert table.loc["gold", "Total dialogues"] < MIN_CLUSTERS and table.loc["gold", "Total acc low"] is None
    assert table.loc["no-call", "Total acc"] == 0.0 and table.loc["gold", "training samples"] == 96
    assert pd_isna(table.loc["no-call", "training samples"]) and "Plan+Retrieve+Call acc" not in table.columns
    alone = analysis.training_data_table(runs, common=False, n_boot=20).set_index("model")
    assert alone.loc["no-call", "Total n"] > len(calls)


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_accuracy_by_what_the_training_corpus_has_seen(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.core.types import Param, ToolSchema

    run_ = _funnel_run(bench, tmp_path)
    # A corpus with an API named AddAlarm, and one API whose parameters are GetUserToken's (username, password).
    corpus = {
        "AddAlarm": ToolSchema("AddAlarm", "d", {"when": Param("str", "d")}, {}),
        "SignIn": ToolSchema("SignIn", "d", {"username": Param("str", "d"), "password": Param("str", "d")}, {}),
    }
    table = analysis.seen_in_training(run_, bench, corpus).set_index("group")
    assert table.loc["name seen", "samples"] == 1 and table.loc["name seen", "correct"] == 0  # the wrong AddAlarm value
    assert table.loc["all parameters seen", "samples"] == 1 and table.loc["all parameters seen", "correct"] == 1  # the token
    # AddAgenda (right) and AddReminder (wrong: AddAlarm was called) share no parameter name with this corpus.
    assert "some parameters seen" not in table.index
    assert table.loc["no parameter seen", "APIs"] == 2 and table.loc["no parameter seen", "correct"] == 1
    assert table["samples"].sum() == 4  # the duplicate AddAgenda sample (1) is left out
    corpus["SignIn"].input_parameters["token"] = Param("str", "d")
    assert analysis.seen_in_training(run_, bench, corpus).set_index("group").loc["some parameters seen", "samples"] == 2


def test_runs_are_cut_to_the_samples_they_all_have(bench: Benchmark, tmp_path: Path) -> None:
    from dataclasses import replace

    run_ = _funnel_run(bench, tmp_path)
    fewer = replace(run_, judgments=run_.judgments[1:])
    both = analysis.on_common_samples([run_, fewer], kind="api")
    keys = [[j.key for j in r.judgments] for r in both]
    assert keys[0] == keys[1] == [j.key for j in run_.judgments[1:] if j.kind == "api"]
    assert len(run_.judgments) == len(fewer.judgments) + 1  # the runs given are left as they were


def test_the_toolalpaca_figure_says_what_each_row_was_trained_and_measured_on(tmp_path: Path) -> None:
    import pandas as pd

    from apibank_lib.report import plots

    table = pd.DataFrame(
        [
            {"model": "Lynx", "training samples": 6184, "Call acc": 54.64, "Call acc low": None, "Call acc high": None,
             "API-call samples": None, "source": "reported"},
            {"model": "base", "training samples": None, "Call acc": 27.3, "Call acc low": 20.0, "Call acc high": 35.0,
             "API-call samples": 150, "source": "measured here"},
        ]
    )
    fig = plots.toolalpaca_figure(table, directory=tmp_path)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["Lynx (trained on 6,184)", "base (not fine-tuned; n=150 API-call samples)"]
    assert (tmp_path / "toolalpaca_comparison.png").is_file()


def test_saved_tables_print_counts_as_whole_numbers(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"model": ["a", "b"], "training samples": [10366.0, None], "acc": [53.88, 27.0]})
    paths = analysis.save_table(frame, "counts", tmp_path)
    assert paths["csv"].read_text().splitlines() == ["model,training samples,acc", "a,10366,53.88", "b,,27.0"]
    assert "| a       | 10366 " in paths["md"].read_text()
    assert frame["training samples"].dtype == float  # the caller's frame is left as it was

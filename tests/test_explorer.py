"""The explorer widget, driven from Python as a person would drive it, and its notebook run headlessly."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import papermill
import pytest

from apibank_lib import ApiCallSample, Benchmark, JudgmentRecord, RunConfig, RunFolder, run
from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ConfigError
from apibank_lib.report import workbench
from apibank_lib.report.explorer import ALL, CORRECT, Explorer
from apibank_lib.runs.config import plan

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explorer.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def runs(bench: Benchmark, tmp_path_factory: pytest.TempPathFactory) -> list[RunFolder]:
    """Scored oracle and no-call runs over a draw of at least 12 samples (and episodes) of each level (their folders)."""
    settings = workbench.RunSettings(limit=12, runs_dir=tmp_path_factory.mktemp("runs"))
    scored, _ = workbench.run_models(["oracle", "no-call"], bench, settings, progress=False)
    return [r.folder for r in scored]


@pytest.fixture
def explorer(bench: Benchmark, runs: list[RunFolder]) -> Explorer:
    return Explorer(bench, runs, level=1)


def _first_api_sample(bench: Benchmark, level: int, dialogue_id: str) -> ApiCallSample:
    return next(s for s in bench.samples(level, "api") if s.dialogue_id == dialogue_id and isinstance(s, ApiCallSample))


def _listed(explorer: Explorer) -> list[str]:
    return [value for _, value in explorer.dialogue_select.options]


def test_the_view_shows_the_gold_call_beside_each_runs_verdict(bench: Benchmark, explorer: Explorer) -> None:
    assert [label for label, _ in explorer.run_select.options] == ["oracle · v2.2", "no-call · v2.2"]
    assert explorer.compare_select.value == 1  # the second run is shown beside the first
    sample = _first_api_sample(bench, 1, explorer.dialogue_select.value)
    view = explorer.view.value
    assert html.escape(format_call(sample.gold.call)) in view
    # the first sample's table: the gold column has no verdict, then the oracle's, then no-call's
    verdicts = re.search(r"verdict</th><td[^>]*></td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>", view)
    assert verdicts is not None and "✓ correct" in verdicts[1] and "✗ wrong" in verdicts[2]
    categories = re.search(r"category</th><td[^>]*></td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>", view)
    assert categories is not None and categories[1] == "" and categories[2].startswith("No API Call")


def test_choosing_another_dialogue_changes_the_view(bench: Benchmark, explorer: Explorer) -> None:
    before = explorer.view.value
    other = _listed(explorer)[1]
    explorer.dialogue_select.value = other
    assert explorer.view.value != before
    assert html.escape(other) in explorer.view.value
    assert html.escape(format_call(_first_api_sample(bench, 1, other).gold.call)) in explorer.view.value


def test_one_run_alone_and_the_same_run_twice_show_one_column(explorer: Explorer) -> None:
    explorer.compare_select.value = None
    alone = explorer.view.value
    assert "oracle · v2" in alone and "no-call · v2" not in alone
    explorer.compare_select.value = 0
    assert explorer.view.value == alone


def _dialogues_with(runs: list[RunFolder], level: int, keep: Callable[[JudgmentRecord], bool]) -> set[str]:
    return {j.dialogue_id for f in runs for j in f.read_judgments() if j.level == level and keep(j)}


def test_the_category_filter_lists_only_dialogues_with_a_matching_sample(
    explorer: Explorer, runs: list[RunFolder]
) -> None:
    assert explorer.category_select.options[0] == (ALL, ALL)
    assert ("No API Call", "No API Call") in explorer.category_select.options
    everything = set(_listed(explorer))
    explorer.category_select.value = "No API Call"
    wanted = _dialogues_with(runs, 1, lambda j: j.category == "No API Call")
    assert set(_listed(explorer)) == wanted and wanted == everything  # no-call never calls
    explorer.compare_select.value = None  # the oracle alone: never wrong, so the category is no longer offered
    assert explorer.category_select.value == ALL
    assert [v for _, v in explorer.category_select.options] == [ALL, CORRECT]
    explorer.category_select.value = CORRECT
    assert set(_listed(explorer)) == _dialogues_with(runs[:1], 1, lambda j: j.correct is True)


def test_the_api_filter_lists_only_dialogues_calling_that_api(
    bench: Benchmark, explorer: Explorer, runs: list[RunFolder]
) -> None:
    assert [v for _, v in explorer.api_select.options][:3] == [ALL, "AddAgenda", "AddAlarm"]
    everything = set(_listed(explorer))
    # An API the drawn samples call (GetUserToken, which starts many dialogues, left out).
    api = min({j.gold_api for j in runs[0].read_judgments() if j.level == 1 and j.gold_api} - {"GetUserToken"})
    explorer.api_select.value = api
    listed = set(_listed(explorer))
    assert listed == _dialogues_with(runs, 1, lambda j: j.gold_api == api)
    assert listed and listed < everything < {d.id for d in bench.dialogues(1)}


def test_level_3_steps_through_each_runs_agent_episode(explorer: Explorer, runs: list[RunFolder]) -> None:
    explorer.level_select.value = 3
    item, other = _listed(explorer)[:2]  # the items whose episodes were drawn
    assert explorer.dialogue_select.value == item and explorer.step_slider.layout.display == ""
    oracle_steps = runs[0].read_predictions().records[f"L3/episode/{item}"].steps
    assert len(oracle_steps) > 1 and explorer.step_slider.max == len(oracle_steps)
    assert explorer.step_slider.description == f"step (of {len(oracle_steps)})"
    for number, step in enumerate(oracle_steps, start=1):
        explorer.step_slider.value = number
        assert f"agent episode · step {number}" in explorer.view.value
        assert html.escape(step.call or "") in explorer.view.value
    assert "✓ solved" in explorer.view.value and "✗ not solved" in explorer.view.value
    # The end state is a fact beside the verdict, never a green mark of its own (no-call's episode changed nothing).
    assert "same as gold" in explorer.view.value or "differs from gold" in explorer.view.value
    assert "as gold</span>" not in explorer.view.value
    explorer.dialogue_select.value = other  # another item starts again at its first step
    assert explorer.step_slider.value == 1


def test_without_runs_every_dialogue_is_listed_with_its_gold(bench: Benchmark) -> None:
    explorer = Explorer(bench, level=3)
    assert _listed(explorer) == [str(item.id) for item in bench.level3]
    assert explorer.run_select.value is None and explorer.compare_select.value is None
    assert html.escape(format_call(_first_api_sample(bench, 3, "0").gold.call)) in explorer.view.value
    assert explorer.step_slider.layout.display == "none" and "agent episode" not in explorer.view.value


def test_a_run_not_scored_yet_is_scored_when_loaded(bench: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "unscored"
    run(RunConfig("no-call", levels=(1,), limit=3, out=str(out)), bench=bench, progress=False)
    assert not RunFolder(out).judgments_path.exists()
    explorer = Explorer(bench, [out])
    assert RunFolder(out).judgments_path.is_file()
    assert "No API Call" in explorer.view.value
    explorer.level_select.value = 2  # a level the run did not answer: every dialogue, with its gold
    assert _listed(explorer) == [d.id for d in bench.dialogues(2)]


def test_a_sample_an_erratum_excludes_says_it_is_not_scored(release: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "oracle-release"
    run(RunConfig("oracle", levels=(2,), tasks=("api",), data=str(release.root), out=str(out)), bench=release, progress=False)
    explorer = Explorer(release, [out], level=2)
    explorer.dialogue_select.value = "DeleteReminder-level-3-1"
    assert "<b>not scored</b>: erratum E16 (ambiguous_keywords)" in explorer.view.value
    explorer.dialogue_select.value = "AddMeeting-level-3-1"
    assert "not scored" not in explorer.view.value


def test_runs_resume_without_answering_or_scoring_again(bench: Benchmark, runs: list[RunFolder]) -> None:
    stamps = [f.judgments_path.stat().st_mtime_ns for f in runs]
    settings = workbench.RunSettings(limit=12, runs_dir=runs[0].path.parent)
    again, summary = workbench.run_models(["oracle", "no-call"], bench, settings, progress=False)
    assert list(summary["answered now"]) == [0, 0]
    assert [r.folder.path for r in again] == [f.path for f in runs]
    assert [r.folder.judgments_path.stat().st_mtime_ns for r in again] == stamps


def test_a_second_task_adds_its_samples_to_the_same_run_folders(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.report import analysis

    calls_only = workbench.RunSettings(levels=[1], limit=5, tasks=("api",), runs_dir=tmp_path)
    replies_only = workbench.RunSettings(levels=[1], limit=3, tasks=("response",), runs_dir=tmp_path)
    n_calls, n_replies = (len(plan(bench, c)) for s in (calls_only, replies_only) for c in s.configs("oracle", bench))
    assert n_calls >= 5 and n_replies >= 3  # whole dialogues drawn
    calls, _ = workbench.run_models(["oracle"], bench, calls_only, progress=False)
    replies, summary = workbench.run_models(["oracle"], bench, replies_only, progress=False)
    assert replies[0].folder.path == calls[0].folder.path and list(summary["answered now"]) == [n_replies]
    # The folder holds both; each run read through its settings holds what they planned, both settings their union.
    judged = analysis.load_runs([replies[0].folder], bench=bench)[0].judgments
    assert sorted(j.kind for j in judged) == ["api"] * n_calls + ["response"] * n_replies
    assert [j.kind for j in replies[0].judgments] == ["response"] * n_replies and replies[0].metrics.levels["1"].api_samples == 0
    coverage = {k: replies[0].metrics.coverage[k] for k in ("expected", "answered", "missing")}
    assert coverage == {"expected": n_replies, "answered": n_replies, "missing": 0}
    both = workbench.saved_runs(["oracle"], bench, [calls_only, replies_only])[0]
    assert sorted(j.kind for j in both.judgments) == ["api"] * n_calls + ["response"] * n_replies


def test_saved_runs_reads_the_runs_made_and_answers_nothing(bench: Benchmark, runs: list[RunFolder]) -> None:
    stamps = [f.predictions_path.stat().st_mtime_ns for f in runs]
    found = workbench.saved_runs(["oracle", "no-call"], bench, workbench.RunSettings(limit=12, runs_dir=runs[0].path.parent))
    assert [r.folder.path for r in found] == [f.path for f in runs]
    assert [r.folder.predictions_path.stat().st_mtime_ns for r in found] == stamps


def test_saved_runs_names_what_is_missing(bench: Benchmark, runs: list[RunFolder]) -> None:
    parent = runs[0].path.parent
    with pytest.raises(ConfigError, match=r"oracle: .* lacks \d+ of the planned samples .*notebook 02"):
        workbench.saved_runs(["oracle"], bench, workbench.RunSettings(limit=13, runs_dir=parent))
    with pytest.raises(ConfigError, match="oracle: no run with these settings"):
        workbench.saved_runs(["oracle"], bench, workbench.RunSettings(limit=12, protocol="paper", runs_dir=parent))
    with pytest.raises(ConfigError, match="holds episodes of 12 steps with 'enriched', not episodes of 5 steps"):
        workbench.saved_runs(["oracle"], bench, workbench.RunSettings(limit=12, max_steps=5, runs_dir=parent))
    assert sorted(p.name for p in parent.iterdir()) == sorted(f.path.name for f in runs)  # nothing was created


def test_the_explorer_displays_as_a_widget(explorer: Explorer) -> None:
    bundle = explorer._repr_mimebundle_()
    assert bundle is not None and bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id


def test_the_notebook_runs_headlessly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_RUNS", str(tmp_path / "runs"))
    out = tmp_path / "explorer.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters={"LIMIT": 3, "RUNS": ["oracle", "no-call"], "LEVEL": 3},
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    cells = nbformat.read(out, as_version=4).cells
    assert not [o for c in cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert any(WIDGET_VIEW in o.get("data", {}) for o in cells[-1].outputs)
    assert len([p for p in (tmp_path / "runs").iterdir() if RunFolder(p).judgments_path.is_file()]) == 2


def test_kind_limits_split_a_models_settings_and_its_cap_bounds_each(bench: Benchmark, tmp_path: Path) -> None:
    settings = workbench.RunSettings(
        limit=None, kind_limits={"response": 2, "episodes": 1}, model_limits={"oracle": 6}, runs_dir=tmp_path
    )
    assert [settings.limit_of("oracle", k) for k in workbench.KINDS] == [6, 2, 1]
    assert [settings.limit_of("no-call", k) for k in workbench.KINDS] == [None, 2, 1]
    configs = settings.configs("oracle", bench)
    assert [(c.levels, c.tasks, c.level3, c.limit) for c in configs] == [
        ((1, 2, 3), ("api",), "steps", 6), ((1, 2, 3), ("response",), "steps", 2), ((3,), ("api", "response"), "loop", 1),
    ]
    runs, summary = workbench.run_models(["oracle"], bench, settings, progress=False)
    assert len(set(summary["run folder"])) == 1  # one folder holds all three plans
    kinds = [(j.level, j.kind) for j in runs[0].judgments]
    planned = [[x.level for x in plan(bench, c)] for c in configs]  # each config's draw: whole dialogues
    assert [kinds.count((lv, "api")) for lv in (1, 2, 3)] == [planned[0].count(lv) for lv in (1, 2, 3)]
    assert [kinds.count((lv, "response")) for lv in (1, 2, 3)] == [planned[1].count(lv) for lv in (1, 2, 3)]
    assert sum(1 for j in runs[0].judgments if j.kind == "episode") == len(planned[2])
    assert all(planned[0].count(lv) >= 6 and planned[1].count(lv) >= 2 for lv in (1, 2, 3)) and len(planned[2]) >= 1
    # One limit for every kind: one config, as before kinds had limits of their own.
    assert len(workbench.RunSettings(limit=4, model_limits={"oracle": 6}).configs("oracle", bench)) == 1
    with pytest.raises(ConfigError, match="unknown kind 'replies'"):
        workbench.RunSettings(kind_limits={"replies": 3})


def test_a_models_cap_of_0_on_a_kind_leaves_that_kind_out(bench: Benchmark, tmp_path: Path) -> None:
    # The bundled standard profile's slow models skip agent episodes: their steps are drawn as without the cap (API
    # calls and replies share one limit, so the same dialogues as an uncapped model's), and no episode is run.
    capped = workbench.RunSettings(limit=6, model_limits={"oracle": {"episodes": 0}}, runs_dir=tmp_path)
    plain = workbench.RunSettings(limit=6, runs_dir=tmp_path)
    assert [capped.limit_of("oracle", k) for k in workbench.KINDS] == [6, 6, 0]
    (config,) = capped.configs("oracle", bench)
    assert (config.levels, config.tasks, config.level3, config.limit) == ((1, 2, 3), ("api", "response"), "steps", 6)
    (uncapped,) = plain.configs("oracle", bench)
    steps = [x.key for x in plan(bench, uncapped) if x.kind != "episode"]
    assert [x.key for x in plan(bench, config)] == steps
    runs, _ = workbench.run_models(["oracle"], bench, capped, progress=False)
    assert runs[0].judgments and not [j for j in runs[0].judgments if j.kind == "episode"]
    assert "episodes" not in capped.subset_of("oracle")
    # Caps per kind bound only the kinds they name; an episodes-only model gets the loop alone.
    assert workbench.RunSettings(model_limits={"oracle": {"response": 2}}).limit_of("oracle", "api") is None
    (loop,) = workbench.RunSettings(limit=2, model_limits={"oracle": {"api": 0, "response": 0}}).configs("oracle", bench)
    assert (loop.levels, loop.level3) == ((3,), "loop")
    with pytest.raises(ConfigError, match=r"model_limits\['oracle'\]: unknown kind 'replies'"):
        workbench.RunSettings(model_limits={"oracle": {"replies": 0}})
    with pytest.raises(ConfigError, match="at least 0"):
        workbench.RunSettings(model_limits={"oracle": -1})

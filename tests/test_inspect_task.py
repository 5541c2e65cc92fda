"""API-Bank as an inspect_ai task: found by name as inspect finds tasks in an installed package, judged by our
grader, and its logs converted into run folders whose judgments are the scorer's, offline with inspect's mock
model and against llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.integrations.inspect_log import import_inspect_log
from apibank_lib.integrations.inspect_task import api_bank_task, planned_items
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.scoring import scored

inspect_ai = pytest.importorskip("inspect_ai")


def _texts(messages: list[Any]) -> tuple[str, ...]:
    return tuple(f"{m.role}:{m.text}:{[tc.function for tc in getattr(m, 'tool_calls', None) or []]}" for m in messages)


def _mock(bench: Benchmark, task: Any, answer: Any) -> Any:
    """inspect's mock model answering each sample with ``answer(item, step)`` (found by the messages it is shown)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from apibank_lib.integrations.inspect_task import _item

    by_prompt = {_texts(s.input): s.id for s in task.dataset}

    def generate(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        # A teacher-forced sample is shown its own messages; an episode its first two, then its steps.
        key = by_prompt.get(_texts(messages)) or by_prompt.get(_texts(messages[:2]))
        assert key is not None, "the mock was shown a prompt of no sample"
        step = sum(m.role == "tool" for m in messages[2:]) if "/episode/" in key else 0
        reply = answer(_item(bench, key), step)
        out = (
            ModelOutput.for_tool_call("mockllm/model", reply[0], reply[1]) if isinstance(reply, tuple)
            else ModelOutput.from_content("mockllm/model", reply)
        )
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # so the mock counts no tokens (offline)
        return out

    return get_model("mockllm/model", custom_outputs=generate)


def _mixed(item: Any, step: int) -> Any:
    """Right, wrong arguments, and a text reply, in turn."""
    n = item.sample_id % 3
    if n == 0:
        return item.gold.api_name, dict(item.gold.args)
    if n == 1:
        return item.gold.api_name, {k: "something else" for k in item.gold.args} or {"x": "y"}
    return "I need to check that first."


def test_the_task_is_found_by_name_and_its_log_becomes_a_run_that_judges_alike(bench: Benchmark, tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval

    task = api_bank_task(level=1, limit=12, seed=0)
    (log,) = inspect_eval(
        "apibank_lib/api_bank", task_args={"level": 1, "limit": 12, "seed": 0}, model=_mock(bench, task, _mixed),
        log_dir=str(tmp_path / "logs"), display="none",
    )
    assert log.status == "success" and log.eval.task == "api_bank"
    planned = [x.key for x in planned_items(bench, 1, protocol="v2", kind="api", agent=False, limit=12, seed=0)]
    assert [s.id for s in log.samples] == planned  # the samples `apibank run --limit 12` plans, in its order
    verdicts = {s.id: s.scores["apibank"] for s in log.samples}
    assert {v.value for v in verdicts.values()} == {"C", "I"}
    wrong = next(v for v in verdicts.values() if v.value == "I")
    assert wrong.metadata["category"] and wrong.metadata["reason"] and wrong.metadata["dialogue_id"]
    metrics = log.results.scores[0].metrics
    assert metrics["stderr"].params == {"cluster": "dialogue_id"}
    # The log as a run folder: the same answers judged by the run's scoring agree sample by sample.
    result, folder_metrics = import_inspect_log(log.location, runs_dir=str(tmp_path / "runs"))
    judged = {j.key: j for j in scored(result.path, bench).judgments}
    assert set(judged) == set(verdicts)
    for key, score in verdicts.items():
        assert (score.value == "C") == judged[key].correct, key
        assert score.metadata["category"] == judged[key].category, key
    right = sum(v.value == "C" for v in verdicts.values())
    assert folder_metrics.levels["1"].api_correct == right and metrics["accuracy"].value == pytest.approx(right / len(verdicts))
    info = RunFolder(result.path).read_info()
    assert info.prompt_mode == "chat" and info.identity["model"]["model"] == "mockllm/model"
    # The command does the same (the same answers give the same folder, read as it is).
    from apibank_lib.cli import main

    assert main(["import-inspect", log.location, "--out", str(result.path), "--json"]) == 0
    assert scored(result.path, bench).metrics.levels["1"].api_correct == right


def test_an_agent_episode_runs_in_its_own_sandbox_and_scores_as_our_episodes(bench: Benchmark, tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval

    def oracle_steps(item: Any, step: int) -> Any:
        steps = item.item.steps
        return (steps[step].api_name, dict(steps[step].args)) if step < len(steps) else item.item.response

    def stops_early(item: Any, step: int) -> Any:
        return oracle_steps(item, step) if step < 2 else "Done."

    logs = {}
    for name, answer in (("oracle", oracle_steps), ("early", stops_early)):
        task = api_bank_task(level=3, agent=True, limit=2, seed=0)
        (logs[name],) = inspect_eval(task, model=_mock(bench, task, answer), log_dir=str(tmp_path / name), display="none")
    assert all(s.scores["apibank"].value == "C" for s in logs["oracle"].samples)
    assert all(s.scores["apibank"].value == "I" for s in logs["early"].samples)
    sample = logs["oracle"].samples[0]
    tools = [m for m in sample.messages if m.role == "tool"]
    assert tools and all("exception" not in json.loads(t.text) if t.text.startswith("{") else True for t in tools)
    for name, expected in (("oracle", 2), ("early", 0)):
        _, metrics = import_inspect_log(logs[name].location, runs_dir=str(tmp_path / "runs"))
        assert metrics.levels["3"].episodes == 2 and metrics.levels["3"].episodes_succeeded == expected


def test_a_release_copy_is_evaluated_with_its_errata(release: Benchmark, tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval

    from tests.conftest import OFFICIAL_FIXTURE

    from apibank_lib.grading.grader import Grader
    from apibank_lib.grading.replay import replay

    task = api_bank_task(level=1, data=str(OFFICIAL_FIXTURE))
    errata = Grader(release).errata
    excluded = {k for a in errata.applied.values() if a.erratum.decision == "exclude" for k in a.keys}
    ids = {s.id for s in task.dataset}
    assert ids == {s.key for s in release.samples(1, "api")} - excluded

    (log,) = inspect_eval(
        task, model=_mock(release, task, lambda item, step: (item.gold.api_name, dict(item.gold.args))),
        log_dir=str(tmp_path), display="none",
    )
    # The gold as an answer is judged as the gold replay judges it (the copy's errata applied).
    replayed = replay(release, levels=[1])["levels"]["1"]
    assert sum(s.scores["apibank"].value == "C" for s in log.samples) == replayed["samples_correct"]


def test_replies_are_scored_by_rouge_and_bad_settings_are_named(bench: Benchmark, tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval

    task = api_bank_task(level=1, kind="response", limit=3)
    (log,) = inspect_eval(task, model=_mock(bench, task, lambda item, step: item.gold), log_dir=str(tmp_path), display="none")
    assert all(s.scores["apibank"].value == pytest.approx(1.0) for s in log.samples)
    with pytest.raises(ConfigError, match="level 4"):
        api_bank_task(level=4)
    with pytest.raises(ConfigError, match="level 3 only"):
        api_bank_task(level=1, agent=True)
    with pytest.raises(ConfigError, match="tool_choice"):
        api_bank_task(tool_choice="sometimes")
    with pytest.raises(ConfigError, match="not an inspect log"):
        import_inspect_log(tmp_path / "missing.eval")


@pytest.mark.slow
def test_against_llama_cpps_server_the_task_judges_as_apibank_run(bench: Benchmark, qwen_server: str, tmp_path: Path) -> None:
    """The embedded 0.5B behind llama.cpp's OpenAI-compatible server, asked by inspect and by ``apibank run``'s
    HTTP backend (chat mode, greedy, ``auto``: the server does not honour a required call): the same judgments."""
    from inspect_ai import eval as inspect_eval

    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run

    os.environ["LLAMA_BASE_URL"], os.environ["LLAMA_API_KEY"] = qwen_server, "none"
    (log,) = inspect_eval(
        "apibank_lib/api_bank", task_args={"level": 1, "limit": 3, "tool_choice": "auto"},
        model="openai-api/llama/qwen", log_dir=str(tmp_path / "logs"), display="none", temperature=0.0,
        max_tokens=64,  # answers in text run to the limit; a call fits in 64 tokens, and both routes ask the same
    )
    ours = run(
        RunConfig(model=f"openai:qwen@{qwen_server}", levels=(1,), limit=3, tasks=("api",), prompt_mode="chat",
                  tool_choice="auto", max_tokens=64, runs_dir=str(tmp_path / "runs")),
        bench=bench, progress=False,
    )
    assert log.status == "success", log.error
    theirs = {s.id: s.scores["apibank"] for s in log.samples}
    mine = {j.key: j for j in scored(ours.path, bench).judgments}
    assert set(theirs) == set(mine) and len(mine) >= 3
    for key, score in theirs.items():
        assert ((score.value == "C"), score.metadata["category"]) == (mine[key].correct, mine[key].category), key

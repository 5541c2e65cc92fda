"""Prompt construction for each task and level, and the official-release path of the paper protocol."""

from __future__ import annotations

import json
from pathlib import Path

from apibank_lib.core.types import Sample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.prompting.prompts import API_INSTRUCTION, build_prompt, describe_apis

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "official"



def _prompt(sample: Sample, **kw: int):  # noqa: ANN202
    return build_prompt(sample.context(), toolset_for_level(sample.level), **kw)


def test_level1_api_prompt_describes_the_dialogue_apis_in_first_appearance_order(bench: Benchmark) -> None:
    sample = next(s for s in bench.samples(1, "api") if len(s.api_names) > 2)
    prompt = _prompt(sample)
    system, user = prompt.messages[0]["content"], prompt.messages[1]["content"]
    assert system.startswith(API_INSTRUCTION)
    described = [json.loads(line)["name"] for line in system.split("API descriptions:\n", 1)[1].splitlines()]
    assert tuple(described) == sample.api_names
    assert user.rstrip().endswith("Generate API Request:") and prompt.text.endswith("API-Request:")
    assert _prompt(sample) == prompt  # deterministic


def test_history_shows_api_results(bench: Benchmark) -> None:
    sample = next(s for s in bench.samples(1, "api") if any(t.role == "API" for t in s.history))
    user = _prompt(sample).messages[1]["content"]
    api_lines = [line for line in user.splitlines() if line.startswith("API-Request: [")]
    assert api_lines and "->" in api_lines[0]


def test_level2_api_samples_show_only_the_searcher(bench: Benchmark) -> None:
    sample = bench.samples(2, "api")[0]
    prompt = _prompt(sample)
    assert [t.name for t in prompt.tools] == ["ToolSearcher"]
    assert describe_apis(prompt.tools) in prompt.messages[0]["content"]
    response = bench.samples(2, "response")[0]
    assert "ToolSearcher" in [t.name for t in _prompt(response).tools]


def test_level3_prompt_has_the_requirement_and_full_results(bench: Benchmark) -> None:
    sample = bench.samples(3, "api")[2]
    user = _prompt(sample).messages[1]["content"]
    first = json.loads(user.splitlines()[0])
    assert first["apiCode"] == "ToolSearcher" and set(first) == {"apiCode", "description", "parameters", "response"}
    assert f"User: {sample.requirement}" in user
    assert "'exception': None" in user  # the whole envelope of earlier steps is shown
    assert user.endswith("Generate API Request: \n")


def test_one_shot_prepends_a_worked_example(bench: Benchmark) -> None:
    sample = bench.samples(1, "api")[0]
    assert "[GetToday()]" in _prompt(sample, shots=1).messages[1]["content"]
    assert "[GetToday()]" not in _prompt(sample).messages[1]["content"]


def test_the_release_strings_can_be_sent(release: Benchmark) -> None:
    assert set(release.test_data) == {"level-1-api", "level-1-response", "level-2-api", "level-2-response"}
    sample = release.samples(1, "api")[1]
    item = release.release_prompt(sample)
    paper = build_prompt(sample.context(), release.toolset(1), release_item=item)
    assert paper.source == "official-test-data"
    assert paper.messages[0]["content"] == "RELEASE INSTRUCTION (api, level 1)"
    ours = build_prompt(sample.context(), release.toolset(1))
    assert ours.source == "ours" and "(release wording)" in ours.messages[0]["content"]

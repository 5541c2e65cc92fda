"""Representative subsets: a limit draws whole dialogues at random, stratified, paired across models, nested."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.stats import bootstrap_mean
from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import scored
from apibank_lib.runs.subsets import FIRST, RANDOM, describe, dialogue_order, stratum_of, take


def _keys(bench: Benchmark, **kw: object) -> list[str]:
    return [x.key for x in plan(bench, RunConfig("oracle", **kw))]  # type: ignore[arg-type]


@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_prefix_of_the_order_is_stratified_by_first_api_within_one_dialogue(bench: Benchmark, level: int) -> None:
    samples = bench.samples(level)
    order = dialogue_order(samples, seed=0)
    by_dialogue = defaultdict(list)
    for s in samples:
        by_dialogue[s.dialogue_id].append(s)
    assert sorted(order) == sorted(by_dialogue)  # every dialogue once
    stratum = {d: stratum_of(items) for d, items in by_dialogue.items()}
    sizes = Counter(stratum.values())
    assert len(sizes) > 5  # the bundled levels have many first APIs; the check below means something
    taken: Counter[str] = Counter()
    for position, dialogue in enumerate(order, start=1):
        taken[stratum[dialogue]] += 1
        for name, size in sizes.items():
            assert abs(taken[name] - position * size / len(order)) < 1, (position, name)


def test_the_order_depends_on_the_seed_and_not_on_the_file_order(bench: Benchmark) -> None:
    samples = bench.samples(1)
    assert dialogue_order(samples, 0) == dialogue_order(list(reversed(samples)), 0)
    assert dialogue_order(samples, 0) != dialogue_order(samples, 1)
    files = sorted({s.dialogue_id for s in samples})
    assert dialogue_order(samples, 0)[:10] != files[:10]


def test_a_limit_takes_whole_dialogues_until_it_has_enough(bench: Benchmark) -> None:
    api = bench.samples(1, "api")
    order = dialogue_order(bench.samples(1), 0)
    chosen = take(api, 40, seed=0, order=order)
    per_dialogue = Counter(s.dialogue_id for s in api)
    drawn = Counter(s.dialogue_id for s in chosen)
    assert all(drawn[d] == per_dialogue[d] for d in drawn)  # no dialogue split
    assert len(chosen) >= 40
    last = max(drawn, key=order.index)
    assert len(chosen) - drawn[last] < 40  # not a dialogue more than needed...
    assert [s.key for s in chosen] == [s.key for s in api if s.dialogue_id in drawn]  # ...and in dataset order


def test_draws_are_nested_and_the_same_whatever_else_is_planned(bench: Benchmark) -> None:
    small = _keys(bench, levels=(1,), tasks=("api",), limit=20)
    large = _keys(bench, levels=(1,), tasks=("api",), limit=60)
    assert set(small) < set(large)
    with_others = _keys(bench, levels=(1, 2), tasks=("api", "response"), limit=20)
    api_dialogues = {k.split("/")[2] for k in small}
    # API-call samples and replies share one order: the combined draw's dialogues are a prefix of the same order.
    combined = {k.split("/")[2] for k in with_others if k.startswith("L1/")}
    assert combined <= api_dialogues or api_dialogues <= combined
    other_seed = _keys(bench, levels=(1,), tasks=("api",), limit=20, subset_seed=1)
    assert other_seed != small


def test_every_model_gets_the_same_draw(bench: Benchmark, tmp_path: Path) -> None:
    folders = [
        run(RunConfig(model, levels=(1, 3), tasks=("api",), limit=15, level3="both", runs_dir=str(tmp_path)), bench=bench, progress=False)
        for model in ("oracle", "no-call")
    ]
    keys = [sorted(RunFolder(f.path).read_predictions().records) for f in folders]
    assert keys[0] == keys[1] and len(keys[0]) >= 30
    assert any(k.startswith("L3/episode/") for k in keys[0])


def test_first_n_stays_available_and_says_so(bench: Benchmark) -> None:
    first = _keys(bench, levels=(1,), tasks=("api",), limit=7, draw=FIRST)
    assert first == [s.key for s in bench.samples(1, "api")[:7]]
    assert describe(7, FIRST) == "7 (first)" and describe(60, RANDOM, 3) == "60 (random dialogues, seed 3)"
    assert describe(None) == "all"
    with pytest.raises(ConfigError, match="draw must be one of"):
        RunConfig("oracle", limit=3, draw="top").validate()


def test_a_folder_planned_before_draws_existed_keeps_its_first_samples(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.runs.config import planned

    old_plan = {"levels": [1], "limit": 5, "tasks": ["api"], "level3": "steps"}  # as folders wrote it before
    items = planned(bench, RunConfig("oracle"), [old_plan])
    assert [x.key for x in items] == [s.key for s in bench.samples(1, "api")[:5]]


def test_the_draw_estimates_the_level_where_the_first_samples_do_not(bench: Benchmark, tmp_path: Path) -> None:
    """The heuristic baseline on the bundled data: a draw of about 60 API-call samples per level lands inside the
    95% interval of the whole level's accuracy, for seed 0 and for most seeds; the first 60 samples of level 1 (whose
    files sort by API name) do not, which is the bias the draw removes."""
    done = run(RunConfig("heuristic", levels=(1, 2, 3), tasks=("api",), runs_dir=str(tmp_path)), bench=bench, progress=False)
    judged = scored(RunFolder(done.path), bench).judgments

    def accuracy(keys: set[str]) -> float:
        chosen = [j for j in judged if j.key in keys]
        return sum(j.correct for j in chosen) / len(chosen)

    for level in (1, 2, 3):
        everything = [j for j in judged if j.level == level and j.kind == "api"]
        whole = bootstrap_mean([float(j.correct) for j in everything], [j.dialogue_id for j in everything])
        inside = 0
        for seed in range(10):
            drawn = set(_keys(bench, levels=(level,), tasks=("api",), limit=60, subset_seed=seed))
            estimate = accuracy(drawn)
            inside += whole.low <= estimate <= whole.high
            if seed == 0:
                assert whole.low <= estimate <= whole.high, (level, estimate, whole)
        assert inside >= 7, (level, inside)
    level1 = [j for j in judged if j.level == 1 and j.kind == "api"]
    whole = bootstrap_mean([float(j.correct) for j in level1], [j.dialogue_id for j in level1])
    first = accuracy(set(_keys(bench, levels=(1,), tasks=("api",), limit=60, draw=FIRST)))
    assert not whole.low <= first <= whole.high, (first, whole)


def test_a_folder_is_labelled_by_every_plan_that_wrote_it() -> None:
    from apibank_lib.runs.subsets import describe_plans

    everything = {"levels": [1, 2, 3], "limit": None}
    drawn = {"levels": [1, 2, 3], "limit": 40, "draw": "random", "subset_seed": 0}
    assert describe_plans([everything, {"levels": [2], "limit": None}]) == "all"
    assert describe_plans([{"levels": [1], "limit": None}, drawn]) == "L1 all; L1-3 40 (random dialogues, seed 0)"
    assert describe_plans([drawn, drawn]) == "L1-3 40 (random dialogues, seed 0)"
    assert describe_plans([{"levels": [3, 1], "limit": 6, "draw": "first"}]) == "L1,3 6 (first)"

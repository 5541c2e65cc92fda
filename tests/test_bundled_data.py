"""Our bundled benchmark: size, coverage, up-to-date build, and validity under the validator."""

from __future__ import annotations

from apibank_lib.data.authoring import build
from apibank_lib.data.datasets import Benchmark, statistics
from apibank_lib.env.protocols import V2
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.grading.replay import replay
from apibank_lib.grading.validate import validate


def test_paper_sized(bench: Benchmark) -> None:
    stats = statistics(bench)
    l1, l2, l3 = (stats["levels"][k] for k in ("1", "2", "3"))
    assert l1["dialogues"] >= 214 and l1["api_call_samples"] >= 399
    assert l2["dialogues"] >= 50 and l2["api_call_samples"] >= 135
    assert l3["dialogues"] >= 50
    assert all(3 <= len(it.steps) <= 8 for it in bench.level3)
    assert stats["total"]["domains"] >= 8


def test_every_tool_of_both_sets_is_used(bench: Benchmark) -> None:
    used12 = {t.api_name for lv in (1, 2) for d in bench.dialogues(lv) for t in d.api_turns}
    used3 = {st.api_name for it in bench.level3 for st in it.steps}
    assert set(toolset_for_level(1).tools) <= used12
    assert set(toolset_for_level(3).tools) <= used3


def test_single_and_multi_api_dialogues(bench: Benchmark) -> None:
    tags = [d.id.rsplit("-level-", 1)[1].split("-")[0] for d in bench.level1]
    single = tags.count("1") / len(tags)
    assert 0.5 <= single <= 0.7  # about 60% built around one API, 40% around 2-4


def test_built_files_match_the_sources() -> None:
    build(check=True)  # raises DataError when data/src and data/eval disagree


def test_v2_replay_is_perfect(bench: Benchmark) -> None:
    report = replay(bench, V2)
    assert all(r["correct"] == r["gold_calls"] and r["samples_correct"] == r["samples"] for r in report["levels"].values())


def test_validator_passes_on_the_bundled_data() -> None:
    assert validate().problems == []

"""ToolRL's files as a way to run: ``apibank run --data <ToolRL folder>``, its run folder, its reference rows, and the
same answers judged by execution on the release they come from.

The ToolRL-shaped folder is built here from our own official-layout fixture (``tests/fixtures/official``), with
our own wording; the entries point back at that fixture's samples the way ToolRL's ``other`` field points at a
release, so the cross-check can find them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import BackendError, DataError
from apibank_lib.core.stats import MIN_CLUSTERS
from apibank_lib.core.types import ApiRecord, Utterance
from apibank_lib.data.datasets import load_benchmark
from apibank_lib.data.formats.toolrl import FILES, load_toolrl
from apibank_lib.models import load_backend
from apibank_lib.models.base import Backend, Completion, Request
from apibank_lib.report.toolrl_cross import (
    cross_judge,
    cross_table,
    disagreement_counts,
    disagreement_kind,
    release_sample,
)
from apibank_lib.runs.toolrl import entry_context, entry_tools, is_toolrl_run, run_toolrl, score_toolrl_run

OFFICIAL = Path(__file__).parent / "fixtures" / "official"
ERRATA = Path(__file__).parent / "fixtures" / "official_errata.yaml"


def _tools_text(bench, names, numbered_names: bool) -> str:
    lines = []
    for i, name in enumerate(names, 1):
        schema = bench.toolset(1).schema(name) if name in bench.toolset(1) else bench.toolset(3).schema(name)
        params = {k: {"type": p.type, "description": p.description} for k, p in schema.input_parameters.items()}
        head = f"{i}. Name: {name}\nDescription: {schema.description}" if numbered_names else f"{i}. {name}: {schema.description}"
        lines.append(f"{head}\nParameters: {params!r}")
    return "You answer with tool calls.\n\n**Available Tools**\nThese tools exist:\n" + "\n".join(lines) + "\n\n**Output Format**\n..."


def _history_text(history) -> str:
    parts = ["**Dialogue Records History**"]
    for turn in history:
        if isinstance(turn, ApiRecord):
            parts.append(f"<tool_call>\n{json.dumps({'name': turn.api_name, 'parameters': turn.args})}\n</tool_call>\n<obs> {turn.result!r} </obs>")
        elif turn.role == "User":
            parts.append(f"<user>{turn.text}</user>")
        else:
            parts.append(f"<response>{turn.text}</response>")
    parts.append("<user> Now, please only make one tool call for what I asked.</user>")
    return "\n".join(parts)


def _build(folder: Path) -> Path:
    """A ToolRL-shaped folder made from the official fixture: level 1 every API-call sample, level 2 the calls other
    than ToolSearcher, level 3 the steps other than ToolSearcher."""
    bench = load_benchmark(OFFICIAL)
    files: dict[int, list] = {1: [], 2: [], 3: []}
    for s in bench.samples(1, "api"):
        files[1].append((s, {"file": f"{s.dialogue_id}.jsonl", "id": s.sample_id}, s.api_names, True))
    for d in bench.dialogues(2):
        calls = [t for t in d.turns if isinstance(t, ApiRecord) and t.api_name != "ToolSearcher"]
        for k, record in enumerate(calls):
            sample = next(s for s in bench.samples(2, "api") if s.dialogue_id == d.id and s.gold is record and not s.duplicate)
            files[2].append((sample, {"file": f"{d.id}.jsonl", "id": k}, (record.api_name,), True))
    for s in bench.samples(3, "api"):
        if s.gold.api_name != "ToolSearcher":
            files[3].append((s, {"sample_id": int(s.dialogue_id), "api_id": s.sample_id}, (s.gold.api_name,), False))
    for level, items in files.items():
        entries = []
        for sample, other, names, numbered in items:
            answer = {"name": sample.gold.api_name, "parameters": {k: str(v) for k, v in sample.gold.args.items()}}
            entries.append(
                {
                    "system": _tools_text(bench, names, numbered),
                    "user": _history_text(sample.history),
                    "answer": answer if level == 2 else [answer],
                    "other": other,
                }
            )
        (folder / FILES[level]).write_text(json.dumps(entries), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def toolrl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("toolrl"))


@pytest.fixture(scope="module")
def release():
    return load_benchmark(OFFICIAL)


def _run_cli(*args: str, capsys) -> dict:
    assert main(["run", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_oracle_scores_100_at_every_level_and_a_rerun_resumes(toolrl: Path, tmp_path: Path, capsys) -> None:
    out = _run_cli("--model", "oracle", "--data", str(toolrl), "--out", str(tmp_path), capsys=capsys)
    metrics = out["metrics"]
    assert metrics["protocol"] == "toolrl-1"
    assert {lv: m["accuracy"] for lv, m in metrics["levels"].items()} == {"1": 100.0, "2": 100.0, "3": 100.0}
    assert metrics["overall"]["entries"] == sum(len(es) for es in load_toolrl(toolrl).values())
    assert is_toolrl_run(out["run"])
    again = _run_cli("--model", "oracle", "--data", str(toolrl), "--out", str(tmp_path), capsys=capsys)
    assert again["run"] == out["run"] and again["answered"] == 0 and again["skipped"] == out["requested"]


def test_no_call_scores_nothing_and_the_heuristic_reads_the_entries_text(toolrl: Path, tmp_path: Path, capsys) -> None:
    none = _run_cli("--model", "no-call", "--data", str(toolrl), "--out", str(tmp_path), capsys=capsys)
    assert none["metrics"]["overall"]["right"] == 0
    heur = _run_cli("--model", "heuristic", "--data", str(toolrl), "--level", "1", "--out", str(tmp_path), capsys=capsys)
    assert heur["failed"] == 0
    # It fills credentials the user typed, so the fixture's logins are right and some other calls are not.
    assert 0 < heur["metrics"]["levels"]["1"]["right"] < heur["metrics"]["levels"]["1"]["entries"]


def test_intervals_say_how_many_dialogues_and_are_blank_below_ten(toolrl: Path, tmp_path: Path) -> None:
    result = run_toolrl(toolrl, load_backend("oracle"), out=tmp_path, progress=False)
    metrics = json.loads((result.path / "metrics.json").read_text())
    level1, level2 = metrics["levels"]["1"]["interval"], metrics["levels"]["2"]["interval"]
    assert level1["dialogues"] == len({e.dialogue_id for e in load_toolrl(toolrl)[1]}) >= MIN_CLUSTERS
    assert level1["low"] == level1["high"] == 100.0
    assert level2["dialogues"] < MIN_CLUSTERS and level2["low"] is None and "fewer than 10" in level2["why_blank"]


def test_settings_that_do_not_apply_are_refused_with_the_flag_named(toolrl: Path, tmp_path: Path, capsys) -> None:
    cases = [
        (["--data", str(toolrl), "--protocol", "v2"], "toolrl protocol only"),
        (["--data", str(toolrl), "--first", "3"], "--first"),
        (["--data", str(OFFICIAL), "--protocol", "toolrl"], "ToolRL's processed files"),
    ]
    for args, message in cases:
        assert main(["run", "--model", "oracle", *args, "--out", str(tmp_path)]) != 0
        assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing was started


def test_the_tools_and_history_are_read_from_both_listing_styles(toolrl: Path) -> None:
    entries = load_toolrl(toolrl)
    level1 = next(e for e in entries[1] if e.dialogue_id == "AddAlarm-level-1-1" and e.source["id"] == 2)
    assert [t.name for t in entry_tools(level1)] == ["GetUserToken", "AddAlarm"]
    assert "token" in entry_tools(level1)[1].input_parameters
    context, _ = entry_context(level1)
    assert isinstance(context.history[0], Utterance) and context.history[0].role == "User"
    record = next(t for t in context.history if isinstance(t, ApiRecord))
    assert record.api_name == "GetUserToken" and record.result["output"]["token"] == "idvwtfktangpvyqe6b"
    assert not any(isinstance(t, Utterance) and "one tool call" in t.text for t in context.history)
    level3 = entries[3][0]
    assert [t.name for t in entry_tools(level3)] == [level3.gold_name]


class _Flaky(Backend):
    """Answers every other entry, failing the rest (control flow only)."""

    kind = "scripted"
    supported_prompt_modes = ("completion",)

    def __init__(self) -> None:
        self.name, self.calls = "flaky", 0

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        if self.calls % 2 == 0:
            raise BackendError("the server went away")
        assert request.prompt.messages[0]["role"] == "system" and request.prompt.messages[1]["role"] == "user"
        return Completion("<think>x</think>\n<tool_call>\n{\"name\": \"Nope\", \"parameters\": {}}\n</tool_call>")


def test_a_failed_answer_is_recorded_judged_wrong_and_retried_on_request(toolrl: Path, tmp_path: Path) -> None:
    backend = _Flaky()
    first = run_toolrl(toolrl, backend, levels=(1,), out=tmp_path, progress=False)
    assert first.failed == first.total // 2 and first.answered == first.total - first.failed
    rows = [json.loads(line) for line in (first.path / "predictions.jsonl").read_text().splitlines()]
    assert sum(1 for r in rows if "BackendError" in r.get("error", "")) == first.failed
    judged = [json.loads(line) for line in (first.path / "judgments.jsonl").read_text().splitlines()]
    assert all(not j["correct"] for j in judged) and any("server went away" in j["reason"] for j in judged)
    retried = run_toolrl(toolrl, backend, levels=(1,), out=tmp_path, progress=False, retry_failed=True)
    assert retried.skipped == first.answered and retried.answered + retried.failed == first.failed


def test_apibank_score_judges_a_toolrl_run_again(toolrl: Path, tmp_path: Path, capsys) -> None:
    run = run_toolrl(toolrl, load_backend("oracle"), levels=(1,), out=tmp_path, progress=False)
    (run.path / "metrics.json").unlink()
    assert main(["score", str(run.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["levels"]["1"]["accuracy"] == 100.0
    assert (run.path / "metrics.json").is_file()


def test_scoring_a_folder_that_is_not_a_toolrl_run_names_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a ToolRL run folder"):
        score_toolrl_run(tmp_path)


def test_every_entry_maps_to_its_release_sample(toolrl: Path, release) -> None:
    for level, entries in load_toolrl(toolrl).items():
        for entry in entries:
            sample = release_sample(release, entry)
            assert sample is not None and sample.gold.api_name == entry.gold_name, entry.key


def test_the_oracle_is_right_both_ways_and_a_number_for_text_only_by_execution(toolrl: Path, release, tmp_path: Path) -> None:
    oracle = run_toolrl(toolrl, load_backend("oracle"), out=tmp_path, progress=False)
    rows = cross_judge(oracle.path, release, errata=ERRATA)
    overall = cross_table(rows).set_index("level").loc["all"]
    assert overall["both right"] == overall["n"] > 0 and overall["execution %"] == overall["exact match %"] == 100.0
    # The fixture's one gold call on a device its database lacks is left out by its erratum, and said so.
    assert overall["left out"] == 1 and rows["excluded"].str.contains("erratum").sum() == 1

    class _Numbers(Backend):
        """The gold call with every whole-number text written as a number."""

        kind = "scripted"
        supported_prompt_modes = ("completion",)
        name = "numbers"
        entries = {e.key: e for es in load_toolrl(toolrl).values() for e in es}

        def complete(self, request: Request) -> Completion:
            entry = next(e for e in self.entries.values() if e.user == request.prompt.messages[1]["content"] and e.system == request.prompt.messages[0]["content"])
            params = {k: int(v) if v.isdigit() else v for k, v in entry.gold_parameters.items()}
            return Completion(f"<tool_call>\n{json.dumps({'name': entry.gold_name, 'parameters': params})}\n</tool_call>")

    numbers = run_toolrl(toolrl, _Numbers(), levels=(3,), out=tmp_path, progress=False)
    rows = cross_judge(numbers.path, release, errata=ERRATA)
    changed = rows[rows["key"].map(lambda k: any(v.isdigit() for v in _Numbers.entries[k].gold_parameters.values()))]
    assert len(changed) and not changed["exact"].any()
    assert (changed["cell"] == "execution only").any()
    assert set(changed.loc[changed["cell"] == "execution only", "kind"]) == {"number written as text or text as number"}
    only = changed[changed["cell"] == "execution only"].iloc[0]
    name, value = next((k, v) for k, v in _Numbers.entries[only["key"]].gold_parameters.items() if v.isdigit())
    assert only["difference"] == f"{name}: {value!r} -> {int(value)!r}"
    counts = disagreement_counts(rows, "numbers")
    assert counts["answers"].sum() == int(rows["kind"].notna().sum()) and "key" not in counts.columns


@pytest.mark.parametrize(
    ("gold", "predicted", "kind"),
    [
        ({"formula": "(5+6)*3"}, {"formula": "(5 + 6) * 3"}, "spacing or case"),
        ({"time": "2023-04-01 07:00:00"}, {"time": "2023-04-01 07:00"}, "date or time written otherwise"),
        ({"user_id": "3"}, {"user_id": 3}, "number written as text or text as number"),
        ({"attendees": "['Ana', 'Tom']"}, {"attendees": ["Ana", "Tom"]}, "list or object written as text, or text as one"),
        ({"data": '[{"k": "1"}]'}, {"data": [{"k": "1"}]}, "list or object written as text, or text as one"),
        ({"a": "x"}, {"a": "x", "b": "y"}, "parameter the API does not need"),
    ],
)
def test_disagreements_are_named(gold: dict, predicted: dict, kind: str) -> None:
    assert disagreement_kind(gold, predicted, exact_right=False, executed_right=True) == kind
    assert disagreement_kind(gold, predicted, exact_right=True, executed_right=True) is None


def test_the_cli_prints_the_cross_table(toolrl: Path, tmp_path: Path, capsys) -> None:
    out = _run_cli("--model", "oracle", "--data", str(toolrl), "--out", str(tmp_path), capsys=capsys)
    assert main(["toolrl-cross", out["run"], "--data", str(OFFICIAL), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["level"] for r in rows] == ["1", "2", "3", "all"] and all(r["model"] == "oracle" for r in rows)
    assert rows[-1]["exact match %"] == 100.0 and rows[-1]["n"] + rows[-1]["left out"] == out["requested"]


def test_a_table_sets_runs_beside_toolrls_figures_and_says_they_are_other_entries(toolrl: Path, tmp_path: Path) -> None:
    from apibank_lib.data.reported import toolrl_reported
    from apibank_lib.runs.toolrl import toolrl_table

    run = run_toolrl(toolrl, load_backend("oracle"), out=tmp_path, progress=False)
    table = toolrl_table([run.path])
    ours = table.iloc[0]
    assert ours["source"] == "measured here" and ours["comparable"].startswith("other entries")
    assert ours["L1"].startswith("100.00 [100.00, 100.00] (") and "too few for an interval" in ours["L2"]
    published = table[table["source"].str.startswith("reported")]
    assert len(published) == len(toolrl_reported()["rows"]) and set(published["data"]) == {"whole release (399 / 67 / 131 entries)"}
    assert "30.65" in set(published["overall"])


def test_apibank_compare_reads_toolrl_runs_and_refuses_to_mix_them(toolrl: Path, tmp_path: Path, capsys) -> None:
    run = run_toolrl(toolrl, load_backend("no-call"), out=tmp_path, progress=False)
    assert main(["compare", str(run.path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["model"] == "no-call" and rows[0]["overall"].startswith("0.00") and len(rows) > 1
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run as run_release

    release_run = run_release(RunConfig("oracle", levels=(1,), limit=2, data=str(OFFICIAL), out=str(tmp_path / "r")), progress=False)
    assert main(["compare", str(run.path), str(release_run.path)]) != 0
    assert "compare them apart" in capsys.readouterr().err

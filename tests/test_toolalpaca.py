"""ToolAlpaca-format conversion: counts, every drop reason, schemas, the written files, the CLI, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.cli import main
from apibank_lib.datasets import cut_samples
from apibank_lib.errors import ConfigError, DataError
from apibank_lib.formats.toolalpaca import (
    convert,
    convert_evaluation,
    convert_training,
    gold_matches,
    read_toolalpaca,
    write_converted,
)
from apibank_lib.types import ApiCall, ApiRecord, Utterance

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "toolalpaca"
TRAIN = FIXTURES / "train_small.json"
EVAL = FIXTURES / "eval_small.json"
OUR_SET = Path(__file__).resolve().parents[1] / "data" / "train" / "toolalpaca" / "our_toolalpaca_train.json"


def _write(tmp_path: Path, data: Any, name: str = "broken.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _entry(**changes: Any) -> dict[str, Any]:
    """A minimal valid training entry, with some fields changed (None removes a field)."""
    base: dict[str, Any] = {
        "Name": "PierCams",
        "Function_Description": {
            "getSnapshot": 'A camera still.\nParameters: {"pier": "Required. string. Pier name."}'
        },
        "Instances": [
            {
                "input": "Show me the south pier.",
                "output": "Here is the south pier camera.",
                "intermediate_steps": [[["getSnapshot", '{"pier": "south"}', "Get it."], '{"url": "cam/south.jpg"}']],
            }
        ],
    }
    for key, value in changes.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


# --- reading -------------------------------------------------------------------------------------


def test_the_kind_is_read_from_the_entries() -> None:
    train, ev = read_toolalpaca(TRAIN), read_toolalpaca(EVAL)
    assert (train.kind, len(train.entries)) == ("train", 3)
    assert (ev.kind, len(ev.entries)) == ("eval", 2)
    assert train.entries[1].name == "Bakery Hours" and train.entries[1].components == {
        "Bakery": "Object{bakery_id, name}"
    }
    assert train.entries[0].function_names == ("listLighthouses", "getLighthouse")
    assert train.entries[0].documentation is not None  # JSON text parsed into an object
    assert ev.entries[1].instructions[2].golden is None  # Golden_Answers shorter than Instructions


# --- training ------------------------------------------------------------------------------------


def test_training_counts_every_drop_reason() -> None:
    counts = convert_training(read_toolalpaca(TRAIN)).counts()
    assert counts["apis"] == {"read": 3, "converted": 2, "dropped": {"no_converted_instance": 1}}
    assert counts["instances"] == {
        "read": 7,
        "converted": 4,
        "dropped": {"empty_input": 1, "empty_output": 1, "no_usable_step": 1},
    }
    assert counts["steps"] == {
        "read": 11,
        "converted": 5,
        "dropped": {
            "documentation_step": 2,
            "unparsable_action_input": 1,
            "unknown_function": 1,
            "instance_dropped": 2,
        },
    }
    assert (counts["dialogues"], counts["functions"]) == (4, 4)
    for unit in ("apis", "instances", "steps"):
        assert counts[unit]["read"] == counts[unit]["converted"] + sum(counts[unit]["dropped"].values())


def test_an_instance_becomes_user_api_records_and_ai() -> None:
    result = convert_training(read_toolalpaca(TRAIN))
    first = result.dialogues[0]
    assert (first.id, first.level, result.origins[first.id]) == ("HarborLights-0", 1, "HarborLights")
    user, call, ai = first.turns
    assert user == Utterance("User", "Which lighthouses are there in Norway?")
    assert isinstance(call, ApiRecord) and call.api_name == "listLighthouses" and call.args == {"country": "Norway"}
    assert call.result == {
        "api_name": "listLighthouses",
        "input": {"country": "Norway"},
        "output": [
            {"id": "NO-114", "name": "Lindesnes", "active": True},
            {"id": "NO-207", "name": "Svenner", "active": False},
        ],
        "exception": None,
    }
    assert ai.role == "AI" and ai.text.startswith("HarborLights lists two")
    # the dialogues cut like any other: one API-call and one response sample here
    assert [s.kind for s in cut_samples(first)] == ["api", "response"]


def test_observations_keep_json_text_and_http_status() -> None:
    by_id = {d.id: d for d in convert_training(read_toolalpaca(TRAIN)).dialogues}
    retried = by_id["HarborLights-1"].api_turns  # the unparsable first try is gone, the retry kept
    assert [r.args for r in retried] == [{"country": "Scotland", "page": 2}]
    assert retried[0].output == [{"id": "SC-031", "name": "Kinnaird Head", "active": True}]
    missing = by_id["HarborLights-2"].api_turns[0]  # action_input was already an object
    assert missing.args == {"id": "NO-999"}
    assert missing.result["exception"] == "status code 404" and missing.output == {
        "error": "no lighthouse with id NO-999"
    }
    text, breads = by_id["Bakery_Hours-2"].api_turns
    assert text.output == "The bakery is closed on Mondays." and breads.output == {"breads": ["buckwheat loaf"]}


def test_schemas_come_from_the_description_the_openapi_document_or_the_calls() -> None:
    result = convert_training(read_toolalpaca(TRAIN))
    assert [g.name for g in result.apis] == ["HarborLights", "Bakery Hours"]
    schemas = {s.name: s for s in result.schemas}
    listing = schemas["listLighthouses"]  # from "Parameters: {...}" in Function_Description
    assert listing.description == "List the lighthouses of a country."
    assert {k: (p.type, p.required) for k, p in listing.input_parameters.items()} == {
        "country": ("str", True),
        "page": ("int", False),
    }
    assert listing.output_parameters["output"].description == "A page of lighthouses."
    hours = schemas["getOpeningHours"]  # from the OpenAPI document, a $ref followed
    assert {k: (p.type, p.required) for k, p in hours.input_parameters.items()} == {
        "bakery_id": ("int", True),
        "day": ("str", False),
    }
    assert hours.input_parameters["bakery_id"].description == "The bakery's number."
    breads = schemas["listBreads"]  # documented nowhere: inferred from the converted calls
    assert {k: p.type for k, p in breads.input_parameters.items()} == {"bakery_id": "int", "gluten_free": "bool"}


# --- evaluation ----------------------------------------------------------------------------------


def test_evaluation_counts_every_drop_reason() -> None:
    counts = convert_evaluation(read_toolalpaca(EVAL)).counts()
    assert counts["instructions"] == {
        "read": 7,
        "converted": 2,
        "dropped": {
            "empty_instruction": 1,
            "no_golden_answer": 2,
            "unparsable_action_input": 1,
            "unknown_function": 1,
            "no_usable_step": 0,
        },
    }
    assert counts["steps"] == {
        "read": 7,
        "converted": 3,
        "dropped": {
            "documentation_step": 1,
            "unparsable_action_input": 1,
            "unknown_function": 1,
            "instruction_dropped": 1,
        },
    }
    assert counts["apis"]["converted"] == 2 and counts["samples"] == 3


def test_evaluation_samples_carry_the_earlier_gold_steps() -> None:
    samples = convert_evaluation(read_toolalpaca(EVAL)).samples
    assert [s.key for s in samples] == ["L1/api/HarborLights-0/0", "L1/api/HarborLights-0/1", "L1/api/TramStops-0/0"]
    first, second, tram = samples
    assert first.history == (Utterance("User", first.history[0].text),)
    assert second.history[1].api_name == "listLighthouses" and second.history[1].output is None
    assert second.gold.args == {"id": "NO-114"} and second.api_names == ("listLighthouses", "getLighthouse")
    assert tram.gold.args == {"stop": "Central Square", "line": 4}  # the getDetails step before it is skipped
    assert gold_matches(tram, ApiCall("nextTram", {"line": "4", "stop": "Central Square "}))
    assert not gold_matches(tram, ApiCall("nextTram", {"stop": "Central Square"}))
    assert not gold_matches(tram, ApiCall("tramMap", {"stop": "Central Square", "line": 4}))


def test_a_file_of_the_other_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match="evaluation file"):
        convert_training(read_toolalpaca(EVAL))
    with pytest.raises(ConfigError, match="training file"):
        convert_evaluation(read_toolalpaca(TRAIN))


# --- writing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [TRAIN, EVAL], ids=["train", "eval"])
def test_output_is_byte_identical_for_identical_input(tmp_path: Path, source: Path) -> None:
    a = write_converted(convert(read_toolalpaca(source)), tmp_path / "a")
    b = write_converted(convert(read_toolalpaca(source)), tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    for pa, pb in zip(a, b):
        assert pa.read_bytes() == pb.read_bytes(), pa.name


def test_written_files_use_the_official_record_shapes(tmp_path: Path) -> None:
    write_converted(convert(read_toolalpaca(TRAIN)), tmp_path)
    lines = (tmp_path / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 4 and (first["id"], first["api"], first["level"]) == ("HarborLights-0", "HarborLights", 1)
    assert [t["role"] for t in first["turns"]] == ["User", "API", "AI"]
    assert set(first["turns"][1]) == {"role", "api_name", "param_dict", "result"}
    apis = json.loads((tmp_path / "apis.json").read_text(encoding="utf-8"))
    assert [f["name"] for f in apis[1]["functions"]] == ["getOpeningHours", "listBreads"]
    assert set(apis[0]["functions"][0]) == {"name", "description", "input_parameters", "output_parameters"}
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["instances"]["converted"] == 4 and not (tmp_path / "samples.jsonl").exists()
    write_converted(convert(read_toolalpaca(EVAL)), tmp_path)
    sample = json.loads((tmp_path / "samples.jsonl").read_text(encoding="utf-8").splitlines()[1])
    assert sample["gold"]["param_dict"] == {"id": "NO-114"} and [t["role"] for t in sample["history"]] == [
        "User",
        "API",
    ]


def test_the_report_table_lists_every_reason() -> None:
    pytest.importorskip("pandas")
    table = convert(read_toolalpaca(TRAIN)).report()
    assert list(table.columns) == ["unit", "measure", "count"]
    row = table[(table["unit"] == "steps") & (table["measure"] == "dropped: documentation_step")]
    assert row["count"].tolist() == [2]
    assert len(table) == 14


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"Name": "x"}, "must be a JSON list of API entries, found dict"),
        ([], "holds no API entry"),
        ([_entry(Name=None)], "entry 0: field 'Name' is missing or empty"),
        ([_entry(Instances=None)], "entry 0 (PierCams): needs 'Instances' (a training file) or 'Instructions'"),
        ([_entry(Instances="none")], "entry 0 (PierCams): field 'Instances' must be a list, found str"),
        (
            [_entry(), _entry(Name="Other", Instances=[{"input": "hi", "intermediate_steps": []}])],
            "entry 1 (Other), instance 0: field 'output' is missing",
        ),
        (
            [_entry(Instances=[{"input": "hi", "output": "ok", "intermediate_steps": [["getSnapshot", "{}"]]}])],
            "entry 0 (PierCams), instance 0, step 0: a step must be [[action, action_input, thought], observation]",
        ),
        (
            [_entry(Instances=[{"input": "hi", "output": "ok", "intermediate_steps": [[[None, "{}", ""], "x"]]}])],
            "instance 0, step 0: the step's action must be a non-empty function name",
        ),
        ([_entry(), _entry()], "entry 1 (PierCams): the API name repeats entry 0"),
        (
            [_entry(), _entry(Name="Quiz", Instances=None, Instructions=["q"])],
            "entry 1 (Quiz): has no 'Instances' like entry 0",
        ),
        (
            [_entry(Instances=None, Instructions=["a"], Golden_Answers=[[{"Action_Input": "{}"}]])],
            "entry 0 (PierCams), golden answer 0, step 0: field 'Action' is missing",
        ),
        (
            [_entry(Instances=None, Instructions=["a"], Golden_Answers=[[], []])],
            "field 'Golden_Answers' has 2 answers for 1 instructions",
        ),
        ([_entry(Function_Description=None)], "entry 0 (PierCams): declares no function"),
        ([_entry(Description=7)], "entry 0 (PierCams): field 'Description' must be text, found int"),
    ],
)
def test_a_broken_file_is_named_with_entry_and_field(tmp_path: Path, data: Any, message: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(DataError) as err:
        read_toolalpaca(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value), str(err.value)


def test_optional_fields_may_be_missing(tmp_path: Path) -> None:
    path = _write(tmp_path, [_entry()])
    result = convert(read_toolalpaca(path))
    assert result.counts()["instances"]["converted"] == 1 and result.apis[0].description == ""


# --- the command ---------------------------------------------------------------------------------


def test_cli_prints_the_report_and_writes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-toolalpaca", str(TRAIN), str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "4 dialogues, 4 functions" in out and "dropped: documentation_step" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["apis.json", "dialogues.jsonl", "report.json"]
    assert main(["convert-toolalpaca", str(EVAL), str(tmp_path / "ev"), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["kind"] == "eval" and counts["samples"] == 3
    assert counts == json.loads((tmp_path / "ev" / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "missing.json", "cannot read the file"),
        (
            lambda tmp: _write(tmp, [_entry(Instances=[{"output": "x", "intermediate_steps": []}])]),
            "field 'input' is missing",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    assert main(["convert-toolalpaca", str(make(tmp_path)), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("apibank: error: ") and len(err.splitlines()) == 1 and message in err


# --- our hand-written training set ---------------------------------------------------------------


def test_our_training_set_converts_whole() -> None:
    if not OUR_SET.is_file():
        pytest.skip("our ToolAlpaca-format training set is not present")
    file = read_toolalpaca(OUR_SET)
    result = convert(file)
    counts = result.counts()
    assert file.kind == "train" and counts["apis"]["read"] >= 50 and counts["instances"]["read"] >= 200
    assert counts["apis"]["converted"] == counts["apis"]["read"]
    assert counts["instances"]["converted"] == counts["instances"]["read"]
    assert counts["steps"]["dropped"]["documentation_step"] > 0
    assert sum(counts["steps"]["dropped"].values()) == counts["steps"]["dropped"]["documentation_step"]
    for group in result.apis:  # every function documented with its parameters, 2-4 functions an API
        assert 2 <= len(group.functions) <= 4, group.name
        for schema in group.functions:
            assert schema.description and all(p.description for p in schema.input_parameters.values()), schema.name


# --- evaluating a model on converted evaluation samples ------------------------------------------


def _hermes(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def _gold_answers(request: Any) -> str:
    """Right on the lighthouse entry, a wrong argument on the tram entry; asserts what the prompt shows."""
    tools = [t["function"]["name"] for t in request.chat.tools]
    if "nextTram" in tools:
        assert "listLighthouses" not in tools  # each sample shows its own entry's functions only
        return _hermes("nextTram", {"stop": "Central Square", "line": 5})
    gold = request.item.gold
    return _hermes(gold.api_name, dict(gold.args))


def test_a_model_is_judged_on_converted_samples_and_resumes(tmp_path: Path) -> None:
    from apibank_lib.backends.scripted import ScriptedBackend
    from apibank_lib.toolalpaca_eval import accuracy_table, evaluate_converted, load_judgments, paired_table

    result = convert_evaluation(read_toolalpaca(EVAL))
    out = tmp_path / "answers.jsonl"
    backend = ScriptedBackend(_gold_answers)
    first = evaluate_converted(result, backend, prompt_mode="chat", out=out, limit=2, progress=False)
    assert [j.correct for j in first] == [True, True] and backend.calls == 2
    judged = evaluate_converted(result, backend, prompt_mode="chat", out=out, progress=False)
    assert backend.calls == 3  # the first two came from the file
    assert [j.correct for j in judged] == [True, True, False]
    assert judged[2].predicted == "[nextTram(stop='Central Square', line=5)]" and judged[2].api == "TramStops"
    header, stored = load_judgments(out)
    assert header["prompt_mode"] == "chat" and header["source"] == EVAL.name and stored == judged

    table = accuracy_table({"scripted": judged}, n_boot=50)
    assert table.loc[0, ["samples", "instructions", "correct"]].tolist() == [3, 2, 2]
    assert table.loc[0, "Call acc (%)"] == round(200 / 3, 2)
    wrong = evaluate_converted(result, ScriptedBackend("I cannot help."), prompt_mode="chat", progress=False)
    assert all(not j.correct and j.error == "no API call found" for j in wrong)
    pairs = paired_table({"a": judged, "b": wrong}, [["a", "b"]], n_boot=50)
    assert pairs.loc[0, "A - B (points)"] == round(200 / 3, 2) and pairs.loc[0, "instructions"] == 2


def test_another_models_answers_file_is_refused_and_failures_are_asked_again(tmp_path: Path) -> None:
    from apibank_lib.backends.scripted import ScriptedBackend
    from apibank_lib.toolalpaca_eval import evaluate_converted

    result = convert_evaluation(read_toolalpaca(EVAL))
    out = tmp_path / "answers.jsonl"
    flaky = ScriptedBackend(_gold_answers, fail_on=lambda r: r.item.dialogue_id == "TramStops-0")
    judged = evaluate_converted(result, flaky, prompt_mode="chat", out=out, progress=False)
    assert [j.failed for j in judged] == [False, False, True] and "scripted failure" in (judged[2].error or "")
    with out.open("a", encoding="utf-8") as f:
        f.write('{"key": "L1/api/cut')  # an interrupted write
    healthy = ScriptedBackend(_gold_answers)
    again = evaluate_converted(result, healthy, prompt_mode="chat", out=out, progress=False)
    assert healthy.calls == 1 and not again[2].failed
    with pytest.raises(ConfigError, match="prompt_mode"):
        evaluate_converted(result, healthy, prompt_mode="paper", out=out, progress=False)
    with pytest.raises(ConfigError, match="training file"):
        evaluate_converted(convert_training(read_toolalpaca(TRAIN)), healthy, progress=False)

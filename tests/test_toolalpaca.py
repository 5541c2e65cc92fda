"""ToolAlpaca-format conversion: counts, every drop reason, schemas, the written files, the CLI, errors, and
step references (``${FIELD from STEP}``): parsed, converted, counted and judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.types import ApiCall, ApiRecord, Utterance
from apibank_lib.data.datasets import cut_samples
from apibank_lib.data.formats.step_references import resolve_references
from apibank_lib.data.formats.toolalpaca import (
    NAME_RULE,
    VALUE_RULE,
    StepReference,
    convert,
    convert_evaluation,
    convert_training,
    gold_matches,
    judge_call,
    parse_action_input,
    read_toolalpaca,
    write_converted,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "toolalpaca"
TRAIN = FIXTURES / "train_small.json"
EVAL = FIXTURES / "eval_small.json"
EVAL_REFS = FIXTURES / "eval_references.json"
TRAIN_REFS = FIXTURES / "train_references.json"
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
    assert len(table) == 18
    refs = table[table["unit"] == "references"]
    assert refs["measure"].tolist() == ["steps with references", "references", "unresolved", "with a value"]


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


# --- our AI-written training set -----------------------------------------------------------------


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
    from tests.scripted import ScriptedBackend
    from apibank_lib.runs.toolalpaca import accuracy_table, evaluate_converted, load_judgments, paired_table

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
    from tests.scripted import ScriptedBackend
    from apibank_lib.runs.toolalpaca import evaluate_converted

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


# --- step references -----------------------------------------------------------------------------


def _ref(field: str, step: str, template: str | None = None) -> StepReference:
    return StepReference(field, step, template)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"bookId": ${bookId from searchBooks}}', {"bookId": _ref("bookId", "searchBooks")}),  # bare
        ('{"bookId":${bookId from searchBooks},"n":2}', {"bookId": _ref("bookId", "searchBooks"), "n": 2}),
        ('{"ids": [${bookId from searchBooks}, 7]}', {"ids": [_ref("bookId", "searchBooks"), 7]}),  # bare, in a list
        ('{"bookId": "${bookId from searchBooks}"}', {"bookId": _ref("bookId", "searchBooks")}),  # quoted
        ('{"bookId": ${ bookId   from   searchBooks }}', {"bookId": _ref("bookId", "searchBooks")}),  # spaces
        ('{"bookId": "${bookId FROM searchBooks}"}', {"bookId": _ref("bookId", "searchBooks")}),
        ('{"bookId": ${bookId from step 1}}', {"bookId": _ref("bookId", "step 1")}),  # a step number
        ('{"bookId": "${step1.bookId}"}', {"bookId": _ref("bookId", "step1")}),  # dotted
        ('{"bookId": ${searchBooks.bookId}}', {"bookId": _ref("bookId", "searchBooks")}),
        (
            '{"url": "https://shelf.example/b/${slug from searchBooks}?lang=en"}',  # embedded
            {"url": _ref("slug", "searchBooks", "https://shelf.example/b/{}?lang=en")},
        ),
        ('{"q": "{x} ${slug from s}"}', {"q": _ref("slug", "s", "{{x}} {}")}),  # literal braces doubled
        ('{"note": "a \\"${quoted from s}\\" word"}', {"note": _ref("quoted", "s", 'a "{}" word')}),
        ('{"f": {"id": ${id from getUser}}}', {"f": {"id": _ref("id", "getUser")}}),  # nested
        ({"bookId": "${bookId from searchBooks}"}, {"bookId": _ref("bookId", "searchBooks")}),  # already an object
        ('{"text": "costs ${5}"}', {"text": "costs ${5}"}),  # a quoted ${...} of no known form stays text
        ('{"query": "Winter"}', {"query": "Winter"}),
    ],
)
def test_references_of_each_form_are_parsed(raw: Any, expected: dict[str, Any]) -> None:
    assert parse_action_input(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        '{"url": "https://x/${slug from a}/${id from b}"}',  # two references in one string
        "{${key from a}: 1}",  # a reference as a name
        '{"bookId": ${bookId from searchBooks}',  # not JSON either way
        "[${bookId from searchBooks}]",  # not an object
    ],
)
def test_placeholders_that_cannot_be_represented_stay_unparsable(raw: str) -> None:
    assert parse_action_input(raw) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # an open placeholder: a value left to the model, from no step, judged by name only
        ('{"bookId": ${bookId}}', {"bookId": StepReference("bookId", "")}),
        ('{"tags": [${a tag}], "n": 2}', {"tags": [StepReference("a tag", "")], "n": 2}),
        # a stray quote after a bare placeholder
        ('{"since": ${start date}", "n": 1}', {"since": StepReference("start date", ""), "n": 1}),
        # a reference whose closing brace is missing before the next comma
        ('{"id": ${id from login, "key": ${key from login}}', {"id": StepReference("id", "login"), "key": StepReference("key", "login")}),
    ],
)
def test_the_looser_forms_of_toolalpacas_files_are_read(raw: str, expected: dict) -> None:
    assert parse_action_input(raw) == expected


def test_an_open_placeholder_is_never_resolved_and_renders_without_a_step() -> None:
    ref = parse_action_input('{"since": ${start date}}')["since"]
    assert ref.open and ref.placeholder == "${start date}"
    assert resolve_references(ref, [("", 0), ("start date", 1)]).index is None


def test_a_reference_renders_as_its_placeholder_and_fills_its_template() -> None:
    embedded = _ref("slug", "searchBooks", "{{x}}/b/{}")
    assert embedded.placeholder == "{x}/b/${slug from searchBooks}" and str(embedded) == embedded.placeholder
    assert embedded.fill("moss") == "{x}/b/moss" and embedded.fill(7) == "{x}/b/7"
    assert _ref("id", "getUser").fill({"a": 1}) == {"a": 1}


def test_instructions_with_references_are_converted_and_counted() -> None:
    result = convert_evaluation(read_toolalpaca(EVAL_REFS))
    counts = result.counts()
    # only the string with two references is still dropped as unparsable; the open ${bookId} is read
    assert counts["instructions"]["converted"] == 6
    assert counts["instructions"]["dropped"]["unparsable_action_input"] == 1
    assert counts["steps"]["dropped"]["unparsable_action_input"] == 1
    assert counts["references"] == {"steps": 8, "total": 8, "unresolved": 2, "with_value": 2}
    gold = {s.key: s.gold.args for s in result.samples}
    assert gold["L1/api/ShelfFinder-4/1"] == {"bookId": StepReference("bookId", "", None, None)}
    assert gold["L1/api/ShelfFinder-0/1"] == {"bookId": StepReference("bookId", "searchBooks", None, 0)}
    assert gold["L1/api/ShelfFinder-3/2"] == {
        "url": StepReference("slug", "step1", "https://shelf.example/books/{}?lang=en", 0)
    }
    assert gold["L1/api/TideTables-0/1"] == {
        "portId": StepReference("portId", "findPort", None, 0),
        "date": "2024-05-01",
    }


def test_a_reference_to_no_earlier_step_is_kept_and_flagged_unresolved() -> None:
    result = convert_evaluation(read_toolalpaca(EVAL_REFS))
    sample = next(s for s in result.samples if s.key == "L1/api/ShelfFinder-2/1")
    ref = sample.gold.args["bookId"]
    assert isinstance(ref, StepReference) and (ref.step, ref.index, ref.resolved) == ("findBook", None, False)
    resolved = next(s for s in result.samples if s.key == "L1/api/ShelfFinder-0/1").gold.args["bookId"]
    assert resolved.resolved and resolved.index == 0


def test_history_shows_observations_only_from_solution_records_that_line_up() -> None:
    samples = {s.key: s for s in convert_evaluation(read_toolalpaca(EVAL_REFS)).samples}
    # Instances[0] calls the same actions: its observation is the earlier step's output
    search = samples["L1/api/ShelfFinder-0/1"].history[1]
    assert search.output["results"][0]["bookId"] == 4411
    # Instances[1] has a getDetails step the golden answer lacks: look-ups are left out on both sides
    assert samples["L1/api/ShelfFinder-1/1"].history[1].output == {"results": [{"bookId": 2093, "slug": "salt-roads"}]}
    # Instances[2] calls other actions (as many), Instances[3] stops a step short: no observation, and a
    # referring earlier step shows its placeholder
    assert samples["L1/api/ShelfFinder-2/1"].history[1].output is None
    lantern = samples["L1/api/ShelfFinder-3/2"].history
    assert lantern[1].output is None and lantern[2].args == {"bookId": "${bookId from step 1}"}
    tides = samples["L1/api/TideTables-0/2"].history[2]  # no Instances at all
    assert tides.args == {"portId": "${portId from findPort}", "date": "2024-05-01"} and tides.output is None


def test_a_reference_with_a_gold_value_is_judged_by_value() -> None:
    samples = {s.key: s for s in convert_evaluation(read_toolalpaca(EVAL_REFS)).samples}
    book = samples["L1/api/ShelfFinder-0/1"]
    right = judge_call(book, ApiCall("getBook", {"bookId": "4411"}))
    assert right.correct and right.rules == {"bookId": VALUE_RULE}
    assert not judge_call(book, ApiCall("getBook", {"bookId": 4412})).correct
    assert not judge_call(book, ApiCall("getBook", {})).correct
    page = samples["L1/api/ShelfFinder-1/1"]  # embedded: the string with the value put in
    assert judge_call(page, ApiCall("openPage", {"url": "https://shelf.example/reviews/salt-roads"})).rules == {
        "url": VALUE_RULE
    }
    assert gold_matches(page, ApiCall("openPage", {"url": "https://shelf.example/reviews/salt-roads"}))
    assert not gold_matches(page, ApiCall("openPage", {"url": "https://shelf.example/reviews/winter-orchard"}))


def test_a_reference_without_a_gold_value_is_judged_by_name_only() -> None:
    samples = {s.key: s for s in convert_evaluation(read_toolalpaca(EVAL_REFS)).samples}
    tides = samples["L1/api/TideTables-0/1"]
    present = judge_call(tides, ApiCall("getTides", {"portId": "FR-BRE", "date": "2024-05-01"}))
    assert present.correct and present.rules == {"portId": NAME_RULE}
    assert not gold_matches(tides, ApiCall("getTides", {"date": "2024-05-01"}))  # missing
    assert not gold_matches(tides, ApiCall("getTides", {"portId": " ", "date": "2024-05-01"}))  # blank
    assert not gold_matches(
        tides, ApiCall("getTides", {"portId": "FR-BRE", "date": "2024-05-02"})
    )  # the rest still equal
    chart = samples["L1/api/TideTables-0/2"]  # embedded: the template's own text around a non-blank value
    assert judge_call(chart, ApiCall("getChart", {"image": "charts/FR-BRE.png"})).rules == {"image": NAME_RULE}
    assert gold_matches(chart, ApiCall("getChart", {"image": "charts/FR-BRE.png"}))
    assert not gold_matches(chart, ApiCall("getChart", {"image": "maps/FR-BRE.png"}))
    assert not gold_matches(chart, ApiCall("getChart", {"image": "charts/.png"}))
    assert not gold_matches(chart, ApiCall("getChart", {"image": "charts/ .png"}))
    assert not gold_matches(chart, ApiCall("getChart", {"image": "charts/FR-BRE.jpg"}))
    unresolved = samples["L1/api/ShelfFinder-2/1"]
    assert judge_call(unresolved, None) == judge_call(unresolved, ApiCall("getBook", {"bookId": ""}))
    assert judge_call(unresolved, None).rules == {"bookId": NAME_RULE}
    assert gold_matches(unresolved, ApiCall("getBook", {"bookId": 77}))


def test_training_references_become_values_or_placeholder_text() -> None:
    result = convert_training(read_toolalpaca(TRAIN_REFS))
    calls = {d.id: [(r.api_name, r.args) for r in d.api_turns] for d in result.dialogues}
    assert calls["ShelfFinder-0"][1:] == [  # step 2 counts the getDetails look-up as step 1
        ("getBook", {"bookId": 4411}),
        ("openPage", {"url": "https://shelf.example/reviews/winter-orchard"}),
    ]
    assert calls["ShelfFinder-1"] == [("getBook", {"bookId": "${bookId from searchBooks}"})]  # no earlier step
    assert calls["ShelfFinder-2"][1] == ("getBook", {"bookId": "${bookId from searchBooks}"})  # field not found
    assert calls["ShelfFinder-3"][1] == ("getBook", {"bookId": "${bookId from searchBooks}"})  # the step failed
    assert calls["ShelfFinder-4"][2] == ("getBook", {"bookId": 4411})  # the nearest earlier search
    # a null is no value; depth first: the first result's nested key before the second result's own key
    assert calls["ShelfFinder-5"][1] == ("getBook", {"bookId": 31})
    assert result.counts()["references"] == {"steps": 7, "total": 7, "unresolved": 1, "with_value": 4}


@pytest.mark.parametrize(("source", "references"), [(EVAL_REFS, 8), (TRAIN_REFS, 7)], ids=["eval", "train"])
def test_converted_references_are_written_byte_stable(tmp_path: Path, source: Path, references: int) -> None:
    a = write_converted(convert(read_toolalpaca(source)), tmp_path / "a")
    b = write_converted(convert(read_toolalpaca(source)), tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    for pa, pb in zip(a, b):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
    report = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    assert report["references"]["total"] == references


def test_a_reference_is_written_as_a_ref_object(tmp_path: Path) -> None:
    write_converted(convert(read_toolalpaca(EVAL_REFS)), tmp_path)
    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    chart = next(s for s in samples if s["key"] == "L1/api/TideTables-0/2")
    ref = {"$ref": {"field": "portId", "step": "findPort", "template": "charts/{}.png", "index": 0}}
    assert chart["gold"]["param_dict"] == {"image": ref} and chart["gold"]["result"]["input"] == {"image": ref}
    assert chart["history"][2]["param_dict"] == {"portId": "${portId from findPort}", "date": "2024-05-01"}
    dialogues = [json.loads(line) for line in (tmp_path / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()]
    ferry = next(d for d in dialogues if d["id"] == "ShelfFinder-2")
    assert ferry["turns"][2]["param_dict"]["bookId"]["$ref"]["index"] is None  # unresolved


def test_cli_reports_step_references(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-toolalpaca", str(EVAL_REFS), str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "step references: 8 in 8 steps, 2 unresolved, 2 with a value" in out
    assert "steps with references" in out


_REF_ANSWERS = {
    "L1/api/ShelfFinder-0/0": ("searchBooks", {"query": "Winter Orchard"}),
    "L1/api/ShelfFinder-0/1": ("getBook", {"bookId": 4411}),
    "L1/api/ShelfFinder-1/1": ("openPage", {"url": "https://shelf.example/reviews/salt-roads"}),
    "L1/api/TideTables-0/1": ("getTides", {"date": "2024-05-01"}),
}


def _reference_answers(request: Any) -> str:
    answer = _REF_ANSWERS.get(request.item.key)
    return "I cannot help." if answer is None else _hermes(*answer)


def test_reference_rules_are_recorded_and_round_trip_in_the_answers_file(tmp_path: Path) -> None:
    from dataclasses import asdict

    from tests.scripted import ScriptedBackend
    from apibank_lib.runs.toolalpaca import accuracy_table, evaluate_converted, load_judgments

    result = convert_evaluation(read_toolalpaca(EVAL_REFS))
    out = tmp_path / "answers.jsonl"
    judged = evaluate_converted(
        result, ScriptedBackend(_reference_answers), prompt_mode="chat", out=out, progress=False
    )
    by_key = {j.key: j for j in judged}
    assert by_key["L1/api/ShelfFinder-0/0"].correct and by_key["L1/api/ShelfFinder-0/0"].reference_rules == {}
    assert by_key["L1/api/ShelfFinder-0/1"].correct and by_key["L1/api/ShelfFinder-0/1"].reference_rules == {
        "bookId": "value"
    }
    assert by_key["L1/api/ShelfFinder-0/1"].gold == "[getBook(bookId='${bookId from searchBooks}')]"
    assert by_key["L1/api/ShelfFinder-1/1"].correct
    tides = by_key["L1/api/TideTables-0/1"]
    assert not tides.correct and tides.reference_rules == {"portId": "name only"}
    assert by_key["L1/api/TideTables-0/2"].predicted is None and by_key["L1/api/TideTables-0/2"].reference_rules == {
        "image": "name only"
    }
    _, stored = load_judgments(out)
    assert stored == judged
    assert accuracy_table({"scripted": judged}, n_boot=20).loc[0, "correct"] == 3

    old = asdict(judged[0])  # a file written before the rules were recorded still loads
    del old["reference_rules"]
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join([lines[0], json.dumps(old)]) + "\n", encoding="utf-8")
    assert load_judgments(out)[1][0].reference_rules == {}

"""Loaders, sample cutting and database validation (with small files written in the tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ApiRecord, Dialogue, Level3Item, Turn, Utterance
from apibank_lib.data.datasets import cut_level3_samples, cut_samples
from apibank_lib.data.formats.official import load_dialogue_file, load_level3, read_api_metadata
from apibank_lib.env.databases import load_databases, validate_database


def _api(name: str) -> ApiRecord:
    return ApiRecord(name, {}, {"api_name": name, "input": {}, "output": "ok", "exception": None})


def test_cutting_follows_the_original_rule() -> None:
    turns: list[Turn] = [Utterance("User", "hi"), _api("GetUserToken"), _api("AddAlarm"), Utterance("AI", "done"), Utterance("User", "and?"), _api("QueryAlarm"), Utterance("User", "ok")]
    samples = cut_samples(Dialogue("d", 1, turns))
    assert [(s.kind, s.sample_id, s.duplicate) for s in samples] == [
        ("api", 0, False),
        ("api", 1, True),  # an API record right after an API record: duplicate sample
        ("api", 2, False),
        ("response", 3, False),
        ("api", 4, False),  # followed by a User turn: no sample 5
    ]
    assert samples[1].gold is samples[2].gold and list(samples[1].history) == turns[:2]
    assert samples[0].api_names == ("GetUserToken", "AddAlarm", "QueryAlarm")  # first-appearance order


def test_level2_api_samples_show_only_the_searcher() -> None:
    turns: list[Turn] = [Utterance("User", "x"), _api("ToolSearcher"), Utterance("AI", "found"), _api("AddAlarm"), Utterance("AI", "ok")]
    samples = cut_samples(Dialogue("d", 2, turns))
    assert [s.api_names for s in samples if s.kind == "api"] == [("ToolSearcher",), ("ToolSearcher",)]
    assert [s.api_names for s in samples if s.kind == "response"][0] == ("ToolSearcher", "AddAlarm")


def test_level3_cutting() -> None:
    env = {"api_name": "A", "input": {}, "output": 1, "exception": None}
    item = Level3Item(0, " do it ", "done", [ApiRecord("ToolSearcher", {"keywords": "A"}, env), ApiRecord("A", {}, env)])
    samples = cut_level3_samples(item)
    assert [(s.kind, s.sample_id, len(s.history)) for s in samples] == [("api", 0, 0), ("api", 1, 1), ("response", 1, 2)]
    assert samples[0].requirement == "do it"


def test_malformed_dialogue_line_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "X-level-1-1.jsonl"
    p.write_text('{"role": "User", "text": "hi"}\n{"role": "AI", "text": "broken\n')
    with pytest.raises(DataError) as info:
        load_dialogue_file(p, 1)
    assert info.value.line == 2 and "X-level-1-1.jsonl, line 2" in str(info.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"role": "Robot", "text": "x"}', "unknown role 'Robot'"),
        ('{"role": "User"}', "needs a text string"),
        ('{"role": "API", "api_name": "A", "param_dict": {}}', "needs a result"),
        ('{"role": "API", "param_dict": {}, "result": {}}', "needs an api_name"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_invalid_records_are_named(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text('{"role": "User", "text": "hi"}\n\n' + line + "\n")
    with pytest.raises(DataError, match=message) as info:
        load_dialogue_file(p, 1)
    assert info.value.line == 3


def test_empty_file_is_an_empty_dialogue(tmp_path: Path) -> None:
    p = tmp_path / "Empty-level-1-1.jsonl"
    p.write_text("")
    assert load_dialogue_file(p, 1).turns == []


def test_level3_validation(tmp_path: Path) -> None:
    p = tmp_path / "level-3.json"
    p.write_text(json.dumps([{"requirement": "r", "response": "x", "apis": [{"api_name": "A", "input": {}, "output": {"no": 1}}]}]))
    with pytest.raises(DataError, match="item 0, step 0 needs"):
        load_level3(p)


def test_database_validation_names_the_entry(tmp_path: Path) -> None:
    (tmp_path / "Account.json").write_text(json.dumps({"ann": {"password": "p", "token": 5, "email": "e"}}))
    with pytest.raises(DataError) as info:
        load_databases(tmp_path)
    assert "Account.json" in str(info.value) and "['ann']['token'] should be text" in str(info.value)
    (tmp_path / "Account.json").write_text('{"ann": ')
    with pytest.raises(DataError, match="invalid JSON"):
        load_databases(tmp_path)
    with pytest.raises(DataError, match="lacks the field 'date'"):
        validate_database("Appointments", {"1": {"patient_name": "a", "doctor_name": "b"}})


def test_requested_database_must_exist(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="Bank.json is missing"):
        load_databases(tmp_path, ["Bank"])


def test_api_metadata_is_read_without_importing(tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text(
        "import os\nos.system('touch SHOULD_NOT_EXIST')\n"
        "class AddAlarm(object):\n"
        "    description = 'Set an alarm.'\n"
        "    input_parameters = {'token': {'type': 'str', 'description': 't'}}\n"
        "    output_parameters = {'status': {'type': 'str', 'description': 's'}}\n"
        "    def call(self):\n        pass\n"
        "class Helper:\n    pass\n"
    )
    meta = read_api_metadata(tmp_path)
    assert list(meta) == ["AddAlarm"] and meta["AddAlarm"].description == "Set an alarm."
    assert meta["AddAlarm"].input_parameters["token"].type == "str"
    assert not Path("SHOULD_NOT_EXIST").exists()
    (tmp_path / "bad.py").write_text("class X:\n    description = 'a' + f()\n")
    with pytest.raises(DataError, match="X.description is not a literal"):
        read_api_metadata(tmp_path)

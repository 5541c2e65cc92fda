"""Health tools: symptom look-ups and health records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.health import EmergencyKnowledge, QueryHealthData, RecordHealthData, SymptomSearch
from tests.helpers import sandbox_for

DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"
TOOLS = (EmergencyKnowledge, SymptomSearch, QueryHealthData, RecordHealthData)


def symptoms() -> dict[str, Any]:
    return {
        "itchy eyes": [
            {"name": "Hay fever", "description": "Pollen allergy.", "aid": "Take an antihistamine."},
            {"name": "Conjunctivitis", "description": "Eye infection.", "aid": "Bathe the eyes with clean water."},
        ]
    }


def health() -> dict[str, Any]:
    return {
        "Q10001": [
            {"time": "2023-03-20 08:00:00", "heart_rate": 70},
            {"time": "2023-03-21 08:00:00", "heart_rate": 74, "blood_pressure": [121, 80]},
            {"time": "2023-03-21 08:00:00", "steps": 100},
            {"time": "2023-03-25 08:00:00", "weight_kg": 70.5},
        ]
    }


def run(tool: str, conversion: str = "v2", **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    sb = sandbox_for(*TOOLS, dbs={"Symptom": symptoms(), "HealthData": health()}, conversion=conversion)
    return sb.execute(ApiCall(tool, args)).to_dict(), sb.database("HealthData")


def env(api: str, inp: dict[str, Any], output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": inp, "output": output, "exception": exception}


# --- EmergencyKnowledge, SymptomSearch --------------------------------------------------------------


def test_emergency_knowledge() -> None:
    result, _ = run("EmergencyKnowledge", symptom=" Itchy Eyes ")
    assert result == env(
        "EmergencyKnowledge",
        {"symptom": " Itchy Eyes "},
        [
            {"name": "Hay fever", "aid": "Take an antihistamine."},
            {"name": "Conjunctivitis", "aid": "Bathe the eyes with clean water."},
        ],
    )
    assert run("EmergencyKnowledge", symptom="itchy eye")[0]["exception"] == "The symptom does not exist."
    assert run("EmergencyKnowledge", symptom="  ")[0]["exception"] == "'Exception' object has no attribute 'lower'"


def test_symptom_search() -> None:
    result, _ = run("SymptomSearch", symptom="ITCHY EYES")
    assert result["output"] == [
        {"name": "Hay fever", "description": "Pollen allergy."},
        {"name": "Conjunctivitis", "description": "Eye infection."},
    ]
    assert run("SymptomSearch", symptom="sneezing")[0]["exception"] == "The symptom does not exist."
    assert run("SymptomSearch", symptom="\n")[0]["exception"] == "The symptom cannot be empty."


@pytest.mark.parametrize(
    ("tool", "raised", "text"),
    [
        (EmergencyKnowledge, AttributeError, "'Exception' object has no attribute 'lower'"),
        (SymptomSearch, Exception, "The symptom cannot be empty."),
    ],
)
def test_symptom_checkers(tool: type, raised: type[Exception], text: str) -> None:
    out = [{"name": "Hay fever"}]
    gold = env(tool.name, {"symptom": "Itchy eyes"}, out)
    assert tool().check(env(tool.name, {"symptom": " itchy EYES"}, out), gold)
    assert not tool().check(env(tool.name, {"symptom": "itchy eyes"}, list(reversed(out + [{"name": "x"}]))), gold)
    assert not tool().check(env(tool.name, {"symptom": "red eyes"}, out), gold)
    blank = env(tool.name, {"symptom": " "}, None, "e")
    with pytest.raises(raised, match=text):
        tool().check(blank, gold)
    assert tool().check_corrected(blank, gold) is False
    assert tool().check_corrected(env(tool.name, {"symptom": "itchy eyes"}, out), gold) is True


# --- QueryHealthData --------------------------------------------------------------------------------


def test_query_health_data_returns_records_in_the_inclusive_span() -> None:
    result, _ = run("QueryHealthData", user_id=" q10001", start_time="2023-03-21 08:00:00", end_time="2023-3-25 8:0:0")
    assert result["output"] == health()["Q10001"][1:]
    assert result["input"] == {"user_id": " q10001", "start_time": "2023-03-21 08:00:00", "end_time": "2023-3-25 8:0:0"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"user_id": " ", "start_time": "x", "end_time": "y"}, "The user id cannot be empty."),
        (
            {"user_id": "Q10001", "start_time": "x", "end_time": "2023-03-32 00:00:00"},
            "time data 'x' does not match format '%Y-%m-%d %H:%M:%S'; "
            "time data '2023-03-32 00:00:00' does not match format '%Y-%m-%d %H:%M:%S'",
        ),
        (
            {"user_id": "Q10001", "start_time": "2023-03-20", "end_time": "2023-03-21 00:00:00"},
            "time data '2023-03-20' does not match format '%Y-%m-%d %H:%M:%S'",
        ),
        (
            {"user_id": "Q10001", "start_time": "2023-03-20 00:00:00", "end_time": "2023-02-29 00:00:00"},
            "day is out of range for month",
        ),
        (
            {"user_id": "Q10001", "start_time": "2023-03-22 00:00:00", "end_time": "2023-03-21 00:00:00"},
            "The start time cannot be later than the end time.",
        ),
        (
            {"user_id": "Q10002", "start_time": "2023-03-20 00:00:00", "end_time": "2023-03-21 00:00:00"},
            "The user id does not exist.",
        ),
        (
            {"user_id": "Q10001", "start_time": "2023-03-22 00:00:00", "end_time": "2023-03-24 23:59:59"},
            "There is no health data in the given time span.",
        ),
    ],
)
def test_query_health_data_errors(args: dict[str, Any], message: str) -> None:
    assert run("QueryHealthData", **args)[0]["exception"] == message


def test_query_health_data_check() -> None:
    inp = {"user_id": "Q10001", "start_time": "2023-03-20 00:00:00", "end_time": "2023-03-21 00:00:00"}
    gold = env("QueryHealthData", inp, [{"time": "2023-03-20 08:00:00"}])
    tool = QueryHealthData()
    assert tool.check(
        env("QueryHealthData", {**inp, "user_id": "q10001 ", "end_time": "2023-3-21 0:0:0"}, gold["output"]), gold
    )
    assert not tool.check(env("QueryHealthData", {**inp, "end_time": "2023-03-21 00:00:01"}, gold["output"]), gold)
    assert not tool.check(env("QueryHealthData", inp, []), gold)
    bad = {**inp, "start_time": "x"}
    assert not tool.check(env("QueryHealthData", bad, None, "e"), env("QueryHealthData", bad, None, "e"))


# --- RecordHealthData -------------------------------------------------------------------------------


def test_record_health_data_appends_a_new_record() -> None:
    items = [{"name": "heart_rate", "value": 80}, {"name": "blood_pressure", "value": [130, 85]}]
    result, db = run("RecordHealthData", user_id="q20002 ", time="2023-3-30 9:5:0", health_data=items)
    assert result == env(
        "RecordHealthData", {"user_id": "q20002 ", "time": "2023-3-30 9:5:0", "health_data": items}, "success"
    )
    assert db["Q20002"] == [{"time": "2023-03-30 09:05:00", "heart_rate": 80, "blood_pressure": [130, 85]}]


def test_record_health_data_updates_the_last_record_at_the_same_time() -> None:
    _, db = run(
        "RecordHealthData",
        user_id="Q10001",
        time="2023-03-21 08:00:00",
        health_data=[{"name": "heart_rate", "value": 90}],
    )
    assert db["Q10001"][1] == {"time": "2023-03-21 08:00:00", "heart_rate": 74, "blood_pressure": [121, 80]}
    assert db["Q10001"][2] == {"time": "2023-03-21 08:00:00", "steps": 100, "heart_rate": 90}
    assert len(db["Q10001"]) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"user_id": "  ", "time": "x", "health_data": []}, "The user id cannot be empty."),
        (
            {"user_id": "Q1", "time": "30 March", "health_data": []},
            "time data '30 March' does not match format '%Y-%m-%d %H:%M:%S'",
        ),
        ({"user_id": "Q1", "time": "2023-03-30 09:00:00"}, "The health data cannot be empty."),
        ({"user_id": "Q1", "time": "2023-03-30 09:00:00", "health_data": []}, "The health data cannot be empty."),
        (
            {"user_id": "Q1", "time": "2023-03-30 09:00:00", "health_data": [{"value": 1}]},
            "The health data has invalid format.",
        ),
        (
            {
                "user_id": "Q1",
                "time": "2023-03-30 09:00:00",
                "health_data": [{"name": "a", "value": 1}, {"name": "a", "value": 2}],
            },
            "The health data cannot contain duplicate items.",
        ),
        ({"user_id": "Q1", "time": "2023-03-30 09:00:00", "health_data": [{"name": "a"}]}, "'value'"),
    ],
)
def test_record_health_data_errors(args: dict[str, Any], message: str) -> None:
    result, db = run("RecordHealthData", **args)
    assert result["exception"] == message and result["input"]["health_data"] == args.get("health_data")
    assert db.get("Q1", []) == []  # nothing recorded


def test_record_health_data_missing_value_partly_updates_an_existing_record() -> None:
    items = [{"name": "heart_rate", "value": 99}, {"name": "spo2"}]
    result, db = run("RecordHealthData", user_id="Q10001", time="2023-03-25 08:00:00", health_data=items)
    assert result["exception"] == "'value'" and db["Q10001"][3] == {
        "time": "2023-03-25 08:00:00",
        "weight_kg": 70.5,
        "heart_rate": 99,
    }


def test_record_health_data_paper_conversion_keeps_list_text_unparsed() -> None:
    text = "[{'name': 'heart_rate', 'value': '80'}]"
    result, _ = run("RecordHealthData", conversion="paper", user_id="Q1", time="2023-03-30 09:00:00", health_data=text)
    assert result["exception"] == "The health data has invalid format." and result["input"]["health_data"] == text
    result, db = run("RecordHealthData", conversion="v2", user_id="Q1", time="2023-03-30 09:00:00", health_data=text)
    assert result["output"] == "success" and db["Q1"] == [{"time": "2023-03-30 09:00:00", "heart_rate": "80"}]


def test_record_health_data_check_ignores_health_data_and_check_v2_compares_it() -> None:
    items = [{"name": "heart_rate", "value": "80"}, {"name": "blood_pressure", "value": [120, 80]}]
    gold = env("RecordHealthData", {"user_id": "Q1", "time": "2023-03-30 09:00:00", "health_data": items}, "success")
    wrong = env(
        "RecordHealthData",
        {"user_id": "q1", "time": "2023-3-30 9:0:0", "health_data": [{"name": "heart_rate", "value": 95}]},
        "success",
    )
    tool = RecordHealthData()
    assert tool.check(wrong, gold) is True
    assert tool.check_corrected(wrong, gold) is False
    reordered = [{"name": "blood_pressure", "value": [120, 80]}, {"name": "heart_rate", "value": 80}]
    assert (
        tool.check_corrected(env("RecordHealthData", {**wrong["input"], "health_data": reordered}, "success"), gold)
        is True
    )
    assert (
        tool.check_corrected(
            env("RecordHealthData", {**wrong["input"], "user_id": "Q2", "health_data": reordered}, "success"), gold
        )
        is False
    )
    text_items = env(
        "RecordHealthData",
        {**wrong["input"], "health_data": ["heart_rate"]},
        None,
        "The health data has invalid format.",
    )
    assert tool.check_corrected(text_items, gold) is False
    assert tool.check(
        env("RecordHealthData", {**gold["input"], "user_id": 1}, "success"),
        env("RecordHealthData", {**gold["input"], "user_id": "1"}, "success"),
    )


# --- bundled data -----------------------------------------------------------------------------------


def test_bundled_health_databases() -> None:
    dbs = load_databases(DATA, ["Symptom", "HealthData"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    names = [c["name"] for c in sb.execute("[SymptomSearch(symptom='Chest Pain')]").output]
    assert names == ["Heart attack", "Acid reflux", "Muscle strain"]
    assert all(len(v) in (2, 3) for v in dbs["Symptom"].values())
    span = sb.execute(
        "[QueryHealthData(user_id='u40592', start_time='2023-03-29 00:00:00', end_time='2023-03-29 23:59:59')]"
    )
    assert [r["body_temperature"] for r in span.output] == [38.2, 38.7]
    assert sb.execute(
        "[QueryHealthData(user_id='U20343', start_time='2023-03-01 00:00:00', end_time='2023-03-31 00:00:00')]"
    ).exception == ("The user id does not exist.")


def test_only_record_health_data_writes() -> None:
    assert [t.name for t in TOOLS if not t.read_only] == ["RecordHealthData"]

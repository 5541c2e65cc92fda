"""Hospital appointment tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.hospital import (
    AppointmentRegistration,
    CancelRegistration,
    ModifyRegistration,
    QueryRegistration,
)
from tests.helpers import sandbox_for

DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"
TOOLS = (AppointmentRegistration, CancelRegistration, ModifyRegistration, QueryRegistration)


def appointments() -> dict[str, Any]:
    return {
        "04417730": {"patient_name": "Rosa Vidal", "date": "2023-04-03", "doctor_name": "Dr. Okafor"},
        "58120934": {"patient_name": "Rosa Vidal", "date": "2023-04-03", "doctor_name": "Dr. Moreau"},
        "71209488": {"patient_name": "Rosa Vidal", "date": "2023-04-10", "doctor_name": "Dr. Okafor"},
        "33098112": {"patient_name": "Rosa Vidale", "date": "2023-04-03", "doctor_name": "Dr. Okafor"},
    }


def sandbox(conversion: str = "v2") -> Sandbox:
    return sandbox_for(*TOOLS, dbs={"Appointments": appointments()}, conversion=conversion)


def run(tool: str, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    sb = sandbox()
    return sb.execute(ApiCall(tool, args)).to_dict(), sb.database("Appointments")


def env(api: str, inp: dict[str, Any], output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": inp, "output": output, "exception": exception}


# --- AppointmentRegistration ----------------------------------------------------------------------


def test_registration_stores_a_normalised_record_under_a_deterministic_8_digit_id() -> None:
    args = {"patient_name": " Rosa Vidal ", "date": "2023-4-5", "doctor_name": " Dr. Lindqvist"}
    result, db = run("AppointmentRegistration", **args)
    new_id = result["output"]
    assert result == env("AppointmentRegistration", args, new_id)
    assert len(new_id) == 8 and new_id.isdigit() and new_id not in appointments()
    assert db[new_id] == {"patient_name": "Rosa Vidal", "date": "2023-04-05", "doctor_name": "Dr. Lindqvist"}
    assert run("AppointmentRegistration", **args)[0]["output"] == new_id


def test_registration_redraws_an_id_that_is_taken() -> None:
    args = {"patient_name": "Rosa Vidal", "date": "2023-04-05", "doctor_name": "Dr. Lindqvist"}
    first, _ = run("AppointmentRegistration", **args)
    taken = {**appointments(), first["output"]: {"patient_name": "X", "date": "2023-01-01", "doctor_name": "Y"}}
    sb = sandbox_for(*TOOLS, dbs={"Appointments": taken})
    second = sb.execute(ApiCall("AppointmentRegistration", args)).output
    assert second != first["output"] and sb.database("Appointments")[first["output"]]["patient_name"] == "X"


@pytest.mark.parametrize(
    ("patient", "date", "doctor", "message"),
    [
        (" ", "nonsense", "Dr. Okafor", "Patient name or doctor name cannot be empty."),  # names before the date
        ("Rosa Vidal", "2023-04-05", "", "Patient name or doctor name cannot be empty."),
        ("Rosa Vidal", " April 12 ", "Dr. Okafor", "time data 'April 12' does not match format '%Y-%m-%d'"),
        ("Rosa Vidal", "2023-02-30", "Dr. Okafor", "day is out of range for month"),
        (" Rosa Vidal", "2023-4-3", "Dr. Okafor ", "This appointment has already been registered."),
        ("Rosa Vidal", "2023-04-10", "Dr. Moreau", "This patient has already been registered in this day."),
    ],
)
def test_registration_errors(patient: str, date: str, doctor: str, message: str) -> None:
    result, db = run("AppointmentRegistration", patient_name=patient, date=date, doctor_name=doctor)
    assert result["output"] is None and result["exception"] == message and len(db) == 4


def test_registration_matches_patient_names_case_sensitively() -> None:
    result, _ = run("AppointmentRegistration", patient_name="rosa vidal", date="2023-04-03", doctor_name="Dr. Okafor")
    assert result["exception"] is None


def test_replay_adopts_the_recorded_id_so_later_calls_find_it() -> None:
    sb = sandbox()
    call = ApiCall(
        "AppointmentRegistration", {"patient_name": "Ines Duarte", "date": "2023-05-02", "doctor_name": "Dr. Okafor"}
    )
    sb.replay(
        call, {"api_name": "AppointmentRegistration", "input": call.args, "output": "39167629", "exception": None}
    )
    found = sb.execute(ApiCall("QueryRegistration", {"patient_name": "Ines Duarte", "date": "2023-05-02"})).output
    assert found == {"39167629": {"patient_name": "Ines Duarte", "date": "2023-05-02", "doctor_name": "Dr. Okafor"}}
    assert sb.execute(ApiCall("CancelRegistration", {"appointment_id": "39167629"})).output == "success"


def test_replay_never_overwrites_an_existing_appointment() -> None:
    sb = sandbox()
    call = ApiCall(
        "AppointmentRegistration", {"patient_name": "Ines Duarte", "date": "2023-05-02", "doctor_name": "Dr. Okafor"}
    )
    result = sb.replay(call, {"output": "71209488"})
    db = sb.database("Appointments")
    assert db["71209488"]["patient_name"] == "Rosa Vidal" and db[result.output]["patient_name"] == "Ines Duarte"


def test_registration_check() -> None:
    gold = env(
        "AppointmentRegistration",
        {"patient_name": "Rosa Vidal", "date": "2023-04-05", "doctor_name": "Dr. Okafor"},
        "43744231",
    )
    pred = env(
        "AppointmentRegistration",
        {"patient_name": " Rosa Vidal", "date": "2023-4-5", "doctor_name": "Dr. Okafor "},
        "99999999",
    )
    tool = AppointmentRegistration()
    assert tool.check(pred, gold)
    assert not tool.check(env("AppointmentRegistration", {**pred["input"], "doctor_name": "Dr. Moreau"}, "1"), gold)
    assert not tool.check(env("AppointmentRegistration", {**pred["input"], "patient_name": "rosa vidal"}, "1"), gold)
    failed = env("AppointmentRegistration", gold["input"], None, "This appointment has already been registered.")
    assert not tool.check(pred, failed)  # gold failed, prediction succeeded
    assert tool.check(failed, failed)
    bad = {**gold["input"], "date": "05/04/2023"}
    assert not tool.check(
        env("AppointmentRegistration", bad, None, "e"), env("AppointmentRegistration", bad, None, "e")
    )


# --- CancelRegistration ---------------------------------------------------------------------------


def test_cancel_registration() -> None:
    result, db = run("CancelRegistration", appointment_id=" 04417730 ")
    assert result == env("CancelRegistration", {"appointment_id": " 04417730 "}, "success") and "04417730" not in db
    result, db = run("CancelRegistration", appointment_id="4417730")  # the leading zero matters
    assert result["exception"] == "The appointment ID is incorrect." and len(db) == 4


def test_cancel_registration_check() -> None:
    gold = env("CancelRegistration", {"appointment_id": "04417730"}, "success")
    tool = CancelRegistration()
    assert tool.check(env("CancelRegistration", {"appointment_id": "04417730 "}, "success"), gold)
    assert not tool.check(env("CancelRegistration", {"appointment_id": "4417730"}, "success"), gold)
    assert not tool.check(
        env("CancelRegistration", {"appointment_id": "04417730"}, None, "The appointment ID is incorrect."), gold
    )


# --- ModifyRegistration ---------------------------------------------------------------------------


def test_modify_registration_echoes_all_three_parameters() -> None:
    result, db = run("ModifyRegistration", appointment_id="71209488", new_appointment_date="2023-4-12")
    assert result == env(
        "ModifyRegistration",
        {"appointment_id": "71209488", "new_appointment_date": "2023-4-12", "new_appointment_doctor": None},
        "success",
    )
    assert db["71209488"] == {"patient_name": "Rosa Vidal", "date": "2023-04-12", "doctor_name": "Dr. Okafor"}


def test_modify_registration_doctor_only_and_both() -> None:
    _, db = run("ModifyRegistration", appointment_id="71209488", new_appointment_doctor=" Dr. Moreau ")
    assert db["71209488"]["doctor_name"] == "Dr. Moreau" and db["71209488"]["date"] == "2023-04-10"
    _, db = run(
        "ModifyRegistration",
        appointment_id="71209488",
        new_appointment_date="2023-04-11",
        new_appointment_doctor="Dr. Tanaka",
    )
    assert db["71209488"] == {"patient_name": "Rosa Vidal", "date": "2023-04-11", "doctor_name": "Dr. Tanaka"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"appointment_id": "7120948"}, "The appointment ID does not exist."),
        (
            {"appointment_id": "71209488", "new_appointment_date": "bad", "new_appointment_doctor": " "},
            "Fail because the doctor name is empty.",
        ),
        (
            {"appointment_id": "71209488", "new_appointment_date": "2023/04/12"},
            "time data '2023/04/12' does not match format '%Y-%m-%d'",
        ),
        ({"appointment_id": " 71209488 "}, "Fail because no modification is made."),
        ({"appointment_id": "71209488", "new_appointment_doctor": "Dr. Okafor"}, "Fail because doctor is not changed."),
        ({"appointment_id": "71209488", "new_appointment_date": "2023-4-10"}, "Fail because date is not changed."),
        (
            {
                "appointment_id": "71209488",
                "new_appointment_date": "2023-04-10",
                "new_appointment_doctor": "Dr. Okafor",
            },
            "Fail because no modification is made.",
        ),
        (
            {
                "appointment_id": "71209488",
                "new_appointment_date": "2023-04-10",
                "new_appointment_doctor": "Dr. Moreau",
            },
            "Fail because date is not changed.",
        ),
        (
            {
                "appointment_id": "71209488",
                "new_appointment_date": "2023-04-11",
                "new_appointment_doctor": "Dr. Okafor",
            },
            "Fail because doctor is not changed.",
        ),
    ],
)
def test_modify_registration_errors(args: dict[str, Any], message: str) -> None:
    result, db = run("ModifyRegistration", **args)
    assert result["exception"] == message and db == appointments()


def test_modify_registration_check() -> None:
    gold_input = {"appointment_id": "71209488", "new_appointment_date": "2023-04-12", "new_appointment_doctor": None}
    gold = env("ModifyRegistration", gold_input, "success")
    tool = ModifyRegistration()
    assert tool.check(
        env(
            "ModifyRegistration",
            {**gold_input, "appointment_id": 71209488, "new_appointment_date": "2023-4-12"},
            "success",
        ),
        gold,
    )
    assert not tool.check(
        env("ModifyRegistration", {**gold_input, "new_appointment_doctor": "Dr. Okafor"}, "success"), gold
    )
    assert not tool.check(env("ModifyRegistration", {**gold_input, "new_appointment_date": None}, "success"), gold)
    assert not tool.check(env("ModifyRegistration", gold_input, None, "Fail because date is not changed."), gold)
    doctor_gold = env(
        "ModifyRegistration",
        {**gold_input, "new_appointment_date": None, "new_appointment_doctor": "Dr. Tanaka"},
        "success",
    )
    assert tool.check(
        env("ModifyRegistration", {**doctor_gold["input"], "new_appointment_doctor": " Dr. Tanaka "}, "success"),
        doctor_gold,
    )


# --- QueryRegistration ----------------------------------------------------------------------------


def test_query_registration_returns_every_match_keyed_by_id() -> None:
    result, _ = run("QueryRegistration", patient_name=" Rosa Vidal ", date="2023-4-3")
    assert result == env(
        "QueryRegistration",
        {"patient_name": " Rosa Vidal ", "date": "2023-4-3"},
        {
            "04417730": {"patient_name": "Rosa Vidal", "date": "2023-04-03", "doctor_name": "Dr. Okafor"},
            "58120934": {"patient_name": "Rosa Vidal", "date": "2023-04-03", "doctor_name": "Dr. Moreau"},
        },
    )


@pytest.mark.parametrize(
    ("patient", "date", "message"),
    [
        ("rosa vidal", "2023-04-03", "No appointments found."),
        ("Rosa Vidal", "2023-04-04", "No appointments found."),
        ("Rosa Vidal", "3 April", "time data '3 April' does not match format '%Y-%m-%d'"),
    ],
)
def test_query_registration_errors(patient: str, date: str, message: str) -> None:
    assert run("QueryRegistration", patient_name=patient, date=date)[0]["exception"] == message


def test_query_registration_check() -> None:
    out = {"71209488": {"patient_name": "Rosa Vidal", "date": "2023-04-10", "doctor_name": "Dr. Okafor"}}
    gold = env("QueryRegistration", {"patient_name": "Rosa Vidal", "date": "2023-04-10"}, out)
    tool = QueryRegistration()
    assert tool.check(env("QueryRegistration", {"patient_name": "Rosa Vidal ", "date": "2023-4-10"}, out), gold)
    assert not tool.check(env("QueryRegistration", {"patient_name": "Rosa Vidale", "date": "2023-04-10"}, out), gold)
    assert not tool.check(env("QueryRegistration", gold["input"], {}), gold)


# --- bundled data -----------------------------------------------------------------------------------


def test_bundled_appointments_serve_realistic_queries() -> None:
    dbs = load_databases(DATA, ["Appointments"])
    assert any(k.startswith("0") for k in dbs["Appointments"]) and all(len(k) == 8 for k in dbs["Appointments"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    found = sb.execute("[QueryRegistration(patient_name='Lucas Meyer', date='2023-04-11')]").output
    assert found == {"05121981": {"patient_name": "Lucas Meyer", "date": "2023-04-11", "doctor_name": "Dr. Mensah"}}
    assert sb.execute("[CancelRegistration(appointment_id='5121981')]").exception == "The appointment ID is incorrect."
    clash = sb.execute(
        "[AppointmentRegistration(patient_name='Maria Lopez', date='2023-04-03', doctor_name='Dr. Moreau')]"
    )
    assert clash.exception == "This patient has already been registered in this day."


def test_only_queries_are_read_only() -> None:
    assert [t.name for t in TOOLS if t.read_only] == ["QueryRegistration"]

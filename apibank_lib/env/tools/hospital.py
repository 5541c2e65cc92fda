"""Hospital tools: register, cancel, modify and look up doctor's appointments.

All four share the ``Appointments`` database: an 8-digit appointment id (text,
possibly with a leading zero) -> ``{patient_name, date, doctor_name}``, dates
as ``YYYY-MM-DD``. Dates given by callers are normalised the original way
(year zero-padded to four digits, fields zero-padded), see
:func:`~apibank_lib.env.tools.common.year_pad_normalise`.

AppointmentRegistration draws the new id at random in the original; ours is a
draw seeded by the appointment itself, so the same call always yields the same
id, and :meth:`AppointmentRegistration.adopt_recorded` moves the new record to
the id a recording holds, so that later recorded calls quoting that id work
when a dialogue is replayed.

No corrected rule: the original checkers of these tools have no known bug.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import ApiResult, Param
from apibank_lib.env.shapes import STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import D, original_errors, year_pad_normalise

__all__ = ["AppointmentRegistration", "CancelRegistration", "ModifyRegistration", "QueryRegistration"]

_APPOINTMENTS_SHAPE = DictOf(Record({"patient_name": STR, "date": STR, "doctor_name": STR}))
"""Record shape of the ``Appointments`` database."""


def _date_or_fail(value: Any) -> str:
    """The normalised date; a date that does not parse fails with the parse error's text, as in the original."""
    date = year_pad_normalise(value, D)
    if isinstance(date, Exception):
        raise ToolFailure(str(date)) from date
    return date


def _stripped(value: Any) -> str:
    """``value.strip()``; a value that is not text fails with Python's text, as in the original."""
    with original_errors(AttributeError):
        return value.strip()


def _optional_date(value: Any) -> Any:
    """The checkers' date normalisation: None stays None, a bad date becomes an exception object."""
    return None if value is None else year_pad_normalise(value, D)


def _optional_strip(value: Any) -> Any:
    """Strip text; None stays None."""
    return None if value is None else value.strip()


class AppointmentRegistration(Tool):
    """Book an appointment with a doctor; returns the new appointment id."""

    name = "AppointmentRegistration"
    domain = "health"
    description = "Book a hospital appointment for a patient with a doctor on a given day; returns the appointment id."
    input_parameters = {
        "patient_name": Param("str", "The patient's full name."),
        "date": Param("str", "The day of the appointment, as YYYY-MM-DD."),
        "doctor_name": Param("str", "The doctor's name."),
    }
    output_parameters = {"appointment_id": Param("str", "The id of the new appointment (8 digits).")}
    database_name = "Appointments"
    database_shape = _APPOINTMENTS_SHAPE
    writes_database = True

    def run(self, patient_name: Any, date: Any, doctor_name: Any) -> Any:
        patient, doctor = _stripped(patient_name), _stripped(doctor_name)
        if patient == "" or doctor == "":
            raise ToolFailure("Patient name or doctor name cannot be empty.")
        day = _date_or_fail(date)
        for record in self.db.values():
            if record["patient_name"] == patient and year_pad_normalise(record["date"], D) == day:
                if record["doctor_name"] == doctor:
                    raise ToolFailure("This appointment has already been registered.")
                raise ToolFailure("This patient has already been registered in this day.")
        appointment_id = self._draw_id(f"{patient}\n{day}\n{doctor}")
        self.db[appointment_id] = {"patient_name": patient, "date": day, "doctor_name": doctor}
        return appointment_id

    def _draw_id(self, key: str) -> str:
        # The original draws unseeded; seeding by the appointment makes every run byte-identical.
        rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
        appointment_id = str(rng.randint(10000000, 99999999))
        while appointment_id in self.db:
            appointment_id = str(rng.randint(10000000, 99999999))
        return appointment_id

    def adopt_recorded(self, result: ApiResult, recorded: dict[str, Any]) -> None:
        recorded_id = recorded.get("output")
        new_id = result.output
        if (
            result.ok
            and isinstance(recorded_id, str)
            and recorded_id != new_id
            and new_id in self.db
            and recorded_id not in self.db  # never overwrite an existing appointment
        ):
            self.db[recorded_id] = self.db.pop(new_id)

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        # The id is random, so the output is only judged for presence.
        if gold["output"] is None and pred["output"] is not None:
            return False
        return (
            p["patient_name"].strip() == g["patient_name"].strip()
            and year_pad_normalise(p["date"], D) == year_pad_normalise(g["date"], D)
            and p["doctor_name"].strip() == g["doctor_name"].strip()
            and pred["exception"] == gold["exception"]
        )


class CancelRegistration(Tool):
    """Cancel an appointment by id."""

    name = "CancelRegistration"
    domain = "health"
    description = "Cancel a hospital appointment given its appointment id."
    input_parameters = {"appointment_id": Param("str", "The id of the appointment to cancel.")}
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Appointments"
    database_shape = _APPOINTMENTS_SHAPE
    writes_database = True

    def run(self, appointment_id: Any) -> Any:
        key = _stripped(appointment_id)
        if key not in self.db:
            raise ToolFailure("The appointment ID is incorrect.")
        del self.db[key]
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return (
            pred["input"]["appointment_id"].strip() == gold["input"]["appointment_id"].strip()
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )


class ModifyRegistration(Tool):
    """Move an appointment to another day and/or another doctor."""

    name = "ModifyRegistration"
    domain = "health"
    description = "Change the date and/or the doctor of an existing hospital appointment, given its id."
    input_parameters = {
        "appointment_id": Param("str", "The id of the appointment to change."),
        "new_appointment_date": Param("str", "The new day, as YYYY-MM-DD.", required=False),
        "new_appointment_doctor": Param("str", "The new doctor's name.", required=False),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Appointments"
    database_shape = _APPOINTMENTS_SHAPE
    writes_database = True

    def echo_input(self, kwargs: dict[str, Any]) -> Any:
        # The original's envelope always lists all three parameters; omitted ones as None.
        return {name: kwargs.get(name) for name in self.input_parameters}

    def run(self, appointment_id: Any, new_appointment_date: Any = None, new_appointment_doctor: Any = None) -> Any:
        key = _stripped(appointment_id)
        if key not in self.db:
            raise ToolFailure("The appointment ID does not exist.")
        record = self.db[key]
        # The original's order: a bad date is found first but reported only after the empty-doctor check.
        date = _optional_date(new_appointment_date)
        doctor = None if new_appointment_doctor is None else _stripped(new_appointment_doctor)
        if doctor == "":
            raise ToolFailure("Fail because the doctor name is empty.")
        if isinstance(date, Exception):
            raise ToolFailure(str(date)) from date
        if date is None and doctor is None:
            raise ToolFailure("Fail because no modification is made.")
        same_date, same_doctor = date == record["date"], doctor == record["doctor_name"]
        if date is None:
            if same_doctor:
                raise ToolFailure("Fail because doctor is not changed.")
        elif doctor is None:
            if same_date:
                raise ToolFailure("Fail because date is not changed.")
        elif same_date and same_doctor:
            raise ToolFailure("Fail because no modification is made.")
        elif same_date:
            raise ToolFailure("Fail because date is not changed.")
        elif same_doctor:
            raise ToolFailure("Fail because doctor is not changed.")
        if date is not None:
            record["date"] = date
        if doctor is not None:
            record["doctor_name"] = doctor
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            str(p["appointment_id"]).strip() == g["appointment_id"].strip()
            and _optional_date(p["new_appointment_date"]) == _optional_date(g["new_appointment_date"])
            and _optional_strip(p["new_appointment_doctor"]) == _optional_strip(g["new_appointment_doctor"])
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )


class QueryRegistration(Tool):
    """List a patient's appointments on a given day."""

    name = "QueryRegistration"
    domain = "health"
    description = "Find a patient's hospital appointments on a given day; returns them keyed by appointment id."
    input_parameters = {
        "patient_name": Param("str", "The patient's full name, exactly as registered."),
        "date": Param("str", "The day to look up, as YYYY-MM-DD."),
    }
    output_parameters = {"appointments": Param("dict", "Appointment id -> {patient_name, date, doctor_name}.")}
    database_name = "Appointments"
    database_shape = _APPOINTMENTS_SHAPE
    read_only = True

    def run(self, patient_name: Any, date: Any) -> Any:
        patient = _stripped(patient_name)
        day = _date_or_fail(date)
        found = {
            appointment_id: record
            for appointment_id, record in self.db.items()
            if record["patient_name"] == patient and year_pad_normalise(record["date"], D) == day
        }
        if not found:
            raise ToolFailure("No appointments found.")
        return found

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            p["patient_name"].strip() == g["patient_name"].strip()
            and year_pad_normalise(p["date"], D) == year_pad_normalise(g["date"], D)
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )

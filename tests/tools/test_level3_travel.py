"""Level-3 FlightSearch, HotelAvailability and TravelStatus: matching, the stale-record quirks, checkers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.travel import FlightSearch, HotelAvailability, TravelStatus
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.travel")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
FLIGHTS = [
    {
        "source": "Rome",
        "destination": "Vienna",
        "departure_date": "2023-04-14 08:10:00",
        "arrival_date": "2023-04-14 09:40:00",
    },
    {
        "source": "Rome",
        "destination": "Berlin",
        "departure_date": "2023-04-14 09:00:00",
        "arrival_date": "2023-04-14 11:00:00",
    },
    {
        "source": "Rome",
        "destination": "Vienna",
        "departure_date": "2023-04-14 19:05:00",
        "arrival_date": "2023-04-14 20:35:00",
    },
    {
        "source": "Rome",
        "destination": "Vienna",
        "departure_date": "2023-04-20 08:10:00",
        "arrival_date": "2023-04-20 09:40:00",
    },
]
HOTELS = {
    "river": {"destination": "Vienna", "check_in_date": "2023-04-10", "check_out_date": "2023-04-17"},
    "ring": {"destination": "Vienna", "check_in_date": "2023-04-14", "check_out_date": "2023-04-21"},
    "spree": {"destination": "Berlin", "check_in_date": "2023-04-01", "check_out_date": "2023-04-30"},
}
STATUS = {"Eva Rossi": "Traveling", "Ben Carter": "Working remotely"}


def sandbox(conversion: str = "v2") -> Any:
    dbs = {"Lv3Flights": FLIGHTS, "Lv3Hotels": HOTELS, "Lv3TravelStatus": STATUS}
    return sandbox_for(*TOOLS, dbs=dbs, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def flights(sb: Any, source: str, destination: str, day: str) -> dict[str, Any]:
    return call(sb, "FlightSearch", source=source, destination=destination, travel_dates=day)


def test_flight_search_lists_every_flight_of_the_route_that_day() -> None:
    assert flights(sandbox(), "Rome", "Vienna", "2023-04-14") == {
        "api_name": "FlightSearch",
        "input": {"source": "Rome", "destination": "Vienna", "travel_dates": "2023-04-14"},
        "output": {"flights": [FLIGHTS[0], FLIGHTS[2]]},
        "exception": None,
    }


def test_flight_search_empty_results_and_date_errors() -> None:
    sb = sandbox()
    assert flights(sb, "Vienna", "Rome", "2023-04-14")["output"] == {"flights": []}
    assert flights(sb, "rome", "Vienna", "2023-04-14")["output"] == {"flights": []}  # case-sensitive
    assert flights(sb, "Rome", "Vienna", "2023-4-20")["output"] == {"flights": [FLIGHTS[3]]}  # strptime accepts it
    bad = flights(sb, "Rome", "Berlin", "14/04/2023")
    assert (bad["output"], bad["exception"]) == (None, "time data '14/04/2023' does not match format '%Y-%m-%d'")
    assert flights(sb, "Rome", "Berlin", "2023-04-14 09:00")["exception"] == "unconverted data remains:  09:00"


def test_flight_search_fails_on_any_later_query_for_a_route_it_returned() -> None:
    sb = sandbox()
    flights(sb, "Rome", "Vienna", "2023-04-14")
    assert sb.tool("FlightSearch").state() == [0, 2]
    again = flights(sb, "Rome", "Vienna", "2023-04-20")  # another day, same route
    assert (again["output"], again["exception"]) == (None, "'str' object has no attribute 'date'")
    # Other routes are unaffected, and a fresh sandbox starts clean.
    assert flights(sb, "Rome", "Berlin", "2023-04-14")["output"] == {"flights": [FLIGHTS[1]]}
    assert flights(sandbox(), "Rome", "Vienna", "2023-04-20")["output"] == {"flights": [FLIGHTS[3]]}


def test_flight_search_records_matches_made_before_the_failure() -> None:
    sb = sandbox()
    flights(sb, "Rome", "Vienna", "2023-04-20")  # returns record 3 only
    # Records 0 and 2 match first and are marked, then record 3 raises.
    assert flights(sb, "Rome", "Vienna", "2023-04-14")["exception"] == "'str' object has no attribute 'date'"
    assert sb.tool("FlightSearch").state() == [0, 2, 3]


def hotels(sb: Any, destination: str, check_in: str, check_out: str) -> dict[str, Any]:
    return call(sb, "HotelAvailability", destination=destination, check_in_date=check_in, check_out_date=check_out)


def test_hotel_availability_lists_hotels_covering_the_stay_without_ids() -> None:
    result = hotels(sandbox(), "Vienna", "2023-04-14", "2023-04-17")
    assert result == {
        "api_name": "HotelAvailability",
        "input": {"destination": "Vienna", "check_in_date": "2023-04-14", "check_out_date": "2023-04-17"},
        "output": {"hotels": [HOTELS["river"], HOTELS["ring"]]},
        "exception": None,
    }


@pytest.mark.parametrize(
    ("destination", "check_in", "check_out", "expected"),
    [
        ("Vienna", "2023-04-09", "2023-04-12", []),  # starts before every window
        ("Vienna", "2023-04-15", "2023-04-21", ["ring"]),  # check-out on the window's last day is fine
        ("Vienna", "2023-04-16", "2023-04-18", ["ring"]),
        ("Vienna", "2023-4-10", "2023-4-11", ["river"]),
        ("vienna", "2023-04-14", "2023-04-17", []),
        ("Madrid", "2023-04-14", "2023-04-17", []),
    ],
)
def test_hotel_availability_window_rule(destination: str, check_in: str, check_out: str, expected: list[str]) -> None:
    result = hotels(sandbox(), destination, check_in, check_out)
    assert result["output"] == {"hotels": [HOTELS[h] for h in expected]}


def test_hotel_availability_checks_both_dates_first() -> None:
    sb = sandbox()
    assert hotels(sb, "Nowhere", "2023-04-14", "April 17")["exception"] == (
        "time data 'April 17' does not match format '%Y-%m-%d'"
    )
    assert hotels(sb, "Nowhere", "2023-02-30", "x")["exception"] == "day is out of range for month"


def test_hotel_availability_fails_only_when_a_returned_hotel_is_available_again() -> None:
    sb = sandbox()
    hotels(sb, "Vienna", "2023-04-10", "2023-04-12")  # river only
    # ring is not available for this stay, river is not either: no failure.
    assert hotels(sb, "Vienna", "2023-04-09", "2023-04-12")["output"] == {"hotels": []}
    assert hotels(sb, "Vienna", "2023-04-18", "2023-04-20")["output"] == {"hotels": [HOTELS["ring"]]}
    again = hotels(sb, "Vienna", "2023-04-11", "2023-04-13")
    assert (again["output"], again["exception"]) == (None, "'str' object has no attribute 'strftime'")
    assert sb.tool("HotelAvailability").state() == ["ring", "river"]


def hotel_envelope(out: Any, exc: str | None = None, **inp: str) -> dict[str, Any]:
    args = {"destination": "Vienna", "check_in_date": "2023-04-14", "check_out_date": "2023-04-17", **inp}
    return {"api_name": "HotelAvailability", "input": args, "output": out, "exception": exc}


def test_hotel_availability_paper_checker_and_its_v2_fix() -> None:
    tool = HotelAvailability()
    gold = hotel_envelope({"hotels": [HOTELS["ring"]]})
    assert tool.check(hotel_envelope({"hotels": [HOTELS["ring"]]}), gold)
    assert tool.check(hotel_envelope({"hotels": [HOTELS["ring"]]}, "ignored"), gold)  # exception not compared
    assert not tool.check(hotel_envelope({"hotels": []}), gold)
    assert not tool.check(hotel_envelope({"hotels": [HOTELS["ring"]]}, check_out_date="2023-04-18"), gold)
    with pytest.raises(AssertionError):
        tool.check({**hotel_envelope({"hotels": []}), "api_name": "FlightSearch"}, gold)
    failed = hotel_envelope(None, "'str' object has no attribute 'strftime'")
    with pytest.raises(TypeError):  # the original evaluator crashed here
        tool.check(failed, gold)
    with pytest.raises(TypeError):
        tool.check(copy.deepcopy(failed), failed)
    # v2: whole envelope, failures included.
    assert not tool.check_corrected(failed, gold)
    assert tool.check_corrected(copy.deepcopy(failed), failed)
    assert not tool.check_corrected(hotel_envelope({"hotels": [HOTELS["ring"]]}, "x"), gold)
    assert tool.check_corrected(hotel_envelope({"hotels": [HOTELS["ring"]]}), gold)


def test_flight_search_checker_is_exact() -> None:
    tool = FlightSearch()
    inp = {"source": "Rome", "destination": "Berlin", "travel_dates": "2023-04-14"}
    gold = {"api_name": "FlightSearch", "input": inp, "output": {"flights": [FLIGHTS[1]]}, "exception": None}
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": {"flights": []}}, gold)
    assert not tool.check({**gold, "input": {**inp, "travel_dates": "2023-4-14"}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**gold, "api_name": "HotelAvailability"}, gold)


def test_travel_status_is_bare_text_and_unknown_names_give_the_key_error_text() -> None:
    sb = sandbox()
    assert call(sb, "TravelStatus", member_name="Eva Rossi") == {
        "api_name": "TravelStatus",
        "input": {"member_name": "Eva Rossi"},
        "output": "Traveling",
        "exception": None,
    }
    assert call(sb, "TravelStatus", member_name="EvaRossi")["exception"] == "'EvaRossi'"
    tool = TravelStatus()
    gold = call(sb, "TravelStatus", member_name="Ben Carter")
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": "Traveling"}, gold)


def test_bundled_trip_berlin_to_vienna() -> None:
    sb = sandbox_for(*TOOLS, dbs=load_databases(LV3, ["Lv3Flights", "Lv3Hotels", "Lv3TravelStatus"]))
    out = flights(sb, "Berlin", "Vienna", "2023-04-14")["output"]["flights"]
    assert [(f["departure_date"], f["arrival_date"]) for f in out] == [
        ("2023-04-14 08:10:00", "2023-04-14 09:25:00"),
        ("2023-04-14 17:45:00", "2023-04-14 19:00:00"),
    ]
    stay = hotels(sb, "Vienna", "2023-04-14", "2023-04-17")["output"]["hotels"]
    assert stay == [
        {"destination": "Vienna", "check_in_date": "2023-04-14", "check_out_date": "2023-04-21"},
        {"destination": "Vienna", "check_in_date": "2023-04-10", "check_out_date": "2023-04-17"},
    ]


def test_bundled_dates_are_canonical() -> None:
    dbs = load_databases(LV3, ["Lv3Flights", "Lv3Hotels"])
    for record in dbs["Lv3Flights"]:
        sb = sandbox_for(FlightSearch, dbs={"Lv3Flights": [record]})
        out = flights(sb, record["source"], record["destination"], record["departure_date"][:10])["output"]
        assert out == {"flights": [record]}
    for record in dbs["Lv3Hotels"].values():
        sb = sandbox_for(HotelAvailability, dbs={"Lv3Hotels": {"h": record}})
        out = hotels(sb, record["destination"], record["check_in_date"], record["check_out_date"])["output"]
        assert out == {"hotels": [record]}

"""Hotel booking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ParameterTypeError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.hotel import BookHotel
from tests.helpers import sandbox_for

DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"


def orders() -> dict[str, Any]:
    return {
        "1": {
            "hotel_name": "Lakeside Inn",
            "check_in_time": "2023-04-10",
            "check_out_time": "2023-04-14",
            "room_count": 1,
            "adult_count": 2,
            "child_count": 0,
        },
        "2": {
            "hotel_name": "Lakeside Lodge",
            "check_in_time": "2023-04-01",
            "check_out_time": "2023-04-30",
            "room_count": 2,
            "adult_count": 4,
            "child_count": 1,
        },
    }


def book(conversion: str = "v2", **overrides: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    args = {
        "hotel_name": "Lakeside Inn",
        "check_in_time": "2023-04-20",
        "check_out_time": "2023-04-22",
        "room_count": 1,
        "adult_count": 2,
        "child_count": 1,
        **overrides,
    }
    sb = sandbox_for(BookHotel, dbs={"Hotel": orders()}, conversion=conversion)
    return sb.execute(ApiCall("BookHotel", args)).to_dict(), sb.database("Hotel")


def test_book_hotel_stores_the_order_under_the_count_plus_one() -> None:
    result, db = book()
    inp = {
        "hotel_name": "Lakeside Inn",
        "check_in_time": "2023-04-20",
        "check_out_time": "2023-04-22",
        "room_count": 1,
        "adult_count": 2,
        "child_count": 1,
    }
    assert result == {"api_name": "BookHotel", "input": inp, "output": "3", "exception": None}
    assert db["3"] == inp


@pytest.mark.parametrize(
    ("check_in", "check_out"),
    [
        ("2023-04-14", "2023-04-16"),  # arrive on the other guest's departure day
        ("2023-04-08", "2023-04-10"),  # leave on the other guest's arrival day
        ("2023-04-09", "2023-04-15"),  # encloses the other stay: not detected (quirk)
        ("2023-04-20", "2023-04-18"),  # check-out before check-in is not refused
    ],
)
def test_book_hotel_availability_boundaries(check_in: str, check_out: str) -> None:
    assert book(check_in_time=check_in, check_out_time=check_out)[0]["output"] == "3"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"check_in_time": "2023-04-12", "check_out_time": "2023-04-16"}, "The room is not available."),
        ({"check_in_time": "2023-04-08", "check_out_time": "2023-04-11"}, "The room is not available."),
        (
            {"check_in_time": "2023-04-11", "check_out_time": "2023-04-12", "room_count": 5},
            "The room is not available.",
        ),
        ({"adult_count": 3}, "The number of adults is greater than 2. Two rooms are ordered."),
        ({"check_in_time": "20 April"}, "time data '20 April' does not match format '%Y-%m-%d'"),
        ({"check_in_time": "bad", "check_out_time": "worse"}, "time data 'bad' does not match format '%Y-%m-%d'"),
        ({"check_out_time": "2023-04-22 "}, "unconverted data remains:  "),
    ],
)
def test_book_hotel_errors(overrides: dict[str, Any], message: str) -> None:
    result, db = book(**overrides)
    assert result["output"] is None and result["exception"] == message and len(db) == 2


def test_book_hotel_matches_hotel_names_exactly_and_ignores_room_counts_for_adults_over_two() -> None:
    assert book(hotel_name="lakeside inn", check_in_time="2023-04-11", check_out_time="2023-04-12")[0]["output"] == "3"
    assert book(adult_count=3, room_count=2)[0]["output"] == "3"


def test_book_hotel_counts_conversion() -> None:
    result, _ = book(conversion="paper", room_count="1", adult_count="2", child_count="0")
    assert result["input"]["room_count"] == 1 and result["output"] == "3"
    with pytest.raises(ParameterTypeError, match="invalid parameter type. parameter: -1"):
        book(conversion="paper", room_count="1", adult_count="2", child_count="-1")
    assert book(conversion="v2", child_count="-1")[0]["input"]["child_count"] == -1


def test_book_hotel_check_is_exact() -> None:
    inp = {
        "hotel_name": "Lakeside Inn",
        "check_in_time": "2023-04-20",
        "check_out_time": "2023-04-22",
        "room_count": 1,
        "adult_count": 2,
        "child_count": 1,
    }
    gold = {"api_name": "BookHotel", "input": inp, "output": "16", "exception": None}
    assert BookHotel().check(dict(gold), gold)
    assert not BookHotel().check({**gold, "input": {**inp, "child_count": 0}}, gold)
    assert not BookHotel().check({**gold, "input": {**inp, "check_in_time": "2023-4-20"}}, gold)
    assert not BookHotel().check({**gold, "output": "17"}, gold)


def test_bundled_hotel_orders() -> None:
    dbs = load_databases(DATA, ["Hotel"])
    sb = sandbox_for(BookHotel, dbs=dbs)

    def booking(check_in: str, check_out: str) -> str:
        return (
            f"[BookHotel(hotel_name='Harborview Inn', check_in_time='{check_in}', check_out_time='{check_out}', "
            "room_count=1, adult_count=2, child_count=0)]"
        )

    assert sb.execute(booking("2023-04-04", "2023-04-06")).exception == "The room is not available."
    assert sb.execute(booking("2023-04-08", "2023-04-10")).output == str(len(dbs["Hotel"]) + 1)


def test_book_hotel_is_not_read_only() -> None:
    assert not BookHotel.read_only and BookHotel.writes_database

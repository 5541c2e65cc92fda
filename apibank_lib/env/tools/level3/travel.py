"""Level-3 travel tools: search flights, check hotel availability, see who is travelling.

Tables:

* ``Lv3Flights``: a list of ``{source, destination, departure_date,
  arrival_date}`` (dates as ``%Y-%m-%d %H:%M:%S`` text);
* ``Lv3Hotels``: hotel id -> ``{destination, check_in_date, check_out_date}``,
  the window (``%Y-%m-%d``) in which the hotel has rooms; the id is never shown;
* ``Lv3TravelStatus``: member name -> status text.

The original FlightSearch and HotelAvailability overwrite the dates of every
record they return with strings, so a later query that meets such a record
again fails: FlightSearch on any query for the same route (``'str' object has
no attribute 'date'``), HotelAvailability on a query for which the hotel is
available again (``'str' object has no attribute 'strftime'``). The gold data
was recorded with this behaviour, so it is kept. Here the tables stay
read-only and each tool instance remembers which records it has returned
(exposed by ``state()``): a fresh sandbox, or a fresh tool instance, starts
clean.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import CORRECTED, LEVEL3, Tool, checker_rule
from apibank_lib.env.tools.common import DT, D, original_errors, strptime_check
from apibank_lib.env.tools.level3.checks import require_same_api, same_api_and_envelope

__all__ = ["FlightSearch", "HotelAvailability", "TravelStatus"]

_LV3_FLIGHTS_SHAPE = ListOf(Record({"source": STR, "destination": STR, "departure_date": STR, "arrival_date": STR}))
"""Record shape of the ``Lv3Flights`` database."""

_LV3_HOTELS_SHAPE = DictOf(Record({"destination": STR, "check_in_date": STR, "check_out_date": STR}))
"""Record shape of the ``Lv3Hotels`` database."""

_LV3_TRAVEL_STATUS_SHAPE = DictOf(STR)
"""Record shape of the ``Lv3TravelStatus`` database."""


class FlightSearch(Tool):
    """Find the flights on a route that depart on a given day."""

    name = "FlightSearch"
    domain = "travel"
    toolset = LEVEL3
    description = "Find flights from one city to another that depart on a given date (%Y-%m-%d)."
    input_parameters = {
        "source": Param("str", "The city to fly from."),
        "destination": Param("str", "The city to fly to."),
        "travel_dates": Param("str", "The departure date, formatted %Y-%m-%d."),
    }
    output_parameters = {"flights": Param("list", "The matching flights with departure and arrival times.")}
    database_name = "Lv3Flights"
    database_shape = _LV3_FLIGHTS_SHAPE
    state_is_outcome = False  # which records were returned is quirk bookkeeping, not an outcome

    def __init__(self, db: Any = None, env: Any = None) -> None:
        super().__init__(db, env)
        self.returned: set[int] = set()

    def run(self, source: Any, destination: Any, travel_dates: Any) -> Any:
        day = strptime_check(travel_dates, D).date()
        flights = []
        for index, flight in enumerate(self.db):
            if flight["source"] != source or flight["destination"] != destination:
                continue
            if index in self.returned:
                # The original's stored datetime became a string when it was first returned.
                raise ToolFailure("'str' object has no attribute 'date'")
            departure = strptime_check(flight["departure_date"], DT)
            if departure.date() != day:
                continue
            self.returned.add(index)
            flights.append(
                {
                    "source": flight["source"],
                    "destination": flight["destination"],
                    "departure_date": departure.strftime(DT),
                    "arrival_date": strptime_check(flight["arrival_date"], DT).strftime(DT),
                }
            )
        return {"flights": flights}

    def state(self) -> Any:
        return sorted(self.returned)

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


def _window(hotel: dict[str, Any]) -> tuple[datetime, datetime]:
    """A hotel's stored availability window as datetimes."""
    return strptime_check(hotel["check_in_date"], D), strptime_check(hotel["check_out_date"], D)


class HotelAvailability(Tool):
    """List the hotels at a destination that have rooms for the whole requested stay.

    Checker fix (the corrected rule): the original checker reads ``output['hotels']``
    of both envelopes, so a failed call on either side (output ``None``) makes
    it raise TypeError, which crashed the original evaluator; and it never
    compares exceptions. The v2 rule compares the whole envelope instead.
    """

    name = "HotelAvailability"
    domain = "travel"
    toolset = LEVEL3
    description = "List the hotels in a city that have rooms from a check-in date to a check-out date (%Y-%m-%d)."
    input_parameters = {
        "destination": Param("str", "The city to stay in."),
        "check_in_date": Param("str", "The arrival date, formatted %Y-%m-%d."),
        "check_out_date": Param("str", "The departure date, formatted %Y-%m-%d."),
    }
    output_parameters = {"hotels": Param("list", "The available hotels with the dates they have rooms.")}
    database_name = "Lv3Hotels"
    database_shape = _LV3_HOTELS_SHAPE
    state_is_outcome = False  # which records were returned is quirk bookkeeping, not an outcome

    def __init__(self, db: Any = None, env: Any = None) -> None:
        super().__init__(db, env)
        self.returned: set[str] = set()

    def run(self, destination: Any, check_in_date: Any, check_out_date: Any) -> Any:
        check_in = strptime_check(check_in_date, D)
        check_out = strptime_check(check_out_date, D)
        hotels = []
        for hotel_id, hotel in self.db.items():
            if hotel["destination"] != destination:
                continue
            opens, closes = _window(hotel)
            if not (opens <= check_in and check_out <= closes):
                continue
            if hotel_id in self.returned:
                # The original's stored datetimes became strings when the hotel was first returned.
                raise ToolFailure("'str' object has no attribute 'strftime'")
            self.returned.add(hotel_id)
            hotels.append(
                {
                    "destination": hotel["destination"],
                    "check_in_date": opens.strftime(D),
                    "check_out_date": closes.strftime(D),
                }
            )
        return {"hotels": hotels}

    def state(self) -> Any:
        return sorted(self.returned)

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # The exception is not compared; a None output raises TypeError here, as in the original.
        require_same_api(pred, gold)
        return all(pred["input"][k] == gold["input"][k] for k in self.input_parameters) and (
            pred["output"]["hotels"] == gold["output"]["hotels"]
        )

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class TravelStatus(Tool):
    """Tell whether a person is travelling or where they are working today."""

    name = "TravelStatus"
    domain = "travel"
    toolset = LEVEL3
    description = "Tell whether a person is travelling today or where they are working."
    input_parameters = {"member_name": Param("str", "The person's full name.")}
    output_parameters = {"status": Param("str", "The person's current status.")}
    database_name = "Lv3TravelStatus"
    database_shape = _LV3_TRAVEL_STATUS_SHAPE
    read_only = True

    def run(self, member_name: Any) -> Any:
        # The bare status text. The original indexed its dict directly: an unknown name fails with the
        # KeyError text (e.g. 'Bob'), a name that is not hashable with the TypeError text.
        with original_errors(KeyError, TypeError):
            return self.db[member_name]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)

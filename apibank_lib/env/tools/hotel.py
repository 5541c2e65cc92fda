"""Hotel booking.

BookHotel reads and extends the ``Hotel`` database: order id (text, ``"1"``,
``"2"`` ...) -> ``{hotel_name, check_in_time, check_out_time, room_count,
adult_count, child_count}``, dates as ``YYYY-MM-DD``.

The availability test is the original's, quirks included: an existing order
at the same hotel (exact name) blocks the booking when the new check-in day
lies in ``[its check-in, its check-out)`` or the new check-out day lies in
``(its check-in, its check-out]``, whatever the room counts; a new stay that
strictly encloses an existing one is not detected, and check-out is not
required to follow check-in. The new order id is the number of orders plus one.

No corrected rule: the checker is the exact one.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import INT, STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import D, same_envelope, strptime_check

__all__ = ["BookHotel"]

_HOTEL_SHAPE = DictOf(
    Record(
        {
            "hotel_name": STR,
            "check_in_time": STR,
            "check_out_time": STR,
            "room_count": INT,
            "adult_count": INT,
            "child_count": INT,
        }
    )
)
"""Record shape of the ``Hotel`` database."""


class BookHotel(Tool):
    """Book rooms at a hotel for a stay; returns the order id."""

    name = "BookHotel"
    domain = "travel"
    description = (
        "Book hotel rooms for a stay, given the hotel, the check-in and check-out days and the number of guests."
    )
    input_parameters = {
        "hotel_name": Param("str", "The name of the hotel."),
        "check_in_time": Param("str", "The check-in day, as YYYY-MM-DD."),
        "check_out_time": Param("str", "The check-out day, as YYYY-MM-DD."),
        "room_count": Param("int", "How many rooms to book."),
        "adult_count": Param("int", "How many adults will stay."),
        "child_count": Param("int", "How many children will stay."),
    }
    output_parameters = {"order_id": Param("str", "The id of the new booking.")}
    database_name = "Hotel"
    database_shape = _HOTEL_SHAPE
    writes_database = True

    def run(
        self,
        hotel_name: Any,
        check_in_time: Any,
        check_out_time: Any,
        room_count: Any,
        adult_count: Any,
        child_count: Any,
    ) -> Any:
        check_in = strptime_check(check_in_time, D)
        check_out = strptime_check(check_out_time, D)
        if adult_count > 2 and room_count == 1:
            raise ToolFailure("The number of adults is greater than 2. Two rooms are ordered.")
        for order in self.db.values():
            if order["hotel_name"] != hotel_name:
                continue
            booked_in = strptime_check(order["check_in_time"], D)
            booked_out = strptime_check(order["check_out_time"], D)
            if booked_in <= check_in < booked_out or booked_in < check_out <= booked_out:
                raise ToolFailure("The room is not available.")
        order_id = str(len(self.db) + 1)
        self.db[order_id] = {
            "hotel_name": hotel_name,
            "check_in_time": check_in_time,
            "check_out_time": check_out_time,
            "room_count": room_count,
            "adult_count": adult_count,
            "child_count": child_count,
        }
        return order_id

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)

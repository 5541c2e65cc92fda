"""The level-3 tool set (Plan+Retrieve+Call), except ToolSearcher (in ``tools/searcher.py``)."""

from apibank_lib.env.tools.level3.accounts import AccountInfo, PersonalInfoUpdate
from apibank_lib.env.tools.level3.arithmetic import Calculator
from apibank_lib.env.tools.level3.calendar import AddMeeting, EmailReminder, QueryMeeting
from apibank_lib.env.tools.level3.finance import GetOccupationSalary, TaxCalculator
from apibank_lib.env.tools.level3.geo import (
    ClothingRecommendation,
    Geocoding,
    GetWeatherForCoordinates,
    NearbyRestaurants,
)
from apibank_lib.env.tools.level3.movies import MovieRecommendations, UserMoviePreferences, UserWatchedMovies
from apibank_lib.env.tools.level3.social import LikeCount, OrganizationMembers, UserPosts
from apibank_lib.env.tools.level3.travel import FlightSearch, HotelAvailability, TravelStatus

__all__ = [
    "AccountInfo",
    "AddMeeting",
    "Calculator",
    "ClothingRecommendation",
    "EmailReminder",
    "FlightSearch",
    "Geocoding",
    "GetOccupationSalary",
    "GetWeatherForCoordinates",
    "HotelAvailability",
    "LikeCount",
    "MovieRecommendations",
    "NearbyRestaurants",
    "OrganizationMembers",
    "QueryMeeting",
    "TaxCalculator",
    "TravelStatus",
    "PersonalInfoUpdate",
    "UserPosts",
    "UserWatchedMovies",
    "UserMoviePreferences",
]

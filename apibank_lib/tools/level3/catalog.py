"""The 21 level-3 tools other than ToolSearcher, and the databases they read.

The order is the original's file order (``lv3_apis/*.py`` sorted by file
name), which is also the order of the spec's tables; ToolSearcher, which would
sit between TaxCalculator and TravelStatus, is listed by the tool registry.
"""

from __future__ import annotations

from apibank_lib.tools.base import Tool
from apibank_lib.tools.level3.accounts import AccountInfo, PersonalInfoUpdate
from apibank_lib.tools.level3.arithmetic import Calculator
from apibank_lib.tools.level3.calendar import AddMeeting, EmailReminder, QueryMeeting
from apibank_lib.tools.level3.finance import GetOccupationSalary, TaxCalculator
from apibank_lib.tools.level3.geo import ClothingRecommendation, Geocoding, GetWeatherForCoordinates, NearbyRestaurants
from apibank_lib.tools.level3.movies import MovieRecommendations, UserMoviePreferences, UserWatchedMovies
from apibank_lib.tools.level3.social import LikeCount, OrganizationMembers, UserPosts
from apibank_lib.tools.level3.travel import FlightSearch, HotelAvailability, TravelStatus

__all__ = ["LEVEL3_TOOLS_WITHOUT_SEARCH", "LEVEL3_DATABASE_NAMES"]

LEVEL3_TOOLS_WITHOUT_SEARCH: tuple[type[Tool], ...] = (
    AccountInfo,
    AddMeeting,
    Calculator,
    ClothingRecommendation,
    EmailReminder,
    FlightSearch,
    Geocoding,
    GetOccupationSalary,
    GetWeatherForCoordinates,
    HotelAvailability,
    LikeCount,
    MovieRecommendations,
    NearbyRestaurants,
    OrganizationMembers,
    QueryMeeting,
    TaxCalculator,
    TravelStatus,
    PersonalInfoUpdate,
    UserPosts,
    UserWatchedMovies,
    UserMoviePreferences,
)
"""The level-3 tool classes except ToolSearcher, in the original's file order."""

LEVEL3_DATABASE_NAMES: tuple[str, ...] = tuple(
    cls.database_name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.database_name is not None
)
"""The 16 level-3 databases (one per data-bearing tool), in tool order."""

"""Level-3 movie tools: a user's genre preferences, watched movies, and recommendations by genre.

Tables:

* ``Lv3MoviePreferences``: user name -> preferred genres;
* ``Lv3WatchedMovies``: user name -> titles the user has seen;
* ``Lv3MovieGenres``: genre -> recommended titles.

MovieRecommendations concatenates the titles of each requested genre, in
order, duplicates included. Despite what its purpose suggests, it does not
remove movies the user has watched (the original does not either).
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, ListOf
from apibank_lib.env.tools.base import LEVEL3, Tool
from apibank_lib.env.tools.common import original_errors
from apibank_lib.env.tools.level3.checks import same_api_and_envelope

__all__ = ["UserMoviePreferences", "UserWatchedMovies", "MovieRecommendations"]

_LV3_MOVIE_GENRES_SHAPE = DictOf(ListOf(STR))
"""Record shape of the ``Lv3MovieGenres`` database."""

_LV3_WATCHED_MOVIES_SHAPE = DictOf(ListOf(STR))
"""Record shape of the ``Lv3WatchedMovies`` database."""

_LV3_MOVIE_PREFERENCES_SHAPE = DictOf(ListOf(STR))
"""Record shape of the ``Lv3MoviePreferences`` database."""

_USER_NAME = Param("str", "The user's account name.")


class UserMoviePreferences(Tool):
    """List the genres a user likes."""

    name = "UserMoviePreferences"
    domain = "entertainment"
    toolset = LEVEL3
    description = "List the movie genres a user prefers."
    input_parameters = {"user_name": _USER_NAME}
    output_parameters = {"preferences": Param("list", "The user's preferred genres.")}
    database_name = "Lv3MoviePreferences"
    database_shape = _LV3_MOVIE_PREFERENCES_SHAPE
    read_only = True

    def run(self, user_name: Any) -> Any:
        # The original indexed its dict directly: an unknown user fails with the KeyError text (e.g. 'Bob'),
        # a name that is not hashable with the TypeError text.
        with original_errors(KeyError, TypeError):
            preferences = self.db[user_name]
        return {"preferences": list(preferences)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class UserWatchedMovies(Tool):
    """List the movies a user has watched."""

    name = "UserWatchedMovies"
    domain = "entertainment"
    toolset = LEVEL3
    description = "List the movies a user has already watched."
    input_parameters = {"user_name": _USER_NAME}
    output_parameters = {"watched_movies": Param("list", "Titles of the movies the user has watched.")}
    database_name = "Lv3WatchedMovies"
    database_shape = _LV3_WATCHED_MOVIES_SHAPE
    read_only = True

    def run(self, user_name: Any) -> Any:
        # A name that is not hashable fails the original's membership test with the TypeError text.
        with original_errors(TypeError):
            known = user_name in self.db
        if not known:
            raise ToolFailure("User not found.")
        # The bare list, not wrapped in {watched_movies}, as in the original.
        return list(self.db[user_name])

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class MovieRecommendations(Tool):
    """Recommend movies for a list of genres."""

    name = "MovieRecommendations"
    domain = "entertainment"
    toolset = LEVEL3
    description = "Recommend movies for a list of genres, e.g. ['Comedy', 'Mystery']."
    input_parameters = {"preferences": Param("list", "The genres to recommend movies from.")}
    output_parameters = {"recommended_movies": Param("list", "Titles of the recommended movies.")}
    database_name = "Lv3MovieGenres"
    database_shape = _LV3_MOVIE_GENRES_SHAPE
    read_only = True

    def run(self, preferences: Any) -> Any:
        movies: list[str] = []
        # The original iterated whatever it was given and indexed its dict with each item. So text that was
        # not converted to a list is iterated character by character ("['Comedy']" fails with the KeyError
        # text '['), an unknown genre fails with its KeyError text ('Horror'), and a value that is not
        # iterable, or an item that is not hashable, fails with the TypeError text.
        with original_errors(KeyError, TypeError):
            for genre in preferences:
                movies.extend(self.db[genre])
        return {"recommended_movies": movies}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)

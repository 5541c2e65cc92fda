"""Level-3 social tools: a user's posts, a post's likes, an organisation's members.

Tables (JSON object keys are text, so integer ids are stored as their decimal
text, e.g. ``"204"``):

* ``Lv3UserPosts``: user id -> list of post ids;
* ``Lv3Likes``: post id -> number of likes;
* ``Lv3Organizations``: organisation name -> member names (full names, the
  keys of ``Lv3TravelStatus``).
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import INT, STR, DictOf, IntKeyed, ListOf
from apibank_lib.env.tools.base import LEVEL3, Tool
from apibank_lib.env.tools.common import key_error, original_errors
from apibank_lib.env.tools.level3.checks import same_api_and_envelope

__all__ = ["UserPosts", "LikeCount", "OrganizationMembers"]

_LV3_LIKES_SHAPE = IntKeyed(INT)
"""Record shape of the ``Lv3Likes`` database."""

_LV3_ORGANIZATIONS_SHAPE = DictOf(ListOf(STR))
"""Record shape of the ``Lv3Organizations`` database."""

_LV3_USER_POSTS_SHAPE = IntKeyed(ListOf(INT))
"""Record shape of the ``Lv3UserPosts`` database."""


class UserPosts(Tool):
    """List the ids of a user's posts."""

    name = "UserPosts"
    domain = "social"
    toolset = LEVEL3
    description = "List the ids of the posts a social-media user has published, given the user's id."
    input_parameters = {"user_id": Param("int", "The user's numeric id.")}
    output_parameters = {"post_ids": Param("list", "The ids of the user's posts.")}
    database_name = "Lv3UserPosts"
    database_shape = _LV3_USER_POSTS_SHAPE
    read_only = True

    def run(self, user_id: Any) -> Any:
        posts = self.db.get(str(user_id))
        if posts is None:
            # The original indexed a dict with int keys: the KeyError text is the bare number, e.g. 9.
            raise key_error(user_id)
        return {"post_ids": list(posts)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class LikeCount(Tool):
    """Report how many likes a post has."""

    name = "LikeCount"
    domain = "social"
    toolset = LEVEL3
    description = "Get the number of likes of a social-media post, given the post's id."
    input_parameters = {"post_id": Param("int", "The post's numeric id.")}
    output_parameters = {"like_count": Param("int", "The number of likes.")}
    database_name = "Lv3Likes"
    database_shape = _LV3_LIKES_SHAPE
    read_only = True

    def run(self, post_id: Any) -> Any:
        likes = self.db.get(str(post_id))
        if likes is None:
            raise ToolFailure(f"Post with ID {post_id} does not exist.")
        return {"like_count": likes}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class OrganizationMembers(Tool):
    """List the members of an organisation."""

    name = "OrganizationMembers"
    domain = "social"
    toolset = LEVEL3
    description = "List the members of an organisation, such as a company or a club."
    input_parameters = {"organization": Param("str", "The organisation's name.")}
    output_parameters = {"members": Param("list", "The members' full names.")}
    database_name = "Lv3Organizations"
    database_shape = _LV3_ORGANIZATIONS_SHAPE
    read_only = True

    def run(self, organization: Any) -> Any:
        # The original indexed its dict directly: an unknown organisation fails with the KeyError text
        # (e.g. 'Acme'), a name that is not hashable with the TypeError text.
        with original_errors(KeyError, TypeError):
            members = self.db[organization]
        return {"members": list(members)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)

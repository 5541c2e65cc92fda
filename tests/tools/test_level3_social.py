"""Level-3 UserPosts, LikeCount and OrganizationMembers: integer ids stored as text, error texts, checkers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import DataError, ParameterTypeError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.social import LikeCount, OrganizationMembers, UserPosts
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.social")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
DBS = {
    "Lv3UserPosts": {"3": [31, 32], "4": []},
    "Lv3Likes": {"31": 12, "32": 0},
    "Lv3Organizations": {"Pinecrest Guild": ["Mara Quinn", "Olu Ade"]},
}


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs=DBS, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def test_user_posts() -> None:
    sb = sandbox("paper")
    assert call(sb, "UserPosts", user_id="3") == {
        "api_name": "UserPosts",
        "input": {"user_id": 3},
        "output": {"post_ids": [31, 32]},
        "exception": None,
    }
    assert call(sb, "UserPosts", user_id="4")["output"] == {"post_ids": []}
    missing = call(sb, "UserPosts", user_id="9")
    assert (missing["output"], missing["exception"]) == (None, "9")  # the bare number, no quotes


def test_like_count() -> None:
    sb = sandbox("paper")
    assert call(sb, "LikeCount", post_id="32") == {
        "api_name": "LikeCount",
        "input": {"post_id": 32},
        "output": {"like_count": 0},
        "exception": None,
    }
    assert call(sb, "LikeCount", post_id="031")["output"] == {"like_count": 12}  # int("031") == 31
    missing = call(sb, "LikeCount", post_id="33")
    assert (missing["output"], missing["exception"]) == (None, "Post with ID 33 does not exist.")
    with pytest.raises(ParameterTypeError):
        sb.execute(ApiCall("LikeCount", {"post_id": "-31"}))


def test_organization_members() -> None:
    sb = sandbox()
    assert call(sb, "OrganizationMembers", organization="Pinecrest Guild") == {
        "api_name": "OrganizationMembers",
        "input": {"organization": "Pinecrest Guild"},
        "output": {"members": ["Mara Quinn", "Olu Ade"]},
        "exception": None,
    }
    assert call(sb, "OrganizationMembers", organization="Pinecrest")["exception"] == "'Pinecrest'"


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (UserPosts, {"user_id": 3}),
        (LikeCount, {"post_id": 31}),
        (OrganizationMembers, {"organization": "Pinecrest Guild"}),
    ],
)
def test_exact_checkers(cls: Any, args: dict[str, Any]) -> None:
    gold = call(sandbox(), cls.name, **args)
    tool = cls()
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": None, "exception": "x"}, gold)
    assert not tool.check({**gold, "input": {k: 0 for k in args}}, gold)
    with pytest.raises(AssertionError, match="The API name is not correct."):
        tool.check({**gold, "api_name": "Other"}, gold)


def test_id_keys_must_be_canonical_decimal_text() -> None:
    from apibank_lib.env.databases import validate_database

    validate_database("Lv3Likes", {"7": 1})
    for bad in ({"07": 1}, {"-7": 1}, {"seven": 1}):
        with pytest.raises(DataError, match="not a non-negative integer"):
            validate_database("Lv3Likes", bad)
    with pytest.raises(DataError, match="should be an integer"):
        validate_database("Lv3Likes", {"7": 1.5})


def test_bundled_posts_likes_and_members_chain() -> None:
    dbs = load_databases(LV3, ["Lv3UserPosts", "Lv3Likes", "Lv3Organizations", "Lv3TravelStatus"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    posts = call(sb, "UserPosts", user_id=3)["output"]["post_ids"]
    assert sum(call(sb, "LikeCount", post_id=p)["output"]["like_count"] for p in posts) == 275
    every_post = [p for ps in dbs["Lv3UserPosts"].values() for p in ps]
    assert sorted(str(p) for p in every_post) == sorted(dbs["Lv3Likes"])
    members = {m for ms in dbs["Lv3Organizations"].values() for m in ms}
    assert members == set(dbs["Lv3TravelStatus"])

"""Checker pieces shared by the level-3 tools.

Most level-3 checkers first assert that the predicted and gold envelopes name
the same API. The level-3 evaluator applies the *gold* API's checker to
whatever was predicted, so this assertion is what fails a call to the wrong
API. It is raised as ``AssertionError("The API name is not correct.")``, which
the protocols count as "incorrect".
"""

from __future__ import annotations

from typing import Any

from apibank_lib.env.tools.common import API_NAME_MESSAGE, require_same_api, same_envelope

__all__ = ["API_NAME_MESSAGE", "require_same_api", "same_api_and_envelope"]


def same_api_and_envelope(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """The most common level-3 rule: same API, then input, output and exception all equal."""
    require_same_api(pred, gold)
    return same_envelope(pred, gold)

"""Run folders written by earlier versions of the package, read as today's.

Every run folder's ``config.json`` says which layout wrote it (``format_version``); a folder without one is older
and is recognised here, once, by what its file holds. :func:`upgrade` turns the ``config.json`` of any past layout
into today's, in memory (the folder on disk changes only when a command writes into it again, and then keeps the
identity its name was made from). Nothing else in the package looks at a folder's layout.

=======  =====================================================================================================
layout   what its ``config.json`` holds
=======  =====================================================================================================
1        (to 2026-12-03) the episodes' settings in the identity (``max_steps``, and ``retriever`` when not the
         paper's), the episodes in ``predictions.jsonl``, one command's settings and no ``plans``. The oldest
         folders of this layout have no ``prompt_mode`` (a completion prompt), or say ``tools`` for chat, or
         ``chat`` with no ``prompt`` entry for the paper's text sent as messages.
2        (2026-12-03) ``plans``: what every command that wrote into the folder asked for; episodes as in layout 1.
3        (2026-12-03 to 2026-12-06) the episodes in a file per episode settings
         (``episodes-<N>steps-<retriever>.jsonl``), named in ``episodes``; the identity without them.
4        (today) the entries of layout 3, with ``format_version``.
=======  =====================================================================================================

``tests/fixtures/run_layouts/`` holds a folder of each of layouts 1 to 3, written by the code of its time.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from apibank_lib.core.errors import DataError
from apibank_lib.prompting.modes import CHAT_PROMPT, COMPLETION_PROMPT, PAPER_PROMPT
from apibank_lib.retrieval.retrievers import PAPER_RECIPE
from apibank_lib.runs.config import PREDICTIONS_FILE, RunConfig, asks_for_episodes, plan_of
from apibank_lib.runs.subsets import FIRST

__all__ = ["FORMAT_VERSION", "LAYOUTS", "layout_of", "upgrade", "prompt_mode_of", "settings_of", "named_with_episode_settings"]

FORMAT_VERSION = 4
"""The layout this version of the package writes (``config.json`` ``format_version``)."""

LAYOUTS = {
    1: "episodes' settings in the identity, episodes in predictions.jsonl, no plans",
    2: "plans kept; episodes as in layout 1",
    3: "episodes in a file of their own, named in the config",
    4: "format_version written",
}
"""Each layout, in a line (the module's docstring says more)."""


def layout_of(raw: dict[str, Any]) -> int:
    """The layout of a ``config.json`` (as read from the file): its ``format_version``, else the older layout its
    entries show.

    Raises:
        DataError: a ``format_version`` that is not a whole number.
    """
    if "format_version" in raw:
        try:
            return int(raw["format_version"])
        except (TypeError, ValueError):
            raise DataError(f"config.json: format_version {raw['format_version']!r} is not a whole number") from None
    if named_with_episode_settings(raw.get("identity", {})):
        return 2 if raw.get("plans") else 1
    return 3


def named_with_episode_settings(identity: dict[str, Any]) -> bool:
    """Whether a folder's identity (and so the hash in its name) holds the episodes' settings, as in layouts 1 and 2:
    such a folder is not found under today's name for the same samples, and the runner looks for it by reading
    identities (:func:`apibank_lib.runs.runner.locate_run`)."""
    return "max_steps" in identity


def settings_of(config: dict[str, Any]) -> RunConfig:
    """A folder's recorded settings as a :class:`RunConfig` (entries it does not know are left out). A limit
    without a draw was written when every limit took the first samples, and reads so."""
    known = {f.name for f in fields(RunConfig)}
    cfg = {k: v for k, v in config.items() if k in known}
    for key in ("levels", "tasks"):
        if key in cfg:
            cfg[key] = tuple(cfg[key])
    if cfg.get("limit") is not None and "draw" not in cfg:
        cfg["draw"] = FIRST
    return RunConfig(**cfg)


def prompt_mode_of(identity: dict[str, Any]) -> str:
    """How the model was shown each sample, from a folder's identity (``chat``, ``paper``, ``completion`` or
    ``reference``), reading the names layout 1 used."""
    mode = str(identity.get("prompt_mode", COMPLETION_PROMPT))
    if mode == CHAT_PROMPT and "prompt" not in identity:
        return PAPER_PROMPT  # before the chat mode existed, "chat" meant the paper's text sent as messages
    return CHAT_PROMPT if mode == "tools" else mode


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """A ``config.json`` of any layout as today's: ``plans`` and ``episodes`` filled in where an older layout
    leaves them out, and ``format_version`` set to :data:`FORMAT_VERSION`. The identity is kept as it is (the
    folder's name was made from it).

    Raises:
        DataError: a layout newer than this package reads, or a file without the entries every layout has.
    """
    layout = layout_of(raw)
    if layout > FORMAT_VERSION:
        raise DataError(
            f"config.json: run format {layout} was written by a newer apibank_lib (this one reads formats 1 to "
            f"{FORMAT_VERSION}); upgrade the package"
        )
    missing = [k for k in ("identity", "config", "backend", "data", "official_release", "code_version") if k not in raw]
    if missing:
        raise DataError(f"config.json: not a run config (no {', '.join(missing)})")
    out = dict(raw)
    if not out.get("plans"):
        out["plans"] = [plan_of(settings_of(out["config"]))]
    if layout < 3 and out.get("episodes") is None:
        asked = any(asks_for_episodes(p["levels"], p["level3"]) for p in out["plans"])
        identity = out["identity"]
        out["episodes"] = (
            {"max_steps": identity["max_steps"], "retriever": identity.get("retriever", PAPER_RECIPE), "file": PREDICTIONS_FILE}
            if asked
            else None
        )
    out.setdefault("episodes", None)
    out["format_version"] = FORMAT_VERSION
    return out

"""Recordings of the two online services, harvested from an official release's gold results.

Dictionary and Translate called live web services in the original, so their gold
outputs are whatever those services answered on the day. Here both tools answer
from recordings (the ``Dictionary`` and ``Translate`` databases). For an
official release, :func:`harvest_recordings` builds those databases from the
release's own gold API records, so each recorded call is answered exactly as
recorded and everything else fails with a clear "not available offline" message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apibank_lib.tools.knowledge import normalise_keyword, resolve_language
from apibank_lib.types import Dialogue, Turn

__all__ = ["harvest_recordings"]


def _arguments(turn: Turn) -> dict[str, Any]:
    """The arguments the tool received (the result's echo), else the written ones."""
    echoed = (turn.result or {}).get("input")
    return echoed if isinstance(echoed, dict) else dict(turn.param_dict or {})


def _succeeded(turn: Turn) -> bool:
    result = turn.result or {}
    return result.get("exception") is None and result.get("output") is not None


def _translation_key(args: dict[str, Any]) -> tuple[str, str] | None:
    """(text, resolved target code), or None when the record cannot be keyed."""
    src, target = args.get("src"), args.get("tgt_lang")
    if not isinstance(src, str) or not (target is None or isinstance(target, str)):
        return None
    try:
        return src, resolve_language(target)
    except Exception:  # noqa: BLE001 - an unsupported language has nothing to record
        return None


def harvest_recordings(dialogues: Iterable[Dialogue]) -> dict[str, Any]:
    """Build the ``Dictionary`` and ``Translate`` databases from gold API records.

    Only successful records (no exception, an output) are used. Keys are
    normalised as the tools normalise them (the Dictionary keyword; Translate's
    resolved target language), and when two records share a key the first one,
    in the order given, wins.

    Args:
        dialogues: level-1/2 dialogues, in a stable order (e.g. sorted by id).

    Returns:
        ``{"Dictionary": {keyword: meanings}, "Translate": [{src, tgt, output}]}``,
        keywords sorted, translations sorted by (src, tgt).
    """
    meanings: dict[str, list[Any]] = {}
    translations: dict[tuple[str, str], str] = {}
    for dialogue in dialogues:
        for turn in dialogue.api_turns:
            if not _succeeded(turn):
                continue
            args, output = _arguments(turn), (turn.result or {})["output"]
            if turn.api_name == "Dictionary" and isinstance(args.get("keyword"), str) and isinstance(output, list):
                meanings.setdefault(normalise_keyword(args["keyword"]), output)
            elif turn.api_name == "Translate" and isinstance(output, str):
                key = _translation_key(args)
                if key is not None:
                    translations.setdefault(key, output)
    return {
        "Dictionary": {k: meanings[k] for k in sorted(meanings)},
        "Translate": [{"src": s, "tgt": t, "output": translations[(s, t)]} for s, t in sorted(translations)],
    }

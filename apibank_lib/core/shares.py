"""``KEY=SHARE,KEY=SHARE`` option values (a training mix, prompt-mode shares) read into weights, with clear errors."""

from __future__ import annotations

from typing import Callable

from apibank_lib.core.errors import ConfigError

__all__ = ["read_shares"]


def read_shares(
    text: str, option: str, form: str, example: str, unknown: Callable[[str], str | None], bare: bool = False
) -> dict[str, float]:
    """``"KEY=SHARE,KEY=SHARE"`` as a command-line option gives it: ``{KEY: SHARE}``, in the text's order.

    Args:
        text: the option's value.
        option: the option's name, for messages (``--mix``).
        form: what a part looks like, for messages (``GROUP=SHARE``); its first word names the keys.
        example: a well-formed value, for messages.
        unknown: says what is wrong with a key (None for a good one).
        bare: a key without ``=SHARE`` has the share 1.

    Raises:
        ConfigError: a part that is not KEY=SHARE, an unknown key, a negative share, or no positive share at all.
    """
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = (x.strip() for x in part.partition("="))
        problem = unknown(key)
        if problem:
            raise ConfigError(f"{option}: {problem}")
        try:
            if not eq and not bare:
                raise ValueError(part)
            out[key] = float(value) if eq else 1.0
        except ValueError:
            raise ConfigError(f"{option}: {part!r} is not {form} (e.g. {example})") from None
        if out[key] < 0:
            raise ConfigError(f"{option}: the share of {key} is negative")
    if sum(out.values()) <= 0:
        raise ConfigError(f"{option}: {text!r} names no {form.split('=')[0].lower()} with a positive share")
    return out

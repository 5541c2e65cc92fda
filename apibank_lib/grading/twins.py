"""A twin benchmark checked by execution: written under new names, then every gold call judged in the twin's sandbox.

:func:`make_twin` writes a twin (:func:`apibank_lib.data.twins.write_twin`) and replays its gold under each
grading protocol. A call that fails on the twin but not on the source (a search that now ranks another API first,
say: the search text holds the API's name) did not carry over: the sample is listed in ``twin.json`` with the
reason, and the grader leaves it out, as it leaves out a sample an erratum excludes. The twin then replays 100%.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from pathlib import Path

from apibank_lib.core.types import ApiCallSample, ApiRecord
from apibank_lib.data.datasets import Benchmark, default_data_root, load_benchmark
from apibank_lib.data.twins import CHANGES, TwinReport, twin_key, write_manifest, write_twin
from apibank_lib.env.protocols import PROTOCOLS, V2
from apibank_lib.env.renaming import Renaming
from apibank_lib.env.values import MONTHS, date_mentions
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.replay import replay

__all__ = ["make_twin"]


def make_twin(src: str | Path | None, out: str | Path, *, seed: int = 0, change: Iterable[str] = CHANGES) -> TwinReport:
    """Write the twin of a benchmark and check its gold by execution (see the module's docstring).

    Args:
        src: the source root (None: the bundled benchmark).
        out: the twin's root (must not exist, or be empty).
        seed: which synonyms are chosen.
        change: ``names`` and/or ``parameters``.

    Raises:
        ConfigError: as :func:`~apibank_lib.data.twins.write_twin`.
    """
    report = write_twin(src, out, seed=seed, change=change)
    source = load_benchmark(src if src is not None else default_data_root())
    twin = load_benchmark(out)
    failed: dict[str, str] = {}
    for protocol in PROTOCOLS.values():
        # A failure the source has too (a quirk of the paper protocol's judging, say) is the protocol's, not the twin's.
        known = {
            twin_key(f"L{level}/api/{f['dialogue']}/{f['sample_id']}", report.renaming)
            for level, figures in replay(source, protocol)["levels"].items() for f in figures["failures"]
        }
        for level, figures in replay(twin, protocol)["levels"].items():
            for f in figures["failures"]:
                key = f"L{level}/api/{f['dialogue']}/{f['sample_id']}"
                if key not in known:
                    failed.setdefault(key, f"under {protocol.name}, the call does not execute to the renamed gold ({f.get('category')})")
                elif protocol is V2:  # the source's gold fails as well: a defect of the source data, not of the twin
                    failed.setdefault(key, f"the source's gold fails under v2 too ({f.get('category')}): a defect of the source")
    if not report.renaming.values.empty:
        for key, reason in unstated_values(source, twin, report.renaming).items():
            failed.setdefault(key, reason)
    # A sample whose gold an erratum of the source excludes or corrects is defective: its twin is left out too.
    errata = Grader(source).errata
    for applied in (errata.applied.values() if errata is not None else []):
        for key in applied.keys:
            failed[twin_key(key, report.renaming)] = f"the source's erratum {applied.erratum.id} ({applied.erratum.decision}) covers it"
    report.excluded = [{"key": k, "reason": failed[k]} for k in sorted(failed)]
    report.manifest["excluded"] = report.excluded
    write_manifest(report.out, report.manifest)
    checked = replay(load_benchmark(out))  # with the exclusions: every sample left must replay
    report.replay = {
        lv: f"{f['samples_correct']}/{f['samples']} ({len(f['excluded'])} excluded)" for lv, f in checked["levels"].items()
    }
    return report


_MONTH_DAY = re.compile(r"(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
_ISO_DATE = re.compile(r"(20[0-3]\d)-(\d\d)-(\d\d)")
_RELATIVE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|next|this|last|coming|weekend|days?|weeks?|months?|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.IGNORECASE)


def _context(sample: ApiCallSample) -> str:
    """What a model reads before its call: the requirement, the turns, the earlier calls and their results."""
    parts = [sample.requirement or ""]
    for turn in sample.history:
        if isinstance(turn, ApiRecord):
            parts.append(json.dumps([turn.args, turn.result], ensure_ascii=False, default=str))
        else:
            parts.append(turn.text)
    return "\n".join(parts)


def _date(value: str) -> dt.date | None:
    m = _ISO_DATE.match(value)
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
    except ValueError:
        return None


def _stated(value: str, context: str) -> bool:
    """Whether the context gives ``value``: verbatim, a date in a written form, or every word of a name."""
    if value in context:
        return True
    day = _date(value)
    if day is not None:
        return date_mentions(day, context)
    words = re.findall(r"[A-Z][a-z]+", value)
    return bool(words) and all(re.search(rf"\b{w}\b", context) for w in words)


def _mentions_a_date(context: str) -> bool:
    return _ISO_DATE.search(context) is not None or bool(re.search(rf"\b({'|'.join(MONTHS)})\b", context))


def _day_ordinal(day: dt.date, context: str) -> bool:
    """Whether the context names the day of the month alone ("the 15th"), which a twin does not rewrite."""
    return re.search(rf"\b(the )?{day.day}(st|nd|rd|th)\b", context) is not None


def unstated_values(source: Benchmark, twin: Benchmark, renaming: Renaming) -> dict[str, str]:
    """Twin samples whose gold holds a value the twin's dialogue no longer gives as the source's gave it.

    A value map rewrites the forms it recognises (:mod:`apibank_lib.env.values`); a value stated in another form
    ("the 15th", "dr okafor") keeps its old text while the gold changes. For every gold argument the map changed,
    the source's context must state it exactly when the twin's states the new one; a changed date that the source
    does not state at all must be one a model works out from a relative word ("tomorrow", "next Friday", which the
    shift keeps true) or from another date of the dialogue, and not from a day of the month written alone; and a
    date must stay in its year, a day of the year (``04-21``) must not be asked for.

    Returns:
        twin sample key -> reason.
    """
    twins = {s.key: s for level in (1, 2, 3) for s in twin.samples(level, "api")}
    out: dict[str, str] = {}
    for level in (1, 2, 3):
        for src in source.samples(level, "api"):
            key = twin_key(src.key, renaming)
            other = twins.get(key)
            if other is None:
                continue
            before, after = _context(src), _context(other)
            new_args = renaming.original_args(other.gold.args)
            for name, old in src.gold.args.items():
                new = new_args.get(name)
                if not isinstance(old, str) or not isinstance(new, str):
                    continue
                if old == new:
                    # A day of the year (QueryHistoryToday's 04-21) is worked out from today's date, which moved.
                    if renaming.values.date_shift_days and _MONTH_DAY.fullmatch(old):
                        out[key] = f"the day of the year {old!r} of {name} does not move with the dates"
                        break
                    continue
                reason = _unstated(name, old, new, before, after)
                if reason:
                    out[key] = reason
                    break
    return out


def _unstated(name: str, old: str, new: str, before: str, after: str) -> str | None:
    said, says = _stated(old, before), _stated(new, after)
    day, moved = _date(old), _date(new)
    if day is not None and moved is not None and day.year != moved.year:
        # "October 12" became "January 4": a reader takes the year the dialogue is in, which the date has left; and
        # where the year is written, a model's prior for the source's years (every source date is in 2021-2023)
        # would count as recall of the benchmark. Either way not what a twin measures.
        return f"the date {old!r} of {name} moves into another year ({moved.year})"
    if said and not says:
        return f"the value {old!r} of {name} is given in the dialogue in a form the twin does not rewrite"
    if not said:
        # Worked out from another date of the dialogue ("a week after the meeting") or from today ("tomorrow"): the
        # shift moves both alike. From a day of the month written alone ("the 15th"): the twin's text still says 15.
        if day is not None and (_day_ordinal(day, before) or not (_RELATIVE.search(before) or _mentions_a_date(before))):
            return f"the date {old!r} of {name} is not written in a form the twin rewrites, nor worked out from one"
    return None

"""Validate a benchmark: every problem named with its file and line.

What is checked depends on what the data promises.

An **official release** (a directory the user supplies) promises a format and
gold calls that replay. So: every file parses; every gold call is replayed
under ``v2``, and the calls it judges wrong are listed as *data defects* (a
release's own flaws, reported, not "problems" of the release's validity).

**Our own benchmark** (bundled, or built with ``apibank build-data``) must also
meet our authoring rules:

1. every file parses (dialogues, level-3 items, databases);
2. every gold call names a known API of its tool set, with declared parameters
   of valid types, and its recorded result has no exception;
3. every gold call replays correct under ``v2``;
4. every gold call the ``paper`` protocol judges wrong is explained by a known
   limitation of that protocol (a list-valued argument it leaves as text, a
   dependence on an earlier call of the same dialogue, which it does not
   replay, a level-3 step disturbed by an earlier item's state, keywords split
   before capitals, or the DeleteMeeting checker bug) rather than by the data;
5. no dialogue duplicates another (or a training dialogue, when ``data/train``
   holds some);
6. every tool of both tool sets is used (levels 1-2: at least ``min_uses`` times);
7. tokens: a ``token`` argument must have appeared earlier in the dialogue
   (in a login result or in the user's words);
8. dates: date arguments parse in their format and fall in ``year``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from apibank_lib.core.calls import format_call_paper, parse_calls
from apibank_lib.core.errors import ApibankError, CallError, ConfigError, DataError, ParseError
from apibank_lib.core.types import ApiCallSample, ApiRecord, Dialogue
from apibank_lib.data.datasets import Benchmark, default_data_root, load_benchmark
from apibank_lib.data.formats.official import level3_path, load_dialogues
from apibank_lib.env.protocols import PAPER, V2, StatePolicy
from apibank_lib.env.tools.common import DT, D
from apibank_lib.grading.grader import Grader
from apibank_lib.prompting.prompts import target_text

__all__ = ["Problem", "ValidationReport", "validate"]

_DATE_ARGS = {"time", "start_time", "end_time", "from_time", "to_time", "date", "check_in_time", "check_out_time",
              "new_appointment_date", "check_in_date", "check_out_date", "travel_dates"}  # fmt: skip


@dataclass(frozen=True)
class Problem:
    """One validation failure, located."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path + (f":{self.line}" if self.line else "")
        return f"{where}: {self.message}"


@dataclass
class ValidationReport:
    """What :func:`validate` found.

    Attributes:
        root: the data root.
        official: True for an official release (only format and replay are checked).
        problems: what makes the data invalid (empty when it is valid).
        defects: gold calls of an official release that ``v2`` judges wrong (its own data defects) and no
            erratum excludes.
        errata: the data's errata as verified on it, one row per entry (:meth:`ErrataReport.rows`).
        errata_label: the errata file and version applied (``api-bank@1``); None when there is none.
    """

    root: str
    official: bool
    problems: list[Problem] = field(default_factory=list)
    defects: list[Problem] = field(default_factory=list)
    errata: list[dict[str, Any]] = field(default_factory=list)
    errata_label: str | None = None

    @property
    def valid(self) -> bool:
        """No problems."""
        return not self.problems


# Protocol variants that explain why ``paper`` fails on a correct gold call.
_V2_PRISTINE = replace(V2, name="v2-pristine", level12_state=StatePolicy.PRISTINE, level3_state=StatePolicy.PRISTINE)
_PAPER_ITEM_ALONE = replace(PAPER, name="paper-item-alone", level3_state=StatePolicy.REPLAY)


def _item_lines(path: Path) -> list[int]:
    """Line numbers of each level-3 item (where its "requirement" key sits)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [i + 1 for i, line in enumerate(lines) if line.lstrip().startswith('"requirement":')]


class _Locator:
    """Turns a sample or a turn into (file, line)."""

    def __init__(self, bench: Benchmark) -> None:
        self.bench = bench
        self.paths = {(d.level, d.id): d.path or d.id for lv in (1, 2) for d in bench.dialogues(lv)}
        l3 = level3_path(bench.root)
        self.l3_path = str(l3) if l3 else "level-3.json"
        self.l3_lines = _item_lines(l3) if l3 else []

    def of(self, sample: ApiCallSample) -> tuple[str, int | None]:
        if sample.level == 3:
            idx = int(sample.dialogue_id)
            return self.l3_path, self.l3_lines[idx] if idx < len(self.l3_lines) else None
        return self.paths[(sample.level, sample.dialogue_id)], sample.gold.line


def _signature(d: Dialogue) -> str:
    text = " | ".join((t.text or "") for t in d.turns if t.role in ("User", "AI"))
    return re.sub(r"\s+", " ", text.lower()).strip()


def _paper_explanation(bench: Benchmark, pristine: Grader, alone: Grader, sample: ApiCallSample) -> str | None:
    """Why the paper protocol may fail on a correct gold call; None if no known reason applies."""
    name, args = sample.gold.api_name, sample.gold.args
    tool = bench.toolset(sample.level).get(name)
    if any(tool.input_parameters.get(k) and tool.input_parameters[k].type in ("list", "list(str)") for k in args):
        return "a list argument, which the paper protocol leaves as text"
    if name == "DeleteMeeting":
        return "the original DeleteMeeting checker reads a key the API does not have"
    if not pristine.judge_api(sample, target_text(sample)).correct:
        return "it depends on an earlier call of the same dialogue, which the paper protocol does not replay"
    if sample.level == 3 and name == "ToolSearcher" and re.search(r"[A-Z]", str(args.get("keywords", ""))):
        return "the paper protocol splits level-3 search keywords before capitals"
    if sample.level == 3 and alone.judge_api(sample, target_text(sample)).correct:
        return "the paper protocol shares level-3 state across items"
    return None


def _gold_call_problems(bench: Benchmark, loc: _Locator, searcher: Any) -> tuple[list[Problem], list[Problem], Grader]:
    """(problems, data defects) of every distinct gold call, and the ``v2`` grader (with its errata).

    A gold call that cannot reach its tool is a problem. One that ``v2`` judges
    wrong is a data defect in an official release and a problem in our own
    benchmark, where ``paper``'s verdicts must be explained too. A record an erratum
    excludes is neither: the errata report lists it.
    """
    grader = Grader(bench, V2, searcher=searcher)
    paper = Grader(bench, PAPER, searcher=searcher)
    pristine = Grader(bench, _V2_PRISTINE, searcher=searcher)
    alone = Grader(bench, _PAPER_ITEM_ALONE, searcher=searcher)
    problems: list[Problem] = []
    defects: list[Problem] = []
    for level in (1, 2, 3):
        toolset = bench.toolset(level)
        for s in bench.samples(level, "api"):
            if not isinstance(s, ApiCallSample) or s.duplicate:
                continue
            path_, line = loc.of(s)
            name, result = s.gold.api_name, s.gold.result
            try:
                call = parse_calls(format_call_paper(name, s.gold.args))[0]
                V2.conversion.convert(toolset.get(name), call.args)
            except (CallError, ParseError, IndexError) as exc:
                problems.append(Problem(path_, line, f"gold call {name}: {exc}"))
                continue
            if result.get("exception") is not None:
                problems.append(Problem(path_, line, f"gold call {name} records an exception: {result['exception']}"))
            j = grader.judge_api(s, target_text(s))
            if not j.correct and j.excluded is None:
                (defects if bench.official else problems).append(
                    Problem(path_, line, f"gold call {name} is judged wrong under v2: {j.reason}")
                )
            if (
                not bench.official
                and s.key not in bench.excluded  # a twin's sample listed as not carried over
                and not paper.judge_api(s, target_text(s)).correct
                and _paper_explanation(bench, pristine, alone, s) is None
            ):
                pj = paper.judge_api(s, target_text(s))
                problems.append(
                    Problem(
                        path_,
                        line,
                        f"gold call {name} is judged wrong under paper for no known protocol reason: {pj.reason}",
                    )
                )
    return problems, defects, grader


def validate(
    path: str | Path | None = None, *, min_uses: int = 2, year: int = 2023, searcher: Any = None
) -> ValidationReport:
    """Check a benchmark: an official release for format and replay, our own benchmark for every authoring rule.

    Raises:
        ConfigError: ``path`` is not a folder.

    Args:
        path: the data root (default: the bundled benchmark).
        min_uses: our benchmark: the fewest uses of each level-1/2 tool.
        year: our benchmark: the year every date argument must fall in.
        searcher: what ToolSearcher searches with (None: the default embedding search).
    """
    root = Path(path) if path is not None else default_data_root()
    if not root.is_dir():  # nothing to validate: a wrong setting, not a problem of some data
        raise ConfigError(f"{root} is not a folder: give the root of an official release or of our benchmark")
    try:
        bench = load_benchmark(root)
    except DataError as exc:
        official = (root / "apis").is_dir()
        message = str(exc).split(": ", 1)[-1] if exc.path else str(exc)
        return ValidationReport(str(root), official, [Problem(str(exc.path or root), exc.line, message)])
    loc = _Locator(bench)
    problems, defects, grader = _gold_call_problems(bench, loc, searcher)
    errata = grader.errata
    rows, label = (errata.rows(), errata.errata.label) if errata is not None else ([], None)
    if bench.official:
        return ValidationReport(str(root), True, problems, defects, rows, label)
    problems += _duplicates(bench, root)
    problems += _coverage(bench, root, loc, min_uses)
    problems += _tokens_and_dates(bench, loc, year)
    return ValidationReport(str(root), False, problems, [], rows, label)


def _duplicates(bench: Benchmark, root: Path) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for lv in (1, 2):
        for d in bench.dialogues(lv):
            sig = _signature(d)
            if sig in seen:
                problems.append(Problem(d.path or d.id, None, f"duplicates the dialogue {seen[sig]}"))
            else:
                seen[sig] = d.id
    train = root.parent / "train"
    if train.is_dir():
        for folder in sorted({p.parent for p in train.rglob("*.jsonl")}):
            try:
                for d in load_dialogues(folder, 1):
                    if _signature(d) in seen:
                        problems.append(
                            Problem(
                                d.path or d.id,
                                None,
                                f"training dialogue duplicates the evaluation dialogue {seen[_signature(d)]}",
                            )
                        )
            except ApibankError:
                continue  # training files in another format are checked by their own validator
    return problems


def _coverage(bench: Benchmark, root: Path, loc: _Locator, min_uses: int) -> list[Problem]:
    problems: list[Problem] = []
    uses = Counter(t.api_name for lv in (1, 2) for d in bench.dialogues(lv) for t in d.api_turns)
    for name in bench.toolset(1).tools:
        if uses[name] < min_uses:
            problems.append(
                Problem(
                    str(root / "lv1-lv2-samples"),
                    None,
                    f"{name} is used {uses[name]} time(s) at levels 1-2 (at least {min_uses} wanted)",
                )
            )
    uses3 = Counter(st.api_name for it in bench.level3 for st in it.steps)
    for name in bench.toolset(3).tools:
        if uses3[name] < min(1, min_uses):
            problems.append(Problem(loc.l3_path, None, f"level-3 API {name} is never used"))
    return problems


def _tokens_and_dates(bench: Benchmark, loc: _Locator, year: int) -> list[Problem]:
    problems: list[Problem] = []
    for lv in (1, 2):
        for d in bench.dialogues(lv):
            problems.extend(_token_and_date_problems(d, year))
    for it in bench.level3:
        for st in it.steps:
            for k, v in st.args.items():
                p = _date_problem(k, v, year)
                if p:
                    line = loc.l3_lines[it.id] if it.id < len(loc.l3_lines) else None
                    problems.append(Problem(loc.l3_path, line, f"{st.api_name}: {p}"))
    return problems


def _date_problem(key: str, value: Any, year: int) -> str | None:
    if key not in _DATE_ARGS or not isinstance(value, str) or not value.strip():
        return None
    from datetime import datetime

    for fmt in (DT, D, "%m-%d"):
        try:
            parsed = datetime.strptime(value.strip(), fmt)
        except ValueError:
            continue
        if fmt != "%m-%d" and parsed.year != year:
            return f"{key}={value!r} is not in {year}"
        return None
    return f"{key}={value!r} is not a date in the expected format"


def _token_and_date_problems(d: Dialogue, year: int) -> list[Problem]:
    problems: list[Problem] = []
    known: set[str] = set()
    said = ""
    for t in d.turns:
        if not isinstance(t, ApiRecord):
            said += " " + t.text
            continue
        params = t.args
        tok = params.get("token")
        if tok is not None and tok not in known and str(tok) not in said:
            problems.append(
                Problem(
                    d.path or d.id, t.line, f"{t.api_name} uses a token that did not appear earlier in the dialogue"
                )
            )
        for k, v in params.items():
            p = _date_problem(k, v, year)
            if p:
                problems.append(Problem(d.path or d.id, t.line, f"{t.api_name}: {p}"))
        out = t.output
        if isinstance(out, dict) and isinstance(out.get("token"), str):
            known.add(out["token"])
    return problems

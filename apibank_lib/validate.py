"""Validate a benchmark: every problem named with its file and line.

Checks (``apibank validate``):

1. every file parses (dialogues, level-3 items, databases);
2. every gold call names a known API of its tool set, with declared parameters
   of valid types, and its recorded result has no exception;
3. every gold call replays correct under ``v2``;
4. every gold call the ``paper`` protocol judges wrong is explained by a known
   limitation of that protocol (a list-valued argument it leaves as text, a
   dependence on an earlier call of the same dialogue, which it does not
   replay, a level-3 step disturbed by an earlier item's state, or the
   DeleteMeeting checker bug) rather than by the data;
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apibank_lib.calls import format_call_paper, parse_calls
from apibank_lib.datasets import Benchmark, default_data_root, level3_path, load_benchmark, load_dialogues
from apibank_lib.errors import ApibankError, CallError, DataError, ParseError
from apibank_lib.protocols import Grader, gold_call_text
from apibank_lib.tools.base import convert_arguments
from apibank_lib.tools.common import DT, D
from apibank_lib.types import Dialogue, Sample

__all__ = ["Problem", "validate"]

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

    def of(self, sample: Sample) -> tuple[str, int | None]:
        if sample.level == 3:
            idx = int(sample.dialogue_id)
            return self.l3_path, self.l3_lines[idx] if idx < len(self.l3_lines) else None
        return self.paths[(sample.level, sample.dialogue_id)], getattr(sample.gold, "line", None)


def _signature(d: Dialogue) -> str:
    text = " | ".join((t.text or "") for t in d.turns if t.role in ("User", "AI"))
    return re.sub(r"\s+", " ", text.lower()).strip()


def _paper_explanation(grader_v2_fresh: Grader, grader_v2: Grader, sample: Sample) -> str | None:
    """Why the paper protocol may fail on a correct gold call; None if no known reason applies."""
    from apibank_lib.types import Level3Step

    gold = sample.gold
    name = gold.api_name
    tool = grader_v2.toolset3.get(name) if sample.level == 3 else grader_v2.toolset12.get(name)
    args = gold.input if isinstance(gold, Level3Step) else gold.param_dict or {}
    if any(tool.input_parameters.get(k) and tool.input_parameters[k].type in ("list", "list(str)") for k in args):
        return "a list argument, which the paper protocol leaves as text"
    if name == "DeleteMeeting":
        return "the original DeleteMeeting checker reads a key the API does not have"
    if not grader_v2_fresh.judge_api(sample, gold_call_text(sample)).correct:
        return "it depends on an earlier call of the same dialogue, which the paper protocol does not replay"
    if sample.level == 3 and name == "ToolSearcher" and re.search(r"[A-Z]", str(args.get("keywords", ""))):
        return "the paper protocol splits level-3 search keywords before capitals"
    if sample.level == 3 and _paper_passes_alone(grader_v2, sample):
        return "the paper protocol shares level-3 state across items"
    return None


def _paper_passes_alone(grader: Grader, sample: Sample) -> bool:
    """Does the step pass under paper rules when its item runs alone (fresh state, its own earlier steps replayed)?"""
    from apibank_lib.sandbox import Sandbox

    alone = Grader(grader.bench, "paper")
    box = Sandbox(alone.toolset3, grader.bench.level3_databases, conversion="paper", searcher=grader._searcher(grader.toolset3))
    for past in sample.history:
        try:
            box.replay(parse_calls(format_call_paper(past.api_name, past.input))[0])
        except (CallError, ParseError, IndexError):
            return False
    alone._shared_l3 = box
    return alone.judge_api(sample, gold_call_text(sample)).correct


def validate(path: str | Path | None = None, *, min_uses: int = 2, year: int = 2023, searcher: Any = None) -> list[Problem]:
    """Run every check and return the problems found (empty when the benchmark is valid)."""
    root = Path(path) if path is not None else default_data_root()
    try:
        bench = load_benchmark(root)
    except DataError as exc:
        return [Problem(str(exc.path or root), exc.line, str(exc).split(": ", 1)[-1] if exc.path else str(exc))]
    problems: list[Problem] = []
    loc = _Locator(bench)
    grader = Grader(bench, "v2", searcher=searcher)
    paper = Grader(bench, "paper", searcher=searcher)
    fresh = _FreshV2(bench, searcher)

    # 2-4: calls, replay under both protocols
    for level in (1, 2, 3):
        toolset = grader.toolset3 if level == 3 else grader.toolset12
        for s in bench.samples(level, "api"):
            if s.duplicate:
                continue
            path_, line = loc.of(s)
            gold = s.gold
            name = gold.api_name
            args = gold.input if level == 3 else gold.param_dict or {}
            result = gold.output if level == 3 else gold.result or {}
            try:
                call = parse_calls(format_call_paper(name, args))[0]
                convert_arguments(toolset.get(name), call.args, "v2")
            except (CallError, ParseError, IndexError) as exc:
                problems.append(Problem(path_, line, f"gold call {name}: {exc}"))
                continue
            if result.get("exception") is not None:
                problems.append(Problem(path_, line, f"gold call {name} records an exception: {result['exception']}"))
            j = grader.judge_api(s, gold_call_text(s))
            if not j.correct:
                problems.append(Problem(path_, line, f"gold call {name} is judged wrong under v2: {j.reason}"))
            pj = paper.judge_api(s, gold_call_text(s))
            if not pj.correct and _paper_explanation(fresh, grader, s) is None:
                problems.append(Problem(path_, line, f"gold call {name} is judged wrong under paper for no known protocol reason: {pj.reason}"))

    # 5: duplicates
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
                        problems.append(Problem(d.path or d.id, None, f"training dialogue duplicates the evaluation dialogue {seen[_signature(d)]}"))
            except ApibankError:
                continue  # training files in another format are checked by their own validator

    # 6: coverage
    uses = Counter(t.api_name for lv in (1, 2) for d in bench.dialogues(lv) for t in d.api_turns)
    for name in grader.toolset12.tools:
        if uses[name] < min_uses:
            problems.append(Problem(str(root / "lv1-lv2-samples"), None, f"{name} is used {uses[name]} time(s) at levels 1-2 (at least {min_uses} wanted)"))
    uses3 = Counter(st.api_name for it in bench.level3 for st in it.steps)
    for name in grader.toolset3.tools:
        if uses3[name] < min(1, min_uses):
            problems.append(Problem(loc.l3_path, None, f"level-3 API {name} is never used"))

    # 7-8: tokens and dates
    for lv in (1, 2):
        for d in bench.dialogues(lv):
            problems.extend(_token_and_date_problems(d, year))
    for it in bench.level3:
        for st in it.steps:
            for k, v in st.input.items():
                p = _date_problem(k, v, year)
                if p:
                    line = loc.l3_lines[it.id] if it.id < len(loc.l3_lines) else None
                    problems.append(Problem(loc.l3_path, line, f"{st.api_name}: {p}"))
    return problems


class _FreshV2(Grader):
    """v2 judging without replaying earlier calls (to detect dependence on dialogue state)."""

    def __init__(self, bench: Benchmark, searcher: Any) -> None:
        super().__init__(bench, "v2", searcher=searcher)

    def sandbox_for(self, sample: Sample, notes: list[str] | None = None) -> Any:
        return self.new_sandbox(sample.level)


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
        if t.role in ("User", "AI"):
            said += " " + (t.text or "")
            continue
        params = t.param_dict or {}
        tok = params.get("token")
        if tok is not None and tok not in known and str(tok) not in said:
            problems.append(Problem(d.path or d.id, t.line, f"{t.api_name} uses a token that did not appear earlier in the dialogue"))
        for k, v in params.items():
            p = _date_problem(k, v, year)
            if p:
                problems.append(Problem(d.path or d.id, t.line, f"{t.api_name}: {p}"))
        out = (t.result or {}).get("output")
        if isinstance(out, dict) and isinstance(out.get("token"), str):
            known.add(out["token"])
    return problems

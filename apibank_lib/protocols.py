"""Grading protocols: how an API-call prediction is parsed, executed and judged.

Two protocols exist, and every result records which one produced it.

``paper`` reproduces the original evaluator, quirks included, so numbers compare
with the paper: its regular-expression call parsing (values cut at inner
quotes, every value a string), its ToolManager conversion (list arguments stay
text, negative numbers are rejected), pristine state for every level-1/2 sample
(earlier calls of the dialogue are *not* replayed), one shared state for all
level-3 steps in file order with ToolSearcher keywords split before capitals,
and the original checkers (a checker KeyError or AssertionError counts as wrong).

``v2`` (the default) is ours: the robust typed parser, typed conversion
(lists parsed, negative and float values accepted, documented renamed
parameters accepted), fresh state per sample *after replaying the sample's
earlier gold calls* (state carries through the dialogue as when the gold was
recorded, random identifiers adopted from the recording), corrected checkers,
ToolSearcher keywords with CamelCase words split into words, and ToolSearcher
judged by the API it retrieves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from apibank_lib.calls import format_call_paper, looks_like_call_attempt, parse_call_paper, parse_calls
from apibank_lib.datasets import Benchmark
from apibank_lib.errors import CallError, ConfigError, InvalidParameterError, MissingParameterError, ParameterTypeError, ParseError, UnknownToolError
from apibank_lib.sandbox import Sandbox, json_copy
from apibank_lib.taxonomy import ErrorCategory, Observation, classify
from apibank_lib.tools.registry import level3_toolset, level12_toolset
from apibank_lib.tools.toolset import ToolSet
from apibank_lib.types import ApiCall, Level3Step, Sample, Turn

__all__ = ["PROTOCOLS", "Judgment", "Grader", "gold_call_text", "prepare_search_call", "replay"]

ProtocolName = Literal["paper", "v2"]
PROTOCOLS: tuple[str, ...] = ("paper", "v2")


@dataclass
class Judgment:
    """The verdict on one API-call prediction.

    Attributes:
        correct: the API's rule accepted the prediction.
        category: why not (None when correct).
        reason: a human-readable explanation of the verdict.
        call: the parsed predicted call, if any.
        result: the predicted call's result envelope, if it ran.
        notes: anything else worth knowing (e.g. a gold call that failed during state replay).
    """

    correct: bool
    category: ErrorCategory | None
    reason: str | None
    call: ApiCall | None = None
    result: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        from apibank_lib.calls import format_call

        call_text = None
        if self.call is not None:
            try:
                call_text = format_call(self.call)
            except ValueError:
                call_text = repr(self.call)
        return {
            "correct": self.correct,
            "category": self.category.value if self.category else None,
            "reason": self.reason,
            "call": call_text,
            "result": self.result,
            "notes": self.notes,
        }


def gold_call_text(sample: Sample) -> str:
    """The gold answer of an API-call sample as the official test data renders it."""
    gold = sample.gold
    if isinstance(gold, Level3Step):
        return "API-Request: " + format_call_paper(gold.api_name, gold.input)
    return "API-Request: " + format_call_paper(str(gold.api_name), gold.param_dict or {})


def _gold_name_and_result(sample: Sample) -> tuple[str, dict[str, Any]]:
    gold = sample.gold
    if isinstance(gold, Level3Step):
        return gold.api_name, gold.output
    if not isinstance(gold, Turn) or gold.role != "API":
        raise ConfigError(f"sample {sample.key} is not an API-call sample")
    return str(gold.api_name), dict(gold.result or {})


_CAMEL_WORD = re.compile(r"\b[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")


def _split_camel_words(keywords: Any) -> Any:
    """v2's keyword clean-up: CamelCase words become separate words (``QueryStock`` -> ``Query Stock``).

    Models often search with an API-like name; the uncased embedding model reads
    ``querystock`` as one unknown word. Other words are left exactly as written.
    """
    if not isinstance(keywords, str):
        return keywords
    return _CAMEL_WORD.sub(lambda m: re.sub(r"(?<!^)([A-Z])", r" \1", m.group(0)), keywords)


def _split_capitals(keywords: Any) -> Any:
    """The original level-3 evaluator's keyword rewrite: a space before every capital, stripped."""
    if not isinstance(keywords, str):
        return keywords
    return re.sub(r"([A-Z])", r" \1", keywords).strip()


def prepare_search_call(call: ApiCall, protocol: str, level: int) -> ApiCall:
    """Apply the protocol's rewrite of ToolSearcher keywords before execution.

    ``paper`` at level 3: a space before every capital (the original level-3
    evaluator's rewrite); ``v2``: CamelCase words split into words. Other calls
    are returned unchanged.
    """
    if call.name != "ToolSearcher" or "keywords" not in call.args:
        return call
    if protocol == "paper" and level == 3:
        return ApiCall(call.name, {**call.args, "keywords": _split_capitals(call.args["keywords"])})
    if protocol == "v2":
        return ApiCall(call.name, {**call.args, "keywords": _split_camel_words(call.args["keywords"])})
    return call


class Grader:
    """Judges API-call predictions on one benchmark under one protocol.

    Args:
        bench: the loaded benchmark (its databases, tool metadata and dialogues).
        protocol: ``"v2"`` (default) or ``"paper"``.
        searcher: passed to every Sandbox (see :class:`Sandbox`); None for the
            default embedding search.
    """

    def __init__(self, bench: Benchmark, protocol: str = "v2", *, searcher: Any = None) -> None:
        if protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        self.bench = bench
        self.protocol: ProtocolName = protocol  # type: ignore[assignment]
        self.toolset12: ToolSet = level12_toolset().with_metadata(bench.metadata_l12)
        self.toolset3: ToolSet = level3_toolset().with_metadata(bench.metadata_l3)
        self._searchers: dict[str, Any] = {}
        self._searcher_arg = searcher
        self._shared_l3: Sandbox | None = None

    # --- state ----------------------------------------------------------------------------------

    def _searcher(self, toolset: ToolSet) -> Any:
        if self._searcher_arg is not None:
            return self._searcher_arg
        if toolset.name not in self._searchers:
            from apibank_lib.search import default_searcher

            schemas = toolset.searchable()
            self._searchers[toolset.name] = lambda: default_searcher(schemas)
        return self._searchers[toolset.name]

    def new_sandbox(self, level: int) -> Sandbox:
        """A pristine sandbox for a level's tool set, with this protocol's conversion."""
        if level == 3:
            return Sandbox(self.toolset3, self.bench.level3_databases, conversion=self.protocol, searcher=self._searcher(self.toolset3))
        return Sandbox(self.toolset12, self.bench.databases, conversion=self.protocol, searcher=self._searcher(self.toolset12))

    def sandbox_for(self, sample: Sample, notes: list[str] | None = None) -> Sandbox:
        """The state a sample is judged in.

        ``paper``: pristine per level-1/2 sample; one shared sandbox for all level-3 steps.
        ``v2``: pristine, then the sample's earlier gold calls are replayed in order.
        """
        if self.protocol == "paper":
            if sample.level == 3:
                if self._shared_l3 is None:
                    self._shared_l3 = self.new_sandbox(3)
                return self._shared_l3
            return self.new_sandbox(sample.level)
        box = self.new_sandbox(sample.level)
        for past in sample.history:
            if isinstance(past, Level3Step):
                call, recorded = past.call, past.output
            elif isinstance(past, Turn) and past.role == "API":
                call, recorded = past.call, past.result
            else:
                continue
            if call.name in box.toolset and box.toolset.get(call.name).read_only:
                continue  # a call without side effects cannot change what later calls see
            try:
                box.replay(call, recorded)
            except (CallError, ParseError) as exc:
                if notes is not None:
                    notes.append(f"state replay of {call.name} failed: {exc}")
        return box

    # --- judging --------------------------------------------------------------------------------

    def parse(self, text: str) -> tuple[ApiCall | None, str | None]:
        """The prediction's call under this protocol: (call, parse error message)."""
        if self.protocol == "paper":
            return parse_call_paper(text), None
        try:
            calls = parse_calls(text)
        except ParseError as exc:
            return None, str(exc)
        return (calls[0] if calls else None), None

    def judge_api(self, sample: Sample, text: str) -> Judgment:
        """Judge one API-call prediction (raw model text) against the sample's gold call."""
        gold_name, gold_result = _gold_name_and_result(sample)
        notes: list[str] = []
        call, parse_error = self.parse(text if isinstance(text, str) else "")
        if call is None:
            obs = Observation(found_call=False, attempted_call=looks_like_call_attempt(text or ""), parse_failed=parse_error is not None)
            reason = parse_error or "no API call found"
            return Judgment(False, classify(obs), reason, None, None, notes)
        paper_l3 = self.protocol == "paper" and sample.level == 3
        if call.name != gold_name and not paper_l3:
            obs = Observation(found_call=True, name_matches=False)
            return Judgment(False, classify(obs), f"called {call.name}, expected {gold_name}", call, None, notes)
        call = prepare_search_call(call, self.protocol, sample.level)
        box = self.sandbox_for(sample, notes)
        try:
            result = box.execute(call).to_dict()
        except CallError as exc:
            obs = Observation(
                found_call=True,
                name_matches=not isinstance(exc, UnknownToolError) and call.name == gold_name,
                bad_parameter=isinstance(exc, (InvalidParameterError, ParameterTypeError)),
                missing_parameter=isinstance(exc, MissingParameterError),
            )
            return Judgment(False, classify(obs), str(exc), call, None, notes)
        correct, crash, reason = self.check_result(box, gold_name, result, gold_result)
        name_ok = call.name == gold_name
        obs = Observation(
            found_call=True,
            name_matches=name_ok,
            raised=result.get("exception") is not None,
            gold_is_search=gold_name == "ToolSearcher",
            checker_crashed=crash,
            correct=correct and name_ok,
        )
        if not name_ok:
            reason = f"called {call.name}, expected {gold_name}"
        elif not correct and reason is None:
            reason = f"raised: {result['exception']}" if result.get("exception") is not None else "result differs from the gold"
        return Judgment(obs.correct, classify(obs), None if obs.correct else reason, call, result, notes)

    def check_result(self, box: Sandbox, gold_name: str, pred: dict[str, Any], gold: dict[str, Any]) -> tuple[bool, bool, str | None]:
        """Apply the gold API's rule to copies of both envelopes: (correct, checker crashed, reason)."""
        tool = box.tool(gold_name)
        pred_c, gold_c = json_copy(pred), json_copy(gold)
        pred_c.setdefault("api_name", None)
        gold_c.setdefault("api_name", None)
        try:
            if self.protocol == "paper":
                ok = bool(tool.check(pred_c, gold_c))
            else:
                aliases = type(tool).aliases
                if aliases and isinstance(gold_c.get("input"), dict):
                    gold_c["input"] = {aliases.get(k, k): v for k, v in gold_c["input"].items()}
                ok = bool(tool.check_v2(pred_c, gold_c))
        except (KeyError, AssertionError) as exc:
            return False, False, f"the checker rejected it ({type(exc).__name__}: {exc})"
        except Exception as exc:  # noqa: BLE001 - the original would crash here; we record and go on
            return False, True, f"the checker crashed ({type(exc).__name__}: {exc})"
        return ok, False, None


# --- replay of gold calls -------------------------------------------------------------------------


def replay(
    bench: Benchmark,
    protocol: str = "v2",
    *,
    levels: Iterable[int] = (1, 2, 3),
    searcher: Any = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> dict[str, Any]:
    """Judge every gold call of a benchmark as if a model had predicted it verbatim.

    Each API-call sample's prediction is the official rendering of its gold call
    (``API-Request: [Name(key='value', ...)]``), so a perfect model's ceiling under
    the protocol is measured, and any failure is a defect of the data, of the
    tools, or of the protocol.

    Returns:
        ``{"protocol", "data", "levels": {"1": {"samples", "samples_correct",
        "gold_calls", "correct", "failures": [...]}, ...}}``; ``gold_calls`` and
        ``correct`` count distinct gold calls (duplicate samples excluded).
    """
    grader = Grader(bench, protocol, searcher=searcher)
    out: dict[str, Any] = {"protocol": protocol, "data": str(bench.root), "data_fingerprint": bench.fingerprint, "levels": {}}
    for level in levels:
        samples = bench.samples(level, "api")
        it: Iterable[Sample] = progress(samples) if progress else samples
        n_ok = n_calls = n_calls_ok = 0
        failures: list[dict[str, Any]] = []
        for s in it:
            j = grader.judge_api(s, gold_call_text(s))
            n_ok += j.correct
            if not s.duplicate:
                n_calls += 1
                n_calls_ok += j.correct
            if not j.correct:
                gold_name, _ = _gold_name_and_result(s)
                failures.append(
                    {
                        "dialogue": s.dialogue_id,
                        "sample_id": s.sample_id,
                        "api_name": gold_name,
                        "duplicate": s.duplicate,
                        "category": j.category.value if j.category else None,
                        "reason": j.reason,
                        "notes": j.notes,
                    }
                )
        out["levels"][str(level)] = {
            "samples": len(samples),
            "samples_correct": n_ok,
            "gold_calls": n_calls,
            "correct": n_calls_ok,
            "failures": failures,
        }
    return out

"""Judging predictions on a benchmark under a grading protocol.

:class:`Grader` judges one prediction at a time: an API call (parsed, executed
in the state the protocol prescribes, judged by the gold API's correctness
rule, its error classified), a reply (ROUGE-L), or a whole level-3 agent
episode (every gold call made with an accepted result, and the gold end state
reached). :func:`apibank_lib.grading.replay.replay` judges every gold call of a
benchmark with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.calls import format_call, looks_like_call_attempt, parse_first_call
from apibank_lib.core.errors import (
    CallError,
    ConfigError,
    InvalidParameterError,
    MissingParameterError,
    ParameterTypeError,
    ParseError,
    ToolError,
    UnknownToolError,
)
from apibank_lib.core.replies import REPLY_METRICS, score_reply
from apibank_lib.core.types import ApiCall, ApiCallSample, Episode, ResponseSample
from apibank_lib.data.datasets import SEARCH_API, Benchmark
from apibank_lib.data.errata import AppliedErratum, Errata, ErrataReport, errata_dir, load_errata, verify
from apibank_lib.env.protocols import SEARCH_BY_NEED, V2, GradingProtocol, StatePolicy
from apibank_lib.env.sandbox import Sandbox, json_copy
from apibank_lib.env.tools.searcher import retrieved_names
from apibank_lib.grading.taxonomy import ErrorCategory, Observation, classify
from apibank_lib.prompting.toolcalls import ParsedAnswer

__all__ = ["Judgment", "EpisodeJudgment", "Grader"]


@dataclass
class Judgment:
    """The verdict on one API-call prediction.

    Attributes:
        correct: the API's rule accepted the prediction.
        category: why not (None when correct).
        reason: a human-readable explanation of the verdict.
        call: the parsed predicted call, if any (as it ran: search keywords rewritten).
        result: the predicted call's result envelope, if it ran.
        notes: anything else worth knowing (e.g. a gold call that failed during state replay).
        excluded: why the sample is left out of scoring (an erratum of the data); the verdict is kept to be read.
        erratum: the id of the erratum applied to the sample's gold, if any.
    """

    correct: bool
    category: ErrorCategory | None
    reason: str | None
    call: ApiCall | None = None
    result: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    excluded: str | None = None
    erratum: str | None = None

    @property
    def call_text(self) -> str | None:
        """The parsed call in our call syntax (``repr`` for a call that cannot be written in it)."""
        if self.call is None:
            return None
        try:
            return format_call(self.call)
        except ValueError:
            return repr(self.call)


@dataclass
class EpisodeJudgment:
    """The verdict on one level-3 agent episode.

    Attributes:
        required_calls: gold calls other than ToolSearcher.
        matched_calls: how many of them the episode made with a result the gold API's rule accepts.
        same_end_state: the episode's end state equals the gold end state.
        calls_made: calls the episode executed.
        tool_errors: calls during which a tool broke (a bug of ours, not the model's).
    """

    required_calls: int
    matched_calls: int
    same_end_state: bool
    calls_made: int
    tool_errors: int = 0

    @property
    def success(self) -> bool:
        """Every required call matched and the end state is the gold one."""
        return self.matched_calls == self.required_calls and self.same_end_state


class Grader:
    """Judges predictions on one benchmark under one protocol.

    Args:
        bench: the loaded benchmark (its databases, tool metadata and dialogues).
        protocol: a :class:`~apibank_lib.env.protocols.GradingProtocol` (default :data:`~apibank_lib.env.protocols.V2`).
        searcher: what ToolSearcher searches with (see :class:`~apibank_lib.env.sandbox.Sandbox`);
            None for the protocol's retriever.
        errata: the errata applied when the protocol applies errata: an :class:`~apibank_lib.data.errata.Errata`, the
            path of an errata file, or None for the data's own (``data/errata/api-bank.yaml`` for an official
            release, ``bundled.yaml`` for ours); each entry applies only when its check holds on ``bench``.
    """

    def __init__(
        self, bench: Benchmark, protocol: GradingProtocol = V2, *, searcher: Any = None, errata: Errata | str | Path | None = None
    ) -> None:
        if not isinstance(protocol, GradingProtocol):
            raise ConfigError(
                f"a Grader takes a GradingProtocol (e.g. apibank_lib.V2), not {protocol!r}; get_protocol(name) finds one by name"
            )
        self.bench = bench
        self.protocol = protocol
        self.searcher = searcher
        self._errata_source = errata
        self._errata: ErrataReport | None = None
        self._shared: dict[int, Sandbox] = {}

    def __repr__(self) -> str:
        return f"<Grader {self.protocol.name} on {self.bench.name} data ({self.bench.fingerprint})>"

    def start_trial(self) -> None:
        """Forget the shared states: the next trial of a run (:attr:`~apibank_lib.runs.config.RunConfig.trials`) is judged
        from the start state, as the first was, not after the first trial's calls."""
        self._shared = {}

    # --- errata ---------------------------------------------------------------------------------

    @property
    def errata(self) -> ErrataReport | None:
        """The data's errata as verified on this benchmark (None when the protocol applies none, or there is no
        errata file for the data)."""
        if not self.protocol.errata:
            return None
        if self._errata is None:
            source = self._errata_source
            if source is None:
                source = errata_dir() / ("api-bank.yaml" if self.bench.official else "bundled.yaml")
                if not source.is_file():
                    return None
            errata = source if isinstance(source, Errata) else load_errata(source)
            samples = [s for lv in (1, 2, 3) for s in self.bench.samples(lv, "api") if isinstance(s, ApiCallSample)]
            self._errata = verify(errata, samples, self.sandbox_for)
        return self._errata

    def errata_summary(self) -> dict[str, Any] | None:
        """What results record of the errata: the file and version, what applied, what did not and why."""
        report = self.errata
        return report.summary() if report is not None else None

    # --- state ----------------------------------------------------------------------------------

    def new_sandbox(self, level: int) -> Sandbox:
        """A pristine sandbox for a level, with this protocol's argument conversion."""
        return self.bench.sandbox(level, self.protocol, searcher=self.searcher)

    def sandbox_for(self, sample: ApiCallSample, notes: list[str] | None = None) -> Sandbox:
        """The state a sample is judged in, as the protocol's state policy for its level prescribes.

        ``PRISTINE``: a fresh sandbox. ``REPLAY``: a fresh sandbox with the
        sample's earlier gold calls replayed in order (calls without side effects
        are skipped; a failed replay is noted). ``SHARED``: one sandbox for every
        sample of the level, judged in dataset order.
        """
        policy = self.protocol.state_for(sample.level)
        if policy is StatePolicy.SHARED:
            if sample.level not in self._shared:
                self._shared[sample.level] = self.new_sandbox(sample.level)
            return self._shared[sample.level]
        box = self.new_sandbox(sample.level)
        if policy is StatePolicy.PRISTINE:
            return box
        for past in sample.history:
            if past.role != "API":
                continue
            call = past.call  # type: ignore[union-attr]
            if call.name in box.toolset and box.toolset.get(call.name).read_only:
                continue  # a call without side effects cannot change what later calls see
            try:
                box.replay(call, past.result)  # type: ignore[union-attr]
            except (CallError, ParseError, ToolError) as exc:
                if notes is not None:
                    notes.append(f"state replay of {call.name} failed: {exc}")
        return box

    # --- API calls ------------------------------------------------------------------------------

    def call_stages(self, sample: ApiCallSample, call: ApiCall | None) -> tuple[bool, bool, bool]:
        """How far a judged call (as it ran) matches the gold call, before its result: the right API name, the
        right argument names (renamed parameters mapped as the protocol maps them), and the right values once both
        are converted. Scoring records them for the step funnel (:func:`apibank_lib.report.failures.funnel`)."""
        gold = sample.gold
        if call is None or call.name != gold.api_name:
            return False, False, False
        toolset = self.bench.toolset(sample.level)
        if gold.api_name not in toolset:
            return True, False, False
        tool = toolset.get(gold.api_name)
        conversion = self.protocol.conversion
        names = {conversion.current_name(tool, k) for k in call.args}
        if names != {conversion.current_name(tool, k) for k in gold.args}:
            return True, False, False
        try:
            return True, True, conversion.convert(tool, call.args) == conversion.convert(tool, dict(gold.args))
        except CallError:
            return True, True, False


    def judge_api(self, sample: ApiCallSample, text: str) -> Judgment:
        """Judge one API-call prediction (raw model text, read by the protocol's parser) against the sample's gold call."""
        text = text if isinstance(text, str) else ""
        call, parse_error = self.protocol.parse(text)
        attempted = call is None and looks_like_call_attempt(text)
        return self.judge_call(sample, call, parse_error, attempted=attempted)

    def judge_parsed(self, sample: ApiCallSample, parsed: ParsedAnswer) -> Judgment:
        """Judge a chat model's answer, read by :func:`apibank_lib.prompting.toolcalls.parse_tool_calls`.

        The first call is graded (one call per sample, as in the paper); when the answer held several, a note
        says how many. An attempt that could not be read is a False API Call Format with the raw text noted.
        """
        notes: list[str] = []
        if parsed.n_calls > 1:
            notes.append(f"{parsed.n_calls} calls in one answer ({parsed.format}); the first is graded")
        if parsed.error is not None and parsed.calls:
            notes.append(f"a later call could not be read: {parsed.error}")
        if parsed.failure is not None:
            notes.append(f"raw answer: {parsed.text[:500]}")
        return self.judge_call(sample, parsed.first, parsed.failure, attempted=parsed.format is not None, notes=notes)

    def judge_call(
        self,
        sample: ApiCallSample,
        call: ApiCall | None,
        parse_error: str | None = None,
        *,
        attempted: bool = False,
        notes: list[str] | None = None,
    ) -> Judgment:
        """Judge an already-read call (None when the answer had none) against the sample's gold call.

        Args:
            sample: the API-call sample.
            call: the predicted call.
            parse_error: why a call attempt could not be read (the call is then None).
            attempted: the answer tried to call an API in some form (no call read).
            notes: notes so far, extended here.
        """
        applied = self.errata.for_sample(sample.key) if self.errata is not None else None
        judgment = self._judge_call(sample, call, parse_error, attempted, notes if notes is not None else [], applied)
        if applied is None and sample.key in self.bench.excluded:  # a twin's sample whose gold did not carry over
            judgment.excluded = f"twin: {self.bench.excluded[sample.key]}"
        if applied is not None:
            judgment.erratum = applied.erratum.id
            if applied.erratum.decision == "exclude":
                judgment.excluded = f"erratum {applied.erratum.id} ({applied.erratum.defect}): {applied.erratum.reason}"
            else:
                judgment.notes.append(f"gold corrected by erratum {applied.erratum.id}: {applied.erratum.correction}")
        return judgment

    def _judge_call(
        self,
        sample: ApiCallSample,
        call: ApiCall | None,
        parse_error: str | None,
        attempted: bool,
        notes: list[str],
        applied: AppliedErratum | None,
    ) -> Judgment:
        gold_name, gold_result = sample.gold.api_name, sample.gold.result
        if applied is not None and applied.corrected_result is not None:
            gold_result = applied.corrected_result
        if call is None:
            obs = Observation(found_call=False, attempted_call=attempted, parse_failed=parse_error is not None)
            return Judgment(False, classify(obs), parse_error or "no API call found", None, None, notes)
        # Under a shared state every predicted call runs (it changes what later samples see), as in the original.
        executes_any = self.protocol.state_for(sample.level) is StatePolicy.SHARED
        if call.name != gold_name and not executes_any:
            obs = Observation(found_call=True, name_matches=False)
            return Judgment(False, classify(obs), f"called {call.name}, expected {gold_name}", call, None, notes)
        call = self.protocol.prepare_call(call, sample.level)
        box = self.sandbox_for(sample, notes)
        name_ok = call.name == gold_name
        try:
            result = box.execute(call).to_dict()
        except CallError as exc:
            obs = Observation(
                found_call=True,
                name_matches=not isinstance(exc, UnknownToolError) and name_ok,
                bad_parameter=isinstance(exc, (InvalidParameterError, ParameterTypeError)),
                missing_parameter=isinstance(exc, MissingParameterError),
            )
            return Judgment(False, classify(obs), str(exc), call, None, notes)
        except ToolError as exc:
            obs = Observation(found_call=True, name_matches=name_ok, tool_broke=True)
            return Judgment(False, classify(obs), str(exc), call, None, notes)
        if gold_name == SEARCH_API and self.protocol.search_rule == SEARCH_BY_NEED and sample.needed_api:
            correct, crash, reason = self.check_search(sample.needed_api, result)
        else:
            correct, crash, reason = self.check_result(box, gold_name, result, gold_result)
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
            reason = (
                f"raised: {result['exception']}"
                if result.get("exception") is not None
                else "result differs from the gold"
            )
        return Judgment(obs.correct, classify(obs), None if obs.correct else reason, call, result, notes)

    @staticmethod
    def check_search(needed: str, pred: dict[str, Any]) -> tuple[bool, bool, str | None]:
        """A search judged by the API needed (:data:`~apibank_lib.env.protocols.SEARCH_BY_NEED`): right when it raised
        nothing and the API it found is ``needed``: (correct, checker crashed, reason).

        The API a search found is the first one its output lists after the GetUserToken companion that the search
        tool returns beside an API that takes a token (:func:`~apibank_lib.env.tools.searcher.retrieved_names`).
        """
        if pred.get("exception") is not None:
            return False, False, f"raised: {pred['exception']}"
        found = retrieved_names(pred.get("output"))
        if found[:1] == [needed]:
            return True, False, None
        return False, False, f"the search found {found[0] if found else 'nothing'}; the dialogue then calls {needed}"

    def check_result(
        self, box: Sandbox, gold_name: str, pred: dict[str, Any], gold: dict[str, Any]
    ) -> tuple[bool, bool, str | None]:
        """Apply the gold API's rule to copies of both envelopes: (correct, checker crashed, reason).

        A rule that raises KeyError or AssertionError judges "incorrect", as the
        original did; any other exception from the rule is a crash of the checker.
        """
        tool = box.tool(gold_name)
        pred_c, gold_c = json_copy(pred), json_copy(gold)
        pred_c.setdefault("api_name", None)
        gold_c.setdefault("api_name", None)
        conversion = self.protocol.conversion
        if conversion.accepts_aliases and type(tool).aliases and isinstance(gold_c.get("input"), dict):
            gold_c["input"] = {conversion.current_name(type(tool), k): v for k, v in gold_c["input"].items()}
        try:
            ok = bool(tool.checker(self.protocol.checker_rules)(pred_c, gold_c))
        except (KeyError, AssertionError) as exc:
            return False, False, f"the checker rejected it ({type(exc).__name__}: {exc})"
        except Exception as exc:  # noqa: BLE001 - the original would crash here; we record and go on
            return False, True, f"the checker crashed ({type(exc).__name__}: {exc})"
        return ok, False, None

    # --- replies and episodes ---------------------------------------------------------------------

    def judge_response(self, sample: ResponseSample, text: str) -> float:
        """ROUGE-L of a reply against the sample's reference, by this protocol's metric and normalisation."""
        return self.reply_scores(sample, text)[self.protocol.reply_metric.name]

    def reply_scores(self, sample: ResponseSample, text: str) -> dict[str, float]:
        """ROUGE-L of a reply by every reply metric (package name -> score), with this protocol's normalisation."""
        text = text if isinstance(text, str) else ""
        normalise = self.protocol.normalise_reply
        return {m.name: score_reply(text, sample.gold, sample.level, normalise, m) for m in REPLY_METRICS}

    def judge_episode(self, episode: Episode, calls: Sequence[str]) -> EpisodeJudgment:
        """Judge a level-3 agent episode from the calls it executed (in our call syntax, as run).

        The calls are executed again in a fresh sandbox; the gold steps in another.
        Each required (non-search) gold call must be matched, in any order, by a
        distinct executed call of the same API whose result the API's rule accepts;
        and the end states must agree (outcome state only).
        """
        item = episode.item
        gold_box = self.new_sandbox(3)
        for st in item.steps:
            gold_box.execute_safely(st.call)
        box = self.new_sandbox(3)
        executed: list[tuple[str, dict[str, Any]]] = []
        for text in calls:
            try:
                call = parse_first_call(text)
            except ParseError:
                continue
            if call is not None:
                executed.append((call.name, box.execute_safely(call).to_dict()))
        required = [st for st in item.steps if st.api_name != "ToolSearcher"]
        used = [False] * len(executed)
        matched = 0
        for st in required:
            for i, (name, result) in enumerate(executed):
                if not used[i] and name == st.api_name and self.check_result(box, st.api_name, result, st.result)[0]:
                    used[i] = True
                    matched += 1
                    break
        same_state = box.fingerprint(outcome_only=True) == gold_box.fingerprint(outcome_only=True)
        tool_errors = sum(1 for entry in box.trace if entry.tool_error)
        return EpisodeJudgment(len(required), matched, same_state, len(executed), tool_errors)

"""The typed records of a run folder: a prediction (what the model answered), a judgment (how it was judged),
the metrics of a scored run, and the predictions read back from a file. Unknown keys are ignored and missing ones
take their defaults, so that files written by earlier versions still load."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from apibank_lib.core.types import Episode, Sample
from apibank_lib.env.protocols import LEGACY_VERSIONS
from apibank_lib.runs.config import trial_key

__all__ = ["EpisodeStep", "PredictionRecord", "JudgmentRecord", "LevelMetrics", "Metrics", "Predictions"]


def _known_fields(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The values of ``d`` the dataclass ``cls`` has fields for (unknown keys are ignored, so older files still
    load)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclass
class EpisodeStep:
    """One step of an agent episode: what the model wrote, the call executed and its result (or why not)."""

    output: str
    call: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class _ItemRecord:
    """The fields that say which sample or episode a record is about, and its JSON form."""

    key: str
    level: int
    kind: str
    dialogue_id: str
    sample_id: int
    duplicate: bool = False
    trial: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON line (``trial`` only after the first trial: a one-trial run's files are what they always were)."""
        out = asdict(self)
        if self.trial == 1:
            del out["trial"]
        return out

    @classmethod
    def _known(cls, d: dict[str, Any]) -> dict[str, Any]:
        return _known_fields(cls, d)


@dataclass
class PredictionRecord(_ItemRecord):
    """One answered sample or episode (one line of ``predictions.jsonl``); one shape for every kind.

    Attributes:
        key: the sample's key (``L1/api/<dialogue>/<id>``, ``L3/episode/<item>``); a later trial's adds ``#t<trial>``.
        level, kind, dialogue_id, sample_id, duplicate: which sample.
        trial: which answer to it (from 1; :attr:`RunConfig.trials`).
        output: the generated text (the final answer of an episode).
        tool_calls: calls returned through native tool calling, in our call syntax.
        raw_tool_calls: the same as the server returned them (``{"name", "arguments"}``, arguments unparsed).
        prompt_sha: a hash of the prompt text (identical prompts get the same answer).
        prompt_tokens, completion_tokens, latency_s, attempts: usage, when known.
        stop_reason: why the generation ended, when the backend said (``stop``, ``length`` ...).
        error: why the backend gave no answer (the sample then counts as wrong).
        reused: the answer of an identical earlier prompt was reused.
        steps: an episode's steps.
        stopped: why an episode ended (``answered`` or ``step limit``).
    """

    output: str | None = None
    tool_calls: list[str] = field(default_factory=list)
    raw_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_sha: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int | None = None
    stop_reason: str | None = None
    error: str | None = None
    reused: bool = False
    steps: list[EpisodeStep] = field(default_factory=list)
    stopped: str | None = None

    @classmethod
    def for_item(cls, item: Sample | Episode, trial: int = 1, **values: Any) -> PredictionRecord:
        """A record identifying ``item`` (trial ``trial``: keyed by :func:`trial_key`), with the other fields given."""
        return cls(
            trial_key(item.key, trial), item.level, item.kind, item.dialogue_id, item.sample_id, item.duplicate,
            trial, **values,
        )

    @property
    def failed(self) -> bool:
        """The backend gave no answer."""
        return self.error is not None

    @property
    def empty(self) -> bool:
        """The model answered and generated nothing at all: zero tokens, no text, no call (an immediate end of
        turn, not a failure of the backend)."""
        return (
            self.error is None
            and self.completion_tokens == 0
            and not (self.output or "").strip()
            and not self.tool_calls
            and not self.raw_tool_calls
        )

    def text(self) -> str:
        """The text to judge: the first native tool call when there was one, else the generated text."""
        if self.error is not None:
            return ""
        return self.tool_calls[0] if self.tool_calls else (self.output or "")

    def parsed(self) -> Any:
        """The answer read as a chat model writes tool calls (:func:`apibank_lib.prompting.toolcalls.parse_tool_calls`):
        the server's structured calls if any, else the calls in the text."""
        from apibank_lib.prompting.toolcalls import parse_tool_calls

        if self.error is not None:
            return parse_tool_calls("")
        return parse_tool_calls(self.output or "", self.raw_tool_calls or None)

    def executed_calls(self) -> list[str]:
        """The calls an episode executed, in order."""
        return [st.call for st in self.steps if st.call]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PredictionRecord:
        """Read a JSON line (unknown keys are ignored, so older files still load)."""
        values = cls._known(d)
        values["steps"] = [
            EpisodeStep(**{k: v for k, v in st.items() if k in ("output", "call", "result", "error")})
            for st in d.get("steps") or []
        ]
        return cls(**values)


@dataclass
class JudgmentRecord(_ItemRecord):
    """The verdict on one prediction (one line of ``judgments.jsonl``); one shape for every kind.

    Attributes:
        key, level, kind, dialogue_id, sample_id, duplicate: which sample (the sample's own key, for every trial).
        trial: which of the run's answers to it was judged (from 1; each trial has its own judgment).
        gold_api: the gold API (API-call samples).
        correct: the verdict (API-call samples and episodes; None for replies).
        category: the error category, ours (None when correct).
        paper_category: the same mapped onto the paper's seven categories.
        reason: why it is wrong, in words.
        call: the parsed call as it ran, in our call syntax.
        result: the executed call's result envelope.
        notes: anything else worth knowing (e.g. a failed state replay).
        rouge_l: the reply's ROUGE-L by the protocol's metric (response samples).
        rouge_scores: the reply's ROUGE-L by every metric (package name -> score).
        backend_error: the backend's error when it gave no answer.
        required_calls, matched_calls, same_end_state, calls_made, tool_errors: episodes.
        retriever: what ToolSearcher searched with, where a search was judged (a gold or predicted
            ToolSearcher call, an episode).
        call_format: chat mode: the format the answer's calls were written in (``hermes``, ``openai`` ...).
        n_calls: chat mode: how many calls the answer held (the first is graded).
        empty: the model generated nothing (zero tokens: it ended its turn at once); also said in ``notes``.
        protocol_version: the grading protocol's version that judged it (``v2.2``).
        excluded: why the sample is left out of scoring (an erratum of the data, :mod:`apibank_lib.data.errata`);
            an excluded sample counts in no accuracy.
        erratum: the erratum applied to the sample's gold (excluded or corrected), by id.
        right_api, right_argument_names, right_values: API-call samples: how far the call (as it ran) matches the
            gold call before its result (:meth:`apibank_lib.grading.grader.Grader.call_stages`); the step funnel reads them.
    """

    gold_api: str | None = None
    correct: bool | None = None
    category: str | None = None
    paper_category: str | None = None
    reason: str | None = None
    call: str | None = None
    result: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    rouge_l: float | None = None
    rouge_scores: dict[str, float] | None = None
    backend_error: str | None = None
    required_calls: int | None = None
    matched_calls: int | None = None
    same_end_state: bool | None = None
    calls_made: int | None = None
    tool_errors: int | None = None
    retriever: str | None = None
    call_format: str | None = None
    n_calls: int | None = None
    empty: bool = False
    protocol_version: str | None = None
    excluded: str | None = None
    erratum: str | None = None
    right_api: bool | None = None
    right_argument_names: bool | None = None
    right_values: bool | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgmentRecord:
        """Read a JSON line (unknown keys are ignored)."""
        return cls(**cls._known(d))


@dataclass
class LevelMetrics:
    """The aggregated figures of one level, or of the whole run (``metrics.json``'s ``levels`` and ``overall``).

    Attributes:
        api_samples, api_correct, api_accuracy: API-call samples scored (those an erratum excludes left out), how
            many are correct, and their share (None without samples).
        response_samples, rouge_l, rouge_l_by_metric: replies and their mean ROUGE-L (the protocol's metric, and
            every metric by package name).
        backend_errors, empty_answers: answers the backend failed to give; answers of zero tokens (None in
            figures scored before they were counted).
        excluded_by_errata, corrected_by_errata: samples an erratum of the data left out, or corrected.
        episodes, episodes_succeeded, episode_success_rate: level-3 agent episodes (None where there are none).
        items, items_correct, item_accuracy: level-3 items answered teacher-forced, and those whose every step is
            right (the paper's Plan+Retrieve+Call accuracy; :func:`apibank_lib.runs.scoring.item_figures`; None where
            no level-3 step was answered).
        note: how the overall figures are aggregated (``overall`` only).
    """

    api_samples: int = 0
    api_correct: int = 0
    api_accuracy: float | None = None
    response_samples: int = 0
    rouge_l: float | None = None
    rouge_l_by_metric: dict[str, float | None] = field(default_factory=dict)
    backend_errors: int = 0
    empty_answers: int | None = None
    excluded_by_errata: int = 0
    corrected_by_errata: int = 0
    episodes: int | None = None
    episodes_succeeded: int | None = None
    episode_success_rate: float | None = None
    items: int | None = None
    items_correct: int | None = None
    item_accuracy: float | None = None
    note: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LevelMetrics:
        """Read the JSON form (unknown keys are ignored; keys an older file lacks take their defaults)."""
        return cls(**_known_fields(cls, d))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; the episode, item and note entries only where they apply."""
        out = asdict(self)
        optional = ("episodes", "episodes_succeeded", "episode_success_rate", "items", "items_correct", "item_accuracy")
        for key in (*optional, "note"):
            if out[key] is None:
                del out[key]
        return out


@dataclass
class Metrics:
    """A scored run's figures: the content of ``metrics.json``, written by scoring and read by every table.

    Attributes:
        model: the model spec the run was started with.
        prompt_mode: how the model was shown each sample.
        protocol, protocol_version: the grading protocol's name and the version that scored the run (results from
            before versions were recorded read as :data:`~apibank_lib.env.protocols.LEGACY_VERSIONS` says).
        reply_metric: the ROUGE-L implementation replies are scored with.
        retriever: what ToolSearcher searches were graded with.
        errata: what the protocol's errata did (None when it applies none).
        data_fingerprint: the data the run was scored on.
        levels: level (``"1"``, ``"2"``, ``"3"``) -> its figures.
        overall: micro averages over every scored sample.
        coverage: how much of what the run's commands asked for is in the folder
            (``expected``, ``answered``, ``failed``, ``missing``, ``lines_dropped``, ``dropped``, ``partial``).
        partial: something asked for is missing (or a line could not be read).
        trials: a run with several trials: per level, pass^k, pass@k, each trial's accuracy and the share of
            samples whose trials disagree (:func:`apibank_lib.runs.trials.trial_figures`); None (and absent from the
            file) for one trial.
    """

    model: str
    prompt_mode: str
    protocol: str
    protocol_version: str
    reply_metric: str | None
    retriever: str | None
    errata: dict[str, Any] | None
    data_fingerprint: str
    levels: dict[str, LevelMetrics]
    overall: LevelMetrics
    coverage: dict[str, Any]
    partial: bool
    trials: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Metrics:
        """Read ``metrics.json`` (older files lack some entries: they take what their results meant then)."""
        protocol = str(d.get("protocol", ""))
        return cls(
            model=str(d.get("model", "")),
            prompt_mode=str(d.get("prompt_mode", "")),
            protocol=protocol,
            protocol_version=str(d.get("protocol_version") or LEGACY_VERSIONS.get(protocol, protocol)),
            reply_metric=d.get("reply_metric"),
            retriever=d.get("retriever"),
            errata=d.get("errata"),
            data_fingerprint=str(d.get("data_fingerprint", "")),
            levels={k: LevelMetrics.from_dict(v) for k, v in (d.get("levels") or {}).items()},
            overall=LevelMetrics.from_dict(d.get("overall") or {}),
            coverage=dict(d.get("coverage") or {}),
            partial=bool(d.get("partial", False)),
            trials=d.get("trials"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written to ``metrics.json``."""
        out = asdict(self)
        out["levels"] = {k: v.to_dict() for k, v in self.levels.items()}
        out["overall"] = self.overall.to_dict()
        if self.trials is None:
            del out["trials"]
        return out


@dataclass
class Predictions:
    """What a predictions file holds: the last record per key, and the lines that could not be read.

    Attributes:
        records: sample key -> its last record.
        dropped: ``"line N: why"`` for every line left out (a line cut by a crash, a broken line).
    """

    records: dict[str, PredictionRecord]
    dropped: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: object) -> bool:
        return key in self.records

    def get(self, key: str) -> PredictionRecord | None:
        """The record of a sample, or None."""
        return self.records.get(key)

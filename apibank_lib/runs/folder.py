"""Run folders: what a run asked for, what the model answered, how it was judged.

A run is a folder, written append-only so that an interrupted run resumes where
it stopped and scoring can be redone without querying a model again::

    config.json        RunInfo: the settings, the run's identity, the backend, the data
    predictions.jsonl  one PredictionRecord per line, appended and flushed as answered
    episodes-<max steps>steps-<retriever>.jsonl
                       the level-3 agent episodes, one file per episode settings
    summary.json       what the last invocation of the runner did
    judgments.jsonl    one JudgmentRecord per line (written by scoring)
    metrics.json       the aggregated metrics, with coverage (written by scoring)

:class:`RunConfig` (the settings) and :func:`plan` (which samples and episodes
the settings ask for, in dataset order) live here too, so that scoring can
tell a partial run from a complete one without importing the runner.
``RunFolder(path).to_frame()`` gives the judgments as a pandas DataFrame.

What a folder holds is decided by what changes an answer. Teacher-forced samples (levels 1-3, the context is the
gold dialogue) depend on the model, the data, the protocol, the prompt mode and the decoding: that is the folder's
identity, so one such combination answers each sample once, whatever else a command asks for. Agent episodes also
depend on the step limit and on the retriever (the model sees search results): those two make the episodes'
identity (:meth:`RunConfig.episode_identity`), and each episode identity has a file of its own in the folder.

Folders written before this layout (their identity holds ``max_steps``, and their episodes are in
``predictions.jsonl``) still load and still resume: :func:`apibank_lib.runs.runner.locate_run` finds them when no folder
of the new name exists, their episodes are read where they are, and episodes of other settings go to a file of
their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import IO, Any

from apibank_lib.prompting.modes import MODEL_PROMPT_MODES, PAPER_PROMPT
from apibank_lib.prompting.chat import TOOL_CHOICES
from apibank_lib.data.datasets import Benchmark
from apibank_lib.retrieval.retrievers import PAPER_RECIPE, RETRIEVERS
from apibank_lib.runs.shards import in_shard, parse_shard
from apibank_lib.runs.subsets import FIRST, RANDOM, check_draw, dialogue_order, take
from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.paths import runs_dir
from apibank_lib.env.protocols import LEGACY_VERSIONS, V2, get_protocol
from apibank_lib.core.types import Episode, Sample

__all__ = [
    "RunConfig",
    "RunInfo",
    "EpisodeStep",
    "PredictionRecord",
    "JudgmentRecord",
    "LevelMetrics",
    "Metrics",
    "Predictions",
    "RunFolder",
    "plan",
    "plan_of",
    "planned",
    "planned_trials",
    "trial_key",
    "trial_seed",
    "default_runs_dir",
    "EPISODE_KEYS",
    "episodes_file",
    "same_episodes",
    "sample_identity",
]

LEVEL3_MODES = ("steps", "loop", "both")

PREDICTIONS_FILE = "predictions.jsonl"

EPISODE_KEYS = ("max_steps", "retriever")
"""Identity entries that change only agent episodes; folders written before episodes had files of their own hold
them in their identity."""


def _known_fields(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The values of ``d`` the dataclass ``cls`` has fields for (unknown keys are ignored, so older files still
    load)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _asks_for_episodes(levels: Sequence[int], level3: str) -> bool:
    """Whether a plan with these levels and level-3 mode asks for agent episodes."""
    return 3 in levels and level3 != "steps"


def same_episodes(episode_set: dict[str, Any] | None, config: RunConfig) -> bool:
    """Whether a folder's episodes (:meth:`RunInfo.episode_set`) ran with the settings ``config`` asks episodes of."""
    return episode_set is not None and {k: episode_set[k] for k in EPISODE_KEYS} == config.episode_identity()


def sample_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """A folder's identity without what changes only episodes (for comparing a folder written before episodes had
    files of their own with today's settings)."""
    return {k: v for k, v in identity.items() if k not in EPISODE_KEYS}


def episodes_file(episode_identity: dict[str, Any]) -> str:
    """The file name of one episode identity's episodes: ``episodes-12steps-enriched.jsonl``."""
    retriever = str(episode_identity["retriever"]).replace("/", "-")
    return f"episodes-{int(episode_identity['max_steps'])}steps-{retriever}.jsonl"


def default_runs_dir() -> Path:
    """Where run folders go by default (:func:`apibank_lib.core.paths.runs_dir`): ``$APIBANK_RUNS``, else ``runs/`` in
    the project."""
    return runs_dir()


@dataclass
class RunConfig:
    """Everything that defines a run (command-line flags and notebook parameters end up here).

    Attributes:
        model: backend spec, e.g. ``llamacpp:gemma-3-270m``, ``openai:<model>@<url>`` or ``oracle``.
        levels: which levels to run.
        protocol: the grading protocol's name (``v2`` or ``paper``): prompts and scoring.
        data: benchmark root; None for the bundled one.
        limit: how many samples (or level-3 episodes) per level, drawn as ``draw`` says; None for all.
        draw: how a limit picks its samples: ``random`` (the default: a seeded draw of whole dialogues, stratified
            by their first API, the same for every model given the same ``subset_seed``; :mod:`apibank_lib.runs.subsets`)
            or ``first`` (the first ``limit`` in dataset order, for debugging: biased on data sorted by API name).
        subset_seed: the seed of a ``random`` draw (not part of the folder's identity: draws of several seeds
            share one folder).
        out: the run folder; default ``<runs dir>/<model>-<protocol>-<hash of the identity>``.
        concurrency: parallel requests (backends that allow it).
        seed: recorded, and passed to backends that sample.
        shots: worked examples prepended to each prompt (0 = the paper's setting).
        max_tokens: generation budget per request.
        tasks: ``api`` and/or ``response`` samples.
        level3: ``steps`` (teacher-forced samples), ``loop`` (agent episodes) or ``both``.
        max_steps: agent-loop step limit.
        prompt_mode: how the model is shown each sample (``chat``, ``paper`` or ``completion``,
            :data:`apibank_lib.prompting.modes.PROMPT_MODES`); None for the backend's default (chat for chat models,
            completion for base models).
        tool_choice: in chat mode, how an API-call sample asks for a call: ``required`` (the default, as the paper's
            "Generate API Request" does) or ``auto`` (:data:`apibank_lib.prompting.chat.TOOL_CHOICES`).
        native_tools: the older name of ``prompt_mode="chat"`` (kept so that old scripts still run).
        retry_failed: re-run samples whose backend call failed before.
        restart: start the run over: the folder's answers so far are moved aside (``discarded-N/``) first.
        backend_options: keyword options for the backend (checked against it before the run).
        runs_dir: where the default-named folder goes (default: :func:`default_runs_dir`); ignored with ``out``.
        retriever: what ToolSearcher searches with (:mod:`apibank_lib.retrieval.retrievers`) in level-3
            episodes and when the run is scored; None for the protocol's (:attr:`GradingProtocol.retriever`).
        shard: ``"I/N"``: answer only the dialogues of shard I of N (:mod:`apibank_lib.runs.shards`); the folder's
            identity is the whole run's, so that ``apibank merge`` can join the N shard folders; None: everything.
        temperature: sample at this temperature (each trial with its own seed, :func:`trial_seed`); None: the
            backend's own decoding (greedy for local models), as the paper's evaluation.
        trials: answers per sample and episode, each recorded under its trial's key (:func:`trial_key`); more than
            one needs a ``temperature`` (greedy decoding would repeat itself).
    """

    model: str
    levels: tuple[int, ...] = (1, 2, 3)
    protocol: str = V2.name
    data: str | None = None
    limit: int | None = None
    draw: str = RANDOM
    subset_seed: int = 0
    out: str | None = None
    concurrency: int = 1
    seed: int = 0
    shots: int = 0
    max_tokens: int = 128
    tasks: tuple[str, ...] = ("api", "response")
    level3: str = "steps"
    max_steps: int = 12
    prompt_mode: str | None = None
    tool_choice: str = "required"
    native_tools: bool = False
    retry_failed: bool = False
    restart: bool = False
    backend_options: dict[str, Any] = field(default_factory=dict)
    runs_dir: str | None = None
    retriever: str | None = None
    shard: str | None = None
    temperature: float | None = None
    trials: int = 1

    def validate(self) -> None:
        """Raise ConfigError on an impossible setting."""
        if not self.model:
            raise ConfigError("a model is required, e.g. --model llamacpp:gemma-3-270m")
        get_protocol(self.protocol)
        if not self.levels or any(lv not in (1, 2, 3) for lv in self.levels):
            raise ConfigError(f"levels must be among 1, 2, 3, got {self.levels}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("limit must be at least 1")
        check_draw(self.draw)
        if self.concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        if self.level3 not in LEVEL3_MODES:
            raise ConfigError(f"level3 must be one of {', '.join(LEVEL3_MODES)}, not {self.level3!r}")
        if not self.tasks or any(t not in ("api", "response") for t in self.tasks):
            raise ConfigError("tasks must be among api and response")
        if self.max_tokens < 1 or self.max_steps < 1:
            raise ConfigError("max_tokens and max_steps must be positive")
        if self.shots not in (0, 1):
            raise ConfigError("shots must be 0 or 1")
        if self.prompt_mode is not None and self.prompt_mode not in MODEL_PROMPT_MODES:
            raise ConfigError(
                f"prompt_mode must be one of {', '.join(MODEL_PROMPT_MODES)} (or None for the model's default), "
                f"not {self.prompt_mode!r}"
            )
        if self.native_tools and self.prompt_mode not in (None, "chat"):
            raise ConfigError(f"native_tools means prompt_mode='chat'; it contradicts prompt_mode={self.prompt_mode!r}")
        if self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, not {self.tool_choice!r}")
        if self.retriever is not None and self.retriever not in RETRIEVERS:
            raise ConfigError(f"unknown retriever {self.retriever!r}; choose one of {', '.join(RETRIEVERS)}")
        if self.shard is not None:
            parse_shard(self.shard)
        if self.temperature is not None and not 0 <= self.temperature <= 5:
            raise ConfigError(f"temperature must be between 0 and 5, not {self.temperature}")
        if self.trials < 1:
            raise ConfigError("trials must be at least 1")
        if self.trials > 1 and not self.temperature:
            raise ConfigError(
                f"{self.trials} trials under greedy decoding would give the same answer {self.trials} times; "
                "give a temperature (e.g. --temperature 0.7) or one trial"
            )

    def requested_prompt_mode(self) -> str | None:
        """The prompt mode asked for (``native_tools`` read as chat), None for the backend's default."""
        return self.prompt_mode or ("chat" if self.native_tools else None)

    def identity(
        self,
        data_fingerprint: str,
        backend_identity: dict[str, Any],
        prompt_mode: str,
        mode_identity: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What makes two runs the same run folder: everything that changes a teacher-forced answer, nothing else.

        The model (as its backend states it, without server address or port),
        the prompt mode (and, in chat mode, how a call is asked for and the
        template it is rendered with), the protocol, decoding and prompt
        settings, and the data. Levels, limit and tasks may grow on resume;
        concurrency, timeouts and retries never change an answer. The step
        limit and the retriever change only agent episodes: they are the
        episodes' identity (:meth:`episode_identity`), not the folder's.
        """
        ident: dict[str, Any] = {
            "model": backend_identity,
            "prompt_mode": prompt_mode,
            "protocol": self.protocol,
            "data_fingerprint": data_fingerprint,
            "shots": self.shots,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        if mode_identity:
            ident["prompt"] = mode_identity
        if self.temperature is not None:  # absent under the backend's own decoding: older folders keep their names
            ident["temperature"] = self.temperature
        return ident

    def plans_episodes(self) -> bool:
        """Whether these settings ask for level-3 agent episodes."""
        return _asks_for_episodes(self.levels, self.level3)

    def episode_identity(self) -> dict[str, Any]:
        """What, beside the folder's identity, changes an agent episode: the step limit and the retriever whose
        results the model is shown."""
        return {"max_steps": self.max_steps, "retriever": self.effective_retriever()}

    def effective_retriever(self) -> str:
        """The retriever named, or the protocol's."""
        return self.retriever or get_protocol(self.protocol).retriever


@dataclass
class RunInfo:
    """The content of a run's ``config.json``.

    Attributes:
        identity: see :meth:`RunConfig.identity`.
        config: the full settings of the last invocation (``RunConfig`` as a dict).
        backend: what the backend reports about itself (never secrets).
        data: the data root the run used.
        official_release: whether that root is an official release.
        code_version: the package version and git commit.
        plans: what every command that wrote into the folder asked for (its levels, limit, tasks and level-3
            mode, each once, in order): what the folder is expected to hold is their union. Folders written before
            plans were kept have one, read from ``config``.
        episodes: the identity of the episodes the folder's scores are about (:meth:`RunConfig.episode_identity`)
            and the file that holds them (``file``); None when no command asked for episodes. A folder written
            before episodes had files of their own gives it from its identity (:meth:`episode_set`).
    """

    identity: dict[str, Any]
    config: dict[str, Any]
    backend: dict[str, Any]
    data: str
    official_release: bool
    code_version: str
    plans: list[dict[str, Any]] = field(default_factory=list)
    episodes: dict[str, Any] | None = None

    def all_plans(self) -> list[dict[str, Any]]:
        """:attr:`plans`, or the one plan ``config`` holds for a folder written before they were kept."""
        return self.plans or [plan_of(self.run_config())]

    @property
    def protocol(self) -> str:
        """The protocol's name."""
        return str(self.identity["protocol"])

    def episode_set(self) -> dict[str, Any] | None:
        """The episodes' identity and file (``{"max_steps", "retriever", "file"}``), or None when no command that
        wrote the folder asked for episodes.

        A folder written before episodes had files of their own keeps them in ``predictions.jsonl`` and their
        settings in its identity (the retriever named there only when it was not the paper's)."""
        if self.episodes is not None:
            return dict(self.episodes)
        if "max_steps" not in self.identity:
            return None
        if not any(_asks_for_episodes(p["levels"], p["level3"]) for p in self.all_plans()):
            return None
        return {
            "max_steps": self.identity["max_steps"],
            "retriever": self.identity.get("retriever", PAPER_RECIPE),
            "file": PREDICTIONS_FILE,
        }

    @property
    def retriever(self) -> str:
        """The retriever the run's searches are graded with: the one its episodes searched with (when it was named
        for them), else the one the last command named, else its protocol's."""
        named = (self.episodes or {}).get("retriever") or self.identity.get("retriever") or self.config.get("retriever")
        return str(named) if named else get_protocol(self.protocol).retriever

    @property
    def prompt_mode(self) -> str:
        """How the model was shown each sample (``chat``, ``paper``, ``completion`` or ``reference``).

        Runs made before the chat mode existed say ``chat`` for the paper's text sent as messages and have no
        ``prompt`` entry in their identity; they are read as ``paper``."""
        mode = str(self.identity.get("prompt_mode", "completion"))
        if mode == "chat" and "prompt" not in self.identity:
            return PAPER_PROMPT
        return "chat" if mode == "tools" else mode

    @property
    def model(self) -> str:
        """The model spec the run was started with."""
        return str(self.config.get("model", ""))

    def run_config(self) -> RunConfig:
        """The settings as a :class:`RunConfig`."""
        known = {f.name for f in fields(RunConfig)}
        cfg = {k: v for k, v in self.config.items() if k in known}
        for key in ("levels", "tasks"):
            if key in cfg:
                cfg[key] = tuple(cfg[key])
        if cfg.get("limit") is not None and "draw" not in cfg:
            cfg["draw"] = FIRST  # written when every limit took the first samples, as a plan without a draw reads
        return RunConfig(**cfg)


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


def plan_of(config: RunConfig) -> dict[str, Any]:
    """The part of a config that says which samples and episodes it asks for: levels, limit, tasks, level-3 mode
    and, for a shard, the shard (they may differ between the commands that write into one folder; what changes
    answers is in the identity)."""
    out = {"levels": list(config.levels), "limit": config.limit, "tasks": list(config.tasks), "level3": config.level3}
    # Each absent when unused, so that the plans of folders written before shards, trials and draws still match. A
    # plan with a limit and no draw was written when every limit took the first samples, and reads so.
    if config.limit is not None:
        out["draw"] = config.draw
        if config.draw == RANDOM:
            out["subset_seed"] = config.subset_seed
    if config.shard is not None:
        out["shard"] = config.shard
    if config.trials > 1:
        out["trials"] = config.trials
    return out


def trial_key(key: str, trial: int) -> str:
    """The record key of trial ``trial`` (from 1) of the sample or episode ``key``: the key itself for the first
    trial (a one-trial run's files are what they always were), ``<key>#t<trial>`` for the others."""
    return key if trial == 1 else f"{key}#t{trial}"


def trial_seed(config: RunConfig, trial: int) -> int:
    """The sampling seed of trial ``trial``: the run's seed, then one more per trial."""
    return config.seed + trial - 1


def _plans(
    bench: Benchmark, config: RunConfig, plans: Sequence[dict[str, Any]]
) -> tuple[list[Sample | Episode], dict[str, int]]:
    """What ``plans`` ask for, each plan planned once: the items, each once, in dataset order, and the trials each
    item is asked for (the most any plan that asks for it wants)."""
    seen: dict[str, Sample | Episode] = {}
    trials: dict[str, int] = {}
    for p in plans:
        one = replace(
            config, levels=tuple(p["levels"]), limit=p["limit"], tasks=tuple(p["tasks"]), level3=p["level3"],
            shard=p.get("shard"), draw=p.get("draw", FIRST), subset_seed=p.get("subset_seed", 0),
        )
        for item in plan(bench, one):
            seen.setdefault(item.key, item)
            trials[item.key] = max(trials.get(item.key, 1), int(p.get("trials", 1)))
    everything = replace(config, levels=(1, 2, 3), limit=None, tasks=("api", "response"), level3="both", shard=None)
    order = {item.key: i for i, item in enumerate(plan(bench, everything))}
    return sorted(seen.values(), key=lambda item: order.get(item.key, len(order))), trials


def planned_trials(
    bench: Benchmark, config: RunConfig, plans: Sequence[dict[str, Any]]
) -> list[tuple[Sample | Episode, int]]:
    """Every (sample or episode, trial) ``plans`` ask for: :func:`planned`'s items, each with the trials the
    plans that ask for it want (the most of them), items in dataset order and trials in order."""
    items, trials = _plans(bench, config, plans)
    return [(item, t) for item in items for t in range(1, trials[item.key] + 1)]


def planned(bench: Benchmark, config: RunConfig, plans: Sequence[dict[str, Any]]) -> list[Sample | Episode]:
    """Every sample and episode any of ``plans`` asks for, each once, in dataset order (:func:`plan` of each)."""
    return _plans(bench, config, plans)[0]


def plan(bench: Benchmark, config: RunConfig) -> list[Sample | Episode]:
    """Every sample and episode the config asks for, in dataset order.

    Per level: the samples of the asked tasks, all of them or, with a ``limit``, those of the whole dialogues that
    the ``draw`` picks (:func:`apibank_lib.runs.subsets.take`: a seeded, stratified draw of dialogues holding at least
    ``limit`` samples of the asked tasks, the same dialogues for every model; or the first ``limit``); at level 3,
    with ``level3`` set to ``loop`` or ``both``, the episodes first, drawn the same way. With a ``shard``, those of
    them whose dialogue is in the shard (the limit applies to the whole run first, so that the shards of one run
    split the same samples).
    """
    items: list[Sample | Episode] = []
    for level in config.levels:
        # One dialogue order per level, over every sample of it, so that each task's draw (and the episodes')
        # comes from the same order whichever tasks a command asks for.
        order = (
            dialogue_order(bench.samples(level), config.subset_seed)
            if config.limit is not None and config.draw == RANDOM
            else None
        )
        if level == 3 and config.level3 in ("loop", "both"):
            items += take(bench.episodes(), config.limit, draw=config.draw, seed=config.subset_seed, order=order)
            if config.level3 == "loop":
                continue
        samples = [s for s in bench.samples(level) if s.kind in config.tasks]
        items += take(samples, config.limit, draw=config.draw, seed=config.subset_seed, order=order)
    return [x for x in items if in_shard(x, config.shard)]


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class RunFolder:
    """A run folder on disk (it need not exist yet).

    Args:
        path: the folder.

    Attributes:
        config_path, predictions_path, judgments_path, metrics_path, summary_path: its files.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config_path = self.path / "config.json"
        self.predictions_path = self.path / "predictions.jsonl"
        self.judgments_path = self.path / "judgments.jsonl"
        self.metrics_path = self.path / "metrics.json"
        self.summary_path = self.path / "summary.json"
        self.warnings_path = self.path / "warnings.json"

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def exists(self) -> bool:
        """Whether the folder holds a run (a ``config.json``)."""
        return self.config_path.is_file()

    # --- config ----------------------------------------------------------------------------------

    def read_info(self) -> RunInfo:
        """The run's ``config.json``.

        Raises:
            ConfigError: the folder holds no run.
            DataError: the file is not a run config.
        """
        if not self.path.exists():
            raise ConfigError(f"{self.path} does not exist: give a run folder (apibank run writes one per model)")
        if not self.exists():
            raise ConfigError(f"{self.path} is not a run folder (it has no config.json)")
        try:
            raw = json.loads(self.config_path.read_text(encoding="utf-8"))
            optional = ("plans", "episodes")
            return RunInfo(
                **{f.name: raw[f.name] for f in fields(RunInfo) if f.name not in optional},
                plans=raw.get("plans", []),
                episodes=raw.get("episodes"),
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(
                f"not a run config of this version ({type(exc).__name__}: {exc})", self.config_path
            ) from exc

    def write_info(self, info: RunInfo) -> None:
        """Write ``config.json`` (creating the folder)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_json(self.config_path, asdict(info))

    # --- warnings ---------------------------------------------------------------------------------

    def read_warnings(self) -> list[dict[str, str]]:
        """What went wrong in a way the answers alone do not show (e.g. a server that ignored the tools)."""
        if not self.warnings_path.is_file():
            return []
        return json.loads(self.warnings_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def add_warning(self, kind: str, message: str) -> None:
        """Record a warning (``kind``: a short tag such as ``tools_ignored``)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_json(self.warnings_path, [*self.read_warnings(), {"kind": kind, "message": message}])

    def discard(self) -> Path | None:
        """Move the answers, judgments, metrics and warnings aside (``discarded-N/``) so the run starts over.

        Returns:
            The folder they went to, or None when there was nothing to move.
        """
        named = (self.predictions_path, self.judgments_path, self.metrics_path, self.summary_path, self.warnings_path)
        files = [p for p in named if p.is_file()] + sorted(self.path.glob("episodes-*.jsonl"))
        if not files:
            return None
        n = 1
        while (self.path / f"discarded-{n}").exists():
            n += 1
        target = self.path / f"discarded-{n}"
        target.mkdir()
        for p in files:
            os.replace(p, target / p.name)
        return target

    # --- predictions -----------------------------------------------------------------------------

    def episodes_path(self) -> Path | None:
        """The file that holds the episodes the folder's scores are about (:meth:`RunInfo.episode_set`), or None when
        no command asked for episodes (or the folder holds no run yet)."""
        if not self.exists():
            return None
        episodes = self.read_info().episode_set()
        return self.path / episodes["file"] if episodes else None

    def read_predictions(self, *, repair: bool = False) -> Predictions:
        """The last record per sample key, and the lines that could not be read.

        Teacher-forced samples come from ``predictions.jsonl``, episodes from the file of the folder's episode
        identity (:meth:`episodes_path`). A last line without its newline (a crash mid-write) is left out; with
        ``repair`` it is also cut from the file so appending can continue safely. A broken line elsewhere is left
        out and reported, never fatal.
        """
        samples = _read_records(self.predictions_path, repair)
        episodes_path = self.episodes_path()
        if episodes_path is None or episodes_path == self.predictions_path:
            return samples
        # Episodes of other settings may sit in predictions.jsonl (a folder written before episodes had files of
        # their own): they are not the ones asked for now.
        kept = {k: r for k, r in samples.records.items() if r.kind != "episode"}
        episodes = _read_records(episodes_path, repair)
        records = kept | {k: r for k, r in episodes.records.items() if r.kind == "episode"}
        return Predictions(records, samples.dropped + [f"{episodes_path.name} {d}" for d in episodes.dropped])

    @contextmanager
    def prediction_writer(self) -> Iterator[PredictionWriter]:
        """Append records to ``predictions.jsonl`` (episodes to their own file), each flushed as soon as it is
        written."""
        self.path.mkdir(parents=True, exist_ok=True)
        episodes_path = self.episodes_path() or self.predictions_path
        with self.predictions_path.open("a", encoding="utf-8") as f:
            writer = PredictionWriter(f, episodes_path if episodes_path != self.predictions_path else None)
            try:
                yield writer
            finally:
                writer.close()

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json``."""
        _write_json(self.summary_path, summary)

    # --- judgments and metrics ---------------------------------------------------------------------

    def write_judgments(self, records: list[JudgmentRecord]) -> None:
        """Write ``judgments.jsonl`` (replacing an earlier one)."""
        tmp = self.judgments_path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, self.judgments_path)

    def read_judgments(self) -> list[JudgmentRecord]:
        """The judgments, in the order scoring wrote them.

        Raises:
            ConfigError: the run has not been scored yet.
        """
        if not self.judgments_path.is_file():
            raise ConfigError(
                f"{self.path} has not been scored yet: run `apibank score {self.path}` (or apibank_lib.score_run)"
            )
        out = []
        for number, line in enumerate(self.judgments_path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    out.append(JudgmentRecord.from_dict(json.loads(line)))
                except (json.JSONDecodeError, TypeError) as exc:
                    raise DataError(f"not a judgment record ({exc})", self.judgments_path, number) from exc
        return out

    def write_metrics(self, metrics: Metrics) -> None:
        """Write ``metrics.json``."""
        _write_json(self.metrics_path, metrics.to_dict())

    def read_metrics(self) -> Metrics:
        """The metrics written by scoring.

        Raises:
            ConfigError: the run has not been scored yet.
        """
        if not self.metrics_path.is_file():
            raise ConfigError(
                f"{self.path} has not been scored yet: run `apibank score {self.path}` (or apibank_lib.score_run)"
            )
        return Metrics.from_dict(json.loads(self.metrics_path.read_text(encoding="utf-8")))

    # --- tables ------------------------------------------------------------------------------------

    def to_frame(self, what: str = "judgments") -> Any:
        """The run as a pandas DataFrame, one row per sample or episode.

        Args:
            what: ``judgments`` (the verdicts; needs a scored run) or ``predictions``
                (the answers, scored or not).
        """
        import pandas as pd

        if what == "judgments":
            rows = [r.to_dict() for r in self.read_judgments()]
            columns = [f.name for f in fields(JudgmentRecord)]
        elif what == "predictions":
            rows = [r.to_dict() for r in self.read_predictions().records.values()]
            columns = [f.name for f in fields(PredictionRecord)]
        else:
            raise ConfigError(f"to_frame shows 'judgments' or 'predictions', not {what!r}")
        frame = pd.DataFrame(rows, columns=columns)
        # Verdicts and counts that do not apply to a row are missing, not False or 0, so means skip them.
        nullable = {"correct": "boolean", "same_end_state": "boolean", "rouge_l": "Float64", "latency_s": "Float64"}
        nullable |= {
            c: "Int64"
            for c in (
                "required_calls",
                "matched_calls",
                "calls_made",
                "tool_errors",
                "prompt_tokens",
                "completion_tokens",
                "attempts",
            )
        }
        return frame.astype({c: t for c, t in nullable.items() if c in frame.columns})


class PredictionWriter:
    """Appends prediction records to an open file, one flushed JSON line each; episodes go to their own file
    (opened on the first episode) when one is given."""

    def __init__(self, file: IO[str], episodes_path: Path | None = None) -> None:
        self._file = file
        self._episodes_path = episodes_path
        self._episodes: IO[str] | None = None
        self.written = 0

    def write(self, record: PredictionRecord) -> None:
        """Append one record and flush it to the operating system."""
        target = self._file
        if record.kind == "episode" and self._episodes_path is not None:
            if self._episodes is None:
                self._episodes = self._episodes_path.open("a", encoding="utf-8")
            target = self._episodes
        target.write(json.dumps(record.to_dict(), ensure_ascii=False, default=str) + "\n")
        target.flush()
        self.written += 1

    def close(self) -> None:
        """Close the episodes' file if one was opened (the main file belongs to the caller)."""
        if self._episodes is not None:
            self._episodes.close()
            self._episodes = None


def _read_records(path: Path, repair: bool) -> Predictions:
    """The last record per key in one predictions file (see :meth:`RunFolder.read_predictions`)."""
    if not path.is_file():
        return Predictions({})
    raw = path.read_bytes()
    dropped: list[str] = []
    cut_note: str | None = None
    if raw and not raw.endswith(b"\n"):
        cut = raw.rfind(b"\n") + 1
        cut_note = "line %d" % (raw[:cut].count(b"\n") + 1)
        raw = raw[:cut]
        if repair:
            with path.open("r+b") as f:
                f.truncate(cut)
    records: dict[str, PredictionRecord] = {}
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = PredictionRecord.from_dict(json.loads(line))
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            dropped.append(f"line {number}: not a prediction record ({type(exc).__name__}: {exc})")
            continue
        records[rec.key] = rec
    if cut_note is not None:
        dropped.append(f"{cut_note}: cut off before its end (an interrupted write)")
    return Predictions(records, dropped)

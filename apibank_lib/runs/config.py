"""What a run asks for: :class:`RunConfig` (the settings, and the identity that names a run folder), and
:func:`plan` (which samples and episodes the settings ask for, in dataset order), so that scoring can tell a partial
run from a complete one without importing the runner.

What a folder holds is decided by what changes an answer. Teacher-forced samples (levels 1-3, the context is the
gold dialogue) depend on the model, the data, the protocol, the prompt mode and the decoding: that is the folder's
identity, so one such combination answers each sample once, whatever else a command asks for. Agent episodes also
depend on the step limit and on the retriever (the model sees search results): those two make the episodes'
identity (:meth:`RunConfig.episode_identity`), and each episode identity has a file of its own in the folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import runs_dir
from apibank_lib.core.types import Episode, Sample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import V2, get_protocol
from apibank_lib.prompting.chat import TOOL_CHOICES
from apibank_lib.prompting.modes import MODEL_PROMPT_MODES
from apibank_lib.retrieval.retrievers import RETRIEVERS
from apibank_lib.runs.shards import in_shard, parse_shard
from apibank_lib.runs.subsets import FIRST, RANDOM, check_draw, dialogue_order, take

__all__ = ["EPISODE_KEYS", "LEVEL3_MODES", "PREDICTIONS_FILE", "RunConfig", "asks_for_episodes", "default_runs_dir", "episodes_file", "plan", "plan_of", "planned", "planned_trials", "same_episodes", "sample_identity", "trial_key", "trial_seed"]


LEVEL3_MODES = ("steps", "loop", "both")

PREDICTIONS_FILE = "predictions.jsonl"

EPISODE_KEYS = ("max_steps", "retriever")
"""Identity entries that change only agent episodes; folders written before episodes had files of their own hold
them in their identity."""


def asks_for_episodes(levels: Sequence[int], level3: str) -> bool:
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
        return asks_for_episodes(self.levels, self.level3)

    def episode_identity(self) -> dict[str, Any]:
        """What, beside the folder's identity, changes an agent episode: the step limit and the retriever whose
        results the model is shown."""
        return {"max_steps": self.max_steps, "retriever": self.effective_retriever()}

    def effective_retriever(self) -> str:
        """The retriever named, or the protocol's."""
        return self.retriever or get_protocol(self.protocol).retriever


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
            dialogue_order(bench.samples(level), config.subset_seed,
                           source_name=bench.renaming.original_api if bench.renaming is not None else None)
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

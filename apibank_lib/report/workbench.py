"""Running models for the notebooks: the settings of a notebook's runs, the runs made or resumed, and saved runs found.

Notebooks hold no logic of their own; each step they show is one call here, in
:mod:`apibank_lib.report.sandbox_demo` (notebook 01) or in
:mod:`apibank_lib.report.analysis`, and returns a DataFrame (or a list of runs).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import runs_dir
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import V2
from apibank_lib.runs.config import RunConfig, plan, same_episodes, trial_key
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import ScoredRun, scored
from apibank_lib.runs.subsets import RANDOM, check_draw, describe

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "KINDS",
    "RunSettings",
    "run_models",
    "saved_runs",
]



KINDS = ("api", "response", "episodes")
"""What a limit can count: teacher-forced API-call samples, reply samples, and level-3 agent episodes."""


@dataclass
class RunSettings:
    """How the notebooks run models: one object for :func:`run_models` and :func:`saved_runs`, so that a notebook
    that only reads (03, 04) locates the runs another (02) made with the same parameters.

    Attributes:
        protocol: the grading protocol's name.
        levels: which levels.
        limit: at most this many samples (and level-3 episodes) per level; None for all.
        kind_limits: a limit of its own for some kinds (``api``, ``response``, ``episodes``), e.g.
            ``{"response": 5, "episodes": 4}``: sixty API-call samples cost minutes, and replies and whole
            episodes need not come in the same number; kinds not named take ``limit``.
        model_limits: a cap for some models (e.g. a slow embedded model), by model spec: a number no kind of
            theirs exceeds, or a cap per kind (``{"episodes": 0}``; kinds not named are not capped). A cap of 0
            leaves that kind out for that model (its cells stay blank), e.g. agent episodes of a slow model.
        level3: ``steps``, ``loop`` or ``both``.
        max_steps: agent-loop step limit (part of the episodes' identity only).
        options: backend options per model spec.
        runs_dir: where the runs go (default :func:`apibank_lib.core.paths.runs_dir`).
        tasks: ``api`` and/or ``response`` samples.
        trials, temperature: answers per sample and the temperature they are sampled at
            (:attr:`~apibank_lib.runs.config.RunConfig.trials`); one trial and the backend's own decoding by default.
        draw: how a limit picks its samples: ``random`` (whole dialogues, a seeded stratified draw, the same for
            every model; :mod:`apibank_lib.runs.subsets`) or ``first`` (for debugging).
        subset_seed: the seed of the ``random`` draw.
    """

    protocol: str = V2.name
    levels: Sequence[int] = (1, 2, 3)
    limit: int | None = None
    kind_limits: Mapping[str, int | None] = field(default_factory=dict)
    model_limits: Mapping[str, int | Mapping[str, int]] = field(default_factory=dict)
    level3: str = "both"
    max_steps: int = 12
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    runs_dir: str | Path | None = None
    tasks: Sequence[str] = ("api", "response")
    trials: int = 1
    temperature: float | None = None
    draw: str = RANDOM
    subset_seed: int = 0

    def __post_init__(self) -> None:
        check_draw(self.draw)
        unknown = sorted(set(self.kind_limits or {}) - set(KINDS))
        if unknown:
            raise ConfigError(f"kind_limits: unknown kind {unknown[0]!r}; choose among {', '.join(KINDS)}")
        for model, cap in (self.model_limits or {}).items():
            caps = cap if isinstance(cap, Mapping) else {"every kind": cap}
            wrong = sorted(set(caps) - set(KINDS) - {"every kind"})
            if wrong:
                raise ConfigError(f"model_limits[{model!r}]: unknown kind {wrong[0]!r}; choose among {', '.join(KINDS)}")
            for kind, n in caps.items():
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise ConfigError(f"model_limits[{model!r}] ({kind}): expected a whole number of at least 0, got {n!r}")

    def limit_of(self, model: str, kind: str) -> int | None:
        """How many of one kind a model answers per level: the kind's limit (else ``limit``), capped by the
        model's (0: the model does not answer that kind)."""
        limit = (self.kind_limits or {}).get(kind, self.limit)
        cap = (self.model_limits or {}).get(model)
        if isinstance(cap, Mapping):
            cap = cap.get(kind)
        if cap is None:
            return limit
        return cap if limit is None else min(limit, cap)

    def _wanted(self) -> list[str]:
        """The kinds these settings ask for: the tasks, and agent episodes where level 3 runs the loop."""
        loop = self.level3 in ("loop", "both") and 3 in self.levels
        return [k for k in KINDS if k in self.tasks or (k == "episodes" and loop)]

    def _limits(self, model: str) -> dict[str, int | None]:
        """Each asked-for kind's limit for ``model``, less the kinds its cap of 0 leaves out."""
        limits = {k: self.limit_of(model, k) for k in self._wanted()}
        return {k: n for k, n in limits.items() if n != 0}

    def subset_of(self, model: str) -> str:
        """Which samples a model's runs are about, in words: ``all``, one limit (``60 (random dialogues, seed 0)``)
        or each kind's (``api 60, response 5, episodes all (random dialogues, seed 0)``)."""
        limits = self._limits(model)
        if len(set(limits.values())) <= 1:
            return describe(next(iter(limits.values()), self.limit), self.draw, self.subset_seed)
        how = describe(1, self.draw, self.subset_seed).split(" ", 1)[1]  # "(random dialogues, seed 0)" or "(first)"
        return ", ".join(f"{k} {'all' if n is None else n}" for k, n in limits.items()) + f" {how}"

    def configs(self, model: str, bench: Benchmark) -> list[RunConfig]:
        """One model's run settings: one config when every kind has the same limit, else one per limit (they
        share the model's run folder, whose plan keeps what each asked for)."""
        wanted = self._wanted()
        limits = self._limits(model)
        base = {
            "protocol": self.protocol, "data": str(bench.root), "max_steps": self.max_steps,
            "backend_options": dict((self.options or {}).get(model, {})), "runs_dir": str(runs_dir(self.runs_dir)),
            "trials": self.trials, "temperature": self.temperature, "draw": self.draw, "subset_seed": self.subset_seed,
        }
        if not limits:
            return []
        tasks = tuple(t for t in self.tasks if t in limits)
        if len(set(limits.values())) <= 1 and tasks:
            # one config: a limit over API calls and replies together draws the same dialogues as without a cap
            limit = next(iter(limits.values()))
            level3, levels = self.level3, tuple(self.levels)
            if "episodes" in wanted and "episodes" not in limits:  # episodes left out: level 3 as steps, or not at all
                level3 = "steps"
                levels = levels if self.level3 == "both" else tuple(lv for lv in levels if lv != 3)
            return [RunConfig(model, levels=levels, limit=limit, level3=level3, tasks=tasks, **base)] if levels else []
        teacher_levels = tuple(lv for lv in self.levels if lv != 3 or self.level3 in ("steps", "both"))
        configs = []
        for kind, limit in limits.items():
            if kind == "episodes":
                configs.append(RunConfig(model, levels=(3,), limit=limit, level3="loop", tasks=tuple(self.tasks), **base))
            elif teacher_levels:
                configs.append(RunConfig(model, levels=teacher_levels, limit=limit, level3="steps", tasks=(kind,), **base))
        return configs


def _settings_list(settings: RunSettings | Sequence[RunSettings] | None) -> list[RunSettings]:
    if settings is None:
        return [RunSettings()]
    return [settings] if isinstance(settings, RunSettings) else list(settings)


def run_models(
    models: Sequence[str],
    bench: Benchmark,
    settings: RunSettings | Sequence[RunSettings] | None = None,
    *,
    progress: bool = True,
) -> tuple[list[ScoredRun], pd.DataFrame]:
    """Run (or resume) each model over the benchmark and score it; runs already complete cost nothing.

    A run that exists resumes: nothing is answered again, and it is scored again only when
    something new was answered (or it was never scored). A run folder holds every answer of its model, data,
    protocol, prompt mode and decoding (:meth:`apibank_lib.runs.config.RunConfig.identity`), whoever asked for them:
    each returned run holds only the samples these settings plan, so that a table does not depend on what else
    was run before.

    Args:
        models: model specs (``oracle``, ``llamacpp:gemma-3-270m``, ``openai:<model>@<url>``, ``hf:<path>`` ...).
        bench: the benchmark.
        settings: how to run them (default :class:`RunSettings`); several settings (e.g. API-call samples and
            replies with limits of their own) are run in turn, and each returned run holds what any of them plans.
        progress: show progress bars.

    Returns:
        The scored runs, one per model, and a DataFrame with one row per model and settings: its folder's name,
        samples answered now, failed, already done, seconds.
    """
    import pandas as pd

    every = _settings_list(settings)
    runs, rows = [], []
    for model in models:
        keys: list[str] = []
        answered = False
        for config in (c for one in every for c in one.configs(model, bench)):
            start = time.perf_counter()
            result = run(config, bench=bench, progress=progress)
            answered = answered or bool(result.answered or result.failed)
            keys += [x.key for x in plan(bench, config)]
            rows.append(
                {
                    "model": model,
                    "limit per level": describe(config.limit, config.draw, config.subset_seed),
                    "run folder": result.path.name,
                    "answered now": result.answered,
                    "failed": result.failed,
                    "already done": result.skipped,
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
        # New answers: the whole run is scored under today's protocol. A run resumed with nothing new keeps its
        # judgments (reading it says so when they are of another protocol version).
        subset = " + ".join(dict.fromkeys(one.subset_of(model) for one in every))
        runs.append(scored(RunFolder(result.path), bench, rescore=answered, stacklevel=3).restricted(keys, subset))
    return runs, pd.DataFrame(rows)


def saved_runs(
    models: Sequence[str], bench: Benchmark, settings: RunSettings | Sequence[RunSettings] | None = None
) -> list[ScoredRun]:
    """The runs :func:`run_models` made with these settings, read without answering anything.

    Notebooks that only read results (03 and 04) call this with notebook 02's settings, so that models are run
    in one place. A folder never scored is scored; one scored under another protocol version is read as it was
    (reading it says so). Each run holds only the samples the settings plan.

    Raises:
        ConfigError: a model has no run folder for these settings, or its folder lacks some of the planned samples;
            the message names the model, the folder and what to run.
    """
    from apibank_lib.models import load_backend
    from apibank_lib.runs.runner import locate_run

    runs = []
    for model in models:
        keys: list[str] = []
        for config in (c for one in _settings_list(settings) for c in one.configs(model, bench)):
            folder, _ = locate_run(config, bench, load_backend(config.model, **config.backend_options))
            hint = "run notebook 02 (or workbench.run_models) with the same parameters first"
            if not folder.exists():
                raise ConfigError(
                    f"{model}: no run with these settings in {folder.path.parent} ({folder.path.name}); {hint}"
                )
            episodes = folder.read_info().episode_set()
            if config.plans_episodes() and not same_episodes(episodes, config):
                ran = "no episodes" if episodes is None else f"episodes of {episodes['max_steps']} steps with {episodes['retriever']!r}"
                wanted = config.episode_identity()
                raise ConfigError(
                    f"{model}: {folder.path} holds {ran}, not episodes of {wanted['max_steps']} steps with "
                    f"{wanted['retriever']!r}; {hint}"
                )
            items = plan(bench, config)
            planned_keys = [trial_key(x.key, t) for t in range(1, config.trials + 1) for x in items]
            done = folder.read_predictions().records
            missing = [k for k in planned_keys if k not in done]
            if missing:
                raise ConfigError(
                    f"{model}: {folder.path} lacks {len(missing)} of the planned samples (first: {missing[0]}); {hint}"
                )
            keys += planned_keys
        subset = " + ".join(dict.fromkeys(one.subset_of(model) for one in _settings_list(settings)))
        runs.append(scored(folder, bench, stacklevel=3).restricted(keys, subset))
    return runs

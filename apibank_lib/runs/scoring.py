"""Score a run folder from the folder alone: judge every prediction, aggregate, write.

Nothing here queries a model. :func:`score_run` reads the folder
(:class:`~apibank_lib.runs.folder.RunFolder`), loads the benchmark named in its config
(or the one given, when the data moved; its fingerprint must match), and then:

1. :func:`judge_predictions`: each prediction is judged under the run's protocol
   (:class:`~apibank_lib.grading.grader.Grader`) into a
   :class:`~apibank_lib.runs.records.JudgmentRecord`. A sample whose backend call failed
   counts as wrong (and is counted apart).
2. :func:`aggregate`: API-call accuracy (correct / samples, duplicate samples
   included, as in the paper; samples an erratum of the data excludes are
   counted apart), ROUGE-L of replies, the episode success rate and the share of
   level-3 items whose every teacher-forced step is right, per level; the overall
   figures are micro averages over every scored sample; coverage says how much of
   what the run's settings ask for was answered.
3. ``judgments.jsonl`` and ``metrics.json`` are written.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample, Episode, Sample
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.env.protocols import get_protocol
from apibank_lib.env.tools.searcher import ToolSearcher
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.taxonomy import PAPER_LABEL
from apibank_lib.runs.config import planned_trials, trial_key
from apibank_lib.runs.folder import RunFolder, RunInfo
from apibank_lib.runs.records import JudgmentRecord, LevelMetrics, Metrics, PredictionRecord, Predictions
from apibank_lib.runs.subsets import describe_plans
from apibank_lib.runs.trials import trial_figures

__all__ = [
    "OtherVersion",
    "ScoredRun",
    "scored",
    "score_run",
    "judge_predictions",
    "aggregate",
    "accuracy",
    "item_figures",
    "item_lengths",
    "item_results",
    "item_steps",
    "coverage",
    "check_data",
    "scored_version",
    "version_note",
]

TOTAL_NOTE = "overall = micro average over all scored samples (the paper does not state how its Total is aggregated)"


class OtherVersion(ConfigError):
    """A run folder holds scores of another version of its protocol; scoring it again is asked for explicitly."""


def scored_version(metrics: Metrics) -> str:
    """The protocol version a run was scored under (kept for callers that held the JSON form: it is
    :attr:`Metrics.protocol_version`)."""
    return metrics.protocol_version


def version_note(folder: RunFolder, metrics: Metrics | None = None) -> str | None:
    """What to say when a run folder was scored under another version of its protocol than today's (None when it
    was not, or is not scored yet)."""
    if metrics is None:
        if not folder.metrics_path.is_file():
            return None
        metrics = folder.read_metrics()
    current = get_protocol(folder.read_info().protocol).version
    old = metrics.protocol_version
    if old == current:
        return None
    return (
        f"{folder.path.name} was scored under {old}; the protocol is now {current}. Its figures are {old}'s: "
        f"score it again to get {current}'s (`apibank score {folder.path} --rescore`, or rescore=True)"
    )


def check_data(folder: RunFolder, info: RunInfo, bench: Benchmark) -> None:
    """Raise ConfigError when ``bench`` is not the data the run was made on (their fingerprints differ)."""
    expected = info.identity["data_fingerprint"]
    if bench.fingerprint != expected:
        raise ConfigError(
            f"the data at {bench.root} is not the data of {folder.path} (fingerprint {bench.fingerprint}, "
            f"the run used {expected})"
        )


def judge_predictions(
    bench: Benchmark, grader: Grader, predictions: Predictions, prompt_mode: str = "completion"
) -> list[JudgmentRecord]:
    """Judge every prediction, in dataset order (the ``paper`` protocol's shared level-3 state depends on it); with
    several trials, trial by trial, each from the start state.

    ``prompt_mode`` says how answers are read: in ``chat`` mode as a chat model writes tool calls
    (:meth:`PredictionRecord.parsed`), otherwise as text by the protocol's parser.
    """
    out: list[JudgmentRecord] = []
    searcher = grader.searcher if grader.searcher is not None else grader.protocol.retriever
    searcher_name = searcher if isinstance(searcher, str) else getattr(searcher, "name", type(searcher).__name__)
    by_trial: dict[int, dict[str, PredictionRecord]] = {}
    for rec in predictions.records.values():
        by_trial.setdefault(rec.trial, {})[rec.key.removesuffix(f"#t{rec.trial}")] = rec
    items: list[Sample | Episode] = [*bench.samples(1), *bench.samples(2), *bench.samples(3), *bench.episodes()]
    for trial in sorted(by_trial):
        if trial > 1:
            grader.start_trial()
        for item, rec in ((x, by_trial[trial].get(x.key)) for x in items):
            if rec is None:
                continue
            base = JudgmentRecord(
                item.key,
                item.level,
                item.kind,
                item.dialogue_id,
                item.sample_id,
                item.duplicate,
                rec.trial,
                backend_error=rec.error,
                protocol_version=grader.protocol.version,
            )
            if isinstance(item, Episode):
                base.retriever = searcher_name
                if rec.failed:
                    base.correct = False
                else:
                    ej = grader.judge_episode(item, rec.executed_calls())
                    base.correct = ej.success
                    base.required_calls, base.matched_calls = ej.required_calls, ej.matched_calls
                    base.same_end_state, base.calls_made, base.tool_errors = (
                        ej.same_end_state,
                        ej.calls_made,
                        ej.tool_errors,
                    )
            elif isinstance(item, ApiCallSample):
                if prompt_mode == "chat":
                    parsed = rec.parsed()
                    j = grader.judge_parsed(item, parsed)
                    base.call_format, base.n_calls = parsed.format, parsed.n_calls
                else:
                    j = grader.judge_api(item, rec.text())
                base.gold_api = item.gold.api_name
                base.correct, base.reason, base.call, base.result, base.notes = (
                    j.correct,
                    j.reason,
                    j.call_text,
                    j.result,
                    j.notes,
                )
                base.excluded, base.erratum = j.excluded, j.erratum
                base.right_api, base.right_argument_names, base.right_values = grader.call_stages(item, j.call)
                if j.category is not None:
                    base.category, base.paper_category = j.category.value, PAPER_LABEL[j.category].value
                if base.gold_api == ToolSearcher.name or (j.call is not None and j.call.name == ToolSearcher.name):
                    base.retriever = searcher_name
            else:
                base.rouge_scores = grader.reply_scores(item, rec.text())
                base.rouge_l = base.rouge_scores[grader.protocol.reply_metric.name]
            if not isinstance(item, Episode) and rec.empty:
                # Otherwise indistinguishable from a model that wrote something unreadable: say it stopped at once.
                base.empty = True
                base.notes = [
                    *base.notes,
                    f"empty answer: the model ended its turn at once (0 tokens generated; stop reason: {rec.stop_reason or 'not recorded'})",
                ]
            out.append(base)
    return out


def coverage(bench: Benchmark, info: RunInfo, predictions: Predictions) -> dict[str, Any]:
    """How much of what the commands that wrote the run asked for (:attr:`RunInfo.plans`) is in the folder.

    Returns:
        ``{"expected", "answered", "failed", "missing", "lines_dropped", "dropped", "partial"}``:
        answered excludes failed samples; a run is partial when something expected
        is missing or a line of its predictions file could not be read.
    """
    expected = {trial_key(x.key, t) for x, t in planned_trials(bench, info.run_config(), info.plans)}
    present = {k: r for k, r in predictions.records.items() if k in expected}
    failed = sum(1 for r in present.values() if r.failed)
    missing = len(expected) - len(present)
    return {
        "expected": len(expected),
        "answered": len(present) - failed,
        "failed": failed,
        "missing": missing,
        "lines_dropped": len(predictions.dropped),
        "dropped": list(predictions.dropped),
        "partial": missing > 0 or bool(predictions.dropped),
    }


def _ratio(num: float, den: int) -> float | None:
    return round(num / den, 4) if den else None


def accuracy(judgments: Sequence[JudgmentRecord]) -> tuple[int, int, float | None]:
    """Correct, counted and their share, over API-call (or episode) judgments: the one place an accuracy is
    computed (samples an erratum excludes are not counted)."""
    counted = [j for j in judgments if j.excluded is None]
    correct = sum(1 for j in counted if j.correct)
    return correct, len(counted), _ratio(correct, len(counted))


def item_steps(bench: Benchmark) -> dict[str, int]:
    """The number of teacher-forced API-call steps of every level-3 item, by its dialogue id."""
    steps: dict[str, int] = {}
    for s in bench.samples(3, "api"):
        steps[s.dialogue_id] = steps.get(s.dialogue_id, 0) + 1
    return steps


def item_results(
    judgments: Sequence[JudgmentRecord], steps: Mapping[str, int] | None = None
) -> list[tuple[tuple[int, str], bool]]:
    """Each counted level-3 item's verdict, ``((trial, item), right)`` in order, by the rule of :func:`item_figures`
    (what an interval over items resamples)."""
    held: dict[tuple[int, str], list[JudgmentRecord]] = {}
    for j in judgments:
        if j.level == 3 and j.kind == "api":
            held.setdefault((j.trial, j.dialogue_id), []).append(j)
    out = []
    for key, mine in sorted(held.items()):
        kept = [j for j in mine if j.excluded is None]
        if not kept:
            continue
        complete = steps is None or _item_lengths(mine)[key[1]] >= steps.get(key[1], 0)
        out.append((key, complete and all(j.correct for j in kept)))
    return out


def item_figures(
    judgments: Sequence[JudgmentRecord], steps: Mapping[str, int] | None = None
) -> tuple[int, int, float | None]:
    """Items right, items counted and their share over level-3 step judgments: the paper's Plan+Retrieve+Call
    accuracy, where an item is right only when every one of its steps is (the original evaluator's
    ``(items - items with a wrong step) / items``).

    An item counts once per trial in which at least one of its steps was answered. A step the answers lack is
    wrong when ``steps`` (from :func:`item_steps`) gives the item's length, so a run cut inside an item (a first-N
    limit) counts that item wrong; a draw of whole dialogues never cuts one. Without ``steps`` the item is judged
    on the steps it holds. A step an erratum excludes is left out of its item; an item whose every step is excluded
    is not counted. A step the backend failed to answer is wrong, as everywhere.
    """
    results = item_results(judgments, steps)
    right = sum(1 for _, ok in results if ok)
    return right, len(results), _ratio(right, len(results))


def item_lengths(judgments: Sequence[JudgmentRecord]) -> dict[str, int]:
    """The distinct level-3 steps the judgments hold, by item (all trials together): an item's length when the
    run holds whole items."""
    return _item_lengths(judgments)


def _rouge_by_metric(replies: Sequence[JudgmentRecord]) -> dict[str, float | None]:
    names = sorted({name for j in replies for name in (j.rouge_scores or {})})
    return {name: _ratio(sum((j.rouge_scores or {}).get(name, 0.0) for j in replies), len(replies)) for name in names}


def _figures(mine: Sequence[JudgmentRecord], steps: Mapping[str, int] | None = None) -> LevelMetrics:
    """The figures of one set of judgments (a level, or all); ``steps`` as for :func:`item_figures`."""
    api = [j for j in mine if j.kind == "api"]
    correct, counted, share = accuracy(api)
    replies = [j for j in mine if j.kind == "response"]
    episodes = [j for j in mine if j.kind == "episode"]
    figures = LevelMetrics(
        api_samples=counted,
        api_correct=correct,
        api_accuracy=share,
        response_samples=len(replies),
        rouge_l=_ratio(sum(j.rouge_l or 0.0 for j in replies), len(replies)),
        rouge_l_by_metric=_rouge_by_metric(replies),
        backend_errors=sum(1 for j in mine if j.backend_error),
        empty_answers=sum(1 for j in mine if j.empty),
        excluded_by_errata=sum(1 for j in mine if j.excluded is not None),
        corrected_by_errata=sum(1 for j in mine if j.erratum is not None and j.excluded is None),
    )
    if episodes:
        figures.episodes_succeeded, figures.episodes, figures.episode_success_rate = accuracy(episodes)
    if any(j.level == 3 and j.kind == "api" for j in mine):
        figures.items_correct, figures.items, figures.item_accuracy = item_figures(mine, steps)
    return figures


def aggregate(
    judgments: Sequence[JudgmentRecord], steps: Mapping[str, int] | None = None
) -> tuple[dict[str, LevelMetrics], LevelMetrics]:
    """Per-level and overall figures of a list of judgments.

    ``steps`` gives each level-3 item's number of steps (:func:`item_steps`), so that an item missing a step
    counts wrong (:func:`item_figures`).

    Returns:
        ``(levels, overall)``: level (``"1"`` ...) -> its :class:`~apibank_lib.runs.records.LevelMetrics` (API-call
        accuracy, ROUGE-L, backend errors, errata counts, and at level 3 the episodes' success rate and the item
        accuracy), and the micro averages over every scored sample (episode and item figures are per level only).
    """
    levels = {str(lv): _figures(mine, steps) for lv in (1, 2, 3) if (mine := [j for j in judgments if j.level == lv])}
    overall = _figures(judgments)
    overall.episodes = overall.episodes_succeeded = overall.episode_success_rate = None  # per level only
    overall.items = overall.items_correct = overall.item_accuracy = None
    overall.note = TOTAL_NOTE
    return levels, overall


def score_run(
    run_dir: str | Path,
    *,
    bench: Benchmark | None = None,
    data: str | Path | None = None,
    write: bool = True,
    retriever: str | None = None,
    rescore: bool = False,
) -> Metrics:
    """Score a run folder under its own protocol; also writes ``metrics.json`` and ``judgments.jsonl``.

    Args:
        run_dir: the run folder.
        bench: an already-loaded benchmark (it must be the run's data).
        data: where the run's data is now, when it moved (default: the path in its config).
        write: write ``judgments.jsonl`` and ``metrics.json``.
        retriever: grade ToolSearcher steps with this retriever (default: the run's, see
            :attr:`RunInfo.retriever`). Level-3 episodes that ran with a named retriever are graded with it only.
        rescore: replace scores of another version of the protocol (otherwise such a folder is refused, so that
            a figure never changes meaning without being asked: :class:`OtherVersion`).

    Returns:
        The run's :class:`~apibank_lib.runs.records.Metrics` (as written to ``metrics.json``).

    Raises:
        OtherVersion: the folder holds scores of another protocol version and ``rescore`` is False (with ``write``).
        ConfigError: not a run folder, or the data differs from the run's (fingerprint).
        DataError: the data cannot be loaded.
    """
    folder = RunFolder(run_dir)
    info = folder.read_info()
    protocol = get_protocol(info.protocol)
    note = version_note(folder)
    if write and not rescore and note is not None:
        raise OtherVersion(note)
    if bench is None:
        root = data if data is not None else info.data
        if not Path(root).is_dir():
            raise ConfigError(f"the run's data is no longer at {root}; give its new place with --data")
        bench = load_benchmark(root)
    check_data(folder, info, bench)
    ran_with = (info.episodes or {}).get("retriever") or info.identity.get("retriever")  # what episodes searched with
    if retriever is not None and ran_with is not None and retriever != ran_with:
        raise ConfigError(
            f"the run's level-3 episodes searched with {ran_with!r}; grading them with {retriever!r} would judge "
            "calls the model made after results it never saw"
        )
    grading_retriever = retriever or info.retriever
    predictions = folder.read_predictions()
    grader = Grader(bench, protocol, searcher=grading_retriever)
    judgments = judge_predictions(bench, grader, predictions, info.prompt_mode)
    cov = coverage(bench, info, predictions)
    levels, overall = aggregate(judgments, item_steps(bench))
    metrics = Metrics(
        model=info.model,
        prompt_mode=info.prompt_mode,
        protocol=protocol.name,
        protocol_version=protocol.version,
        reply_metric=protocol.reply_metric.name,
        retriever=grading_retriever,
        errata=grader.errata_summary(),
        data_fingerprint=bench.fingerprint,
        levels=levels,
        overall=overall,
        coverage=cov,
        partial=cov["partial"],
        trials=trial_figures(judgments),
    )
    if write:
        folder.write_metrics(metrics)
        folder.write_judgments(judgments)
    return metrics


# --- a scored run, read ---------------------------------------------------------------------------


@dataclass
class ScoredRun:
    """A scored run folder, read once: what the tables, the explorer and the retrieval benchmark read.

    Made by :func:`scored` (the one way from a run folder to its judgments).

    Attributes:
        folder: the run folder.
        info: its ``config.json``.
        metrics: its figures (``metrics.json``, or those of :attr:`judgments` when restricted to a plan).
        judgments: its judgments, in dataset order, less those an erratum of the data excludes.
        excluded: the judgments an erratum excludes (kept to be read, counted in no accuracy).
        subset: which of the data's samples the run is about, in words (``all``, or a limit's size, draw and seed:
            :func:`apibank_lib.runs.subsets.describe`); tables show it beside every figure.
    """

    folder: RunFolder
    info: RunInfo
    metrics: Metrics
    judgments: list[JudgmentRecord]
    excluded: list[JudgmentRecord] = field(default_factory=list)
    subset: str = "all"

    def restricted(self, keys: Collection[str], subset: str | None = None) -> ScoredRun:
        """The run with only the judgments of ``keys`` (the samples some settings planned), its figures
        aggregated again over them (coverage says what of ``keys`` the folder lacks); ``subset`` says in words
        which samples they are (default: as before)."""
        wanted = set(keys)
        judgments = [j for j in self.judgments if j.key in wanted]
        excluded = [j for j in self.excluded if j.key in wanted]
        # An item's length is what the whole run holds of it (the run was planned over whole items).
        levels, overall = aggregate(judgments + excluded, _item_lengths(self.judgments + self.excluded))
        present = judgments + excluded
        failed = sum(1 for j in present if j.backend_error)
        cov = {
            **self.metrics.coverage,
            "expected": len(wanted),
            "answered": len(present) - failed,
            "failed": failed,
            "missing": len(wanted - {j.key for j in present}),
        }
        cov["partial"] = cov["missing"] > 0 or bool(cov.get("dropped"))
        metrics = replace(
            self.metrics, levels=levels, overall=overall, coverage=cov, partial=cov["partial"],
            trials=trial_figures(present),
        )
        return ScoredRun(self.folder, self.info, metrics, judgments, excluded, self.subset if subset is None else subset)

    @cached_property
    def predictions(self) -> dict[str, PredictionRecord]:
        """The answers, by sample or episode key (read from the folder once, when first asked for)."""
        return dict(self.folder.read_predictions().records)

    @cached_property
    def by_key(self) -> dict[str, JudgmentRecord]:
        """Every judgment (excluded ones too) by sample or episode key."""
        return {j.key: j for j in self.judgments + self.excluded}

    @property
    def errata(self) -> str:
        """What the errata did to this run, for tables: ``api-bank@1: 5 excluded, 5 corrected`` (empty when the
        protocol applied none)."""
        applied = self.metrics.errata
        if not applied:
            return ""
        overall = self.metrics.overall
        return f"{applied['errata']}: {overall.excluded_by_errata} excluded, {overall.corrected_by_errata} corrected"

    @property
    def model(self) -> str:
        """The model as its backend names it (``oracle``, ``llamacpp:gemma-3-270m``, ``openai:<model>``), no URL."""
        ident = self.info.identity["model"]
        name = f"{ident['backend']}:{ident['model']}" if ident.get("model") else str(ident["backend"])
        return f"{name}+{ident['adapter']}" if ident.get("adapter") else name

    @property
    def prompt_mode(self) -> str:
        """``chat``, ``paper``, ``completion`` or ``reference``."""
        return self.info.prompt_mode

    @property
    def protocol(self) -> str:
        """The grading protocol's name."""
        return self.info.protocol

    @property
    def protocol_version(self) -> str:
        """The version of the protocol the run was scored under (``v2.2``), which tables show."""
        return self.metrics.protocol_version

    @property
    def data(self) -> str:
        """``bundled``, or the official release's folder name."""
        return Path(self.info.data).name if self.info.official_release else "bundled"

    @property
    def date(self) -> str:
        """When the run was last scored (the day of its ``metrics.json``)."""
        return _dt.date.fromtimestamp(self.folder.metrics_path.stat().st_mtime).isoformat()

    @property
    def label(self) -> str:
        """``model (prompt mode, protocol version, data)``, unique enough for a table row."""
        return f"{self.model} ({self.prompt_mode}, {self.protocol_version}, {self.data})"

    def labels(self) -> dict[str, str]:
        """The label columns every table of runs starts with (the protocol as the version it was scored under)."""
        return {"model": self.model, "prompt mode": self.prompt_mode, "protocol": self.protocol_version, "data": self.data}


def scored(
    run: str | Path | RunFolder, bench: Benchmark | None = None, *, rescore: bool = False, stacklevel: int = 2
) -> ScoredRun:
    """A run folder's judgments and figures: the one way from a run folder to its scores.

    The data check and the protocol-version check happen here, once. A folder never scored (or scored before
    grading recorded what the step funnel reads) is scored now; one scored under another version of its protocol
    is read as it was scored, with a warning naming both versions, unless ``rescore`` asks for today's.

    Args:
        run: the run folder.
        bench: the benchmark the run was made on (loaded from the run's config otherwise).
        rescore: score it again under today's protocol, replacing its files.

    Raises:
        ConfigError: not a run folder, or ``bench`` is other data than the run's.
    """
    folder = run if isinstance(run, RunFolder) else RunFolder(run)
    info = folder.read_info()
    if bench is not None:
        check_data(folder, info, bench)
    unscored = not folder.metrics_path.is_file() or not folder.judgments_path.is_file()
    note = None if unscored else version_note(folder)
    if not rescore and not unscored and note is None and _lacks_call_stages(folder):
        rescore = True  # the same version judges the same: only the funnel's fields are added
    if rescore or unscored:
        score_run(folder.path, bench=bench, rescore=True)
    elif note is not None:
        warnings.warn(note, stacklevel=stacklevel)
    judgments = folder.read_judgments()
    metrics = folder.read_metrics()
    l3 = metrics.levels.get("3")
    if l3 is not None and l3.api_samples and l3.items is None:
        # Scored before item figures existed: they follow from the judgments alone (the run holds whole items).
        l3.items_correct, l3.items, l3.item_accuracy = item_figures(judgments, _item_lengths(judgments))
    return ScoredRun(
        folder,
        info,
        metrics,
        [j for j in judgments if j.excluded is None],
        [j for j in judgments if j.excluded is not None],
        describe_plans(info.plans),
    )


def _item_lengths(judgments: Sequence[JudgmentRecord]) -> dict[str, int]:
    """The distinct level-3 steps the judgments hold, by item (all trials together)."""
    held: dict[str, set[int]] = {}
    for j in judgments:
        if j.level == 3 and j.kind == "api":
            held.setdefault(j.dialogue_id, set()).add(j.sample_id)
    return {item: len(ids) for item, ids in held.items()}


def _lacks_call_stages(folder: RunFolder) -> bool:
    """Judgments written before scoring recorded how far each call matches the gold (the funnel's fields)."""
    with folder.judgments_path.open(encoding="utf-8") as f:
        for line in f:
            if '"kind": "api"' in line:
                return '"right_api"' not in line
    return False

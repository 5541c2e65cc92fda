"""Score a run folder from the folder alone: judge every prediction, aggregate, write.

Nothing here queries a model. :func:`score_run` reads the folder
(:class:`~apibank_lib.runs.RunFolder`), loads the benchmark named in its config
(or the one given, when the data moved; its fingerprint must match), and then:

1. :func:`judge_predictions`: each prediction is judged under the run's protocol
   (:class:`~apibank_lib.grading.Grader`) into a
   :class:`~apibank_lib.runs.JudgmentRecord`. A sample whose backend call failed
   counts as wrong (and is counted apart).
2. :func:`aggregate`: API-call accuracy (correct / samples, duplicate samples
   included, as in the paper; samples an erratum of the data excludes are
   counted apart), ROUGE-L of replies and the episode success rate
   per level; the overall figures are micro averages over every scored sample;
   coverage says how much of what the run's settings ask for was answered.
3. ``judgments.jsonl`` and ``metrics.json`` are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from apibank_lib.datasets import Benchmark, load_benchmark
from apibank_lib.errors import ConfigError
from apibank_lib.grading import Grader
from apibank_lib.protocols import LEGACY_VERSIONS, get_protocol
from apibank_lib.runs import JudgmentRecord, Predictions, RunFolder, RunInfo, planned
from apibank_lib.taxonomy import PAPER_LABEL
from apibank_lib.tools.searcher import ToolSearcher
from apibank_lib.types import ApiCallSample, Episode, Sample

__all__ = ["OtherVersion", "score_run", "judge_predictions", "aggregate", "coverage", "scored_version", "version_note"]

TOTAL_NOTE = "overall = micro average over all scored samples (the paper does not state how its Total is aggregated)"


class OtherVersion(ConfigError):
    """A run folder holds scores of another version of its protocol; scoring it again is asked for explicitly."""


def scored_version(metrics: dict[str, Any]) -> str:
    """The protocol version a ``metrics.json`` was scored under (results from before versions were recorded carry
    only the protocol's name: :data:`~apibank_lib.protocols.LEGACY_VERSIONS`)."""
    name = str(metrics.get("protocol", ""))
    return str(metrics.get("protocol_version") or LEGACY_VERSIONS.get(name, name))


def version_note(folder: RunFolder, metrics: dict[str, Any] | None = None) -> str | None:
    """What to say when a run folder was scored under another version of its protocol than today's (None when it
    was not, or is not scored yet)."""
    if metrics is None:
        if not folder.metrics_path.is_file():
            return None
        metrics = folder.read_metrics()
    current = get_protocol(folder.read_info().protocol).version
    old = scored_version(metrics)
    if old == current:
        return None
    return (
        f"{folder.path.name} was scored under {old}; the protocol is now {current}. Its figures are {old}'s: "
        f"score it again to get {current}'s (`apibank score {folder.path} --rescore`, or rescore=True)"
    )


def judge_predictions(
    bench: Benchmark, grader: Grader, predictions: Predictions, prompt_mode: str = "completion"
) -> list[JudgmentRecord]:
    """Judge every prediction, in dataset order (the ``paper`` protocol's shared level-3 state depends on it).

    ``prompt_mode`` says how answers are read: in ``chat`` mode as a chat model writes tool calls
    (:meth:`PredictionRecord.parsed`), otherwise as text by the protocol's parser.
    """
    out: list[JudgmentRecord] = []
    searcher = grader.searcher if grader.searcher is not None else grader.protocol.retriever
    searcher_name = searcher if isinstance(searcher, str) else getattr(searcher, "name", type(searcher).__name__)
    for level in (1, 2, 3):
        items: list[Sample | Episode] = [*bench.samples(level)]
        if level == 3:
            items += bench.episodes()
        for item in items:
            rec = predictions.get(item.key)
            if rec is None:
                continue
            base = JudgmentRecord(
                item.key,
                item.level,
                item.kind,
                item.dialogue_id,
                item.sample_id,
                item.duplicate,
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
    """How much of what the commands that wrote the run asked for (:meth:`RunInfo.all_plans`) is in the folder.

    Returns:
        ``{"expected", "answered", "failed", "missing", "lines_dropped", "dropped", "partial"}``:
        answered excludes failed samples; a run is partial when something expected
        is missing or a line of its predictions file could not be read.
    """
    expected = {x.key for x in planned(bench, info.run_config(), info.all_plans())}
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


def _rouge_by_metric(replies: Sequence[JudgmentRecord]) -> dict[str, float | None]:
    names = sorted({name for j in replies for name in (j.rouge_scores or {})})
    return {name: _ratio(sum((j.rouge_scores or {}).get(name, 0.0) for j in replies), len(replies)) for name in names}


def aggregate(judgments: Sequence[JudgmentRecord]) -> dict[str, Any]:
    """Per-level and overall metrics of a list of judgments.

    Returns:
        ``{"levels": {"1": {...}, ...}, "overall": {...}}``; per level: API-call
        samples, correct, accuracy, response samples, ROUGE-L (the protocol's
        metric, and every metric by package name), backend errors, and for
        level-3 episodes their count, successes and success rate.
    """
    levels: dict[str, dict[str, Any]] = {}
    for level in (1, 2, 3):
        mine = [j for j in judgments if j.level == level]
        if not mine:
            continue
        api = [j for j in mine if j.kind == "api" and j.excluded is None]
        replies = [j for j in mine if j.kind == "response"]
        episodes = [j for j in mine if j.kind == "episode"]
        entry: dict[str, Any] = {
            "excluded_by_errata": sum(1 for j in mine if j.excluded is not None),
            "corrected_by_errata": sum(1 for j in mine if j.erratum is not None and j.excluded is None),
            "api_samples": len(api),
            "api_correct": sum(1 for j in api if j.correct),
            "api_accuracy": _ratio(sum(1 for j in api if j.correct), len(api)),
            "response_samples": len(replies),
            "rouge_l": _ratio(sum(j.rouge_l or 0.0 for j in replies), len(replies)),
            "rouge_l_by_metric": _rouge_by_metric(replies),
            "backend_errors": sum(1 for j in mine if j.backend_error),
            "empty_answers": sum(1 for j in mine if j.empty),
        }
        if episodes:
            ok = sum(1 for j in episodes if j.correct)
            entry.update(
                {"episodes": len(episodes), "episodes_succeeded": ok, "episode_success_rate": _ratio(ok, len(episodes))}
            )
        levels[str(level)] = entry
    api_n = sum(v["api_samples"] for v in levels.values())
    replies = [j for j in judgments if j.kind == "response"]
    overall = {
        "api_samples": api_n,
        "api_correct": sum(v["api_correct"] for v in levels.values()),
        "api_accuracy": _ratio(sum(v["api_correct"] for v in levels.values()), api_n),
        "response_samples": len(replies),
        "rouge_l": _ratio(sum(j.rouge_l or 0.0 for j in replies), len(replies)),
        "rouge_l_by_metric": _rouge_by_metric(replies),
        "backend_errors": sum(v["backend_errors"] for v in levels.values()),
        "empty_answers": sum(v["empty_answers"] for v in levels.values()),
        "excluded_by_errata": sum(v["excluded_by_errata"] for v in levels.values()),
        "corrected_by_errata": sum(v["corrected_by_errata"] for v in levels.values()),
        "note": TOTAL_NOTE,
    }
    return {"levels": levels, "overall": overall}


def score_run(
    run_dir: str | Path,
    *,
    bench: Benchmark | None = None,
    data: str | Path | None = None,
    write: bool = True,
    retriever: str | None = None,
    rescore: bool = False,
) -> dict[str, Any]:
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
        ``{"model", "protocol", "data_fingerprint", "levels": {...}, "overall": {...}, "coverage": {...}, "partial"}``.

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
    expected_fp = info.identity["data_fingerprint"]
    if bench.fingerprint != expected_fp:
        raise ConfigError(
            f"the data at {bench.root} is not the run's data (fingerprint {bench.fingerprint}, the run used {expected_fp})"
        )
    ran_with = (info.episode_set() or {}).get("retriever") if info.episodes else info.identity.get("retriever")
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
    metrics = {
        "model": info.model,
        "prompt_mode": info.prompt_mode,
        "protocol": protocol.name,
        "protocol_version": protocol.version,
        "reply_metric": protocol.reply_metric.name,
        "retriever": grading_retriever,
        "errata": grader.errata_summary(),
        "data_fingerprint": bench.fingerprint,
        **aggregate(judgments),
        "coverage": cov,
        "partial": cov["partial"],
    }
    if write:
        folder.write_metrics(metrics)
        folder.write_judgments(judgments)
    return metrics

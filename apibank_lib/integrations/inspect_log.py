"""An inspect_ai log of the ``api_bank`` task as one of our run folders (``apibank import-inspect LOG``).

Each sample's answer (the model's text and tool calls; for an agent episode, every step) is written to an answers
file (:mod:`apibank_lib.models.recorded`), and the runner plays it back into a run folder on the log's data and
protocol, scored by our grader: ``apibank compare``, the notebooks and the explorer then read it as any run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.env.protocols import V2
from apibank_lib.models.recorded import write_answers

__all__ = ["answers_from_log", "import_inspect_log"]


def _answer(message: Any) -> dict[str, Any]:
    calls = [
        {"name": tc.function, "arguments": tc.arguments if isinstance(tc.arguments, dict) else {}}
        for tc in message.tool_calls or []
    ]
    return {"output": message.text or "", "tool_calls": calls}


def answers_from_log(log: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answers of an ``api_bank`` log by sample key, and the task's settings (level, protocol, data ...).

    Raises:
        ConfigError: not a log of the ``api_bank`` task, or a log without samples.
    """
    settings = (log.eval.metadata or {}).get("apibank") if log.eval.metadata else None
    if settings is None:
        settings = (getattr(log.eval, "task_metadata", None) or {}).get("apibank")
    if settings is None:
        raise ConfigError(f"{log.location}: not a log of the apibank_lib/api_bank task (task {log.eval.task!r})")
    if not log.samples:
        raise ConfigError(f"{log.location}: the log holds no samples (was it written with --no-log-samples?)")
    answers: dict[str, Any] = {}
    for sample in log.samples:
        key = str(sample.id)
        if sample.error is not None:
            continue  # no answer to play back: the run folder's coverage shows it missing
        if "/episode/" in key:
            start = len(sample.input) if isinstance(sample.input, list) else 2
            steps = [_answer(m) for m in sample.messages[start:] if m.role == "assistant"]
            answers[key] = {"steps": steps}
        else:
            answers[key] = _answer(sample.output.message)
    return answers, settings


def import_inspect_log(
    log_path: str | Path, *, out: str | None = None, runs_dir: str | None = None, data: str | None = None
) -> tuple[Any, Any]:
    """Turn an inspect log of the ``api_bank`` task into a scored run folder.

    Args:
        log_path: the ``.eval`` (or ``.json``) log.
        out, runs_dir: where the run folder goes (default: the runs folder, named as any run).
        data: where the log's data is now, when it moved (default: the root the task recorded).

    Returns:
        The runner's result and the folder's metrics.

    Raises:
        ConfigError: the log cannot be read or is not of this task.
    """
    from inspect_ai.log import read_eval_log

    from apibank_lib.runs.config import default_runs_dir
    from apibank_lib.runs.recorded import run_recorded

    try:
        log = read_eval_log(str(log_path))
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"{log_path}: not an inspect log ({exc})") from exc
    answers, settings = answers_from_log(log)
    if not answers:
        raise ConfigError(f"{log_path}: no sample of the log has an answer")
    root = data or settings.get("data")
    model = str(log.eval.model)
    folder = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    stem = Path(str(log_path)).name.split(".")[0]
    answers_file = write_answers(folder / "inspect" / f"{stem}.json", model, f"inspect_ai log {Path(str(log_path)).name}", answers)
    return run_recorded(
        answers_file, data=root, protocol=str(settings.get("protocol", V2.name)), out=out, runs_dir=runs_dir,
        retriever=settings.get("retriever"),
    )

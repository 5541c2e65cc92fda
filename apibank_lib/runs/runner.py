"""Run a model over a benchmark into a run folder; resumable, concurrent, stoppable.

:func:`run` does four things, each a function here: plan the work
(:func:`apibank_lib.runs.config.plan`), open the run folder (:func:`open_run`: refuse a
folder that holds a run with other settings, naming them), answer every sample
and episode not answered yet (:func:`answer_all`), and write the summary.

Re-running the same command resumes: finished samples are skipped; a sample
whose backend call failed is recorded with the error and retried only with
``retry_failed``. A line cut short by a crash is dropped on resume, so nothing
is lost or duplicated. A server that cannot be reached stops the run before it
starts (the backend's preflight check), or after a few consecutive samples
failed that way, with the first error; Ctrl-C stops it with every answer so far
saved. Scoring reads the folder and never queries a model.

Level 3 runs in two modes: ``steps`` (the paper's teacher-forced step samples)
and ``loop`` (an :class:`~apibank_lib.core.types.Episode` per item: the model
searches, calls, sees results and continues until it answers or reaches
``max_steps``).
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
import threading
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ApibankError, BackendError, ConfigError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import ApiRecord, Context, Episode, Sample
from apibank_lib.core.version import __version__
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.env.protocols import GradingProtocol, get_protocol
from apibank_lib.models.base import Backend, Completion, Request, ToolsIgnored
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.prompts import build_prompt
from apibank_lib.prompting.toolcalls import parse_tool_calls
from apibank_lib.runs.config import (
    RunConfig,
    default_runs_dir,
    episodes_file,
    plan,
    plan_of,
    same_episodes,
    sample_identity,
    trial_key,
    trial_seed,
)
from apibank_lib.runs.folder import PredictionWriter, RunFolder, RunInfo
from apibank_lib.runs.legacy import named_with_episode_settings
from apibank_lib.runs.records import EpisodeStep, PredictionRecord
from apibank_lib.runs.shards import shard_label

__all__ = [
    "RunResult",
    "RunStopped",
    "run",
    "open_run",
    "locate_run",
    "answer_all",
    "Governor",
    "run_episode",
    "request_for",
    "STOPS",
    "MAX_CONSECUTIVE_UNREACHABLE",
]

STOPS = {"api": ["\n"], "response": ["\nUser:", "\nAPI-Request:", "\nGenerate"]}
"""Stop sequences for text generation: a call fits on one line; a reply ends before the next turn."""

W = TypeVar("W")
"""A piece of work :func:`answer_all` hands to its answer function (the runner's: a sample or episode and a trial)."""

MAX_CONSECUTIVE_UNREACHABLE = 3
"""A run stops after this many consecutive samples whose server could not be reached."""


@dataclass
class RunResult:
    """What one invocation of the runner did.

    Attributes:
        path: the run folder.
        total: samples and episodes the settings ask for.
        skipped: those already answered before this invocation.
        answered: answered now.
        failed: recorded with a backend error now.
        elapsed_s: wall time of the answering.
    """

    path: Path
    total: int
    skipped: int
    answered: int
    failed: int
    elapsed_s: float


class RunStopped(ApibankError):
    """A run stopped before its end (interrupted, or its server unreachable); every answer so far is saved.

    Attributes:
        folder: the run folder.
        saved: predictions in the folder now.
        remaining: samples and episodes still to answer.
    """

    def __init__(self, message: str, folder: Path, saved: int, remaining: int) -> None:
        self.folder, self.saved, self.remaining = folder, saved, remaining
        super().__init__(message)


def _code_version() -> str:
    root = PROJECT_ROOT
    try:
        head = (root / ".git" / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = root / ".git" / head[5:]
            head = ref.read_text().strip() if ref.is_file() else head
        return f"{__version__}+{head[:10]}"
    except OSError:
        return __version__


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two identity dicts."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new), key=str)
            for d in _differences(old.get(k), new.get(k), f"{prefix}{k}.")
        ]
    return [] if old == new else [f"{prefix[:-1]} ({old!r} there, {new!r} now)"]


def _folder_name(identity: dict[str, Any], protocol: str) -> str:
    """``<backend>-<model file or name>[-<adapter>]-<protocol>-<hash of the identity>``."""
    model = identity["model"]
    parts = [str(model["backend"])] + ([Path(str(model["model"])).name] if model.get("model") else [])
    if model.get("adapter"):
        adapter = Path(str(model["adapter"]))
        parts.append(adapter.parent.name if adapter.name == "adapter" else adapter.name)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)).strip("-")[:60]
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{slug}-{protocol}-{digest}"


def locate_run(config: RunConfig, bench: Benchmark, backend: Backend) -> tuple[RunFolder, dict[str, Any]]:
    """Where these settings' run lives and its identity; nothing is written (the folder may not exist).

    The folder is ``<runs dir>/<model>-<protocol>-<hash of the identity>`` (a shard's adds ``-shard-IofN``). When no folder of that name exists, a
    folder written before episodes had files of their own (its identity holds ``max_steps``) with the same
    teacher-forced identity is used instead (:func:`_older_folder`), so that its answers are not asked again.
    """
    mode = backend.prompt_mode(config.requested_prompt_mode())
    identity = json.loads(
        json.dumps(
            config.identity(bench.fingerprint, backend.identity(), mode, backend.mode_identity(mode, config.tool_choice)),
            default=str,
        )
    )
    if config.out:
        return RunFolder(config.out), identity
    parent = Path(config.runs_dir) if config.runs_dir else default_runs_dir()
    name = _folder_name(identity, config.protocol)
    if config.shard is not None:
        # A folder per shard: shards run on one machine must not append to one file at once.
        return RunFolder(parent / f"{name}-{shard_label(config.shard)}"), identity
    folder = RunFolder(parent / name)
    if not folder.exists():
        folder = _older_folder(parent, name, identity, config, bench) or folder
    return folder, identity


def _older_folder(
    parent: Path, name: str, identity: dict[str, Any], config: RunConfig, bench: Benchmark
) -> RunFolder | None:
    """A folder written before episodes had files of their own whose teacher-forced identity is ``identity``.

    Such folders are named by a hash that included the step limit (and, for some, the retriever), so they are
    found by reading the ``config.json`` of the folders of the same model and protocol. When several match (the
    same samples answered under two step limits), the one whose episodes have the asked settings comes first, then
    the one that already holds most of what these settings plan, then the one with most answers, then by name.
    """
    prefix = name[: name.rindex("-") + 1]
    wanted = {item.key for item in plan(bench, config)}
    found: list[tuple[bool, int, int, str, RunFolder]] = []
    for path in sorted(parent.glob(f"{glob.escape(prefix)}*")) if parent.is_dir() else []:
        older = RunFolder(path)
        if not older.exists():
            continue
        try:
            info = older.read_info()
        except ApibankError:
            continue
        if not named_with_episode_settings(info.identity) or sample_identity(info.identity) != identity:
            continue
        matching = config.plans_episodes() and same_episodes(info.episode_set(), config)
        held = older.read_predictions().records
        found.append((not matching, -len(wanted & set(held)), -len(held), path.name, older))
    return min(found, key=lambda f: f[:4])[4] if found else None


def _episodes_entry(config: RunConfig, before: RunInfo | None) -> dict[str, Any] | None:
    """The ``episodes`` entry of the folder's ``config.json`` after this command (see :attr:`RunInfo.episodes`)."""
    current = before.episode_set() if before is not None else None
    if not config.plans_episodes():
        return before.episodes if before is not None else None
    if same_episodes(current, config):
        return current
    wanted = config.episode_identity()
    if current is not None:
        warnings.warn(
            f"the folder's episodes ran with {current['max_steps']} steps and {current['retriever']!r}; episodes with "
            f"{wanted['max_steps']} steps and {wanted['retriever']!r} go to {episodes_file(wanted)} and are the ones "
            f"scored from now on ({current['file']} is kept)",
            stacklevel=3,
        )
    return {**wanted, "file": episodes_file(wanted)}


def open_run(config: RunConfig, bench: Benchmark, backend: Backend) -> RunFolder:
    """The run folder for these settings, its ``config.json`` written.

    Raises:
        ConfigError: the folder already holds a run whose identity differs (the differing keys are named).
    """
    folder, identity = locate_run(config, bench, backend)
    if config.restart:
        folder.discard()
    ignored = [w for w in folder.read_warnings() if w.get("kind") == "tools_ignored"]
    if ignored:
        raise ConfigError(
            f"{folder.path} holds answers from a server that ignored the tools ({ignored[0]['message']}); "
            "once the server is fixed, start the run over with --restart (restart=True)"
        )
    plans: list[dict[str, Any]] = []
    before: RunInfo | None = None
    if folder.exists():
        before = folder.read_info()
        if sample_identity(before.identity) != identity:
            diffs = "; ".join(_differences(sample_identity(before.identity), identity))
            raise ConfigError(
                f"{folder.path} holds a run with other settings: {diffs}. Choose another --out, or delete that folder"
            )
        plans = before.plans
        identity = before.identity  # an older folder keeps the identity its name was made from
    if plan_of(config) not in plans:  # what this command asks for is added to what earlier ones asked for
        plans = [*plans, plan_of(config)]
    settings = {k: v for k, v in asdict(config).items() if k not in ("out", "runs_dir", "restart")}
    folder.write_info(
        RunInfo(
            identity,
            settings,
            backend.info(),
            str(bench.root),
            bench.official,
            _code_version(),
            plans=plans,
            episodes=_episodes_entry(config, before),
        )
    )
    return folder


def _completion_values(comp: Completion) -> dict[str, Any]:
    calls = []
    for c in comp.tool_calls:
        try:
            calls.append(format_call(c))
        except ValueError:
            calls.append(repr(c))
    return {
        "output": comp.text,
        "tool_calls": calls,
        "raw_tool_calls": comp.raw_tool_calls,
        "prompt_tokens": comp.prompt_tokens,
        "completion_tokens": comp.completion_tokens,
        "latency_s": round(comp.latency_s, 4),
        "attempts": comp.attempts,
        "stop_reason": comp.stop_reason,
    }


def _error_text(exc: Exception) -> str:
    return f"{'BackendError' if isinstance(exc, BackendError) else type(exc).__name__}: {exc}"


def run_episode(
    episode: Episode, backend: Backend, bench: Benchmark, protocol: GradingProtocol, config: RunConfig, trial: int = 1
) -> PredictionRecord:
    """One level-3 agent episode (trial ``trial`` of it): the model searches, calls and sees results until it answers.

    Each step shows the model the requirement and the steps so far; its answer
    is read as the run's prompt mode writes calls (the protocol's parser for
    text prompts, the tool-call formats in chat mode), the call runs in the
    episode's own sandbox (the protocol's conversion and keyword rewrite), and
    its result is shown at the next step. An answer without a call is the final
    answer. In chat mode with ``tool_choice="required"`` only the first step
    demands a call: the model must be free to answer once it is done. Scoring
    executes the recorded calls again, so the record holds everything needed.
    """
    mode = backend.prompt_mode(config.requested_prompt_mode())
    box = bench.sandbox(3, protocol, searcher=config.retriever)
    toolset = bench.toolset(3)
    done: list[ApiRecord] = []
    steps: list[EpisodeStep] = []
    final: str | None = None
    start = time.perf_counter()
    usage = [0, 0]
    counted = False  # a backend that counts no tokens (the reference ones) leaves the episode's counts unknown
    for step in range(config.max_steps):
        context = episode.context(tuple(done))
        choice = config.tool_choice if step == 0 else "auto"
        request = request_for(episode, context, toolset, mode, config.max_tokens, choice, shots=config.shots, step=step)
        comp = backend.complete(_sampled(request, config, trial))
        usage[0] += comp.prompt_tokens or 0
        usage[1] += comp.completion_tokens or 0
        counted = counted or comp.prompt_tokens is not None or comp.completion_tokens is not None
        if mode == "chat":
            parsed = parse_tool_calls(comp.text, comp.raw_tool_calls or None)
            call, error = parsed.first, parsed.failure
        else:
            call, error = protocol.parse(format_call(comp.tool_calls[0]) if comp.tool_calls else comp.text)
        if error is not None:
            steps.append(EpisodeStep(comp.text, error=error))
            continue
        if call is None:
            final = comp.text
            break
        call = protocol.prepare_call(call, 3)
        try:
            call_text = format_call(call)
        except ValueError as exc:
            steps.append(EpisodeStep(comp.text, error=str(exc)))
            continue
        result = box.execute_safely(call).to_dict()
        steps.append(EpisodeStep(comp.text, call_text, result))
        done.append(ApiRecord(call.name, dict(call.args), result))
    return PredictionRecord.for_item(
        episode,
        trial,
        output=final,
        steps=steps,
        stopped="answered" if final is not None else "step limit",
        prompt_tokens=usage[0] if counted else None,
        completion_tokens=usage[1] if counted else None,
        latency_s=round(time.perf_counter() - start, 4),
    )


def _sampled(request: Request, config: RunConfig, trial: int) -> Request:
    """``request`` with the run's temperature and the trial's seed (:func:`~apibank_lib.runs.config.trial_seed`); as it
    is under the backend's own decoding."""
    if config.temperature is not None:
        request.temperature, request.seed = config.temperature, trial_seed(config, trial)
    return request


def request_for(
    item: Any,
    context: Context,
    tools: Any,
    mode: str,
    max_tokens: int,
    tool_choice: str,
    *,
    shots: int = 0,
    release_item: Any = None,
    step: int = 0,
) -> Request:
    """What a backend is asked for one context: the text prompt (which reference backends and the ``paper`` and
    ``completion`` modes read), the chat prompt in ``chat`` mode, and the stop sequences of the context's task.

    Args:
        item: the sample or episode answered (or None).
        context: what the model is shown.
        tools: a tool set, or anything that describes APIs as one does (a
            :class:`~apibank_lib.prompting.schemas.SchemaCatalog` for data that is not the benchmark's).
        mode: the prompt mode sent (``chat``, ``paper`` or ``completion``).
        max_tokens, tool_choice: as in :class:`~apibank_lib.runs.config.RunConfig`.
        shots, release_item: passed to :func:`~apibank_lib.prompting.prompts.build_prompt`.
        step: in the level-3 agent loop, the calls made so far.
    """
    prompt = build_prompt(context, tools, shots=shots, release_item=release_item)
    chat = build_chat(context, tools) if mode == "chat" else None
    return Request(prompt, context, item, max_tokens, STOPS[context.task], mode, chat, tool_choice, step)


class _Answerer:
    """Answers one sample or episode; identical prompts (duplicate samples) reuse the first answer.

    Attributes:
        unreachable: keys of the items whose backend failure was "server unreachable".
    """

    def __init__(self, backend: Backend, bench: Benchmark, protocol: GradingProtocol, config: RunConfig) -> None:
        self.backend, self.bench, self.protocol, self.config = backend, bench, protocol, config
        self.mode = backend.prompt_mode(config.requested_prompt_mode())
        self.unreachable: set[str] = set()
        self._cache: dict[tuple[str, int], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def failure(self, item: Sample | Episode, exc: Exception, trial: int = 1, **values: Any) -> PredictionRecord:
        """The record of a failed item (any exception from the backend is recorded, never raised)."""
        record = PredictionRecord.for_item(item, trial, error=_error_text(exc), **values)
        if isinstance(exc, BackendError) and exc.connection:
            with self._lock:
                self.unreachable.add(record.key)
        return record

    def __call__(self, work: tuple[Sample | Episode, int]) -> PredictionRecord:
        item, trial = work
        if isinstance(item, Episode):
            try:
                return run_episode(item, self.backend, self.bench, self.protocol, self.config, trial)
            except ToolsIgnored:
                raise
            except Exception as exc:  # noqa: BLE001 - any backend failure is recorded with the episode
                return self.failure(item, exc, trial)
        release_item = self.bench.release_prompt(item) if self.protocol.release_prompts else None
        request = request_for(
            item, item.context(), self.bench.toolset(item.level), self.mode, self.config.max_tokens,
            self.config.tool_choice, shots=self.config.shots, release_item=release_item,
        )
        request = _sampled(request, self.config, trial)
        if request.chat is not None:
            sha = request.chat.digest()
        else:
            sha = hashlib.sha256(request.prompt.text.encode()).hexdigest()[:16]
        with self._lock:
            cached = self._cache.get((sha, trial))
        if cached is not None:  # a duplicate sample: same prompt (and, sampled, the same seed), same answer
            return PredictionRecord.for_item(item, trial, prompt_sha=sha, reused=True, **cached)
        try:
            comp = self.backend.complete(request)
        except ToolsIgnored:
            raise  # no answer of this run measures tool use: stop it
        except Exception as exc:  # noqa: BLE001 - recorded, retried with retry_failed
            return self.failure(item, exc, trial, prompt_sha=sha)
        values = _completion_values(comp)
        with self._lock:
            self._cache[(sha, trial)] = values
        return PredictionRecord.for_item(item, trial, prompt_sha=sha, **values)


class Governor:
    """How many requests a run keeps in flight: the concurrency asked for, halved whenever the server says it has too
    much to do (HTTP 429 or 503, :attr:`Backend.throttled`), then raised by one after every :data:`RAISE_AFTER`
    times the current limit of answers without such a signal, up to the concurrency asked for (additive increase,
    multiplicative decrease). Every change is recorded (:meth:`record`, the run's ``summary.json``).

    Args:
        ceiling: the concurrency asked for.
        throttled: reads the backend's count of throttling answers.
    """

    RAISE_AFTER = 4

    def __init__(self, ceiling: int, throttled: Callable[[], int] = lambda: 0) -> None:
        self.ceiling = self.limit = ceiling
        self._throttled = throttled
        self._seen = throttled()
        self._calm = 0
        self.answers = 0
        self.events: list[dict[str, Any]] = []

    def observe(self) -> None:
        """After an answer: back off if the server throttled since the last one, else count towards a raise."""
        self.answers += 1
        now = self._throttled()
        if now > self._seen:
            self._seen = now
            self._calm = 0
            lower = max(1, self.limit // 2)
            if lower < self.limit:
                self._change(lower, f"the server answered 429/503 ({now} times so far)")
            return
        self._calm += 1
        if self.limit < self.ceiling and self._calm >= self.RAISE_AFTER * self.limit:
            self._calm = 0
            self._change(self.limit + 1, f"{self.RAISE_AFTER * (self.limit)} answers without 429/503")

    def _change(self, to: int, why: str) -> None:
        self.events.append({"after_answers": self.answers, "from": self.limit, "to": to, "why": why})
        self.limit = to

    def record(self) -> dict[str, Any]:
        """What it did, for the run's summary (the first 100 changes)."""
        return {
            "asked": self.ceiling,
            "final": self.limit,
            "lowest": min([self.ceiling, *(e["to"] for e in self.events)]),
            "throttled": self._seen,
            "changes": len(self.events),
            "events": self.events[:100],
        }


def answer_all(
    todo: Sequence[W],
    answer: Callable[[W], PredictionRecord],
    writer: PredictionWriter,
    *,
    workers: int = 1,
    on_record: Callable[[PredictionRecord], None] | None = None,
    is_unreachable: Callable[[PredictionRecord], bool] = lambda r: False,
    governor: Governor | None = None,
) -> dict[str, int]:
    """Answer every item, writing each record as soon as it exists.

    Stops early, raising :class:`BackendError`, after
    :data:`MAX_CONSECUTIVE_UNREACHABLE` consecutive records that
    ``is_unreachable``; a KeyboardInterrupt stops it too. Records already
    written stay written either way. With several ``workers``, a ``governor``
    sets how many requests are in flight at a time (at most ``workers``).

    Returns:
        ``{"answered": n, "failed": m}``.
    """
    counts = {"answered": 0, "failed": 0}
    streak: list[PredictionRecord] = []

    def take(rec: PredictionRecord) -> None:
        writer.write(rec)
        counts["failed" if rec.failed else "answered"] += 1
        if on_record is not None:
            on_record(rec)
        if is_unreachable(rec):
            streak.append(rec)
            if len(streak) >= MAX_CONSECUTIVE_UNREACHABLE:
                raise BackendError(
                    f"{len(streak)} samples in a row could not reach the model; the first said: {streak[0].error}",
                    connection=True,
                )
        else:
            streak.clear()

    if workers == 1:
        for item in todo:
            take(answer(item))
        return counts
    governor = governor or Governor(workers)
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        pending: set[Future[PredictionRecord]] = set()
        queue = iter(todo)
        exhausted = False

        def fill() -> None:
            nonlocal exhausted
            while not exhausted and len(pending) < governor.limit:
                nxt = next(queue, None)
                if nxt is None:
                    exhausted = True
                else:
                    pending.add(pool.submit(answer, nxt))

        fill()
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                take(fut.result())
                governor.observe()
            fill()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return counts


def run(
    config: RunConfig,
    *,
    backend: Backend | None = None,
    bench: Benchmark | None = None,
    progress: bool | Callable[..., Any] = True,
    only: Collection[str] | None = None,
) -> RunResult:
    """Run a backend over the configured samples into a run folder (resuming if it exists).

    Args:
        config: the run settings.
        backend: an already-built backend (else built from ``config.model`` and its options).
        bench: an already-loaded benchmark (else loaded from ``config.data``).
        progress: show a progress bar (True), none (False), or a tqdm-like factory.
        only: answer only the planned samples and episodes with these keys (answers recorded elsewhere for part
            of a plan, :mod:`apibank_lib.models.recorded`); the folder's coverage then says it is partial.

    Raises:
        ConfigError: invalid settings, or a folder holding a run with other settings.
        BackendError: the model cannot be reached (before the run, or several samples in a row).
        RunStopped: interrupted (Ctrl-C) or stopped because the model became unreachable;
            everything answered so far is saved.
    """
    config.validate()
    protocol = get_protocol(config.protocol)
    bench = bench or load_benchmark(config.data)
    if backend is None:
        from apibank_lib.models import load_backend

        backend = load_backend(config.model, **config.backend_options)
    backend.preflight()  # a wrong address or a dead server stops here, before anything is written
    # Trial by trial: an interrupted run with several trials has whole first trials, the most useful part.
    items = plan(bench, config)
    if only is not None:
        items = [x for x in items if x.key in only]
    work = [(item, t) for t in range(1, config.trials + 1) for item in items]
    folder = open_run(config, bench, backend)
    existing = folder.read_predictions(repair=True).records

    def wanted(key: str) -> bool:
        return key not in existing or (config.retry_failed and existing[key].failed)

    todo = [(x, t) for x, t in work if wanted(trial_key(x.key, t))]
    workers = config.concurrency if backend.concurrent else 1
    bar = None
    if progress and todo:
        if callable(progress):
            bar = progress(total=len(todo))
        else:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), unit="sample", desc=backend.name, dynamic_ncols=True)
    answerer = _Answerer(backend, bench, protocol, config)
    governor = Governor(workers, lambda: backend.throttled)
    start = time.perf_counter()
    counts: dict[str, int] = {}
    try:
        with folder.prediction_writer() as writer:
            try:
                counts = answer_all(
                    todo,
                    answerer,
                    writer,
                    workers=workers,
                    on_record=(lambda _: bar.update(1)) if bar is not None else None,
                    is_unreachable=lambda r: r.key in answerer.unreachable,
                    governor=governor,
                )
            except (KeyboardInterrupt, BackendError) as exc:
                if isinstance(exc, ToolsIgnored):
                    folder.add_warning("tools_ignored", str(exc))
                    warnings.warn(str(exc), stacklevel=2)
                saved = len(folder.read_predictions().records)
                # The time spent so far counts too (what costs.run_cost divides by).
                _write_summary(
                    folder, config, len(work), len(work) - len(todo), counts, time.perf_counter() - start, governor
                )
                why = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
                raise RunStopped(f"stopped: {why}", folder.path, saved, len(work) - saved) from exc
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - start
    _write_summary(folder, config, len(work), len(work) - len(todo), counts, elapsed, governor)
    return RunResult(folder.path, len(work), len(work) - len(todo), counts["answered"], counts["failed"], elapsed)


def _write_summary(
    folder: RunFolder, config: RunConfig, total: int, skipped: int, counts: dict[str, int], elapsed: float,
    governor: Governor,
) -> None:
    final = folder.read_predictions().records
    before: float | None = 0.0
    if folder.summary_path.is_file():  # earlier invocations: their time, where the summary kept it (else not known)
        before = json.loads(folder.summary_path.read_text(encoding="utf-8")).get("answering_s")
    folder.write_summary(
        {
            "model": config.model,
            "protocol": config.protocol,
            "levels": list(config.levels),
            **({"shard": config.shard} if config.shard else {}),
            "samples_in_folder": len(final),
            "failed_in_folder": sum(1 for r in final.values() if r.failed),
            "this_invocation": {
                "requested": total, "skipped": skipped, **counts, "elapsed_s": round(elapsed, 3),
                "concurrency": governor.record(),
            },
            # The wall time spent answering over every invocation (apibank_lib.runs.costs reads it).
            "answering_s": None if before is None else round(before + elapsed, 3),
        }
    )

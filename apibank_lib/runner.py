"""Run a model over the benchmark's samples into a run folder; resumable and concurrent.

A run folder holds ``config.json`` (model, backend settings, protocol, seed,
data fingerprint, code version), ``predictions.jsonl`` (one JSON line per
sample, appended and flushed as soon as it is answered) and ``summary.json``.
Re-running the same command resumes: finished samples are skipped; a sample
whose backend call failed is recorded with the error and retried only with
``retry_failed``. A line cut short by a crash is dropped on resume, so nothing
is lost or duplicated. Scoring reads the folder and never queries a model.

Level 3 runs in two modes: ``steps`` (the paper's teacher-forced step samples)
and ``loop`` (an agent episode per item: the model searches, calls, sees
results and continues until it answers or reaches ``max_steps``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib import __version__
from apibank_lib.backends.base import BackendError, Completion, Request
from apibank_lib.calls import format_call
from apibank_lib.datasets import Benchmark, load_benchmark
from apibank_lib.errors import ConfigError
from apibank_lib.prompts import Prompt, build_prompt
from apibank_lib.protocols import PROTOCOLS, Grader, prepare_search_call
from apibank_lib.types import Level3Item, Level3Step, Sample

__all__ = ["RunConfig", "RunResult", "run", "run_episode", "read_predictions", "default_runs_dir", "STOPS"]

STOPS = {"api": ["\n"], "response": ["\nUser:", "\nAPI-Request:", "\nGenerate"]}
"""Stop sequences for text generation: a call fits on one line; a reply ends before the next turn."""


def default_runs_dir() -> Path:
    """``$APIBANK_RUNS`` or ``runs/`` next to the package."""
    env = os.environ.get("APIBANK_RUNS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "runs"


@dataclass
class RunConfig:
    """Everything that defines a run (CLI flags and notebook parameters end up here).

    Attributes:
        model: backend spec, e.g. ``llamacpp:gemma-3-270m`` or ``oracle``.
        levels: which levels to run.
        protocol: ``v2`` or ``paper`` (prompts and, later, scoring).
        data: benchmark root; None for the bundled one.
        limit: at most this many samples (or level-3 episodes) per level; None for all.
        out: the run folder; default ``runs/<model>-<protocol>-<hash of the settings>``.
        concurrency: parallel requests (HTTP backends only).
        seed: recorded, and passed to backends that sample.
        shots: worked examples prepended to each prompt (0 = the paper's setting).
        max_tokens: generation budget per request.
        tasks: ``api`` and/or ``response`` samples.
        level3: ``steps`` (teacher-forced), ``loop`` (agent episodes) or ``both``.
        max_steps: agent-loop step limit.
        native_tools: ask the backend for native tool calls.
        retry_failed: re-run samples whose backend call failed before.
        backend_options: extra keyword options for the backend.
    """

    model: str
    levels: tuple[int, ...] = (1, 2, 3)
    protocol: str = "v2"
    data: str | None = None
    limit: int | None = None
    out: str | None = None
    concurrency: int = 1
    seed: int = 0
    shots: int = 0
    max_tokens: int = 128
    tasks: tuple[str, ...] = ("api", "response")
    level3: str = "steps"
    max_steps: int = 12
    native_tools: bool = False
    retry_failed: bool = False
    backend_options: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Raise ConfigError on an impossible setting."""
        if not self.model:
            raise ConfigError("a model is required, e.g. --model llamacpp:gemma-3-270m")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol must be one of {PROTOCOLS}")
        if not self.levels or any(lv not in (1, 2, 3) for lv in self.levels):
            raise ConfigError(f"levels must be among 1, 2, 3, got {self.levels}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("limit must be at least 1")
        if self.concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        if self.level3 not in ("steps", "loop", "both"):
            raise ConfigError("level3 must be steps, loop or both")
        if not self.tasks or any(t not in ("api", "response") for t in self.tasks):
            raise ConfigError("tasks must be among api and response")
        if self.max_tokens < 1 or self.max_steps < 1 or self.shots not in (0, 1):
            raise ConfigError("max_tokens and max_steps must be positive and shots 0 or 1")

    def identity(self, data_fingerprint: str) -> dict[str, Any]:
        """The settings that make two runs the same run (levels and limit may grow on resume)."""
        return {
            "model": self.model,
            "protocol": self.protocol,
            "data_fingerprint": data_fingerprint,
            "shots": self.shots,
            "max_tokens": self.max_tokens,
            "max_steps": self.max_steps,
            "native_tools": self.native_tools,
            "seed": self.seed,
            "backend_options": self.backend_options,
        }

    def run_dir(self, data_fingerprint: str) -> Path:
        """The run folder for these settings."""
        if self.out:
            return Path(self.out)
        blob = json.dumps(self.identity(data_fingerprint), sort_keys=True, default=str)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", self.model).strip("-")[:60]
        return default_runs_dir() / f"{slug}-{self.protocol}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


@dataclass
class RunResult:
    """What a run did: its folder and counts."""

    path: Path
    total: int
    skipped: int
    answered: int
    failed: int
    elapsed_s: float


def read_predictions(path: Path, *, repair: bool = False) -> dict[str, dict[str, Any]]:
    """The last record per sample key in a predictions file.

    A last line without its newline (a crash mid-write) is ignored; with
    ``repair`` it is also cut from the file so appending can continue safely.
    """
    if not path.is_file():
        return {}
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        cut = raw.rfind(b"\n") + 1
        raw = raw[:cut]
        if repair:
            with path.open("r+b") as f:
                f.truncate(cut)
    out: dict[str, dict[str, Any]] = {}
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["key"]] = rec
    return out


def _code_version() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        head = (root / ".git" / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = root / ".git" / head[5:]
            head = ref.read_text().strip() if ref.is_file() else head
        return f"{__version__}+{head[:10]}"
    except OSError:
        return __version__


def _toolset(grader: Grader, level: int) -> Any:
    return grader.toolset3 if level == 3 else grader.toolset12


def _completion_record(comp: Completion) -> dict[str, Any]:
    calls = []
    for c in comp.tool_calls:
        try:
            calls.append(format_call(c))
        except ValueError:
            calls.append(repr(c))
    return {
        "output": comp.text,
        "tool_calls": calls,
        "prompt_tokens": comp.prompt_tokens,
        "completion_tokens": comp.completion_tokens,
        "latency_s": round(comp.latency_s, 4),
        "attempts": comp.attempts,
    }


def prediction_text(record: dict[str, Any]) -> str:
    """The text to judge: the first native tool call when there was one, else the generated text."""
    calls = record.get("tool_calls") or []
    return calls[0] if calls else str(record.get("output") or "")


def run_episode(item: Level3Item, backend: Any, grader: Grader, bench: Benchmark, config: RunConfig) -> dict[str, Any]:
    """One level-3 agent episode: the model searches, calls and sees results until it answers.

    Returns a record with every step (model output, the call executed and its
    result) and the final answer; scoring re-executes the calls, so the record
    holds everything needed.
    """
    from apibank_lib.calls import parse_first_call
    from apibank_lib.errors import ParseError

    box = grader.new_sandbox(3)
    toolset = grader.toolset3
    done: list[Level3Step] = []
    steps: list[dict[str, Any]] = []
    final: str | None = None
    start = time.perf_counter()
    usage = [0, 0]
    for step in range(config.max_steps):
        sample = Sample("api", 3, str(item.id), step, list(done), item, ["ToolSearcher"], requirement=item.requirement.strip())
        prompt = build_prompt(sample, bench, toolset, protocol="v2", shots=config.shots)
        comp = backend.complete(Request(prompt, "api", sample, config.max_tokens, STOPS["api"], config.native_tools, step))
        usage[0] += comp.prompt_tokens or 0
        usage[1] += comp.completion_tokens or 0
        text = comp.tool_calls and format_call(comp.tool_calls[0]) or comp.text
        try:
            call = parse_first_call(text)
        except ParseError as exc:
            steps.append({"output": comp.text, "call": None, "error": str(exc)})
            continue
        if call is None:
            final = comp.text
            break
        call = prepare_search_call(call, "v2", 3)
        result = box.execute_safely(call)
        steps.append({"output": comp.text, "call": format_call(call), "result": result.to_dict()})
        done.append(Level3Step(call.name, {k: v for k, v in call.args.items()}, result.to_dict()))
    return {
        "steps": steps,
        "final": final,
        "stopped": "answered" if final is not None else "step limit",
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "latency_s": round(time.perf_counter() - start, 4),
    }


def _work(bench: Benchmark, config: RunConfig) -> list[tuple[str, Sample | Level3Item]]:
    """Every (key, sample or item) the config asks for, in dataset order."""
    items: list[tuple[str, Sample | Level3Item]] = []
    for level in config.levels:
        if level == 3 and config.level3 in ("loop", "both"):
            chosen = bench.level3[: config.limit] if config.limit else bench.level3
            items += [(f"L3/episode/{it.id}", it) for it in chosen]
        if level == 3 and config.level3 == "loop":
            continue
        samples = [s for s in bench.samples(level) if s.kind in config.tasks]
        if config.limit:
            samples = samples[: config.limit]
        items += [(s.key, s) for s in samples]
    return items


def run(
    config: RunConfig,
    *,
    backend: Any = None,
    bench: Benchmark | None = None,
    progress: bool | Callable[..., Any] = True,
) -> RunResult:
    """Run a backend over the configured samples into a run folder (resuming if it exists).

    Args:
        config: the run settings.
        backend: an already-built backend (else built from ``config.model``).
        bench: an already-loaded benchmark (else loaded from ``config.data``).
        progress: show a progress bar (True), none (False), or a tqdm-like factory.
    """
    config.validate()
    bench = bench or load_benchmark(config.data)
    folder = config.run_dir(bench.fingerprint)
    folder.mkdir(parents=True, exist_ok=True)
    identity = config.identity(bench.fingerprint)
    cfg_path = folder / "config.json"
    if cfg_path.is_file():
        previous = json.loads(cfg_path.read_text())
        if previous.get("identity") != json.loads(json.dumps(identity, default=str)):
            raise ConfigError(f"{folder} holds a run with other settings; choose another --out or delete it")
    if backend is None:
        from apibank_lib.backends import load_backend

        backend = load_backend(config.model, **config.backend_options)
    grader = Grader(bench, config.protocol)
    cfg = {
        "identity": identity,
        "config": {k: v for k, v in asdict(config).items() if k not in ("out",)},
        "backend": backend.info(),
        "data": str(bench.root),
        "official_release": bench.official,
        "code_version": _code_version(),
    }
    cfg_path.write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    pred_path = folder / "predictions.jsonl"
    existing = read_predictions(pred_path, repair=True)
    work = _work(bench, config)
    todo = [(k, x) for k, x in work if k not in existing or (config.retry_failed and existing[k].get("error"))]
    skipped = len(work) - len(todo)
    lock = threading.Lock()
    prompt_cache: dict[str, dict[str, Any]] = {}
    counts = {"answered": 0, "failed": 0}
    start = time.perf_counter()
    bar = None
    if progress:
        if callable(progress):
            bar = progress(total=len(todo))
        else:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), unit="sample", desc=backend.name, dynamic_ncols=True)

    def answer(key: str, x: Sample | Level3Item) -> dict[str, Any]:
        if isinstance(x, Level3Item):
            base = {"key": key, "level": 3, "kind": "episode", "dialogue_id": str(x.id), "sample_id": 0, "duplicate": False}
            try:
                return {**base, **run_episode(x, backend, grader, bench, config), "error": None}
            except Exception as exc:  # noqa: BLE001 - any backend failure is recorded with the sample
                return {**base, "steps": [], "final": None, "error": f"{type(exc).__name__}: {exc}"}
        prompt: Prompt = build_prompt(x, bench, _toolset(grader, x.level), protocol=config.protocol, shots=config.shots)
        base = {"key": key, "level": x.level, "kind": x.kind, "dialogue_id": x.dialogue_id, "sample_id": x.sample_id, "duplicate": x.duplicate}
        sha = hashlib.sha256(prompt.text.encode()).hexdigest()[:16]
        base["prompt_sha"] = sha
        with lock:
            cached = prompt_cache.get(sha)
        if cached is not None:  # a duplicate sample: same prompt, same greedy answer
            return {**base, **cached, "error": None, "reused": True}
        req = Request(prompt, x.kind, x, config.max_tokens, STOPS[x.kind], config.native_tools)
        try:
            comp = backend.complete(req)
        except Exception as exc:  # noqa: BLE001 - recorded, retried with retry_failed
            kind = "BackendError" if isinstance(exc, BackendError) else type(exc).__name__
            return {**base, "output": None, "tool_calls": [], "error": f"{kind}: {exc}"}
        rec = _completion_record(comp)
        with lock:
            prompt_cache[sha] = rec
        return {**base, **rec, "error": None}

    with pred_path.open("a", encoding="utf-8") as out:

        def write(rec: dict[str, Any]) -> None:
            with lock:
                out.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
                out.flush()
                counts["failed" if rec.get("error") else "answered"] += 1
            if bar is not None:
                bar.update(1)

        workers = config.concurrency if getattr(backend, "concurrent", False) else 1
        if workers == 1:
            for key, x in todo:
                write(answer(key, x))
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(answer, key, x) for key, x in todo]
                for fut in as_completed(futures):
                    write(fut.result())
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - start
    final = read_predictions(pred_path)
    summary = {
        "model": config.model,
        "protocol": config.protocol,
        "levels": list(config.levels),
        "samples_in_folder": len(final),
        "failed_in_folder": sum(1 for r in final.values() if r.get("error")),
        "this_invocation": {"requested": len(work), "skipped": skipped, "answered": counts["answered"], "failed": counts["failed"], "elapsed_s": round(elapsed, 3)},
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return RunResult(folder, len(work), skipped, counts["answered"], counts["failed"], elapsed)

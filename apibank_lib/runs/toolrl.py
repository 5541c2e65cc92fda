"""Running a model on ToolRL's processed API-Bank files and scoring it under ToolRL's protocol.

``apibank run --data <folder>`` comes here when the folder holds ToolRL's three files
(:func:`apibank_lib.data.formats.toolrl.is_toolrl_folder`). Each entry's own two messages (``system``, then ``user``)
are what the model reads:

* a chat model renders them through its own chat template (the ``paper`` prompt mode of our backends is exactly
  "these messages, no tools", so no new rendering path is needed); a model without a template reads them as one
  text (``completion``);
* the reference rows answer without reading them: ``oracle`` writes the gold call in ToolRL's answer format,
  ``no-call`` answers with words only, and ``heuristic`` runs our heuristic baseline on the tools and history the
  entry's text lists (:func:`entry_context`, read from the text since ToolRL's files hold nothing else).

Answers are judged by :func:`apibank_lib.grading.toolrl.judge` (protocol ``toolrl-1``) and reported per level and overall
as ToolRL reports them (right / entries), plus what ToolRL does not give: an interval per level that resamples
the release dialogues the entries come from (level-3 items at level 3), with how many there are, and none when
there are fewer than :data:`apibank_lib.core.stats.MIN_CLUSTERS`.

The run folder is ours (``runs/<model>-toolrl-<hash>/``): ``config.json`` (what was run, on which files),
``predictions.jsonl`` (one answer per entry, written as it comes, so an interrupted run resumes where it
stopped), ``judgments.jsonl`` and ``metrics.json`` (rewritten by :func:`score_toolrl_run`).

Two departures from ToolRL's script, both recorded in ``config.json``: the answer budget is ``max_tokens``
(default 512, not 4,096: a small model on two cores cannot afford 4,096 tokens per entry, and an answer cut
short is judged on what it wrote), and every entry is answered once (their script keeps an earlier run's right
answers; see :mod:`apibank_lib.grading.toolrl`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apibank_lib.core.calls import parse_calls
from apibank_lib.core.errors import ApibankError, DataError
from apibank_lib.core.paths import runs_dir
from apibank_lib.core.stats import TOO_FEW, bootstrap_mean, bounds
from apibank_lib.core.types import ApiRecord, Context, Param, ToolSchema, Turn, Utterance
from apibank_lib.data.formats.toolrl import FILES, ToolRLEntry, load_toolrl
from apibank_lib.grading.toolrl import TOOLRL, accuracies, gold_answer, judge
from apibank_lib.models.base import Backend, Request
from apibank_lib.prompting.modes import COMPLETION_PROMPT, PAPER_PROMPT
from apibank_lib.prompting.prompts import Prompt
from apibank_lib.runs.subsets import RANDOM, describe, take

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "ToolRLRunResult",
    "answer_entry",
    "entry_context",
    "entry_tools",
    "data_fingerprint",
    "run_toolrl",
    "score_toolrl_run",
    "is_toolrl_run",
    "prompt_mode_for",
    "read_records",
    "toolrl_table",
]

DEFAULT_MAX_TOKENS = 512
"""The answer budget (ToolRL's script allows 4,096; see the module docstring)."""

FORMAT = "toolrl-run-1"
"""The run folder's format version (``config.json`` ``format``)."""

# A tool is listed as "1. Name: X\nDescription: ...\nParameters: {...}" (levels 1-2) or "1. X: ...\nParameters: {...}"
# (level 3).
_TOOL_RE = re.compile(
    r"^\d+\. (?:Name: (?P<name>.+)\nDescription: (?P<desc>.*)|(?P<name3>\w+): (?P<desc3>.*))\nParameters: (?P<params>.*)$", re.M
)
_TURN_RE = re.compile(r"<user>(?P<user>.*?)</user>|<response>(?P<ai>.*?)</response>|<tool_call>(?P<call>.*?)</tool_call>\s*<obs>(?P<obs>.*?)</obs>", re.S)
_CLOSING_REQUEST = "please only make one tool call"  # the fixed last user turn of every entry; not history


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half of it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _literal(text: str) -> Any:
    """A Python literal written in a data file (ToolRL writes parameters and results as Python dicts), or the text."""
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text.strip()


def entry_tools(entry: ToolRLEntry) -> list[ToolSchema]:
    """The tools an entry's system prompt lists, as schemas (names, descriptions, parameter types)."""
    tools = []
    for m in _TOOL_RE.finditer(entry.system):
        params = _literal(m.group("params"))
        inputs = {
            str(k): Param(str(v.get("type", "str")), str(v.get("description", "")))
            for k, v in (params.items() if isinstance(params, dict) else [])
            if isinstance(v, dict)
        }
        name, desc = (m.group("name"), m.group("desc")) if m.group("name") else (m.group("name3"), m.group("desc3"))
        tools.append(ToolSchema(name.strip(), desc.strip(), inputs, {}))
    return tools


def _history(entry: ToolRLEntry) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for m in _TURN_RE.finditer(entry.user):
        if m.group("user") is not None:
            text = m.group("user").strip()
            if _CLOSING_REQUEST not in text.lower():
                turns.append(Utterance("User", text))
        elif m.group("ai") is not None:
            turns.append(Utterance("AI", m.group("ai").strip()))
        else:
            try:
                call = json.loads(m.group("call").strip().splitlines()[0])
            except (json.JSONDecodeError, IndexError):
                continue
            obs = _literal(m.group("obs"))
            name = str(call.get("name", "")) if isinstance(call, dict) else ""
            args = call.get("parameters", {}) if isinstance(call, dict) else {}
            envelope = obs if isinstance(obs, dict) and "output" in obs else {"api_name": name, "input": args, "output": obs, "exception": None}
            turns.append(ApiRecord(name, dict(args) if isinstance(args, dict) else {}, envelope))
    return tuple(turns)


def entry_context(entry: ToolRLEntry) -> tuple[Context, list[ToolSchema]]:
    """What the entry's text shows, as our data: the dialogue so far and the tools listed (for reference rows)."""
    tools = entry_tools(entry)
    return Context(entry.level, "api", _history(entry), tuple(t.name for t in tools)), tools


def _request(entry: ToolRLEntry, mode: str, max_tokens: int) -> Request:
    context, tools = entry_context(entry) if mode == "reference" else (Context(entry.level, "api", (), ()), [])
    messages = [{"role": "system", "content": entry.system}, {"role": "user", "content": entry.user}]
    prompt = Prompt(messages, f"{entry.system}\n\n{entry.user}\n", tools, source="toolrl")
    return Request(prompt, context, None, max_tokens=max_tokens, prompt_mode=mode)


def _as_toolrl_answer(text: str) -> str:
    """A reference row's answer (``API-Request: [Name(k=v)]``) written in ToolRL's answer format."""
    try:
        calls = parse_calls(text)
    except ApibankError:
        calls = []
    if not calls:
        return f"<response>{text.strip()}</response>"
    body = "\n".join(json.dumps({"name": c.name, "parameters": c.args}, ensure_ascii=False, default=str) for c in calls)
    return f"<tool_call>\n{body}\n</tool_call>"


def prompt_mode_for(backend: Backend) -> str:
    """How a backend reads an entry: ``reference`` rows read none, chat models the two messages through their
    template (``paper`` mode), others the messages as one text (``completion``)."""
    modes = backend.supported_prompt_modes
    if modes == ("reference",):
        return "reference"
    if PAPER_PROMPT in modes and (getattr(backend, "template", None) is not None or backend.kind == "openai"):
        return PAPER_PROMPT
    return COMPLETION_PROMPT


def answer_entry(backend: Backend, entry: ToolRLEntry, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """One entry answered: ``{"text", "prompt_tokens", "completion_tokens", "latency_s", "stop_reason"}``.

    Raises:
        BackendError: the model could not answer (the caller records it).
    """
    if backend.kind == "oracle":
        return {"text": gold_answer(entry)}
    mode = prompt_mode_for(backend)
    completion = backend.complete(_request(entry, mode, max_tokens))
    text = _as_toolrl_answer(completion.text) if mode == "reference" else completion.text
    return {
        "text": text,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_s": round(completion.latency_s, 3),
        "stop_reason": completion.stop_reason,
    }


def data_fingerprint(folder: str | Path) -> str:
    """A hash of the three files' bytes (which copy of ToolRL's files a run read)."""
    digest = hashlib.sha256()
    for level in sorted(FILES):
        path = Path(folder) / FILES[level]
        if path.is_file():
            digest.update(FILES[level].encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def is_toolrl_run(folder: str | Path) -> bool:
    """Whether ``folder`` is a run folder written by :func:`run_toolrl`."""
    path = Path(folder) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


@dataclass
class ToolRLRunResult:
    """What :func:`run_toolrl` did: the folder, how many entries it answered, failed and found already done."""

    path: Path
    total: int
    answered: int
    failed: int
    skipped: int
    elapsed_s: float


def _select(entries: dict[int, list[ToolRLEntry]], limit: int | None, seed: int) -> list[ToolRLEntry]:
    # Whole dialogues (items at level 3), drawn with the same seeded draw as a release's samples.
    return [e for level in sorted(entries) for e in take(entries[level], limit, draw=RANDOM, seed=seed)]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a last line cut short by an interruption is dropped (it is answered again)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def run_toolrl(
    data: str | Path,
    backend: Backend,
    *,
    model: str | None = None,
    levels: Sequence[int] = (1, 2, 3),
    limit: int | None = None,
    seed: int = 0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    out: str | Path | None = None,
    restart: bool = False,
    retry_failed: bool = False,
    progress: bool | Callable[..., Any] = True,
) -> ToolRLRunResult:
    """Answer ToolRL's entries with a backend into a run folder (resuming one with the same settings).

    Args:
        data: a folder holding ToolRL's three processed API-Bank files.
        backend: the model (or reference row).
        model: the model spec, as recorded (default: the backend's name).
        levels: which files.
        limit: per level, at least this many entries, as whole release dialogues drawn at random (``seed``);
            None: every entry.
        max_tokens: the answer budget.
        out: where run folders go (default :func:`apibank_lib.core.paths.runs_dir`).
        restart: start the folder over when its settings differ or it holds answers.
        retry_failed: answer again the entries whose backend failed.
        progress: a progress bar (True), none (False) or a tqdm-like factory.

    Raises:
        DataError: the folder is not ToolRL's files, or an entry has the wrong shape (file and entry named).
        ConfigError: the run folder holds a run with other settings (and ``restart`` is false).
    """
    entries = load_toolrl(data, tuple(levels))
    chosen = _select(entries, limit, seed)
    mode = prompt_mode_for(backend)
    identity = {
        "model": backend.identity(),
        "protocol": TOOLRL.version,
        "prompt": {"mode": mode, **backend.mode_identity(mode, "auto")},
        "max_tokens": max_tokens if mode != "reference" else None,
        "data": data_fingerprint(data),
        "levels": sorted(levels),
        "subset": describe(limit, RANDOM, seed),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model or backend.name).strip("-")[:60]
    folder = runs_dir(out) / f"{slug}-toolrl-{digest}"
    config_path, predictions_path = folder / "config.json", folder / "predictions.jsonl"
    if restart and folder.exists():
        for name in ("predictions.jsonl", "judgments.jsonl", "metrics.json"):
            (folder / name).unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "format": FORMAT,
        "model": model or backend.name,
        "identity": identity,
        "data_path": str(data),
        "entries": {str(lv): len(es) for lv, es in sorted(entries.items())},
        "departures": [
            f"answer budget {max_tokens} tokens (ToolRL's script: 4,096)",
            "every entry answered once (ToolRL's script keeps earlier runs' right answers)",
        ],
    }
    _write(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    done = {r["key"]: r for r in read_records(predictions_path)}
    todo = [e for e in chosen if e.key not in done or (retry_failed and done[e.key].get("error"))]
    bar = None
    if progress and todo:
        if callable(progress):
            bar = progress(total=len(todo))
        else:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), unit="entry", desc=model or backend.name, dynamic_ncols=True)
    start, answered, failed = time.perf_counter(), 0, 0
    backend.preflight()
    with predictions_path.open("a", encoding="utf-8") as sink:
        for entry in todo:
            record: dict[str, Any] = {"key": entry.key, "level": entry.level, "index": entry.index}
            try:
                record.update(answer_entry(backend, entry, max_tokens=max_tokens))
                answered += 1
            except ApibankError as exc:  # a failed answer is recorded and judged wrong; the run goes on
                record.update({"text": "", "error": f"{type(exc).__name__}: {exc}"})
                failed += 1
            sink.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            sink.flush()
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    score_toolrl_run(folder, entries=entries)
    return ToolRLRunResult(folder, len(chosen), answered, failed, len(chosen) - len(todo), time.perf_counter() - start)


def _interval(values: list[float], clusters: list[Any]) -> dict[str, Any]:
    if not values:
        return {"low": None, "high": None, "dialogues": 0, "why_blank": "no entries"}
    iv = bootstrap_mean(values, clusters)
    low, high = bounds(iv, 100)  # blank below MIN_CLUSTERS dialogues
    return {"low": low, "high": high, "dialogues": iv.clusters, **({} if iv.shown else {"why_blank": TOO_FEW})}


def score_toolrl_run(folder: str | Path, *, entries: dict[int, list[ToolRLEntry]] | None = None) -> dict[str, Any]:
    """Judge a ToolRL run folder's answers again and write ``judgments.jsonl`` and ``metrics.json``.

    The accuracies follow ToolRL (right / entries answered, per level and overall, 2 decimals); each level also
    gets an interval over the release dialogues its entries come from (blank under :data:`MIN_CLUSTERS`).

    Raises:
        DataError: the folder is not a ToolRL run, or its data folder is gone.
    """
    root = Path(folder)
    if not is_toolrl_run(root):
        raise DataError("not a ToolRL run folder (no config.json of format toolrl-run-1)", root)
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    if entries is None:
        entries = load_toolrl(config["data_path"], tuple(config["identity"]["levels"]))
    by_key = {e.key: e for es in entries.values() for e in es}
    judgments = []
    for record in sorted(read_records(root / "predictions.jsonl"), key=lambda r: (r["level"], r["index"])):
        entry = by_key.get(record["key"])
        if entry is None:
            raise DataError(f"the run answered {record['key']}, which the data folder no longer holds", root / "predictions.jsonl")
        verdict = judge(entry, record.get("text") or "")
        judgments.append(
            {
                "key": entry.key,
                "level": entry.level,
                "index": entry.index,
                "dialogue": entry.dialogue_id,
                "correct": verdict.correct,
                "reason": record.get("error") or verdict.reason,
                "calls": list(verdict.calls),
            }
        )
    answered = {lv: [j for j in judgments if j["level"] == lv] for lv in sorted({j["level"] for j in judgments})}
    metrics = accuracies([(j["level"], j["correct"]) for j in judgments], answered)
    for lv, js in answered.items():
        metrics["levels"][str(lv)]["interval"] = _interval([float(j["correct"]) for j in js], [j["dialogue"] for j in js])
    metrics["overall"]["interval"] = _interval(
        [float(j["correct"]) for j in judgments], [(j["level"], j["dialogue"]) for j in judgments]
    )
    metrics["protocol"] = TOOLRL.version
    metrics["entries_in_files"] = {str(lv): len(es) for lv, es in sorted(entries.items())}
    metrics["model"] = config["model"]
    _write(root / "judgments.jsonl", "".join(json.dumps(j, ensure_ascii=False, sort_keys=True) + "\n" for j in judgments))
    _write(root / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


def _cell(m: dict[str, Any]) -> str:
    iv = m.get("interval") or {}
    if m.get("accuracy") is None:
        return ""
    shown = f"{m['accuracy']:.2f}"
    if iv.get("low") is not None:
        shown += f" [{iv['low']:.2f}, {iv['high']:.2f}]"
    count = f"{m['right']}/{m['entries']}, {iv.get('dialogues', '?')} dialogues"
    return f"{shown} ({count})" if iv.get("low") is not None else f"{shown} ({count}: too few for an interval)"


def toolrl_table(folders: Sequence[str | Path], *, reported: bool = True, names: dict[str, str] | None = None) -> Any:
    """Runs under ToolRL's protocol, and ToolRL's published figures, one row each, with the data each was measured on.

    A run's cells read ``acc [low, high] (right/entries, dialogues)``; the published rows have the figure only. The
    ``data`` column says which files (the run's folder name and entries per level; ToolRL's rows: the whole
    release's files), and ``comparable`` says whether a row sits on the same data and protocol as ToolRL's
    published ones: only a run on all 399 / 67 / 131 entries does. A run on part of the files (a release's
    development half) is set beside them, not compared with them.

    Args:
        folders: ToolRL run folders (:func:`run_toolrl`).
        reported: add ToolRL's published rows (:func:`apibank_lib.data.reported.toolrl_reported`).
        names: display names by model spec.
    """
    import pandas as pd

    from apibank_lib.data.reported import toolrl_reported

    published = toolrl_reported()
    full = {str(k): v for k, v in published["entries"].items()}
    rows = []
    for folder in folders:
        root = Path(folder)
        if not is_toolrl_run(root):
            raise DataError("not a ToolRL run folder (no config.json of format toolrl-run-1)", root)
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        metrics = json.loads((root / "metrics.json").read_text(encoding="utf-8"))
        entries = {lv: m["entries"] for lv, m in metrics["levels"].items()}
        same = metrics["protocol"] == published["protocol"] and all(entries.get(lv) == full[lv] for lv in ("1", "2", "3"))
        row = {
            "model": (names or {}).get(config["model"], config["model"]),
            "source": "measured here",
            "data": f"{Path(config['data_path']).name} ({' / '.join(str(entries.get(lv, 0)) for lv in ('1', '2', '3'))} entries)",
            "protocol": metrics["protocol"],
            **{f"L{lv}": _cell(metrics["levels"][lv]) if lv in metrics["levels"] else "" for lv in ("1", "2", "3")},
            "overall": _cell(metrics["overall"]),
            "comparable": "same files and protocol as ToolRL's" if same else "other entries: set beside, not compared",
        }
        rows.append(row)
    if reported:
        for r in published["rows"]:
            rows.append(
                {
                    "model": f"{r['model']} ({r['training']})",
                    "source": "reported (ToolRL, read from a summary)",
                    "data": f"whole release ({full['1']} / {full['2']} / {full['3']} entries)",
                    "protocol": published["protocol"],
                    "L1": f"{r['l1']:.2f}", "L2": f"{r['l2']:.2f}", "L3": f"{r['l3']:.2f}", "overall": f"{r['overall']:.2f}",
                    "comparable": "",
                }
            )
    return pd.DataFrame(rows, columns=["model", "source", "data", "protocol", "L1", "L2", "L3", "overall", "comparable"])

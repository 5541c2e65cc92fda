"""The commands that answer and judge: ``run`` (a release, or ToolRL's files), ``merge``, ``score``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.cli.options import PROTOCOL_NAMES, add_common, add_json, add_retriever
from apibank_lib.cli.output import print_json, text_table, warn
from apibank_lib.core.errors import ConfigError
from apibank_lib.models.registry import model_help

if TYPE_CHECKING:
    from apibank_lib.runs.records import Metrics


__all__ = ["cmd_run", "cmd_merge", "cmd_score", "add_commands"]


def _options(items: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` pairs; values stay text here and are converted to the backend's declared types."""
    options: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    return options


def cmd_run(args: argparse.Namespace) -> int:
    from apibank_lib.data.formats.toolrl import is_toolrl_folder
    from apibank_lib.env.protocols import V2
    from apibank_lib.grading.toolrl import TOOLRL
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.folder import RunFolder
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import OtherVersion, score_run
    from apibank_lib.runs.subsets import FIRST, RANDOM

    if args.data and is_toolrl_folder(args.data):
        return _run_toolrl(args)
    if args.protocol == TOOLRL.name:
        raise ConfigError(f"--protocol toolrl judges ToolRL's processed files; {args.data or 'the bundled data'} is not such a folder")
    config = RunConfig(
        model=args.model,
        levels=tuple(args.level) if args.level else (1, 2, 3),
        protocol=args.protocol or V2.name,
        data=args.data,
        limit=args.first if args.first is not None else args.limit,
        draw=FIRST if args.first is not None else RANDOM,
        subset_seed=args.subset_seed,
        out=args.out,
        concurrency=args.concurrency,
        seed=args.seed,
        shots=args.shots,
        max_tokens=args.max_tokens if args.max_tokens is not None else 128,
        level3=args.level3,
        tasks=tuple(args.task) if args.task else ("api", "response"),
        retriever=args.retriever,
        max_steps=args.max_steps,
        prompt_mode=args.prompt_mode,
        tool_choice=args.tool_choice,
        native_tools=args.native_tools,
        retry_failed=args.retry_failed,
        restart=args.restart,
        backend_options=_options(args.option),
        shard=args.shard,
        temperature=args.temperature,
        trials=args.trials,
    )
    result = run(config, progress=not args.json)
    try:
        # New answers are scored with the whole run under today's protocol; a run with nothing new keeps its scores.
        metrics = score_run(result.path, rescore=bool(result.answered or result.failed))
    except OtherVersion as exc:
        warn(str(exc))
        metrics = RunFolder(result.path).read_metrics()
    out = {
        "run": str(result.path),
        "requested": result.total,
        "skipped": result.skipped,
        "answered": result.answered,
        "failed": result.failed,
        "elapsed_s": round(result.elapsed_s, 2),
        "metrics": metrics.to_dict(),
    }
    if args.json:
        print_json(out)
    else:
        print(f"run folder: {result.path}")
        print(
            f"{result.answered} answered, {result.failed} failed, {result.skipped} already done, in {result.elapsed_s:.1f} s"
        )
        _print_metrics(metrics)
    return 0


def _run_toolrl(args: argparse.Namespace) -> int:
    """``apibank run`` on ToolRL's processed files: ToolRL's prompts and protocol (:mod:`apibank_lib.runs.toolrl`)."""
    from apibank_lib.grading.toolrl import TOOLRL
    from apibank_lib.models import load_backend
    from apibank_lib.runs.toolrl import DEFAULT_MAX_TOKENS, run_toolrl

    if args.protocol not in (None, TOOLRL.name):
        raise ConfigError(f"{args.data} holds ToolRL's processed files, which are judged by the toolrl protocol only, not {args.protocol}")
    unsupported = [
        flag for flag, given in (
            ("--first", args.first is not None), ("--prompt-mode", args.prompt_mode is not None), ("--shots", bool(args.shots)),
            ("--trials", args.trials != 1), ("--shard", args.shard is not None), ("--temperature", args.temperature is not None),
            ("--task", bool(args.task)), ("--level3", args.level3 != "steps"),
        ) if given
    ]
    if unsupported:
        raise ConfigError(f"{', '.join(unsupported)} do not apply to ToolRL's files (one prompt per entry, as ToolRL gives it)")
    result = run_toolrl(
        args.data, load_backend(args.model, **_options(args.option)), model=args.model,
        levels=tuple(args.level) if args.level else (1, 2, 3), limit=args.limit, seed=args.subset_seed,
        max_tokens=args.max_tokens if args.max_tokens is not None else DEFAULT_MAX_TOKENS, out=args.out,
        restart=args.restart, retry_failed=args.retry_failed, progress=not args.json,
    )
    metrics = json.loads((result.path / "metrics.json").read_text(encoding="utf-8"))
    if args.json:
        print_json({"run": str(result.path), "requested": result.total, "answered": result.answered, "failed": result.failed,
                     "skipped": result.skipped, "elapsed_s": round(result.elapsed_s, 2), "metrics": metrics})
        return 0
    print(f"run folder: {result.path}")
    print(f"{result.answered} answered, {result.failed} failed, {result.skipped} already done, in {result.elapsed_s:.1f} s")
    _print_toolrl_metrics(metrics)
    return 0


def _print_toolrl_metrics(metrics: dict[str, Any]) -> None:
    rows = []
    for name, m in [*((f"level {lv}", m) for lv, m in metrics["levels"].items()), ("overall", metrics["overall"])]:
        iv = m.get("interval", {})
        ci = f"[{iv['low']:.2f}, {iv['high']:.2f}]" if iv.get("low") is not None else f"({iv.get('why_blank', '')})"
        rows.append([name, f"{m['accuracy']:.2f}%" if m["accuracy"] is not None else "", f"{m['right']}/{m['entries']}", ci, iv.get("dialogues", "")])
    print(f"protocol {metrics['protocol']} (ToolRL's exact match of name and parameters; nothing executed)")
    print(text_table(rows, ["", "accuracy", "right", "95% interval", "dialogues"]))


def _print_metrics(metrics: Metrics, folder: str | Path | None = None) -> None:
    rows = []
    for lv, m in metrics.levels.items():
        acc = "" if m.api_accuracy is None else f"{100 * m.api_accuracy:.2f}% ({m.api_correct}/{m.api_samples})"
        rouge = "" if m.rouge_l is None else f"{m.rouge_l:.4f} (n={m.response_samples})"
        ep = (
            f"{100 * (m.episode_success_rate or 0):.1f}% ({m.episodes_succeeded}/{m.episodes})"
            if m.episodes is not None
            else ""
        )
        items = "" if m.items is None else f"{100 * (m.item_accuracy or 0):.1f}% ({m.items_correct}/{m.items})"
        rows.append([lv, acc, rouge, items, ep, m.backend_errors])
    o = metrics.overall
    rows.append(
        [
            "all",
            "" if o.api_accuracy is None else f"{100 * o.api_accuracy:.2f}%",
            "" if o.rouge_l is None else f"{o.rouge_l:.4f}",
            "",
            "",
            o.backend_errors,
        ]
    )
    cov = metrics.coverage
    partial = " [PARTIAL]" if metrics.partial else ""
    where = f"\n  {folder}" if folder is not None else ""
    print(f"{metrics.model} ({metrics.prompt_mode or '?'} prompts) under protocol {metrics.protocol_version}{partial}{where}")
    headers = ["level", "API-call accuracy", "ROUGE-L", "items right (steps)", "episodes solved", "failed in the backend"]
    print(text_table(rows, headers))
    print(
        f"coverage: {cov['answered']} answered, {cov['failed']} failed, {cov['missing']} missing of {cov['expected']} expected",
        end="",
    )
    print(f"; {cov['lines_dropped']} unreadable line(s) left out" if cov["lines_dropped"] else "")
    if cov["failed"]:
        print(
            f"{cov['failed']} sample(s) got no answer from the backend and count as wrong; run the same command again with --retry-failed"
        )
    if cov["missing"]:
        print("the run is incomplete: run the same `apibank run` command again to resume it")


def cmd_merge(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.runs.merge import merge_runs
    from apibank_lib.runs.scoring import score_run

    bench = load_benchmark(args.data) if args.data else None
    result = merge_runs(args.folders, args.out, bench=bench)
    metrics = score_run(result.path, bench=bench, data=args.data)
    if args.json:
        print_json({"run": str(result.path), "shards": result.shards, "samples": result.samples, "failed": result.failed, "metrics": metrics.to_dict()})
    else:
        print(f"run folder: {result.path} ({result.shards} shards, {result.samples} samples, {result.failed} failed)")
        _print_metrics(metrics)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from apibank_lib.runs.scoring import score_run
    from apibank_lib.runs.toolrl import is_toolrl_run, score_toolrl_run

    if any(is_toolrl_run(path) for path in args.runs):
        if not all(is_toolrl_run(path) for path in args.runs):
            raise ConfigError("ToolRL runs and release runs are scored by different protocols: score them apart")
        scored = [score_toolrl_run(path) for path in args.runs]  # ToolRL's judge again, on the answers saved
        if args.json:
            print_json(scored if len(scored) > 1 else scored[0])
        else:
            for path, metrics in zip(args.runs, scored):
                print(f"run folder: {path}")
                _print_toolrl_metrics(metrics)
        return 0
    results = [score_run(path, data=args.data, retriever=args.retriever, rescore=args.rescore) for path in args.runs]
    if args.json:
        print_json([m.to_dict() for m in results] if len(results) > 1 else results[0].to_dict())
    else:
        for path, m in zip(args.runs, results):
            _print_metrics(m, folder=path)
    return 0


def add_commands(sub: Any) -> None:
    """Add this group's commands to the ``apibank`` parser's subparsers."""
    from apibank_lib.env.protocols import V2
    from apibank_lib.grading.toolrl import TOOLRL
    from apibank_lib.prompting.chat import TOOL_CHOICES
    from apibank_lib.prompting.modes import MODEL_PROMPT_MODES

    p = sub.add_parser("run", help="run a model over the benchmark into a resumable run folder, then score it")
    add_common(p)
    p.add_argument(
        "--model",
        required=True,
        help=model_help(),
    )
    p.add_argument(
        "--level", type=int, choices=[1, 2, 3], action="append", help="repeat for several levels (default: all)"
    )
    subset = p.add_mutually_exclusive_group()
    subset.add_argument(
        "--limit", type=int, default=None,
        help="about N samples (level-3 episodes) per level: whole dialogues drawn at random, stratified by their "
        "first API, the same for every model given the same --subset-seed",
    )
    subset.add_argument(
        "--first", type=int, default=None, metavar="N",
        help="the first N samples per level in file order (for debugging: files sort by API name, so they are no sample)",
    )
    p.add_argument("--subset-seed", type=int, default=0, help="the seed of --limit's draw (default 0)")
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default: runs/<model>-<protocol>-<settings hash> in the project, or under $APIBANK_RUNS)",
    )
    p.add_argument(
        "--protocol", choices=[*PROTOCOL_NAMES, TOOLRL.name], default=None,
        help=f"grading protocol (default {V2.name}; toolrl, the only one, for ToolRL's processed files)",
    )
    p.add_argument("--concurrency", type=int, default=1, help="parallel requests (HTTP backends)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--shots", type=int, choices=[0, 1], default=0, help="prepend one worked example (helps small base models)"
    )
    p.add_argument(
        "--max-tokens", type=int, default=None,
        help="answer budget (default 128; 512 on ToolRL's files, whose format asks for reasoning first)",
    )
    p.add_argument("--task", action="append", choices=("api", "response"), help="repeat for both (default: API calls and replies)")
    p.add_argument(
        "--level3",
        choices=["steps", "loop", "both"],
        default="steps",
        help="teacher-forced steps, agent episodes, or both",
    )
    p.add_argument("--max-steps", type=int, default=12, help="agent-loop step limit")
    p.add_argument(
        "--prompt-mode",
        choices=list(MODEL_PROMPT_MODES),
        default=None,
        help="chat: chat turns, tool calls and tool messages (default for chat models); paper: the paper's text "
        "prompt as messages; completion: the flattened text (default for base models)",
    )
    p.add_argument(
        "--tool-choice",
        choices=list(TOOL_CHOICES),
        default="required",
        help="chat mode: an API-call sample demands a call (required, as the paper's prompt does) or lets the model decide",
    )
    p.add_argument("--native-tools", action="store_true", help="the older name of --prompt-mode chat")
    p.add_argument("--retry-failed", action="store_true", help="re-run samples whose backend call failed")
    p.add_argument(
        "--restart", action="store_true", help="start the run over: the folder's answers so far are moved aside first"
    )
    p.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="backend option, e.g. mode=tools, timeout_s=60, adapter=path (checked against the backend)",
    )
    p.add_argument(
        "--trials", type=int, default=1,
        help="answer every sample K times, each trial with its own seed (needs --temperature); scores add pass^k",
    )
    p.add_argument(
        "--temperature", type=float, default=None,
        help="sample at this temperature (default: the backend's own decoding, greedy for local models)",
    )
    p.add_argument(
        "--shard", metavar="I/N", default=None,
        help="answer only shard I of N (whole dialogues, chosen by a hash of their id) into a folder of its own; "
        "apibank merge joins the N folders",
    )
    add_retriever(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("merge", help="join the N shard folders of one run (apibank run --shard I/N) into one, then score it")
    p.add_argument("folders", nargs="+", help="the shard folders, in any order")
    p.add_argument("--out", default=None, help="the merged folder (default: the shards' folder name without -shard-IofN)")
    p.add_argument("--data", default=None, help="where the run's data is now, if it moved")
    add_json(p)
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("score", help="score run folders (never queries a model)")
    p.add_argument("runs", nargs="+")
    p.add_argument("--data", default=None, help="where the runs' data is now, if it moved")
    p.add_argument(
        "--rescore", action="store_true",
        help="replace scores made under another version of the run's protocol (refused otherwise, with both named)",
    )
    add_json(p)
    add_retriever(p, default="the run's, else its protocol's")
    p.set_defaults(func=cmd_score)

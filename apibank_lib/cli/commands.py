"""The ``apibank`` command (also ``python -m apibank_lib``).

Every command takes ``--json`` for machine-readable output and ``--data PATH``
for another benchmark root (our bundled data by default, or the root of an
official API-Bank release). Grading protocols are named here (``--protocol``)
and turned into protocol objects at once.

Failures print one line to standard error and exit non-zero, never a
traceback: 2 for an error of the input or the settings, 1 for a model that
cannot be reached, 130 for Ctrl-C (with what was saved and how to resume),
3 for a bug of ours (``APIBANK_DEBUG=1`` shows its traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ApibankError, BackendError, ConfigError
from apibank_lib.models.registry import model_help

if TYPE_CHECKING:
    from apibank_lib.runs.records import Metrics

__all__ = ["main", "build_parser"]


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _progress(desc: str):  # noqa: ANN202 - returns a wrapper usable as an iterable filter
    from tqdm import tqdm

    return lambda it: tqdm(it, desc=desc, unit="call", file=sys.stderr, disable=None, leave=False)


def _warn(message: str) -> None:
    print(f"apibank: note: {message}", file=sys.stderr)


# --- commands ------------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark, statistics
    from apibank_lib.data.reported import OFFICIAL_RELEASE_COUNTS, PAPER_CORPUS, SOURCE

    bench = load_benchmark(args.data)
    if args.json:
        stats = statistics(bench)
        stats["data"] = str(bench.root)
        stats["data_name"] = bench.name
        stats["official_release"] = bench.official
        stats["data_fingerprint"] = bench.fingerprint
        stats["reported"] = {
            "source": SOURCE,
            "evaluation": PAPER_CORPUS["evaluation"],
            "official_release_counts": OFFICIAL_RELEASE_COUNTS,
        }
        _print_json(stats)
        return 0
    # The same tables as notebook 00 (analysis), printed as text.
    import pandas as pd

    from apibank_lib.report.analysis import level_statistics_table, statistics_table

    def with_official(measured: Any, official: Any) -> str:
        return ("" if pd.isna(measured) else str(measured)) + ("" if pd.isna(official) else f" ({official})")

    label = f"{bench.name} data"
    rows = [
        [r["quantity"], *(with_official(r[f"L{lv} measured here"], r[f"L{lv} official release"]) for lv in "123")]
        for r in level_statistics_table(bench).astype(object).to_dict("records")
    ]
    print(f"Benchmark: {bench.root}{' (official release)' if bench.official else ''}")
    print(
        _table(
            rows,
            [f"per level: {label} (official release, counted)", "L1 Call", "L2 Retrieve+Call", "L3 Plan+Retrieve+Call"],
        )
    )
    print()
    print(_table(statistics_table(bench).values.tolist(), ["totals", f"{label} (measured)", "paper (reported)"]))
    print(f"\nReported figures: {SOURCE}. Official-release counts: computed from the release with the original cutter.")
    return 0


def _failure_summary(levels: dict[str, Any]) -> list[list[Any]]:
    """One row per (level, API, category): how many gold calls, and one reason as an example."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for lv, r in levels.items():
        for f in r["failures"]:
            groups[(lv, f["api_name"], str(f["category"]))].append(f)
    rows = []
    for (lv, api, category), fs in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0][1])):
        reason = str(fs[0]["reason"])
        rows.append([lv, api, category, len(fs), reason if len(reason) <= 70 else reason[:67] + "..."])
    return rows


def cmd_replay(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.env.protocols import get_protocol
    from apibank_lib.grading.grader import replay

    protocol = get_protocol(args.protocol)
    bench = load_benchmark(args.data)
    levels = [args.level] if args.level else [1, 2, 3]
    report = replay(
        bench, protocol, levels=levels, searcher=args.retriever, progress=None if args.json else _progress("replay")
    )
    if args.json:
        _print_json(report)
        return 0
    rows = []
    for lv, r in report["levels"].items():
        pct = 100.0 * r["correct"] / r["gold_calls"] if r["gold_calls"] else 0.0
        rows.append([lv, r["gold_calls"], r["correct"], f"{pct:.1f}%", r["samples"], r["samples_correct"]])
    print(f"Protocol {protocol.version} on {report['data']}")
    print(_table(rows, ["level", "gold calls", "judged correct", "rate", "API-call samples", "samples correct"]))
    _print_errata_use(report)
    n_fail = sum(len(r["failures"]) for r in report["levels"].values())
    if not n_fail:
        return 0
    print()
    if args.verbose:
        for lv, r in report["levels"].items():
            for f in r["failures"]:
                dup = " (duplicate sample)" if f["duplicate"] else ""
                print(f"  L{lv} {f['dialogue']} #{f['sample_id']} {f['api_name']}{dup}: {f['category']}: {f['reason']}")
    else:
        print(_table(_failure_summary(report["levels"]), ["level", "API", "category", "samples", "first reason"]))
        print(f"\n{n_fail} failed samples by API; --verbose lists each, --json gives everything.")
    return 0


def _print_errata_use(report: dict[str, Any]) -> None:
    """What the errata did in a replay: samples excluded and corrected per level, and the entries not applied."""
    errata = report.get("errata")
    if errata is None:
        return
    per_level = [
        f"level {lv}: {len(r['excluded'])} excluded, {len(r['corrected'])} corrected"
        for lv, r in report["levels"].items()
        if r["excluded"] or r["corrected"]
    ]
    print(f"\nerrata {errata['errata']}: {len(errata['applied'])} applied, {len(errata['not_applied'])} not applied")
    for line in per_level:
        print(f"  {line}")
    for lv, r in report["levels"].items():
        for e in r["excluded"]:
            print(f"  L{lv} {e['dialogue']} #{e['sample_id']} {e['api_name']}: excluded, {e['reason']}")
        for e in r["corrected"]:
            print(f"  L{lv} {e['dialogue']} #{e['sample_id']} {e['api_name']}: gold corrected by {e['erratum']}")
    for entry, why in errata["not_applied"].items():
        print(f"  {entry} not applied: {why}")


def cmd_search(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.env.protocols import V2
    from apibank_lib.retrieval.retrievers import PAPER_RECIPE, make_retriever
    from apibank_lib.retrieval.search import default_searcher

    if not args.keywords.strip():
        raise ConfigError('give some keywords to search for, e.g. apibank search "book a hotel room"')
    if args.k < 1:
        raise ConfigError(f"-k must be at least 1, not {args.k}")
    bench = load_benchmark(args.data)
    candidates = bench.toolset(args.level).searchable()
    index = default_searcher(candidates)
    truncated = getattr(index.embedder, "truncates", None)
    if truncated is not None and truncated(args.keywords):
        _warn(
            f"the query is longer than the embedding model reads ({index.embedder.max_tokens} tokens); only its beginning is used"
        )
    name = args.retriever or V2.retriever
    if name == PAPER_RECIPE:
        ranked = index.search(args.keywords, args.k)
    else:
        ranked = make_retriever(name, candidates).search(args.keywords, args.k)
    if args.json:
        _print_json([{"name": s.name, "score": round(score, 6), "description": s.description} for s, score in ranked])
        return 0
    print(
        _table(
            [[i + 1, s.name, f"{score:.4f}", s.description] for i, (s, score) in enumerate(ranked)],
            ["rank", "API", "cosine" if name == PAPER_RECIPE else "score", "description"],
        )
    )
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.env.protocols import get_protocol

    protocol = get_protocol(args.protocol)
    bench = load_benchmark(args.data)
    result = bench.sandbox(args.level, protocol).execute(args.call)
    _print_json(result.to_dict())
    return 0


def cmd_apis(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark

    bench = load_benchmark(args.data)
    toolset = bench.toolset(args.level)
    apis = []
    for name, cls in toolset.tools.items():
        schema = toolset.schema(name)
        apis.append(
            {
                "name": name,
                "domain": cls.domain,
                "description": schema.description,
                "input_parameters": {
                    k: {"type": p.type, "required": p.required, "description": p.description}
                    for k, p in schema.input_parameters.items()
                },
                "output_parameters": {
                    k: {"type": p.type, "description": p.description} for k, p in schema.output_parameters.items()
                },
                "searchable": cls.searchable,
            }
        )
    if args.json:
        _print_json({"level": args.level, "toolset": toolset.name, "apis": apis})
        return 0
    rows = []
    for a in apis:
        params = ", ".join(
            f"{k}: {p['type']}" + ("" if p["required"] else " (optional)") for k, p in a["input_parameters"].items()
        )
        rows.append([a["name"], a["domain"], params or "-"])
    print(f"{len(apis)} APIs of the {toolset.name} tool set (level {args.level}; {bench.name} data)")
    print(_table(rows, ["API", "domain", "parameters"]))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from apibank_lib.grading.validate import validate

    report = validate(args.data, min_uses=args.min_uses)
    if args.json:
        _print_json(
            {
                "valid": report.valid,
                "official_release": report.official,
                "problems": [{"path": p.path, "line": p.line, "message": p.message} for p in report.problems],
                "data_defects": [{"path": p.path, "line": p.line, "message": p.message} for p in report.defects],
                "errata": {"file": report.errata_label, "entries": report.errata},
            }
        )
        return 0 if report.valid else 1
    for p in report.problems:
        print(p)
    if report.errata_label is not None:
        applied = [e for e in report.errata if e["applied"]]
        print(f"errata {report.errata_label}: {len(applied)} of {len(report.errata)} entries apply to this copy")
        for e in report.errata:
            state = f"applied to {e['samples']} sample(s)" if e["applied"] else f"not applied ({e['why not']})"
            print(f"  {e['id']} {e['record']}: {e['defect']}, {e['decision']}; {state}")
    if report.official:
        for p in report.defects:
            print(f"data defect: {p}")
        what = "official release: format checked, gold calls replayed under v2"
        defects = (
            f"; {len(report.defects)} gold call(s) judged wrong under v2 (data defects of the release, listed above)"
            if report.defects
            else ""
        )
        print(("valid " if report.valid else f"{len(report.problems)} problem(s) in the ") + what + defects)
    else:
        print("valid" if report.valid else f"{len(report.problems)} problem(s)")
    return 0 if report.valid else 1


def cmd_build_data(args: argparse.Namespace) -> int:
    from apibank_lib.data.authoring import build, preview

    if args.preview:
        print(preview(args.preview, args.data))
        return 0
    report = build(args.src, args.data, check=args.check)
    summary = {
        "dialogues": {str(k): v for k, v in sorted(report.dialogues.items())},
        "level3_items": report.items,
        "files": len(report.files),
        "checked": args.check,
    }
    if args.json:
        _print_json(summary)
    else:
        verb = "up to date" if args.check else "written"
        print(
            f"{summary['files']} files {verb}: level-1 {report.dialogues.get(1, 0)}, level-2 {report.dialogues.get(2, 0)} dialogues, level-3 {report.items} items"
        )
    return 0


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
        _warn(str(exc))
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
        _print_json(out)
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
        _print_json({"run": str(result.path), "requested": result.total, "answered": result.answered, "failed": result.failed,
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
    print(_table(rows, ["", "accuracy", "right", "95% interval", "dialogues"]))


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
    print(_table(rows, headers))
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
        _print_json({"run": str(result.path), "shards": result.shards, "samples": result.samples, "failed": result.failed, "metrics": metrics.to_dict()})
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
            _print_json(scored if len(scored) > 1 else scored[0])
        else:
            for path, metrics in zip(args.runs, scored):
                print(f"run folder: {path}")
                _print_toolrl_metrics(metrics)
        return 0
    results = [score_run(path, data=args.data, retriever=args.retriever, rescore=args.rescore) for path in args.runs]
    if args.json:
        _print_json([m.to_dict() for m in results] if len(results) > 1 else results[0].to_dict())
    else:
        for path, m in zip(args.runs, results):
            _print_metrics(m, folder=path)
    return 0


def _show_table(table: Any, args: argparse.Namespace) -> int:
    """Print a DataFrame as Markdown (or JSON records with ``--json``), saving it first with ``--save NAME``."""
    from apibank_lib.core.paths import results_dir
    from apibank_lib.data.datasets import data_source
    from apibank_lib.report.analysis import save_table

    if args.save:
        # The data source's own folder (results/bundled/, results/<release>/): one source never overwrites another's.
        paths = save_table(table, args.save, results_dir(data_source(getattr(args, "data", None))))
        _warn(f"saved {paths['csv']} and {paths['md']}")
    if args.json:
        _print_json(json.loads(table.to_json(orient="records")))
    else:
        print(table.to_markdown(index=False))
    return 0


def cmd_retrieval(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.report.retrieval import gold_searches, retrieval_queries, retrieval_table

    bench = load_benchmark(args.data)
    if args.sets:
        return _retrieval_sets(bench, args)
    queries = gold_searches(bench) if args.gold else retrieval_queries(bench)
    if not queries:
        raise ConfigError(f"{bench.root} has no gold ToolSearcher step to measure retrieval on")
    table = retrieval_table(bench, args.retriever or None, queries=queries, by=args.by, n_boot=args.n_boot)
    return _show_table(table, args)


def _retrieval_sets(bench: Any, args: argparse.Namespace) -> int:
    """``apibank retrieval --sets``: every retriever on each query set, and the default the written rule picks."""
    from apibank_lib.env.protocols import V2
    from apibank_lib.report.analysis import save_table
    from apibank_lib.report.retrieval import choose_default, independent_sets, set_table

    sets = independent_sets(bench, corpus=args.corpus)
    table = set_table(sets, args.retriever or None, n_boot=args.n_boot)
    name, why = choose_default(table)
    if args.save:
        paths = save_table(table, args.save)
        _warn(f"saved {paths['csv']} and {paths['md']}")
    if args.json:
        _print_json(
            {
                "sets": [{"set": qs.name, "queries": len(qs.queries), "independent": qs.independent, "about": qs.about} for qs in sets],
                "table": json.loads(table.to_json(orient="records")),
                "default": name,
                "why": why,
                "v2_retriever": V2.retriever,
            }
        )
        return 0
    for qs in sets:
        print(f"{qs.name}: {len(qs.queries)} queries, independent of the tuning: {qs.independent} ({qs.about})")
    print()
    print(table.astype(object).where(table.notna(), "").to_markdown(index=False))  # blank where no comparison applies
    print()
    print(f"default by the rule: {name}: {why}")
    if name != V2.retriever:
        print(f"(the v2 protocol's retriever is {V2.retriever})")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from apibank_lib.report.analysis import compare_runs, load_runs
    from apibank_lib.runs.costs import parse_price
    from apibank_lib.runs.toolrl import is_toolrl_run, toolrl_table

    toolrl = [is_toolrl_run(r) for r in args.runs]
    if any(toolrl):
        if not all(toolrl):
            raise ConfigError("ToolRL runs and release runs are judged by different protocols on different files: compare them apart")
        return _show_table(toolrl_table(args.runs), args)  # beside ToolRL's published figures, saying on which entries
    price = parse_price(args.price_per_mtok) if args.price_per_mtok else None
    return _show_table(compare_runs(load_runs(args.runs), price_per_mtok=price), args)


def cmd_toolrl_cross(args: argparse.Namespace) -> int:
    """ToolRL runs' answers judged again by execution under v2 on the release they come from: the cross-table."""
    import pandas as pd

    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.report.toolrl_cross import cross_judge, cross_table

    release = load_benchmark(args.data)
    tables, rows = [], []
    for run in args.runs:
        judged = cross_judge(run, release)
        model = json.loads((Path(run) / "config.json").read_text(encoding="utf-8"))["model"]
        tables.append(cross_table(judged, model))
        rows.append(judged.assign(model=model))
    if args.examples and not args.json:
        # Examples come from the user's copy of the release and are printed, never saved.
        every = pd.concat(rows)
        kept = every[every["kind"].notna() & every["mapped"] & (every["excluded"] == "")]
        for kind, part in kept.groupby("kind", sort=True):
            print(f"{kind} ({len(part)}):")
            for r in part.head(args.examples).itertuples():
                print(f"  {r.model} {r.key}: {r.difference or r.reason}")
        print()
    return _show_table(pd.concat(tables, ignore_index=True), args)


def cmd_errors(args: argparse.Namespace) -> int:
    from apibank_lib.report.analysis import error_counts, load_runs

    return _show_table(error_counts(load_runs(args.runs), mapped=not args.ours), args)


def cmd_check_train(args: argparse.Namespace) -> int:
    from apibank_lib.data.check_train import check_corpus

    report = check_corpus(args.paths)
    retrieval = None
    if args.search:
        from apibank_lib.data.check_train import check_retrieval

        retrieval = check_retrieval(report)
    if args.json:
        out = report.counts()
        if retrieval is not None:
            out["searches"] = len(retrieval)
            out["searches_retrieving_their_api"] = int(retrieval["hit"].sum()) if len(retrieval) else 0
        out["rejections"] = [{"where": r.where, "id": r.dialogue_id, "reason": r.reason, "message": r.message} for r in report.rejected]
        out["api_rejections"] = [{"where": r.where, "api": r.dialogue_id, "message": r.message} for r in report.api_rejections]
        _print_json(out)
    else:
        for r in report.api_rejections + report.rejected:
            print(r)
        c = report.counts()
        print(
            f"{c['accepted']} of {c['dialogues']} dialogues accepted ({100 * c['rejection_rate']:.1f}% rejected), "
            f"{c['apis']} APIs in {c['domains']} domains ({c['apis_called']} called by accepted dialogues); by ability: "
            + ", ".join(f"{a} {n}" for a, n in c["accepted_by_ability"].items())
        )
        if report.rejected:
            print(report.table().to_markdown(index=False))
        if retrieval is not None and len(retrieval):
            print(
                f"ToolSearcher (all-MiniLM-L6-v2 over the corpus's {len(report.schemas)} APIs) ranks the intended API first "
                f"for {int(retrieval['hit'].sum())} of {len(retrieval)} searches ({100 * retrieval['hit'].mean():.1f}%)"
            )
    return 1 if report.rejected or report.api_rejections else 0


def cmd_synthesize(args: argparse.Namespace) -> int:
    from apibank_lib.synthesis.pipeline import SynthesisConfig, run_pipeline
    from apibank_lib.synthesis.single import run_single_agent

    config = SynthesisConfig(
        backend=args.model,
        out=args.out,
        n_domains=args.domains,
        apis_per_domain=args.apis_per_domain,
        dialogues_per_domain=args.dialogues_per_domain,
        concurrency=args.concurrency,
        seed=args.seed,
        max_tokens=args.max_tokens,
        form=args.form,
        temperature=args.temperature,
        lists=not args.no_lists,
        retries=args.retries,
        domains_asked=args.domains_asked,
        apart_from=args.apart_from or (),
        clarify=not args.no_clarify,
        request_values=args.request_values,
        feedback=args.feedback,
    )
    if args.single_agent is not None:
        report = run_single_agent(config, examples=args.single_agent, token_budget=args.token_budget)
    else:
        report = run_pipeline(config)
    if args.json:
        out = report.counts()
        out["rejections"] = [{"stage": r.stage, "key": r.key, "reason": r.reason, "message": r.message} for r in report.rejections]
        _print_json(out)
    else:
        print(report.table().to_markdown(index=False))
        print(f"{len(report.accepted)} dialogues accepted, in {len(report.corpus_files)} corpus files under {args.out}/corpus")
    return 0


def cmd_convert_toolalpaca(args: argparse.Namespace) -> int:
    from apibank_lib.data.formats.toolalpaca import convert, read_toolalpaca, write_converted

    result = convert(read_toolalpaca(args.src))
    written = write_converted(result, args.out_dir)
    if args.json:
        _print_json(result.counts())
        return 0
    c = result.counts()
    made = f"{c['samples']} samples" if result.kind == "eval" else f"{c['dialogues']} dialogues"
    refs = c["references"]
    print(f"{args.src} ({result.kind}): {made}, {c['functions']} functions; wrote {', '.join(p.name for p in written)} to {args.out_dir}")
    print(
        f"step references: {refs['total']} in {refs['steps']} steps, {refs['unresolved']} unresolved, "
        f"{refs['with_value']} with a value"
    )
    print(_table([list(r) for r in result.rows()], ["unit", "measure", "count"]))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from apibank_lib.training.recipe import TrainConfig
    from apibank_lib.training.workflow import train_model

    paths = list(args.corpus or []) + [p for group in args.source or [] for p in group]
    if not paths:
        raise ConfigError("apibank train needs corpus paths, or --source groups")
    if args.source and args.corpus:
        raise ConfigError("give either corpus paths or --source groups, not both")
    data = {"format": args.format, "paths": paths, "examples": args.examples, "mix": args.mix, "seed": args.seed}
    if args.source:
        data["sources"] = [list(group) for group in args.source]  # absent otherwise, as in older training.json files
    if args.prompt_modes:
        data["modes"] = args.prompt_modes  # absent otherwise, so older training.json files read the same
    from apibank_lib.training.export import parse_api_order

    parse_api_order(args.api_order)  # a bad value fails here, before any model is loaded
    if args.api_order != "appearance":
        data["api_order"] = args.api_order  # absent for the default, so older training.json files read the same
    config = TrainConfig(
        out=args.out, model=args.model, method=args.method, rank=args.rank, alpha=args.alpha, lr=args.lr, epochs=args.epochs,
        accumulate=args.accumulate, warmup=args.warmup, max_len=args.max_len, seed=args.seed, threads=args.threads, max_steps=args.max_steps,
        init_adapter=args.init_adapter, engine=args.engine, save_every=args.save_every, data=data,
        command="apibank " + shlex.join(sys.argv[1:]),
    )
    result = train_model(config, progress=not args.json, note=_warn)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(f"trained {result.steps} steps on {result.examples_seen} examples in {result.seconds:.0f} s; final loss {result.final_loss}; saved to {result.out}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from apibank_lib.report.reproduce import parse_param, reproduce

    done = reproduce(
        profile="full" if args.full else args.profile,
        data=args.data,
        protocol=args.protocol,
        models=args.models,
        only=args.only or (),
        params=dict(parse_param(p) for p in args.param or ()),
        committed=args.committed,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    summary = {
        "executed": [str(p) for p in done.executed],
        "seconds": done.seconds,
        "tables": str(done.results),
        "figures": str(done.figures),
        "against_committed": done.against_committed,
    }
    if args.json:
        _print_json(summary)
        return 0
    print(f"{len(done.executed)} notebooks executed in {sum(done.seconds.values()):.0f} s; executed copies in {done.executed[0].parent}")
    print(f"tables (CSV and Markdown): {done.results}")
    print(f"figures (PNG):             {done.figures}")
    if done.against_committed:
        same, different, new = (done.against_committed[k] for k in ("same", "different", "not committed"))
        print(
            f"against the committed tables: {len(same)} the same, {len(different)} different, {len(new)} not committed"
            + (f" (different: {', '.join(different)})" if different else "")
        )
        print("(a quick profile's model rows rest on fewer samples than the committed standard profile's)")
    main_table = done.results / "main_table_compact.md"
    if main_table.is_file():
        print("\nThe main table (measured here and reported by the paper):\n")
        print(main_table.read_text(encoding="utf-8"))
    return 0


# --- wiring ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``apibank`` command."""
    from apibank_lib.env.protocols import PROTOCOLS, V2
    from apibank_lib.grading.toolrl import TOOLRL
    from apibank_lib.prompting.chat import TOOL_CHOICES
    from apibank_lib.prompting.modes import MODEL_PROMPT_MODES
    from apibank_lib.report.reproduce import PROFILES
    from apibank_lib.retrieval.retrievers import RETRIEVERS

    protocols = list(PROTOCOLS)
    by_protocol = ", ".join(f"{p.name}: {p.retriever}" for p in PROTOCOLS.values())

    def retriever(p: argparse.ArgumentParser, default: str = f"the protocol's ({by_protocol})") -> None:
        p.add_argument(
            "--retriever",
            choices=list(RETRIEVERS),
            default=None,
            help=f"what ToolSearcher searches with (default: {default})",
        )
    parser = argparse.ArgumentParser(
        prog="apibank", description="API-Bank tool-use benchmark: data, sandbox, search, runs and grading."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--data",
            default=None,
            help="benchmark root (default: the bundled benchmark; or an official API-Bank release)",
        )
        p.add_argument("--json", action="store_true", help="machine-readable JSON output")

    p = sub.add_parser("stats", help="corpus statistics, with the paper's figures beside ours")
    common(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("replay", help="judge every gold call as a prediction (the protocol's ceiling)")
    common(p)
    p.add_argument("--protocol", choices=protocols, default=V2.name)
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=None)
    p.add_argument("--verbose", action="store_true", help="list every failed sample (default: a summary per API)")
    retriever(p)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("search", help="rank APIs for keywords with the ToolSearcher's embedding search")
    common(p)
    p.add_argument("keywords")
    p.add_argument("-k", type=int, default=5, help="how many APIs to list")
    p.add_argument(
        "--level", type=int, choices=[1, 3], default=1, help="search the level-1/2 (default) or level-3 tool set"
    )
    retriever(p, default=V2.retriever)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("call", help='execute one call such as "[GetToday()]" in a fresh sandbox and print its result')
    common(p)
    p.add_argument("call")
    p.add_argument(
        "--level", type=int, choices=[1, 2, 3], default=1, help="which tool set and databases (1 and 2 share one)"
    )
    p.add_argument("--protocol", choices=protocols, default=V2.name, help="argument conversion rules")
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("apis", help="list the APIs of a level with their parameters")
    common(p)
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1, help="which tool set (1 and 2 share one)")
    p.set_defaults(func=cmd_apis)

    p = sub.add_parser(
        "validate", help="check a benchmark (an official release: format and replay; ours: every authoring rule)"
    )
    common(p)
    p.add_argument("--min-uses", type=int, default=2, help="our benchmark: minimum uses of each level-1/2 tool")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "build-data", help="build the bundled benchmark from data/src, recording gold results with our tools"
    )
    common(p)
    p.add_argument("--src", default=None, help="source folder (default: data/src)")
    p.add_argument("--check", action="store_true", help="only verify that the built files are up to date")
    p.add_argument(
        "--preview", default=None, metavar="FILE", help="execute one source file and print every call's result"
    )
    p.set_defaults(func=cmd_build_data)

    p = sub.add_parser("run", help="run a model over the benchmark into a resumable run folder, then score it")
    common(p)
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
        "--protocol", choices=[*protocols, TOOLRL.name], default=None,
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
    retriever(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("merge", help="join the N shard folders of one run (apibank run --shard I/N) into one, then score it")
    p.add_argument("folders", nargs="+", help="the shard folders, in any order")
    p.add_argument("--out", default=None, help="the merged folder (default: the shards' folder name without -shard-IofN)")
    p.add_argument("--data", default=None, help="where the run's data is now, if it moved")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("compare", help="runs side by side: labels, accuracy and ROUGE-L per level, coverage, cost")
    p.add_argument("runs", nargs="+")
    p.add_argument(
        "--price-per-mtok", metavar="IN,OUT", default=None,
        help="price per million tokens in and out (e.g. 0.15,0.60): adds each run's price",
    )
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/ (results/bundled/ for the bundled data)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "toolrl-cross",
        help="ToolRL runs' answers judged also by execution (v2) on the release they come from: exact match against execution",
    )
    p.add_argument("runs", nargs="+", help="run folders made by apibank run --data <ToolRL folder>")
    p.add_argument("--data", required=True, help="the release copy the ToolRL files were made from")
    p.add_argument("--examples", type=int, default=3, help="entries to name per kind of disagreement (0: none)")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_toolrl_cross)

    p = sub.add_parser("errors", help="wrong API calls per error category, counts and shares, for each run")
    p.add_argument("runs", nargs="+")
    p.add_argument("--ours", action="store_true", help="our categories as they are (default: the paper's seven)")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/ (results/bundled/ for the bundled data)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_errors)

    p = sub.add_parser("retrieval", help="hit@1, hit@3 and MRR of retrievers on the benchmark's ToolSearcher queries")
    common(p)
    p.add_argument("--retriever", action="append", choices=list(RETRIEVERS), help="a retriever to measure (repeat; default: all)")
    p.add_argument("--by", nargs="+", default=["split"], choices=["split", "kind", "level", "domain"], help="group rows by these")
    p.add_argument("--gold", action="store_true", help="only the gold ToolSearcher steps (no rewordings)")
    p.add_argument(
        "--sets",
        action="store_true",
        help="per query set (training corpus, gold, rewordings held-out and tuning) and pooled, each against the "
        "paper's recipe, and the default retriever the written rule picks",
    )
    p.add_argument("--corpus", default=None, help="with --sets: the training corpus (default: data/train/corpus)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates of the intervals")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/ (results/bundled/ for the bundled data)")
    p.set_defaults(func=cmd_retrieval)

    p = sub.add_parser("reproduce", help="execute every numbered notebook with papermill: all tables and figures")
    p.add_argument(
        "--profile", choices=list(PROFILES), default="quick",
        help="quick: reference backends and the 0.5B instruct model (about 20 min); standard: every default model, "
        "the committed results; full: every sample of every model",
    )
    p.add_argument("--full", action="store_true", help="the same as --profile full")
    p.add_argument("--models", nargs="+", default=None, help="models to run (default: the profile's)")
    p.add_argument("--data", default=None, help="an official release instead of the bundled benchmark")
    p.add_argument("--protocol", choices=protocols, default=None)
    p.add_argument("--only", nargs="+", default=None, metavar="NN", help="only these notebooks, by number (e.g. 00 03)")
    p.add_argument(
        "--param", action="append", metavar="NAME=VALUE",
        help="a notebook parameter over the profile's, for every notebook that declares it (repeatable; e.g. CALL_LIMIT=None)",
    )
    p.add_argument(
        "--committed",
        action="store_true",
        help="write the tables and figures over the committed ones (results/, figures/) instead of out/ (ignored by git)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("train", help="fine-tune a model (LoRA by default) on training corpus files")
    p.add_argument("corpus", nargs="*", help="corpus YAML files or folders (judged by the tester first), or ToolAlpaca files")
    p.add_argument(
        "--source", nargs="+", action="append", metavar="PATH",
        help="a group of corpus paths; with several --source groups, each gives an equal share of --examples "
        "(e.g. AI-written against model-made, half and half)",
    )
    p.add_argument("--format", choices=("corpus", "toolalpaca"), default="corpus", help="toolalpaca: ToolAlpaca training files")
    p.add_argument("--out", required=True, help="output folder: adapter, checkpoint (resumes), loss.csv, training.json")
    p.add_argument("--model", default="gemma-3-270m")
    p.add_argument("--method", choices=("lora", "full"), default="lora")
    p.add_argument("--examples", type=int, default=None, help="how many examples to draw (default: all)")
    p.add_argument("--mix", default=None, help="group shares of the draw, e.g. L1/api=0.6,L1/response=0.4 (default: mostly level-1 calls)")
    p.add_argument(
        "--prompt-modes", default=None, metavar="MODES",
        help="render examples through the model's chat template, e.g. chat=0.7,paper=0.3 (the evaluation's chat "
        "turns and the paper's text layout); default: completion examples, for base models",
    )
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--accumulate", type=int, default=8)
    p.add_argument("--warmup", type=int, default=10, help="warm-up optimiser steps (learning rate rising linearly)")
    p.add_argument("--max-len", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--init-adapter", default=None, help="continue training this LoRA adapter folder (a second stage)")
    p.add_argument(
        "--api-order", default="appearance",
        help="the order each prompt describes its APIs in: appearance (first call first), shuffled (a seeded shuffle "
        "per sample, so that the model cannot learn to call the first API described), or one per prompt mode "
        "(chat=appearance,paper=shuffled)",
    )
    p.add_argument("--engine", choices=("trl", "loop"), default="trl", help="trl: TRL's SFTTrainer (Accelerate); loop: the single-device reference loop")
    p.add_argument("--save-every", type=int, default=20, help="optimiser steps between checkpoints")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("check-train", help="the synthesis tester on training corpus files: accepted, rejected and why")
    p.add_argument("paths", nargs="+", help="corpus YAML files or folders of them")
    p.add_argument("--search", action="store_true", help="also run the real ToolSearcher on every search of the corpus")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check_train)

    p = sub.add_parser("synthesize", help="the five-agent pipeline: a model writes domains, APIs, requests and dialogues; the tester judges them")
    p.add_argument("--model", required=True, help=model_help())
    p.add_argument("--out", required=True, help="output folder: per-stage journals (resumable) and corpus/<domain>.yaml")
    p.add_argument("--domains", type=int, default=10, help="how many domains to use")
    p.add_argument(
        "--domains-asked", type=int, default=None,
        help="domains asked for in the first answer; more are asked one area of life at a time up to --domains (a later run with more --domains reuses the answers)",
    )
    p.add_argument("--apis-per-domain", type=int, default=6)
    p.add_argument("--dialogues-per-domain", type=int, default=15)
    p.add_argument("--concurrency", type=int, default=1, help="parallel requests (backends that allow it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=1536)
    p.add_argument(
        "--form", choices=["json", "yaml"], default=None,
        help="how the agents answer: json (constrained by each stage's schema) or yaml; default json where the backend "
        "constrains output (llama.cpp, OpenAI-compatible servers)",
    )
    p.add_argument(
        "--single-agent", type=int, default=None, metavar="N",
        help="the baseline instead: one agent writes N whole examples (domain, APIs, dialogue), judged by the same tester",
    )
    p.add_argument("--token-budget", type=int, default=None, help="with --single-agent: stop once this many tokens are spent")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of every answer (0: greedy)")
    p.add_argument("--retries", type=int, default=0, help="ask again this many times when the parser refuses an answer (sampling only)")
    p.add_argument(
        "--no-lists", action="store_true",
        help="do not show the agents what to keep away from (evaluated areas, taken domains, earlier requests): small "
        "models copy them; the pipeline filters instead",
    )
    p.add_argument(
        "--request-values", action="store_true",
        help="the request agent gives a value for each required input first, then a request that says them all; "
        "the dialogue's calls take exactly those values",
    )
    p.add_argument(
        "--feedback", action="store_true",
        help="a retry's prompt says why the try before was refused (chat mode; with --retries)",
    )
    p.add_argument(
        "--no-clarify", action="store_true",
        help="in the JSON form, dialogues call at once (no question and answer before the calls): small models write "
        "the calls as text into that question",
    )
    p.add_argument(
        "--apart-from", nargs="+", default=None, metavar="CORPUS",
        help="corpus files or folders to stay apart from as from the evaluation (their APIs, requests and domains), "
        "e.g. data/train/corpus",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_synthesize)

    p = sub.add_parser("convert-toolalpaca", help="convert a ToolAlpaca training or evaluation file into our format")
    p.add_argument("src", help="a ToolAlpaca JSON file (a list of API entries)")
    p.add_argument("out_dir", help="folder for dialogues.jsonl, apis.json, samples.jsonl (evaluation) and report.json")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=cmd_convert_toolalpaca)

    p = sub.add_parser("score", help="score run folders (never queries a model)")
    p.add_argument("runs", nargs="+")
    p.add_argument("--data", default=None, help="where the runs' data is now, if it moved")
    p.add_argument(
        "--rescore", action="store_true",
        help="replace scores made under another version of the run's protocol (refused otherwise, with both named)",
    )
    p.add_argument("--json", action="store_true")
    retriever(p, default="the run's, else its protocol's")
    p.set_defaults(func=cmd_score)
    return parser


def _fail(args: argparse.Namespace, kind: str, message: str) -> None:
    if getattr(args, "json", False):
        _print_json({"error": kind, "message": message})
    else:
        print(f"apibank: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``apibank`` command; returns the exit status."""
    from apibank_lib.runs.runner import RunStopped

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except RunStopped as exc:
        resume = "apibank " + shlex.join(argv)
        _fail(
            args,
            type(exc).__name__,
            f"{exc}. {exc.saved} prediction(s) are saved in {exc.folder}; resume with: {resume}",
        )
        return 130 if isinstance(exc.__cause__, KeyboardInterrupt) else 1
    except BackendError as exc:
        _fail(args, type(exc).__name__, str(exc))
        return 1
    except ApibankError as exc:
        _fail(args, type(exc).__name__, str(exc))
        return 2
    except KeyboardInterrupt:
        print("apibank: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `apibank replay --verbose | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, the traceback on request
        if os.environ.get("APIBANK_DEBUG"):
            raise
        _fail(args, "InternalError", f"internal error ({type(exc).__name__}: {exc}); set APIBANK_DEBUG=1 to see where")
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

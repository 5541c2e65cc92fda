"""The ``apibank`` command (also ``python -m apibank_lib``).

Every command takes ``--json`` for machine-readable output and ``--data PATH``
for another benchmark root (our bundled data by default, or an official
API-Bank release).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from apibank_lib.errors import ApibankError, ConfigError

__all__ = ["main", "build_parser"]


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _progress(desc: str):  # noqa: ANN202 - returns a wrapper usable as an iterable filter
    from tqdm import tqdm

    return lambda it: tqdm(it, desc=desc, unit="call", file=sys.stderr, disable=None, leave=False)


# --- commands ------------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    from apibank_lib.datasets import load_benchmark, statistics
    from apibank_lib.reported import OFFICIAL_RELEASE_COUNTS, PAPER_CORPUS, SOURCE
    from apibank_lib.tools.registry import DOMAINS

    bench = load_benchmark(args.data)
    stats = statistics(bench, DOMAINS)
    stats["data"] = str(bench.root)
    stats["official_release"] = bench.official
    stats["data_fingerprint"] = bench.fingerprint
    stats["reported"] = {"source": SOURCE, "evaluation": PAPER_CORPUS["evaluation"], "official_release_counts": OFFICIAL_RELEASE_COUNTS}
    if args.json:
        _print_json(stats)
        return 0
    keys = [
        ("dialogues", "dialogues / items"),
        ("dialogues_with_calls", "with >= 1 API call"),
        ("user_turns", "user turns"),
        ("ai_turns", "AI turns"),
        ("gold_calls", "gold API calls"),
        ("toolsearcher_calls", "of which ToolSearcher"),
        ("api_call_samples", "API-call samples"),
        ("duplicate_api_samples", "duplicate API-call samples"),
        ("response_samples", "response samples"),
        ("distinct_apis", "distinct APIs called"),
        ("single_call_dialogues", "single-call dialogues"),
        ("multi_call_dialogues", "multi-call dialogues"),
    ]
    rows = []
    for key, label in keys:
        row: list[Any] = [label]
        for lv in ("1", "2", "3"):
            ours = stats["levels"][lv].get(key, "")
            official = OFFICIAL_RELEASE_COUNTS[lv].get(key)
            row.append(f"{ours}" + (f" ({official})" if official is not None else ""))
        rows.append(row)
    print(f"Benchmark: {bench.root}{' (official release)' if bench.official else ''}")
    print(_table(rows, ["per level: ours (official release)", "L1 Call", "L2 Retrieve+Call", "L3 Plan+Retrieve+Call"]))
    t, p = stats["total"], PAPER_CORPUS["evaluation"]
    total_rows = [
        ["domains", t.get("domains", ""), p["domains"]],
        ["distinct APIs called", t["distinct_apis"], p["apis"]],
        ["dialogues", t["dialogues"], p["dialogues"]],
        ["turns (user utterances)", t["turns"], p["turns"]],
        ["average turns per dialogue", t["avg_turns_per_dialogue"], p["avg_turns_per_dialogue"]],
        ["gold API calls", t["gold_calls"], p["api_calls"]],
        ["single-call dialogues", t["single_call_dialogues"], p["single_call_instances"]],
        ["multi-call dialogues", t["multi_call_dialogues"], p["multi_call_instances"]],
    ]
    print()
    print(_table(total_rows, ["totals", "ours", "paper (reported)"]))
    print(f"\nReported figures: {SOURCE}. Official-release counts: computed from the release with the original cutter.")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from apibank_lib.datasets import load_benchmark
    from apibank_lib.protocols import replay

    bench = load_benchmark(args.data)
    levels = [args.level] if args.level else [1, 2, 3]
    report = replay(bench, args.protocol, levels=levels, progress=None if args.json else _progress("replay"))
    if args.json:
        _print_json(report)
        return 0
    rows = []
    for lv, r in report["levels"].items():
        pct = 100.0 * r["correct"] / r["gold_calls"] if r["gold_calls"] else 0.0
        rows.append([lv, r["gold_calls"], r["correct"], f"{pct:.1f}%", r["samples"], r["samples_correct"]])
    print(f"Protocol {report['protocol']} on {report['data']}")
    print(_table(rows, ["level", "gold calls", "judged correct", "rate", "API-call samples", "samples correct"]))
    for lv, r in report["levels"].items():
        for f in r["failures"]:
            dup = " (duplicate sample)" if f["duplicate"] else ""
            print(f"  L{lv} {f['dialogue']} #{f['sample_id']} {f['api_name']}{dup}: {f['category']}: {f['reason']}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from apibank_lib.datasets import load_benchmark
    from apibank_lib.search import default_searcher
    from apibank_lib.tools.registry import level3_toolset, level12_toolset

    bench = load_benchmark(args.data)
    toolset = level3_toolset().with_metadata(bench.metadata_l3) if args.level == 3 else level12_toolset().with_metadata(bench.metadata_l12)
    ranked = default_searcher(toolset.searchable()).search(args.keywords, args.k)
    if args.json:
        _print_json([{"name": s.name, "score": round(score, 6), "description": s.description} for s, score in ranked])
        return 0
    print(_table([[i + 1, s.name, f"{score:.4f}", s.description] for i, (s, score) in enumerate(ranked)], ["rank", "API", "cosine", "description"]))
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    from apibank_lib.datasets import load_benchmark
    from apibank_lib.protocols import Grader

    bench = load_benchmark(args.data)
    grader = Grader(bench, args.protocol)
    box = grader.new_sandbox(args.level)
    result = box.execute(args.call)
    _print_json(result.to_dict())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from apibank_lib.validate import validate

    problems = validate(args.data, min_uses=args.min_uses)
    if args.json:
        _print_json({"valid": not problems, "problems": [{"path": p.path, "line": p.line, "message": p.message} for p in problems]})
    else:
        for p in problems:
            print(p)
        print("valid" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def cmd_build_data(args: argparse.Namespace) -> int:
    from apibank_lib.authoring import build, preview

    if args.preview:
        print(preview(args.preview, args.data))
        return 0
    report = build(args.src, args.data, check=args.check)
    summary = {"dialogues": {str(k): v for k, v in sorted(report.dialogues.items())}, "level3_items": report.items, "files": len(report.files), "checked": args.check}
    if args.json:
        _print_json(summary)
    else:
        verb = "up to date" if args.check else "written"
        print(f"{summary['files']} files {verb}: level-1 {report.dialogues.get(1, 0)}, level-2 {report.dialogues.get(2, 0)} dialogues, level-3 {report.items} items")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from apibank_lib.runner import RunConfig, run
    from apibank_lib.scoring import score_run

    options: dict[str, Any] = {}
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--option expects key=value, got {item!r}")
        options[key] = json.loads(value) if value[:1] in "0123456789-[{tf" and value not in ("tools",) else value
    levels = tuple(args.level) if args.level else (1, 2, 3)
    config = RunConfig(
        model=args.model,
        levels=levels,
        protocol=args.protocol,
        data=args.data,
        limit=args.limit,
        out=args.out,
        concurrency=args.concurrency,
        seed=args.seed,
        shots=args.shots,
        max_tokens=args.max_tokens,
        level3=args.level3,
        max_steps=args.max_steps,
        native_tools=args.native_tools,
        retry_failed=args.retry_failed,
        backend_options=options,
    )
    result = run(config, progress=not args.json)
    metrics = score_run(result.path)
    out = {"run": str(result.path), "requested": result.total, "skipped": result.skipped, "answered": result.answered, "failed": result.failed, "elapsed_s": round(result.elapsed_s, 2), "metrics": metrics}
    if args.json:
        _print_json(out)
    else:
        print(f"run folder: {result.path}")
        print(f"{result.answered} answered, {result.failed} failed, {result.skipped} already done, in {result.elapsed_s:.1f} s")
        _print_metrics(metrics)
    return 0


def _print_metrics(metrics: dict[str, Any]) -> None:
    rows = []
    for lv, m in metrics["levels"].items():
        acc = "" if m["api_accuracy"] is None else f"{100 * m['api_accuracy']:.2f}% ({m['api_correct']}/{m['api_samples']})"
        rouge = "" if m["rouge_l"] is None else f"{m['rouge_l']:.4f} (n={m['response_samples']})"
        ep = f"{100 * m['episode_success_rate']:.1f}% ({m['episodes_succeeded']}/{m['episodes']})" if "episodes" in m else ""
        rows.append([lv, acc, rouge, ep, m["backend_errors"]])
    o = metrics["overall"]
    rows.append(["all", "" if o["api_accuracy"] is None else f"{100 * o['api_accuracy']:.2f}%", "" if o["rouge_l"] is None else f"{o['rouge_l']:.4f}", "", ""])
    print(f"{metrics['model']} under protocol {metrics['protocol']}")
    print(_table(rows, ["level", "API-call accuracy", "ROUGE-L", "episodes solved", "backend errors"]))


def cmd_score(args: argparse.Namespace) -> int:
    from apibank_lib.scoring import score_run

    results = [score_run(path) for path in args.runs]
    if args.json:
        _print_json(results if len(results) > 1 else results[0])
    else:
        for m in results:
            _print_metrics(m)
    return 0


# --- wiring ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``apibank`` command."""
    parser = argparse.ArgumentParser(prog="apibank", description="API-Bank tool-use benchmark: data, sandbox, search and grading.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", default=None, help="benchmark root (default: the bundled benchmark; or an official API-Bank release)")
        p.add_argument("--json", action="store_true", help="machine-readable JSON output")

    p = sub.add_parser("stats", help="corpus statistics, with the paper's figures beside ours")
    common(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("replay", help="judge every gold call as a prediction (the protocol's ceiling)")
    common(p)
    p.add_argument("--protocol", choices=["v2", "paper"], default="v2")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=None)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("search", help="rank APIs for keywords with the ToolSearcher's embedding search")
    common(p)
    p.add_argument("keywords")
    p.add_argument("-k", type=int, default=5, help="how many APIs to list")
    p.add_argument("--level", type=int, choices=[1, 3], default=1, help="search the level-1/2 (default) or level-3 tool set")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("call", help="execute one call such as \"[GetToday()]\" in a fresh sandbox and print its result")
    common(p)
    p.add_argument("call")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1, help="which tool set and databases (1 and 2 share one)")
    p.add_argument("--protocol", choices=["v2", "paper"], default="v2", help="argument conversion rules")
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("validate", help="check a benchmark: files, gold calls, replay, duplicates, coverage, tokens, dates")
    common(p)
    p.add_argument("--min-uses", type=int, default=2, help="minimum uses of each level-1/2 tool")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("build-data", help="build the bundled benchmark from data/src, recording gold results with our tools")
    common(p)
    p.add_argument("--src", default=None, help="source folder (default: data/src)")
    p.add_argument("--check", action="store_true", help="only verify that the built files are up to date")
    p.add_argument("--preview", default=None, metavar="FILE", help="execute one source file and print every call's result")
    p.set_defaults(func=cmd_build_data)

    p = sub.add_parser("run", help="run a model over the benchmark into a resumable run folder, then score it")
    common(p)
    p.add_argument("--model", required=True, help="llamacpp:gemma-3-270m, openai:<model>@<base_url>, hf:<path>, oracle, no-call, heuristic")
    p.add_argument("--level", type=int, choices=[1, 2, 3], action="append", help="repeat for several levels (default: all)")
    p.add_argument("--limit", type=int, default=None, help="at most N samples (level-3 episodes) per level")
    p.add_argument("--out", default=None, help="run folder (default: runs/<model>-<protocol>-<settings hash>)")
    p.add_argument("--protocol", choices=["v2", "paper"], default="v2")
    p.add_argument("--concurrency", type=int, default=1, help="parallel requests (HTTP backends)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shots", type=int, choices=[0, 1], default=0, help="prepend one worked example (helps small base models)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--level3", choices=["steps", "loop", "both"], default="steps", help="teacher-forced steps, agent episodes, or both")
    p.add_argument("--max-steps", type=int, default=12, help="agent-loop step limit")
    p.add_argument("--native-tools", action="store_true", help="native tool calling (openai backend, mode=tools)")
    p.add_argument("--retry-failed", action="store_true", help="re-run samples whose backend call failed")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="backend option, e.g. mode=tools, timeout_s=60, adapter=path")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score run folders (never queries a model)")
    p.add_argument("runs", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_score)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``apibank`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ApibankError as exc:
        if getattr(args, "json", False):
            _print_json({"error": type(exc).__name__, "message": str(exc)})
        else:
            print(f"apibank: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

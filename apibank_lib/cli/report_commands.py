"""The commands that compare and report: ``compare``, ``toolrl-cross``, ``errors``, ``retrieval``, ``reproduce``,
``transfer``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from apibank_lib.cli.options import PROTOCOL_NAMES, add_common, add_json
from apibank_lib.cli.output import print_json, show_table, warn
from apibank_lib.core.errors import ConfigError

__all__ = ["cmd_retrieval", "cmd_compare", "cmd_toolrl_cross", "cmd_twin_gap", "cmd_errors", "cmd_reproduce", "cmd_transfer", "add_commands"]


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
    return show_table(table, args)


def _retrieval_sets(bench: Any, args: argparse.Namespace) -> int:
    """``apibank retrieval --sets``: every retriever on each query set, and the default the written rule picks."""
    from apibank_lib.env.protocols import V2
    from apibank_lib.report.files import save_table
    from apibank_lib.report.retrieval import choose_default, independent_sets, set_table

    sets = independent_sets(bench, corpus=args.corpus)
    table = set_table(sets, args.retriever or None, n_boot=args.n_boot)
    name, why = choose_default(table)
    if args.save:
        paths = save_table(table, args.save)
        warn(f"saved {paths['csv']} and {paths['md']}")
    if args.json:
        print_json(
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
    from apibank_lib.report.loading import load_runs
    from apibank_lib.report.main_table import compare_runs
    from apibank_lib.runs.costs import parse_price
    from apibank_lib.runs.toolrl import is_toolrl_run, toolrl_table

    toolrl = [is_toolrl_run(r) for r in args.runs]
    if any(toolrl):
        if not all(toolrl):
            raise ConfigError("ToolRL runs and release runs are judged by different protocols on different files: compare them apart")
        return show_table(toolrl_table(args.runs), args)  # beside ToolRL's published figures, saying on which entries
    price = parse_price(args.price_per_mtok) if args.price_per_mtok else None
    return show_table(compare_runs(load_runs(args.runs), price_per_mtok=price), args)


def cmd_twin_gap(args: argparse.Namespace) -> int:
    """A run on a benchmark against a run on its twin: the memorization gap per level."""
    import pandas as pd

    from apibank_lib.report.twin_gap import twin_gap_table
    from apibank_lib.runs.scoring import scored

    if len(args.runs) % 2:
        raise ConfigError("apibank twin-gap takes pairs of run folders: SOURCE_RUN TWIN_RUN [SOURCE_RUN TWIN_RUN ...]")
    pairs = [(scored(a), scored(b)) for a, b in zip(args.runs[::2], args.runs[1::2])]
    sources = {Path(source.info.data).resolve() for source, _ in pairs}
    if args.save and len(sources) > 1:
        raise ConfigError("--save writes into one data source's results: give pairs whose source runs share their data")
    args.data = pairs[0][0].info.data  # --save writes into the source data's results folder
    return show_table(pd.concat([twin_gap_table(a, b) for a, b in pairs], ignore_index=True), args)


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
    return show_table(pd.concat(tables, ignore_index=True), args)


def cmd_errors(args: argparse.Namespace) -> int:
    from apibank_lib.report.failures import error_counts
    from apibank_lib.report.loading import load_runs

    return show_table(error_counts(load_runs(args.runs), mapped=not args.ours), args)


def cmd_transfer(args: argparse.Namespace) -> int:
    """``apibank transfer FOLDER FOLDER...``: notebook 08's three tables from results folders already written."""
    from apibank_lib.report.files import save_table
    from apibank_lib.report.transfer import compare_results

    folders = [Path(f) for f in args.folders]
    names = args.names or [f.name for f in folders]
    if len(names) != len(folders) or len(set(names)) != len(names):
        raise ConfigError(f"--names: give one distinct name per folder ({len(folders)} folders, names {names})")
    tables = compare_results(dict(zip(names, folders)))
    if args.save_to:
        for name, table in tables.items():
            paths = save_table(table, name, Path(args.save_to))
            warn(f"saved {paths['csv']} and {paths['md']}")
    if args.json:
        print_json({name: json.loads(t.to_json(orient="records")) for name, t in tables.items()})
        return 0
    for name, table in tables.items():
        print(f"## {name}\n")
        print(table.astype(object).where(table.notna(), "").to_markdown(index=False))
        print()
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
        print_json(summary)
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


def add_commands(sub: Any) -> None:
    """Add this group's commands to the ``apibank`` parser's subparsers."""
    from apibank_lib.report.reproduce import PROFILES
    from apibank_lib.retrieval.retrievers import RETRIEVERS

    p = sub.add_parser("compare", help="runs side by side: labels, accuracy and ROUGE-L per level, coverage, cost")
    p.add_argument("runs", nargs="+")
    p.add_argument(
        "--price-per-mtok", metavar="IN,OUT", default=None,
        help="price per million tokens in and out (e.g. 0.15,0.60): adds each run's price",
    )
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/ (results/bundled/ for the bundled data)")
    add_json(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "twin-gap", help="a run on a benchmark against the same model's run on its twin (apibank twin): accuracy on each and the gap"
    )
    p.add_argument("runs", nargs="+", metavar="SOURCE_RUN TWIN_RUN", help="pairs: a run on the source, then the same model's run on the twin")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/")
    add_json(p)
    p.set_defaults(func=cmd_twin_gap)

    p = sub.add_parser(
        "toolrl-cross",
        help="ToolRL runs' answers judged also by execution (v2) on the release they come from: exact match against execution",
    )
    p.add_argument("runs", nargs="+", help="run folders made by apibank run --data <ToolRL folder>")
    p.add_argument("--data", required=True, help="the release copy the ToolRL files were made from")
    p.add_argument("--examples", type=int, default=3, help="entries to name per kind of disagreement (0: none)")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/")
    add_json(p)
    p.set_defaults(func=cmd_toolrl_cross)

    p = sub.add_parser("errors", help="wrong API calls per error category, counts and shares, for each run")
    p.add_argument("runs", nargs="+")
    p.add_argument("--ours", action="store_true", help="our categories as they are (default: the paper's seven)")
    p.add_argument("--save", metavar="NAME", default=None, help="also write NAME.csv and NAME.md in results/<data source>/ (results/bundled/ for the bundled data)")
    add_json(p)
    p.set_defaults(func=cmd_errors)

    p = sub.add_parser("retrieval", help="hit@1, hit@3 and MRR of retrievers on the benchmark's ToolSearcher queries")
    add_common(p)
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

    p = sub.add_parser(
        "transfer",
        help="notebook 08's transfer tables (accuracy per level, errors, step funnel on each data source) from results "
        "folders already written, e.g. results/bundled results/api-bank-dev; no model is run",
    )
    p.add_argument("folders", nargs="+", help="results folders (main_table, error_distribution, funnel); the first is the reference")
    p.add_argument("--names", nargs="+", default=None, help="a name per folder (default: the folders' names)")
    p.add_argument("--save-to", default=None, metavar="DIR", help="also write transfer, transfer_errors and transfer_funnel (CSV and Markdown) in DIR")
    add_json(p)
    p.set_defaults(func=cmd_transfer)

    p = sub.add_parser("reproduce", help="execute every numbered notebook with papermill: all tables and figures")
    p.add_argument(
        "--profile", choices=list(PROFILES), default="quick",
        help="quick: reference backends and the 0.5B instruct model (about 20 min); standard: every default model, "
        "the committed results; full: every sample of every model",
    )
    p.add_argument("--full", action="store_true", help="the same as --profile full")
    p.add_argument("--models", nargs="+", default=None, help="models to run (default: the profile's)")
    p.add_argument("--data", default=None, help="an official release instead of the bundled benchmark")
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=None)
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
    add_json(p)
    p.set_defaults(func=cmd_reproduce)

"""The commands about data and the sandbox: ``stats``, ``replay``, ``search``, ``call``, ``apis``, ``validate``, ``twin``,
``build-data``."""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

from apibank_lib.cli.options import PROTOCOL_NAMES, add_common, add_retriever
from apibank_lib.cli.output import print_json, progress, text_table, warn
from apibank_lib.core.errors import ConfigError

__all__ = ["add_commands", "cmd_apis", "cmd_build_data", "cmd_call", "cmd_replay", "cmd_search", "cmd_stats", "cmd_twin", "cmd_validate"]


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
        print_json(stats)
        return 0
    # The same tables as notebook 00 (analysis), printed as text.
    import pandas as pd

    from apibank_lib.report.data_tables import level_statistics_table, statistics_table

    def with_official(measured: Any, official: Any) -> str:
        return ("" if pd.isna(measured) else str(measured)) + ("" if pd.isna(official) else f" ({official})")

    label = f"{bench.name} data"
    rows = [
        [r["quantity"], *(with_official(r[f"L{lv} measured here"], r[f"L{lv} official release"]) for lv in "123")]
        for r in level_statistics_table(bench).astype(object).to_dict("records")
    ]
    print(f"Benchmark: {bench.root}{' (official release)' if bench.official else ''}")
    print(
        text_table(
            rows,
            [f"per level: {label} (official release, counted)", "L1 Call", "L2 Retrieve+Call", "L3 Plan+Retrieve+Call"],
        )
    )
    print()
    print(text_table(statistics_table(bench).values.tolist(), ["totals", f"{label} (measured)", "paper (reported)"]))
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
    from apibank_lib.grading.replay import replay

    protocol = get_protocol(args.protocol)
    bench = load_benchmark(args.data)
    levels = [args.level] if args.level else [1, 2, 3]
    report = replay(
        bench, protocol, levels=levels, searcher=args.retriever, progress=None if args.json else progress("replay")
    )
    if args.json:
        print_json(report)
        return 0
    rows = []
    for lv, r in report["levels"].items():
        pct = 100.0 * r["correct"] / r["gold_calls"] if r["gold_calls"] else 0.0
        rows.append([lv, r["gold_calls"], r["correct"], f"{pct:.1f}%", r["samples"], r["samples_correct"]])
    print(f"Protocol {protocol.version} on {report['data']}")
    print(text_table(rows, ["level", "gold calls", "judged correct", "rate", "API-call samples", "samples correct"]))
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
        print(text_table(_failure_summary(report["levels"]), ["level", "API", "category", "samples", "first reason"]))
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
        warn(
            f"the query is longer than the embedding model reads ({index.embedder.max_tokens} tokens); only its beginning is used"
        )
    name = args.retriever or V2.retriever
    if name == PAPER_RECIPE:
        ranked = index.search(args.keywords, args.k)
    else:
        ranked = make_retriever(name, candidates).search(args.keywords, args.k)
    if args.json:
        print_json([{"name": s.name, "score": round(score, 6), "description": s.description} for s, score in ranked])
        return 0
    print(
        text_table(
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
    print_json(result.to_dict())
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
        print_json({"level": args.level, "toolset": toolset.name, "apis": apis})
        return 0
    rows = []
    for a in apis:
        params = ", ".join(
            f"{k}: {p['type']}" + ("" if p["required"] else " (optional)") for k, p in a["input_parameters"].items()
        )
        rows.append([a["name"], a["domain"], params or "-"])
    print(f"{len(apis)} APIs of the {toolset.name} tool set (level {args.level}; {bench.name} data)")
    print(text_table(rows, ["API", "domain", "parameters"]))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from apibank_lib.grading.validate import validate

    report = validate(args.data, min_uses=args.min_uses)
    if args.json:
        print_json(
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


def cmd_twin(args: argparse.Namespace) -> int:
    from apibank_lib.data.twin_corpus import is_corpus, write_corpus_twin
    from apibank_lib.grading.twins import make_twin

    corpus = bool(args.data) and is_corpus(args.data)
    default = "names,parameters" if corpus else "names,parameters,values"
    change = [c.strip() for c in (args.change or default).split(",") if c.strip()]
    if corpus:  # a training corpus: names and parameters (its own APIs)
        manifest = write_corpus_twin(args.data, args.out, seed=args.seed, change=change)
        if args.json:
            print_json(manifest)
            return 0
        r = manifest["renaming"]
        print(f"Corpus twin written to {args.out}: {manifest['files']} files, {len(r['apis'])} APIs and {len(r['parameters'])} "
              f"parameters renamed, {len(manifest['kept'])} names kept (no word of theirs in the synonym table)")
        print(f"Train on both: apibank train --source {args.data} --source {args.out} ...")
        return 0
    report = make_twin(args.data, args.out, seed=args.seed, change=change)
    if args.json:
        print_json(report.to_dict())
        return 0
    values = report.renaming.values
    moved = (f", {len(values.exact)} values and {len(values.words)} name words replaced, dates moved by "
             f"{values.date_shift_days // 7} weeks") if not values.empty else ""
    print(f"Twin written to {report.out}: {len(report.renaming.apis)} APIs and {len(report.renaming.parameters)} "
          f"parameters renamed{moved}, {report.files} data files rewritten")
    print(text_table([[f"L{lv}", figure] for lv, figure in sorted(report.replay.items())], ["level", "gold replay under v2"]))
    for e in report.excluded:
        print(f"  excluded {e['key']}: {e['reason']}")
    print(f"\nUse it as any data: apibank validate --data {report.out}; apibank run --data {report.out} ...")
    return 0


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
        print_json(summary)
    else:
        verb = "up to date" if args.check else "written"
        print(
            f"{summary['files']} files {verb}: level-1 {report.dialogues.get(1, 0)}, level-2 {report.dialogues.get(2, 0)} dialogues, level-3 {report.items} items"
        )
    return 0


def add_commands(sub: Any) -> None:
    """Add this group's commands to the ``apibank`` parser's subparsers."""
    from apibank_lib.env.protocols import V2

    p = sub.add_parser("stats", help="corpus statistics, with the paper's figures beside ours")
    add_common(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("replay", help="judge every gold call as a prediction (the protocol's ceiling)")
    add_common(p)
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=V2.name)
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=None)
    p.add_argument("--verbose", action="store_true", help="list every failed sample (default: a summary per API)")
    add_retriever(p)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("search", help="rank APIs for keywords with the ToolSearcher's embedding search")
    add_common(p)
    p.add_argument("keywords")
    p.add_argument("-k", type=int, default=5, help="how many APIs to list")
    p.add_argument(
        "--level", type=int, choices=[1, 3], default=1, help="search the level-1/2 (default) or level-3 tool set"
    )
    add_retriever(p, default=V2.retriever)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("call", help='execute one call such as "[GetToday()]" in a fresh sandbox and print its result')
    add_common(p)
    p.add_argument("call")
    p.add_argument(
        "--level", type=int, choices=[1, 2, 3], default=1, help="which tool set and databases (1 and 2 share one)"
    )
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=V2.name, help="argument conversion rules")
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("apis", help="list the APIs of a level with their parameters")
    add_common(p)
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=1, help="which tool set (1 and 2 share one)")
    p.set_defaults(func=cmd_apis)

    p = sub.add_parser(
        "validate", help="check a benchmark (an official release: format and replay; ours: every authoring rule)"
    )
    add_common(p)
    p.add_argument("--min-uses", type=int, default=2, help="our benchmark: minimum uses of each level-1/2 tool")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("twin", help="a twin of a benchmark: the same tasks under new names and values, gold checked by execution")
    add_common(p)
    p.add_argument("--out", required=True, help="the twin's folder (new or empty)")
    p.add_argument("--seed", type=int, default=0, help="which synonyms are chosen")
    p.add_argument("--change", default=None,
                   help="what changes, comma-separated: names (APIs), parameters, values (people, accounts, secrets, dates); "
                   "default: all three (a training corpus: names,parameters)")
    p.set_defaults(func=cmd_twin)

    p = sub.add_parser(
        "build-data", help="build the bundled benchmark from data/src, recording gold results with our tools"
    )
    add_common(p)
    p.add_argument("--src", default=None, help="source folder (default: data/src)")
    p.add_argument("--check", action="store_true", help="only verify that the built files are up to date")
    p.add_argument(
        "--preview", default=None, metavar="FILE", help="execute one source file and print every call's result"
    )
    p.set_defaults(func=cmd_build_data)

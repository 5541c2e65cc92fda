"""The commands that meet other tools: ``export`` (Hugging Face datasets), ``import-inspect`` (an inspect_ai log as a
run folder) and ``mcp`` (the sandbox as a Model Context Protocol server)."""

from __future__ import annotations

import argparse
from typing import Any

from apibank_lib.cli.options import PROTOCOL_NAMES, add_common, add_json, add_retriever
from apibank_lib.cli.output import print_json, text_table
from apibank_lib.core.errors import ConfigError
from apibank_lib.env.protocols import V2

__all__ = ["add_commands", "cmd_export"]


def _needs(module: str, extra: str, command: str) -> None:
    """Stop with a clear message when an integration's optional package is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{command} needs the {module} package: pip install 'apibank_lib[{extra}]'")


def _corpora(specs: list[str] | None, none: bool) -> dict[str, list[str]] | None:
    """``--corpus NAME=PATH[,PATH...]`` options as a mapping; None (the default corpora) when none is given."""
    if none:
        return {}
    if not specs:
        return None
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, paths = spec.partition("=")
        if not sep or not name or not paths:
            raise ConfigError(f"--corpus {spec!r}: expected NAME=PATH[,PATH...] (e.g. ours=data/train/corpus)")
        out[name] = [p for p in paths.split(",") if p]
    return out


def cmd_export(args: argparse.Namespace) -> int:
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.integrations.hf_datasets import export_hf

    _needs("datasets", "train", "apibank export --format hf")
    bench = None if args.no_benchmark else load_benchmark(args.data)
    done = export_hf(args.out, bench=bench, corpora=_corpora(args.corpus, args.no_corpora))
    if args.json:
        print_json(done.to_dict())
        return 0
    rows = [[name, split, n, done.notes[name]] for name, splits in done.counts.items() for split, n in splits.items()]
    print(text_table(rows, ["dataset", "split", "rows", "from"]))
    print(f"\nWritten to {done.out} (load_from_disk('{done.out}/<dataset>'); Parquet under parquet/; card: README.md)")
    return 0


def cmd_import_inspect(args: argparse.Namespace) -> int:
    _needs("inspect_ai", "inspect", "apibank import-inspect")
    from apibank_lib.integrations.inspect_log import import_inspect_log

    result, metrics = import_inspect_log(args.log, out=args.out, data=args.data)
    if args.json:
        print_json({"run": str(result.path), "answered": result.answered, "metrics": metrics.to_dict()})
        return 0
    rows = [
        [f"L{lv}", m.api_samples, "" if m.api_accuracy is None else f"{100 * m.api_accuracy:.2f}",
         "" if m.episodes is None else f"{m.episodes_succeeded}/{m.episodes}"]
        for lv, m in sorted(metrics.levels.items())
    ]
    print(text_table(rows, ["level", "API-call samples", "accuracy %", "episodes"]))
    print(f"\nRun folder: {result.path} (apibank compare, the notebooks and the explorer read it)")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import asyncio
    import json
    import sys

    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.integrations.mcp_server import SandboxServer, serve_http, serve_stdio
    from apibank_lib.runs.config import default_runs_dir

    _needs("mcp", "mcp", "apibank mcp")
    bench = load_benchmark(args.data)
    what = f"item-{args.item}" if args.level == 3 else str(args.dialogue)
    out = args.out or str(default_runs_dir() / "mcp" / f"{bench.source}-L{args.level}-{what}")
    served = SandboxServer(
        bench, args.level, item=args.item, dialogue=args.dialogue, protocol=args.protocol, out=out, retriever=args.retriever
    )
    if args.transport == "stdio":
        done = asyncio.run(serve_stdio(served))
    else:
        print(f"apibank mcp: serving {served.name} on http://{args.host}:{args.port}/mcp (Ctrl-C ends)", file=sys.stderr)
        try:
            done = serve_http(served, args.host, args.port)
        except KeyboardInterrupt:
            done = served.finished
    # Standard output is the MCP wire while stdio serves: what was written goes to standard error.
    print(json.dumps({"out": out, "sessions": done}, indent=1, ensure_ascii=False), file=sys.stderr)
    return 0


def add_commands(sub: Any) -> None:
    """Add this group's commands to the ``apibank`` parser's subparsers."""
    p = sub.add_parser(
        "export", help="the benchmark and the training corpora as Hugging Face datasets (messages and tools)"
    )
    add_common(p)
    p.add_argument("--format", choices=("hf",), default="hf", help="hf: datasets on disk and as Parquet, with a card")
    p.add_argument("--out", required=True, help="the export folder")
    p.add_argument(
        "--corpus", action="append", metavar="NAME=PATH[,PATH]",
        help="a training corpus to export under NAME (corpus YAML files or folders); repeatable; default: our "
        "AI-written corpus and the model-made one",
    )
    p.add_argument("--no-corpora", action="store_true", help="export the benchmark only")
    p.add_argument("--no-benchmark", action="store_true", help="export the corpora only")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import-inspect", help="an inspect_ai log of apibank_lib/api_bank as a scored run folder")
    p.add_argument("log", help="the inspect log (.eval or .json)")
    p.add_argument("--out", default=None, help="the run folder (default: the runs folder, named as any run)")
    p.add_argument("--data", default=None, help="where the log's data is now, when it moved")
    add_json(p)
    p.set_defaults(func=cmd_import_inspect)

    p = sub.add_parser(
        "mcp", help="serve a level-3 item's (or a dialogue's) tools over the Model Context Protocol, a sandbox per session"
    )
    p.add_argument("--data", default=None, help="benchmark root (default: the bundled benchmark; or an official release)")
    p.add_argument("--level", type=int, choices=[1, 2, 3], default=3)
    p.add_argument("--item", type=int, default=None, help="the level-3 item's id")
    p.add_argument("--dialogue", default=None, help="the dialogue's name (levels 1 and 2)")
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=V2.name, help="how calls are converted and episodes judged")
    add_retriever(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="http: streamable HTTP on --host:--port")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument(
        "--out", default=None,
        help="session logs, answers files and scored run folders (default: <runs dir>/mcp/<data>-L<level>-<item>)",
    )
    p.set_defaults(func=cmd_mcp)

"""The commands that meet other tools: ``export`` (Hugging Face datasets), ``import-inspect`` (an inspect_ai log as a
run folder) and ``mcp`` (the sandbox as a Model Context Protocol server)."""

from __future__ import annotations

import argparse
from typing import Any

from apibank_lib.cli.options import add_common
from apibank_lib.cli.output import print_json, text_table
from apibank_lib.core.errors import ConfigError

__all__ = ["add_commands", "cmd_export"]


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

    try:
        import datasets  # noqa: F401
    except ImportError as exc:
        raise ConfigError("apibank export --format hf needs the datasets package: pip install 'apibank_lib[train]'") from exc
    bench = None if args.no_benchmark else load_benchmark(args.data)
    done = export_hf(args.out, bench=bench, corpora=_corpora(args.corpus, args.no_corpora))
    if args.json:
        print_json(done.to_dict())
        return 0
    rows = [[name, split, n, done.notes[name]] for name, splits in done.counts.items() for split, n in splits.items()]
    print(text_table(rows, ["dataset", "split", "rows", "from"]))
    print(f"\nWritten to {done.out} (load_from_disk('{done.out}/<dataset>'); Parquet under parquet/; card: README.md)")
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

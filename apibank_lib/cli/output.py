"""How the ``apibank`` commands print: JSON, plain tables, progress, warnings, one-line failures."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["print_json", "text_table", "progress", "warn", "show_table", "fail"]


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (what ``--json`` gives)."""
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def text_table(rows: list[list[Any]], header: list[str]) -> str:
    """Rows as a plain text table with a header line, columns padded to their widest cell."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def progress(desc: str):  # noqa: ANN202 - returns a wrapper usable as an iterable filter
    """A progress bar on standard error for an iterable (off when standard error is not a terminal)."""
    from tqdm import tqdm

    return lambda it: tqdm(it, desc=desc, unit="call", file=sys.stderr, disable=None, leave=False)


def warn(message: str) -> None:
    """A note on standard error that does not stop the command."""
    print(f"apibank: note: {message}", file=sys.stderr)


def show_table(table: Any, args: argparse.Namespace) -> int:
    """Print a DataFrame as Markdown (or JSON records with ``--json``), saving it first with ``--save NAME``."""
    from apibank_lib.core.paths import results_dir
    from apibank_lib.data.datasets import data_source
    from apibank_lib.report.files import save_table

    if args.save:
        # The data source's own folder (results/bundled/, results/<release>/): one source never overwrites another's.
        paths = save_table(table, args.save, results_dir(data_source(getattr(args, "data", None))))
        warn(f"saved {paths['csv']} and {paths['md']}")
    if args.json:
        print_json(json.loads(table.to_json(orient="records")))
    else:
        print(table.to_markdown(index=False))
    return 0


def fail(args: argparse.Namespace, kind: str, message: str) -> None:
    """A failure in one line: as JSON with ``--json``, else on standard error."""
    if getattr(args, "json", False):
        print_json({"error": kind, "message": message})
    else:
        print(f"apibank: error: {message}", file=sys.stderr)

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
import os
import shlex
import sys
from collections.abc import Sequence

from apibank_lib.cli import data_commands, integration_commands, report_commands, run_commands, train_commands
from apibank_lib.cli.output import fail
from apibank_lib.core.errors import ApibankError, BackendError

__all__ = ["main", "build_parser"]

GROUPS = (data_commands, run_commands, report_commands, train_commands, integration_commands)
"""The command groups, one module each, in the order ``apibank --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``apibank`` command: each group module adds its commands."""
    parser = argparse.ArgumentParser(
        prog="apibank", description="API-Bank tool-use benchmark: data, sandbox, search, runs and grading."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(sub)
    return parser


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
        fail(
            args,
            type(exc).__name__,
            f"{exc}. {exc.saved} prediction(s) are saved in {exc.folder}; resume with: {resume}",
        )
        return 130 if isinstance(exc.__cause__, KeyboardInterrupt) else 1
    except BackendError as exc:
        fail(args, type(exc).__name__, str(exc))
        return 1
    except ApibankError as exc:
        fail(args, type(exc).__name__, str(exc))
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
        fail(args, "InternalError", f"internal error ({type(exc).__name__}: {exc}); set APIBANK_DEBUG=1 to see where")
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``gpuplan`` command line: one module per command, each a thin layer over the API.

The library logs; only the CLI prints. Each command module adds its parser
(``register``) and runs it (parse arguments, call the library, print). Exit codes
(:class:`~gpuplan.cli.common.ExitCode`, also in README's "Exit codes"): 0 success; 1 no
feasible schedule, or a schedule failed verification; 2 invalid input (instance,
schedule, options file or command line, a method or backend that cannot do what was
asked, or a backend that is not installed); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from gpuplan._version import __version__
from gpuplan.backends import solves_left_running
from gpuplan.cli import (
    batch,
    bench,
    check,
    cluster,
    convert,
    export_model,
    generate,
    hpc,
    hybrid,
    live,
    plot,
    replay,
    rl,
    schema,
    simulate,
    solve,
    sweep,
    validate,
)
from gpuplan.cli.common import ExitCode, console, mark_flags, shown
from gpuplan.core.errors import (
    BackendUnavailableError,
    InputError,
    RejectedScheduleError,
    VerificationError,
)

__all__ = ["ExitCode", "build_parser", "main", "run"]

#: The commands, in the order ``gpuplan --help`` lists them.
COMMANDS = (solve, simulate, hpc, replay, hybrid, sweep, validate, check, plot, convert, batch,
            bench, generate, export_model, schema, rl, cluster, live)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-command per command module."""
    parser = argparse.ArgumentParser(
        prog="gpuplan",
        description="Plan deep-learning jobs onto GPU fleets; every schedule is verified. "
        "Exit codes: 0 ok, 1 no feasible schedule or verification failed, 2 invalid input.",
    )
    parser.add_argument("--version", action="version", version=f"gpuplan {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    mark_flags(parser)
    return parser


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    logging.getLogger("py.warnings").debug("%s:%d: %s: %s", filename, lineno,
                                           category.__name__, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Parameters
    ----------
    argv
        Arguments without the program name; ``sys.argv[1:]`` by default.
    """
    given = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(replay.alias(given) or given)
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        with warnings.catch_warnings():
            # Library warnings (numpy's RuntimeWarnings among them) are details for --debug.
            warnings.showwarning = _log_warning
            code: int = args.run(args)
    except (InputError, BackendUnavailableError) as exc:
        if args.debug:
            raise
        shown_error = shown(exc, getattr(args, "flags", {})) if isinstance(
            exc, InputError) else str(exc)
        console.print(f"error: {shown_error}", markup=False)
        return ExitCode.BAD_INPUT
    except (VerificationError, RejectedScheduleError) as exc:
        if args.debug:
            raise
        console.print(str(exc), markup=False)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        console.print("interrupted")
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a bug: say so plainly, without a traceback unless asked
        if args.debug:
            raise
        console.print(
            f"internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
            markup=False,
        )
        return ExitCode.FAILED
    return code


def run() -> None:
    """The ``gpuplan`` entry point: :func:`main`, then exit with its code.

    A HiGHS solve left to finish on its own past the time limit would abort a normal
    exit (C++ teardown under a running solve), so then the process ends at once, after
    flushing what it wrote.
    """
    code = main()
    if solves_left_running():
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)

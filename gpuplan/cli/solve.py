"""``gpuplan solve``: plan an instance, verify the schedule, print a summary.

Its method choices and option flags come from the registry (:data:`~gpuplan.methods.METHODS`):
every method option field is one flag, shared by the methods that take it. Flags the user
does not give stay unset, so the options' defaults are written once, in the options
dataclasses, and a flag the chosen method does not take is refused by
:func:`~gpuplan.core.options.build_options`, naming the flag, the method and what it takes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_settings,
    console,
    file_of,
    fmt,
    objective,
    options_file,
    print_unplaced,
    print_verification,
    read,
    reading_parser,
    settings,
    summary_table,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import option_fields, part_options
from gpuplan.core.schedule import Schedule
from gpuplan.methods import DEFAULT_METHOD, METHODS, Method, get_method
from gpuplan.planning import plan

#: Where the method option flags the user gave are kept, flag to value.
GIVEN = "method_flags"


class _MethodFlag(argparse.Action):
    """Keeps a method option flag in ``args.method_flags`` in command-line order.

    The order makes the first flag a method does not take the one its refusal names.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        flags: dict[str, Any] = getattr(namespace, GIVEN, {})
        # A switch (nargs 0) gets no value: being given is its value.
        flags[self.option_strings[0]] = True if self.nargs == 0 else values
        setattr(namespace, GIVEN, flags)


def method_flags() -> dict[str, dict[str, dataclasses.Field[Any]]]:
    """Every method option flag once, with the field each method that takes it has."""
    flags: dict[str, dict[str, dataclasses.Field[Any]]] = {}
    for method in METHODS.values():
        for f in option_fields(method.options_type):
            flags.setdefault(f.metadata["flag"], {})[method.name] = f
    return flags


def add_method_flag(parser: argparse.ArgumentParser, flag: str,
                     fields: dict[str, dataclasses.Field[Any]]) -> None:
    """Add one method option flag, its help saying which methods take it."""
    helps = {f.metadata["help"] for f in fields.values()}
    text = (f"--method {', '.join(fields)}: {helps.pop()}" if len(helps) == 1 else
            "; ".join(f"--method {name}: {f.metadata['help']}" for name, f in fields.items()))
    first = next(iter(fields.values()))
    # A switch turns on what is off by default; an option on by default takes its value
    # (``--moldable false``).
    if first.default is False:
        parser.add_argument(flag, action=_MethodFlag, nargs=0, dest=GIVEN,
                            default=argparse.SUPPRESS, help=text)
        return
    # Each method checks its own values; the parser offers what any of them accepts.
    offered = [f.metadata["choices"] for f in fields.values()]
    choices = (None if None in offered else
               list(dict.fromkeys(c for listed in offered for c in listed)))
    metavar = first.metadata["metavar"] or (None if choices else "VALUE")
    parser.add_argument(flag, action=_MethodFlag, dest=GIVEN, choices=choices,
                        metavar=metavar, default=argparse.SUPPRESS, help=text)


def register(commands: Commands) -> None:
    """Add ``solve`` and its flags, from the method and backend registries."""
    parser = commands.add_parser(
        "solve", help="plan an instance and verify the schedule", parents=[reading_parser()],
        description="Plan an instance file, verify the schedule, print a summary and "
        "write the schedule JSON.",
    )
    parser.add_argument("instance", help="instance file (.json, .yaml; FILE#k for orlib-gap)")
    parser.add_argument(
        "--method", choices=list(METHODS), default=DEFAULT_METHOD,
        help=f"planning method (default: {DEFAULT_METHOD}); "
        + "; ".join(f"{name}: {m.description}" for name, m in METHODS.items()),
    )
    parser.add_argument(
        "--objective", type=objective, metavar="NAME",
        help="override the file's objective: " + ", ".join(k.value for k in ObjectiveKind),
    )
    starters = [name for name, m in METHODS.items() if m.warm_starts]
    parser.add_argument(
        "--warm-start", dest="warm", metavar="METHOD|SCHEDULE.json",
        help=f"start --method {', '.join(starters)} from another method's plan (its name, "
        "e.g. greedy) or from this schedule file's plan",
    )
    parser.add_argument(
        "--options", metavar="FILE.toml|.yaml",
        help="the method's settings by key (field or flag name), flat or in a table per "
        "method ([milp] backend = \"cpsat\"); flags override the file",
    )
    for flag, fields in method_flags().items():
        add_method_flag(parser, flag, fields)
    add_settings(parser, "time_limit_s", "iterations", "seed", "threads")
    parser.add_argument(
        "-o", "--output", metavar="OUT.json", help="write the schedule here ('-' for stdout)"
    )
    parser.set_defaults(run=solve)


def given_options(args: argparse.Namespace, method: Method) -> Any:
    """The method's typed options: the ``--options`` file's settings, then the flags given.

    Raises
    ------
    InputError
        Naming a flag the method does not take (and the method, and what it takes), or a
        bad value.
    """
    from_file = {} if args.options is None else options_file(args.options, method)
    return part_options(method, "method", {**from_file, **getattr(args, GIVEN, {})})


def solve(args: argparse.Namespace) -> int:
    """Plan, verify, write and summarise; exit 1 when there is no plan."""
    method = get_method(args.method)
    run = settings(args)
    options = given_options(args, method)
    start = None if args.warm in (None, *METHODS) else args.warm
    if start is not None and not Path(start).exists():
        raise InputError("--warm-start", "", f"{start!r} is neither a method "
                         f"({', '.join(METHODS)}) nor a schedule file")
    if args.output not in (None, "-"):
        check_output(args.output, [file_of(args.instance),
                                   *(path for path in (start, args.options) if path)])
    instance = read(args, args.instance, args.objective)
    if start is None:
        schedule = plan(instance, method.name, options, run, warm=args.warm)
    else:
        schedule = plan(instance, method.name, options, run, warm=Schedule.read(start),
                        source=start)
    if args.output == "-":
        sys.stdout.write(schedule.to_json())
    elif args.output is not None:
        try:
            schedule.write(args.output)
        except OSError as exc:
            raise InputError(args.output, "", f"cannot write the schedule: {exc}") from None
    console.print(
        summary_table(
            f"{instance.name}: {instance.n_jobs} jobs on {instance.n_gpus} GPUs, "
            f"objective {instance.objective.value}",
            [
                ("method", f"{schedule.method} ({schedule.solver})"),
                ("status", schedule.status.value),
                ("objective", fmt(schedule.objective)),
                ("bound", fmt(schedule.bound)),
                ("gap", "-" if schedule.gap is None else f"{schedule.gap:.2%}"),
                ("placed", f"{len({s.job for s in schedule.segments})} of {instance.n_jobs}"),
                ("wall time", f"{schedule.wall_time_s:.3f} s"),
                ("written to", args.output or "- (use -o FILE to save)"),
            ],
        )
    )
    print_unplaced(schedule)
    assert schedule.verification is not None  # plan() always verifies
    print_verification(schedule.verification, schedule.status.has_plan)
    return ExitCode.OK if schedule.status.has_plan else ExitCode.FAILED

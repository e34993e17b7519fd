"""``gpuplan plot``: draw a schedule as a Gantt chart per GPU and utilisation per type."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuplan.cli.common import Commands, ExitCode, console, read, reading_parser
from gpuplan.core.files import check_output
from gpuplan.core.schedule import Schedule
from gpuplan.exporters.plot import plot_schedule


def register(commands: Commands) -> None:
    """Add ``plot``."""
    parser = commands.add_parser(
        "plot", help="draw a schedule: Gantt chart per GPU and utilisation per type",
        parents=[reading_parser()],
        description="Draw SCHEDULE as a Gantt chart (one row per GPU, gangs joined, "
        "deadlines in red when --instance is given) above the busy share of each GPU type "
        "over time; write PNG, SVG or HTML (by the suffix of -o).",
    )
    parser.add_argument("schedule", type=Path)
    parser.add_argument("--instance",
                        help="the schedule's instance, for deadlines and idle GPUs")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png|svg|html")
    parser.set_defaults(run=plot)


def plot(args: argparse.Namespace) -> int:
    """Draw the schedule into the output file."""
    check_output(args.output, [args.schedule, *([args.instance] if args.instance else [])])
    schedule = Schedule.read(args.schedule)
    instance = None if args.instance is None else read(args, args.instance)
    plot_schedule(schedule, Path(args.output), instance)
    console.print(f"wrote {args.output}", markup=False)
    return ExitCode.OK

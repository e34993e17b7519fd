"""``gpuplan validate``: check instance files and describe them."""

from __future__ import annotations

import argparse

from rich.text import Text

from gpuplan.cli.common import Commands, ExitCode, console, read, reading_parser
from gpuplan.core.instance import Instance


def register(commands: Commands) -> None:
    """Add ``validate``."""
    parser = commands.add_parser(
        "validate", help="check instance files and describe them", parents=[reading_parser()],
        description="Validate instance files; exit 2 at the first invalid one.",
    )
    parser.add_argument("instances", nargs="+", metavar="INSTANCE")
    parser.set_defaults(run=validate)


def describe(instance: Instance) -> str:
    """One line: jobs, gangs, dependencies, GPUs, types, nodes, resources, objective."""
    gangs = int((instance.gang > 1).sum())
    deps = sum(1 for p in instance.predecessors if p)
    return (
        f"{instance.n_jobs} jobs ({gangs} gangs, {deps} with dependencies), "
        f"{instance.n_gpus} GPUs of {instance.n_types} types on {instance.n_nodes} nodes, "
        f"resources {', '.join(instance.resources)}, objective {instance.objective.value}"
    )


def validate(args: argparse.Namespace) -> int:
    """Read each file in turn and describe it; an invalid one raises (exit 2)."""
    for path in args.instances:
        instance = read(args, path)
        console.print(Text.assemble(("ok", "green"), f" {path}: {describe(instance)}"))
    return ExitCode.OK

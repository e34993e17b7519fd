"""``gpuplan generate``: write a seeded synthetic instance."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpuplan.cli.common import Commands, ExitCode, bounded, console, default_of, given
from gpuplan.errors import InputError
from gpuplan.generate import SPEEDUP, generate_document
from gpuplan.instance import ObjectiveKind
from gpuplan.io import check_output, write_text_atomic
from gpuplan.methods.base import MAX_SEED
from gpuplan.readers.instance_file import (
    MAX_GPUS,
    MAX_JOBS,
    MAX_TIME_S,
    build_instance,
    parse_document,
)


def _types(value: str) -> tuple[str, ...]:
    """``v100,k80`` as a tuple of GPU type names (checked by the generator)."""
    return tuple(value.split(","))


def default(name: str) -> str:
    """The default of one of :func:`generate_document`'s settings, as ``--help`` shows it."""
    value = default_of(generate_document, name)
    if isinstance(value, tuple):
        return ",".join(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def register(commands: Commands) -> None:
    """Add ``generate``; its optional flags default to :func:`generate_document`'s."""
    parser = commands.add_parser(
        "generate", help="write a seeded synthetic instance",
        description="Jobs as Gavel's generator draws them (gangs 1/2/4/8, run times, model "
        "memory) on nodes of GPU types with Gavel's measured speed-ups.",
    )

    unset = argparse.SUPPRESS
    share = bounded(float, 0, 1)
    parser.add_argument("--jobs", type=bounded(int, 1, MAX_JOBS), required=True, metavar="N")
    parser.add_argument("--nodes", type=bounded(int, 1, MAX_GPUS), required=True, metavar="K")
    parser.add_argument("--types", type=_types, default=unset, metavar="T,...",
                        help=f"GPU types, from {', '.join(SPEEDUP)} (default: "
                        f"{default('types')})")
    parser.add_argument("--gpus-per-node", type=bounded(int, 1, MAX_GPUS), default=unset,
                        metavar="N", help=f"GPUs per node; a gang stays in one (default: "
                        f"{default('gpus_per_node')})")
    parser.add_argument("--dependencies", type=share, default=unset, metavar="P",
                        help="share of jobs that depend on an earlier one (default: "
                        f"{default('dependencies')})")
    parser.add_argument("--arrivals", dest="arrival_window_s", type=bounded(float, 0, MAX_TIME_S),
                        default=unset, metavar="S", help="release jobs uniformly over [0, S] "
                        f"seconds (default: {default('arrival_window_s')})")
    parser.add_argument("--deadlines", type=share, default=unset, metavar="P",
                        help=f"share of jobs with a deadline (default: {default('deadlines')})")
    parser.add_argument("--objective", choices=[k.value for k in ObjectiveKind], default=unset,
                        help=f"the instance's objective (default: {default('objective')})")
    parser.add_argument("--seed", type=bounded(int, 0, MAX_SEED), default=unset,
                        metavar="N", help=f"0 to {MAX_SEED} (default: {default('seed')})")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.json")
    parser.set_defaults(run=generate)


def generate(args: argparse.Namespace) -> int:
    """Generate, validate as a file would be read, then write atomically."""
    check_output(args.output)
    try:
        document = generate_document(args.jobs, args.nodes, **given(
            args, "types", "seed", "gpus_per_node", "dependencies", "arrival_window_s",
            "deadlines", "objective"))
    except ValueError as exc:
        raise InputError("--types" if "type" in str(exc) else "--jobs", "", str(exc)) from None
    # Validate before writing: a generated file must load as it is.
    build_instance(parse_document(document, args.output), args.output)
    write_text_atomic(Path(args.output), json.dumps(document, indent=1) + "\n")
    console.print(f"wrote {args.output}: {args.jobs} jobs on {args.nodes} nodes", markup=False)
    return ExitCode.OK

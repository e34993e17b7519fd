"""``gpuplan generate``: write a seeded synthetic instance.

Three kinds, chosen by one flag: ``--nodes K`` (nodes of GPU types with Gavel's job mix,
:func:`~gpuplan.readers.generate.generate_document`), ``--cluster V:P:K`` (a workload of Gavel's
continuous-arrival experiments on its worker types,
:func:`~gpuplan.readers.generate.gavel_document`) or ``--library operator`` (an operator batch
of ``instances/library/``, :func:`~gpuplan.harness.library.operator_document`). A flag of
another kind is refused.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from gpuplan.cli.common import Commands, ExitCode, bounded, console, default_of, given
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output, write_text_atomic
from gpuplan.core.instance import MAX_GPUS, MAX_JOBS, MAX_TIME_S
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.settings import MAX_SEED
from gpuplan.harness.library import GENERATORS, VARIANTS, operator_document, racks_document
from gpuplan.readers.gavel import read_throughputs
from gpuplan.readers.generate import SPEEDUP, gavel_document, generate_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.simulate.workload import parse_cluster

#: The flags of each kind, by their argparse names; the other kind refuses them.
NODE_FLAGS = {"nodes": "--nodes", "types": "--types", "dependencies": "--dependencies",
              "arrival_window_s": "--arrivals", "deadlines": "--deadlines",
              "objective": "--objective"}
GAVEL_FLAGS = {"cluster": "--cluster", "rate_per_hour": "--arrival-rate",
               "throughputs": "--throughputs", "multi_gpu": "--multi-gpu",
               "priorities": "--priorities"}
LIBRARY_FLAGS = {"library": "--library", "variant": "--variant"}
#: The flag that chooses each kind.
KINDS = {"nodes": "--nodes", "cluster": "--cluster", "library": "--library"}
#: Highest arrival rate, in jobs per hour.
MAX_RATE_PER_HOUR = 1e6


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
        "memory) on nodes of GPU types with Gavel's measured speed-ups (--nodes); or a "
        "workload of Gavel's continuous-arrival experiments, its 26 job types timed by its "
        "measured throughputs and arriving as a Poisson process, on a v100:p100:k80 "
        "cluster (--cluster); or an operator batch of the instance library: A100, H100 "
        "and L4 nodes, mixed gangs, shared GPUs, dependencies, deadlines (--library).",
    )

    unset = argparse.SUPPRESS
    share = bounded(float, 0, 1)
    parser.add_argument("--jobs", type=bounded(int, 1, MAX_JOBS), required=True, metavar="N")
    parser.add_argument("--nodes", type=bounded(int, 1, MAX_GPUS), default=unset, metavar="K",
                        help="generate K nodes of --types (one kind of instance)")
    parser.add_argument("--cluster", default=unset, metavar="V:P:K",
                        help="generate a Gavel workload on V V100s, P P100s and K K80s, "
                        "e.g. 36:36:36 (another kind; needs --arrival-rate and "
                        "--throughputs)")
    parser.add_argument("--types", type=_types, default=unset, metavar="T,...",
                        help=f"GPU types, from {', '.join(SPEEDUP)} (default: "
                        f"{default('types')})")
    parser.add_argument("--gpus-per-node", type=bounded(int, 1, MAX_GPUS), default=unset,
                        metavar="N", help=f"GPUs per node (Gavel's --num_gpus_per_server); "
                        f"a gang stays in one (default: {default('gpus_per_node')})")
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
    library = parser.add_argument_group("instance library batches (with --library)")
    library.add_argument("--library", choices=GENERATORS, default=unset,
                         help="generate a batch of instances/library (the third kind; takes "
                         "--jobs, --seed, --objective and, for operator, --variant): operator "
                         "(A100, H100 and L4 nodes, mixed gangs, shared GPUs, dependencies, "
                         "deadlines) or racks (H100 nodes in racks with CPUs and memory that "
                         "bind, multi-node gangs bound to a rack)")
    library.add_argument("--variant", choices=list(VARIANTS), default=unset,
                         help="the batch's variant (default: "
                         f"{default_of(operator_document, 'variant')}): "
                         # argparse reads % in help as a format: the descriptions have some.
                         + "; ".join(f"{name}: {v.description}" for name, v in VARIANTS.items()
                                     ).replace("%", "%%"))
    gavel = parser.add_argument_group("Gavel workloads (with --cluster)")
    gavel.add_argument("--arrival-rate", dest="rate_per_hour", default=unset, metavar="L",
                       type=bounded(float, 0, MAX_RATE_PER_HOUR),
                       help="Poisson arrivals, L jobs per hour; 0 puts every job at time 0 "
                       "(Gavel's static batches)")
    gavel.add_argument("--throughputs", type=Path, default=unset, metavar="FILE",
                       help="Gavel's simulation_throughputs.json")
    gavel.add_argument("--multi-gpu", action="store_true", default=unset,
                       help="scale factors 1/2/4/8 w.p. .7/.1/.15/.05 (Gavel's "
                       "--generate-multi-gpu-jobs; default: single-GPU jobs)")
    gavel.add_argument("--priorities", action="store_true", default=unset,
                       help="weight 5 for one job in five, else 1 (Gavel's "
                       "--generate-multi-priority-jobs)")
    parser.add_argument("--seed", type=bounded(int, 0, MAX_SEED), default=unset,
                        metavar="N", help=f"0 to {MAX_SEED} (default: {default('seed')})")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.json")
    parser.set_defaults(run=generate)


def _refuse(args: argparse.Namespace, flags: dict[str, str], kind: str, other: str) -> None:
    """Refuse the first of ``flags`` (the ``other`` kind's) given with ``kind``."""
    for name, flag in flags.items():
        if hasattr(args, name):
            raise InputError(flag, "", f"is a flag of {other}; {kind} does not take it")


def generate(args: argparse.Namespace) -> int:
    """Generate, validate as a file would be read, then write atomically."""
    check_output(args.output)
    chosen = [flag for name, flag in KINDS.items() if hasattr(args, name)]
    if len(chosen) > 1:
        raise InputError(chosen[1], "", f"give one of {', '.join(KINDS.values())}: "
                         f"{chosen[0]} and {chosen[1]} choose different kinds, not both")
    if hasattr(args, "cluster"):
        document, fleet = _gavel(args), f"--cluster {args.cluster}"
    elif hasattr(args, "library"):
        document = _library(args)
        fleet = f"{len(document['nodes'])} nodes of the {args.library} fleet"
    else:
        document, fleet = _nodes(args), f"{args.nodes} nodes"
    # Validate before writing: a generated file must load as it is.
    instance_from_data(document, args.output)
    write_text_atomic(Path(args.output), json.dumps(document, indent=1) + "\n")
    console.print(f"wrote {args.output}: {args.jobs} jobs on {fleet}", markup=False)
    return ExitCode.OK


def _nodes(args: argparse.Namespace) -> dict[str, Any]:
    """The document of ``--nodes``: Gavel's job mix on nodes of GPU types."""
    if not hasattr(args, "nodes"):
        raise InputError("--nodes", "", "give --nodes K (nodes of --types), --cluster "
                         "V:P:K (a Gavel workload on V100s, P100s and K80s) or --library "
                         "operator (a batch of the instance library)")
    _refuse(args, GAVEL_FLAGS, "a node fleet (--nodes)", "Gavel workloads (--cluster)")
    _refuse(args, LIBRARY_FLAGS, "a node fleet (--nodes)", "library batches (--library)")
    try:
        return generate_document(args.jobs, args.nodes, **given(
            args, "types", "seed", "gpus_per_node", "dependencies", "arrival_window_s",
            "deadlines", "objective"))
    except ValueError as exc:
        raise InputError("--types" if "type" in str(exc) else "--jobs", "", str(exc)) from None


def _gavel(args: argparse.Namespace) -> dict[str, Any]:
    """The document of ``--cluster``: a workload of Gavel's job generator."""
    _refuse(args, NODE_FLAGS, "a Gavel workload (--cluster)", "node fleets (--nodes)")
    _refuse(args, LIBRARY_FLAGS, "a Gavel workload (--cluster)", "library batches (--library)")
    cluster = parse_cluster(args.cluster)
    for name in ("rate_per_hour", "throughputs"):
        if not hasattr(args, name):
            raise InputError(GAVEL_FLAGS[name], "", "a Gavel workload (--cluster) needs it")
    if args.rate_per_hour > 0:
        # Poisson arrivals end near jobs / rate hours; six standard deviations more keep
        # a draw past the format's time limit from failing only after the work is done.
        hours = args.jobs / args.rate_per_hour * (1 + 6 / math.sqrt(args.jobs))
        if hours * 3600 > MAX_TIME_S:
            least = args.jobs * (1 + 6 / math.sqrt(args.jobs)) * 3600 / MAX_TIME_S
            raise InputError("--arrival-rate", "", f"{args.jobs} jobs at {args.rate_per_hour:g} "
                             f"per hour would arrive over about {hours * 3600:.3g} s, past the "
                             f"instance format's limit of {MAX_TIME_S:g} s; use a rate of at "
                             f"least {least:.3g} per hour, or fewer --jobs")
    return gavel_document(
        read_throughputs(args.throughputs), cluster, args.jobs, args.rate_per_hour,
        **given(args, "gpus_per_node", "seed"), multi_gpu=hasattr(args, "multi_gpu"),
        priorities=hasattr(args, "priorities"), source=str(args.throughputs))


def _library(args: argparse.Namespace) -> dict[str, Any]:
    """The document of ``--library operator``: an operator batch of the instance library."""
    kind = "a library batch (--library)"
    _refuse(args, {k: v for k, v in NODE_FLAGS.items() if k != "objective"}, kind,
            "node fleets (--nodes)")
    _refuse(args, {"gpus_per_node": "--gpus-per-node"}, kind,
            "node fleets and Gavel workloads")
    _refuse(args, GAVEL_FLAGS, kind, "Gavel workloads (--cluster)")
    try:
        if args.library == "racks":
            _refuse(args, {"variant": "--variant"}, "a racks batch (--library racks)",
                    "operator batches (--library operator)")
            return racks_document(args.jobs, **given(args, "seed", "objective"))
        return operator_document(args.jobs, **given(args, "seed", "variant", "objective"))
    except ValueError as exc:
        raise InputError("--objective", "", str(exc)) from None

"""``gpuplan convert``: foreign problem files and traces to instance files.

OR-Library GAP files, Gavel traces, openb pod lists, and public cluster traces (Philly,
Helios, PAI).

The cluster traces' flags come from their readers' declarations
(:data:`~gpuplan.readers.cluster_traces.TRACE_FORMATS`): each input but the first file is a
flag named after its keyword, and a flag the chosen format does not take is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuplan.cli.common import Commands, ExitCode, bounded, console, file_of
from gpuplan.core.errors import InputError
from gpuplan.core.files import output_folder
from gpuplan.core.instance import MAX_GPUS
from gpuplan.readers.cluster_traces import TRACE_FORMATS, TraceFormat
from gpuplan.readers.gavel import PHYSICAL_CLUSTER, gavel_documents
from gpuplan.readers.instance_file import write_documents
from gpuplan.readers.itp import itp_elastic_document
from gpuplan.readers.openb import openb_document
from gpuplan.readers.orlib_gap import gap_documents


def _fleet(value: str) -> dict[str, int]:
    """``v100=8,p100=16`` as a dict of GPU type to count."""
    fleet: dict[str, int] = {}
    for item in value.split(","):
        name, _, count = item.partition("=")
        if not name.strip() or not count.strip().isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(
                f"expected TYPE=COUNT[,TYPE=COUNT...] with counts >= 1, got {item!r}")
        fleet[name.strip()] = int(count)
    return fleet


def _trace_flags() -> dict[str, tuple[str, str, list[str]]]:
    """Each trace reader's inputs past its first file, as flags: dest, help, formats."""
    flags: dict[str, tuple[str, str, list[str]]] = {}
    for name, trace in TRACE_FORMATS.items():
        for given in (*trace.files[1:], *trace.options):
            flag = "--" + given.parameter.replace("_", "-")
            flags.setdefault(flag, (given.parameter, given.description, []))[2].append(name)
    return flags


def _statuses(value: str) -> list[str]:
    """``Pass,Killed`` as a list of statuses."""
    names = [item.strip() for item in value.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected STATUS[,STATUS...], got {value!r}")
    return names


def register(commands: Commands) -> None:
    """Add ``convert``."""
    parser = commands.add_parser(
        "convert", help="convert OR-Library GAP files or Gavel traces to instance files",
        description="Write each problem of an OR-Library GAP file (or FILE#k), or a Gavel "
        "job trace timed by Gavel's measured throughputs, as gpuplan instance JSON files in "
        "OUTDIR.",
    )
    parser.add_argument("source_format", choices=["orlib-gap", "gavel", "openb",
                                                  *TRACE_FORMATS],
                        help="; ".join(f"{name}: {trace.description}"
                                       for name, trace in TRACE_FORMATS.items()))
    parser.add_argument("file", help="GAP file (FILE#k for one problem), Gavel trace, "
                        "openb pod list (CSV), or a cluster trace's first file ("
                        + "; ".join(f"{name}: {trace.files[0].description}"
                                    for name, trace in TRACE_FORMATS.items()) + ")")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    parser.add_argument("--sense", choices=["min", "max"], default="min",
                        help="orlib-gap: minimise cost (default) or maximise profit")
    parser.add_argument("--throughputs", metavar="FILE",
                        help="gavel: Gavel's simulation_throughputs.json; itp with "
                        "--deadlines: a folder of throughput tables, <model>.csv (default: "
                        "ElasticFlow's A100 tables, shipped with gpuplan)")
    parser.add_argument("--deadlines", action="store_true",
                        help="itp: read ElasticFlow's variant as elastic jobs (work in "
                        "iterations, a speed per GPU count from the throughput tables) due "
                        "by their deadlines, objective deadlines-met")
    parser.add_argument("--rescale-s", type=bounded(float, 0.0, 1e9), metavar="S",
                        default=None, help="itp with --deadlines: seconds a job makes no "
                        "progress each time it starts, resumes or changes GPUs (default: "
                        "ElasticFlow's base overhead, 2 s, or 7 s on 256 GPUs or more)")
    cluster = ",".join(f"{name}={count}" for name, count in PHYSICAL_CLUSTER.items())
    parser.add_argument("--fleet", type=_fleet, default=dict(PHYSICAL_CLUSTER),
                        metavar="TYPE=N,...",
                        help=f"gavel: GPUs per worker type (default: Gavel's physical "
                        f"cluster, {cluster})")
    parser.add_argument("--gpus-per-node", type=bounded(int, 1, MAX_GPUS), default=4,
                        metavar="N", help="gavel: GPUs per server; a gang stays in one "
                        "(default: 4, Gavel's)")
    parser.add_argument("--space-sharing", action="store_true",
                        help="gavel: add job classes and the measured pair speeds, for "
                        "solve --method balance --space-sharing")
    parser.add_argument("--nodes", metavar="FILE",
                        help="openb: the node list (e.g. openb_node_list_gpu_node.csv)")
    for flag, (dest, description, takers) in _trace_flags().items():
        parser.add_argument(flag, dest=dest, metavar="VALUE", default=None,
                            help=f"{description} (taken by: {', '.join(takers)})")
    formats = ", ".join(TRACE_FORMATS)
    parser.add_argument("--limit", type=bounded(int, 1, 10**9), metavar="N", default=None,
                        help=f"{formats}: keep the first N jobs by submit time")
    parser.add_argument("--statuses", type=_statuses, metavar="S,...", default=None,
                        help=f"{formats}: keep jobs of these final statuses only (default: "
                        "all; " + "; ".join(f"{name}: {', '.join(trace.statuses)}"
                                            for name, trace in TRACE_FORMATS.items()
                                            if trace.statuses) + ")")
    parser.set_defaults(run=convert)


def _trace_document(args: argparse.Namespace, trace: TraceFormat) -> dict[str, Any]:
    """Read a cluster trace with the inputs its flags give.

    Raises
    ------
    InputError
        For a flag of another trace format, or a required input missing.
    """
    _refuse_other_flags(args, trace)
    inputs: dict[str, Any] = {trace.files[0].parameter: Path(args.file)}
    for given in (*trace.files[1:], *trace.options):
        value = getattr(args, given.parameter)
        if value is None:
            if given.required:
                raise InputError("--" + given.parameter.replace("_", "-"), "",
                                 f"{trace.name} needs {given.description}")
            continue
        inputs[given.parameter] = Path(value) if given in trace.files else value
    return trace.read(**inputs, limit=args.limit, statuses=args.statuses)


def _refuse_other_flags(args: argparse.Namespace, trace: TraceFormat) -> None:
    """Refuse a flag of another trace format than ``trace``, naming it and its takers."""
    taken = {given.parameter for given in (*trace.files, *trace.options)}
    for flag, (dest, _, takers) in _trace_flags().items():
        if getattr(args, dest) is not None and dest not in taken:
            raise InputError(flag, "", f"is taken by {', '.join(takers)}, not by "
                             f"{trace.name}")


def _elastic_itp(args: argparse.Namespace) -> dict[str, Any]:
    """``itp --deadlines``: ElasticFlow's trace as elastic jobs, with the itp flags given."""
    _refuse_other_flags(args, TRACE_FORMATS["itp"])
    return itp_elastic_document(
        Path(args.file), args.node_count, args.types,
        throughputs=None if args.throughputs is None else Path(args.throughputs),
        rescale_s=args.rescale_s, limit=args.limit, statuses=args.statuses)


def _check_elastic_flags(args: argparse.Namespace) -> None:
    """``--deadlines`` is itp's, and ``--rescale-s`` (and, for itp, ``--throughputs``) need it.

    Raises
    ------
    InputError
        Naming the flag given where it does not apply.
    """
    if args.deadlines and args.source_format != "itp":
        raise InputError("--deadlines", "", f"applies to itp, not to {args.source_format}")
    if not args.deadlines:
        for flag, value in (("--rescale-s", args.rescale_s),
                            ("--throughputs", args.throughputs if args.source_format == "itp"
                             else None)):
            if value is not None:
                raise InputError(flag, "", "applies to itp with --deadlines (elastic jobs)")


def convert(args: argparse.Namespace) -> int:
    """Convert, then write every document or none; a failure leaves no folder it made."""
    _check_elastic_flags(args)
    trace = TRACE_FORMATS.get(args.source_format)
    if trace is None:
        given = [flag for flag in ("--limit", "--statuses", *_trace_flags())
                 if getattr(args, flag.lstrip("-").replace("-", "_")) is not None]
        if given:
            raise InputError(given[0], "", f"applies to cluster traces "
                             f"({', '.join(TRACE_FORMATS)}), not to {args.source_format}")
    if (args.nodes is None) == (args.source_format == "openb"):
        raise InputError("--nodes", "", "openb needs --nodes FILE (the node list); other "
                         "formats take no --nodes")
    inputs = [file_of(args.file), *([args.throughputs] if args.throughputs else []),
              *([args.nodes] if args.nodes else []),
              *(value for dest, _, _ in _trace_flags().values()
                if (value := getattr(args, dest)) is not None)]
    documents: list[dict[str, Any]]
    # A folder made for the documents goes again, empty, when reading or writing fails.
    with output_folder(args.output, inputs) as out:
        if args.deadlines:
            documents = [_elastic_itp(args)]
        elif trace is not None:
            documents = [_trace_document(args, trace)]
        elif args.source_format == "openb":
            document = openb_document(args.nodes, args.file)
            del document["lines"]
            documents = [document]
        elif args.source_format == "gavel":
            documents = gavel_documents(
                Path(args.file), None if args.throughputs is None else Path(args.throughputs),
                args.fleet, args.gpus_per_node, args.space_sharing)
        else:
            documents = gap_documents(args.file, args.sense)
        written = write_documents(documents, args.file, out, inputs)
    for target in written:
        console.print(f"wrote {target}", markup=False)
    return ExitCode.OK

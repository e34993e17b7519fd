"""``gpuplan convert``: OR-Library GAP files, Gavel traces or openb pod lists to instance files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuplan.cli.common import Commands, ExitCode, bounded, console, file_of
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output_folder
from gpuplan.core.instance import MAX_GPUS
from gpuplan.readers.gavel import PHYSICAL_CLUSTER, gavel_documents
from gpuplan.readers.instance_file import write_documents
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


def register(commands: Commands) -> None:
    """Add ``convert``."""
    parser = commands.add_parser(
        "convert", help="convert OR-Library GAP files or Gavel traces to instance files",
        description="Write each problem of an OR-Library GAP file (or FILE#k), or a Gavel "
        "job trace timed by Gavel's measured throughputs, as gpuplan instance JSON files in "
        "OUTDIR.",
    )
    parser.add_argument("source_format", choices=["orlib-gap", "gavel", "openb"])
    parser.add_argument("file", help="GAP file (FILE#k for one problem), Gavel trace, or "
                        "openb pod list (CSV)")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    parser.add_argument("--sense", choices=["min", "max"], default="min",
                        help="orlib-gap: minimise cost (default) or maximise profit")
    parser.add_argument("--throughputs", metavar="FILE",
                        help="gavel: Gavel's simulation_throughputs.json")
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
    parser.set_defaults(run=convert)


def convert(args: argparse.Namespace) -> int:
    """Convert, then write every document or none."""
    if (args.nodes is None) == (args.source_format == "openb"):
        raise InputError("--nodes", "", "openb needs --nodes FILE (the node list); other "
                         "formats take no --nodes")
    inputs = [file_of(args.file), *([args.throughputs] if args.throughputs else []),
              *([args.nodes] if args.nodes else [])]
    out = check_output_folder(args.output, inputs)
    documents: list[dict[str, Any]]
    if args.source_format == "openb":
        document = openb_document(args.nodes, args.file)
        del document["lines"]
        documents = [document]
    elif args.source_format == "gavel":
        documents = gavel_documents(
            Path(args.file), None if args.throughputs is None else Path(args.throughputs),
            args.fleet, args.gpus_per_node, args.space_sharing)
    else:
        documents = gap_documents(args.file, args.sense)
    for target in write_documents(documents, args.file, out, inputs):
        console.print(f"wrote {target}", markup=False)
    return ExitCode.OK

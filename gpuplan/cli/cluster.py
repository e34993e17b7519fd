"""``gpuplan import`` and ``gpuplan export``: fleets from cluster managers, plans to them.

``import slurm|kubernetes`` reads a cluster's own description (nodes, GPUs, CPUs and
memory, and the network's topology when asked) into an instance file;
``import sacct`` and ``import squeue`` read what a Slurm cluster ran and runs into a
schedule of the plan's instance, a record that ``gpuplan replan`` re-plans from (each
Slurm state read as :data:`~gpuplan.readers.slurm.SLURM_STATES` says: done, running, not
started, ended unsuccessfully), checked as what ran. ``export NAME`` writes a verified
plan (or, for ``slurm-conf``, the fleet) in the files of a registered exporter
(:data:`~gpuplan.exporters.EXPORTERS`); each exporter's options are its sub-command's
flags, so a flag it does not take is refused.
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuplan.cli.common import Commands, ExitCode, console, print_verification
from gpuplan.cli.hybrid import read_document
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output, write_text_atomic
from gpuplan.core.instance import MAX_TIME_S
from gpuplan.core.options import option_fields, part_options
from gpuplan.core.schedule import Schedule, parse_epoch
from gpuplan.exporters import EXPORTERS
from gpuplan.exporters.base import check_plan, write_files
from gpuplan.hybrid.residual import as_ran, verify_previous
from gpuplan.readers import read_instance
from gpuplan.readers.fleet import fleet_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.kubernetes import parse_level_labels, read_kubernetes_fleet
from gpuplan.readers.slurm import (
    ENDED,
    SACCT_COMMAND,
    SQUEUE_COMMAND,
    read_sacct,
    read_slurm_fleet,
    read_squeue,
)


def register(commands: Commands) -> None:
    """Add ``import`` and ``export``."""
    _register_import(commands)
    _register_export(commands)


def _register_import(commands: Commands) -> None:
    parser = commands.add_parser(
        "import", help="read a fleet from slurm.conf or kubectl, or what Slurm ran (sacct)",
        description="Read a cluster's fleet into an instance file (alone, for you to add "
        "jobs to, or under the jobs of --jobs FILE), or what a Slurm cluster ran into a "
        "schedule of the plan's instance.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    slurm = kinds.add_parser("slurm", help="the GPU nodes of slurm.conf (and gres.conf, "
                             "topology.conf)",
                             description="NodeName lines with Gres=gpu:TYPE:N, CPUs and "
                             "RealMemory (ranges like gpu[01-16], NodeName=DEFAULT, "
                             "Include); untyped GPUs take their types from gres.conf.")
    slurm.add_argument("conf", metavar="slurm.conf")
    slurm.add_argument("gres", nargs="?", metavar="gres.conf")
    slurm.add_argument("--topology", metavar="topology.conf",
                       help="the switch tree of Slurm's topology/tree plugin: levels tier1 "
                       "(the leaf switches), tier2 (the switches above them), ..., each node "
                       "labelled with its switch at each")
    kube = kinds.add_parser("kubernetes", help="the GPU nodes of kubectl get nodes -o json",
                            description="Nodes with nvidia.com/gpu allocatable (else "
                            "capacity), typed by the nvidia.com/gpu.product label, with "
                            "their CPUs and memory.")
    kube.add_argument("conf", metavar="NODES.json")
    kube.add_argument("--topology", metavar="LEVEL=LABEL,...",
                      help="topology levels, widest first, each read from a node label "
                      "(e.g. block=cloud.provider.com/topology-block,"
                      "rack=cloud.provider.com/topology-rack)")
    for sub in (slurm, kube):
        sub.add_argument("--jobs", metavar="INSTANCE",
                         help="an instance file whose jobs and objective the fleet is put "
                         "under (its GPU types keep their capacities); the result must "
                         "validate")
        sub.add_argument("--node-resources", action=argparse.BooleanOptionalAction,
                         default=True,
                         help="read each node's CPUs and memory as the node resources "
                         "cpu_milli and memory_mib, which jobs' node_demand draws on "
                         "(default: true; an instance whose jobs draw none plans the GPUs "
                         "alone)")
        sub.add_argument("--name", help="the instance's name without --jobs (default: the "
                         "file's stem)")
        sub.add_argument("-o", "--output", required=True, metavar="INSTANCE.json")
        sub.set_defaults(run=import_fleet)
    sacct = kinds.add_parser(
        "sacct", help="what Slurm ran and runs (sacct -P), as a schedule of the plan's "
        "instance",
        description=f"Read sacct -P output (write it with: {SACCT_COMMAND}) into a "
        "version-2 schedule of INSTANCE: COMPLETED jobs are done (their runs as they ran), "
        "RUNNING ones run from their start to their planned end at the instance's duration "
        "(give --at, when the output was taken), PENDING ones are not started, and FAILED, "
        "TIMEOUT, NODE_FAIL, CANCELLED ones ended unsuccessfully (both unplaced, for "
        "gpuplan replan to plan). Check it as what ran (done jobs as long as they took) "
        "and write it; exit 1 when what ran breaks the instance's constraints (the "
        "schedule is written, with its violations). Compare it with the plan by gpuplan "
        "diff, or re-plan from it by gpuplan replan INSTANCE OUT --at T.")
    squeue = kinds.add_parser(
        "squeue", help="what runs and waits in Slurm (squeue), as a schedule of the plan's "
        "instance",
        description=f"Read squeue output (write it with: {SQUEUE_COMMAND}) as sacct's is "
        "read: RUNNING jobs run to their planned end, PENDING ones are not started. A job of "
        "--plan that squeue does not list has left the queue: it is done as the plan ran it, "
        "cut at --at (squeue cannot tell a failed job: read sacct when jobs may have "
        "failed), or not started if the plan starts it at --at or later.")
    for sub, what in ((sacct, "SACCT.txt"), (squeue, "SQUEUE.txt")):
        sub.add_argument("conf", metavar=what)
        sub.add_argument("--instance", required=True, help="the instance that was planned")
        sub.add_argument("--plan", metavar="SCHEDULE.json", required=sub is squeue,
                         help="the exported plan: its epoch is t = 0"
                         + ("; the jobs squeue does not list ran as it says"
                            if sub is squeue else ""))
        sub.add_argument("--epoch", metavar="ISO", help="t = 0 as ISO-8601 with a UTC offset "
                         "(default: the plan's)")
        sub.add_argument("--at", metavar="T", required=sub is squeue,
                         help="when the output was taken: seconds from the epoch, or "
                         "ISO-8601 with a UTC offset" + ("" if sub is squeue else
                                                        "; needed when a job runs"))
        sub.add_argument("-o", "--output", required=True, metavar="SCHEDULE.json")
        sub.set_defaults(run=import_record)


def import_fleet(args: argparse.Namespace) -> int:
    """Read the fleet, put it under the jobs if given, validate and write."""
    topology_file = args.topology if args.kind == "slurm" else None
    inputs = [p for p in (args.conf, getattr(args, "gres", None), topology_file, args.jobs)
              if p]
    target = check_output(args.output, inputs)
    if args.jobs is not None and args.name is not None:
        raise InputError("--name", "", "--name names a fleet written alone; with --jobs "
                         "the instance keeps its file's name")
    if args.kind == "slurm":
        fleet = read_slurm_fleet(args.conf, args.gres, topology_file)
    else:
        try:
            levels = parse_level_labels(args.topology) if args.topology else ()
        except ValueError as exc:
            raise InputError("--topology", "", str(exc)) from None
        fleet = read_kubernetes_fleet(args.conf, levels)
    document = fleet_document(fleet, args.conf, args.name or Path(args.conf).stem, args.jobs,
                              args.node_resources)
    write_text_atomic(target, json.dumps(document, indent=1) + "\n")
    gpus = sum(sum(node["gpus"].values()) for node in fleet["nodes"])
    levels = fleet.get("topology", {}).get("levels", [])
    console.print(f"wrote {args.output}: {len(fleet['nodes'])} nodes, {gpus} GPUs of "
                  f"{len(fleet['gpu_types'])} type(s) "
                  f"({', '.join(t['id'] for t in fleet['gpu_types'])})"
                  + (f", topology {' > '.join(levels)}" if levels else "")
                  + ("" if args.jobs else "; add the jobs to plan"), markup=False)
    return ExitCode.OK


def import_record(args: argparse.Namespace) -> int:
    """Read what ran and runs, check it as what ran, write it; exit 1 on violations."""
    target = check_output(args.output, [p for p in (args.conf, args.instance, args.plan) if p])
    document = read_document(args.instance)
    instance = instance_from_data(document, args.instance)
    plan = None if args.plan is None else Schedule.read(args.plan)
    if args.epoch is not None:
        epoch = parse_epoch(args.epoch, "--epoch")
    elif plan is None:
        raise InputError("--epoch", "", "give t = 0: --plan (the exported plan) or --epoch ISO")
    elif plan.epoch is None:
        raise InputError(args.plan, "epoch", "the plan has no epoch: give the one it was "
                         "exported with (--epoch ISO)")
    else:
        epoch = plan.epoch
    at = None if args.at is None else _instant(args.at, epoch)
    if args.kind == "squeue":
        assert plan is not None and at is not None
        ran = read_squeue(args.conf, instance, epoch, at, plan)
    else:
        ran = read_sacct(args.conf, instance, epoch, at)
    # Checked as what ran: its done jobs as long as they took, its jobs not run unplaced.
    ran_document, took = as_ran(document, args.instance, ran, math.inf if at is None else at)
    verification = verify_previous(instance_from_data(ran_document, args.instance), ran)
    ran = ran.model_copy(update={"verification": verification,
                                 "objective": verification.objective})
    try:
        ran.write(target)
    except OSError as exc:
        raise InputError(args.output, "", f"cannot write the schedule: {exc}") from None
    _print_record(args, instance.n_jobs, ran, at, took)
    print_verification(verification)
    return ExitCode.OK if verification.ok else ExitCode.FAILED


def _instant(text: str, epoch: datetime) -> float:
    """``--at``: seconds from the epoch, or an ISO-8601 time with a UTC offset."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = (parse_epoch(text, "--at") - epoch).total_seconds()
        except InputError:
            raise InputError("--at", "", f"{text!r} is neither seconds from the epoch nor "
                             "an ISO-8601 time with a UTC offset") from None
    if not 0 <= seconds <= MAX_TIME_S:
        raise InputError("--at", "", f"{text!r} is {seconds:g} s from the epoch {epoch}; "
                         f"expected 0 to {MAX_TIME_S:g}")
    return seconds


def _print_record(args: argparse.Namespace, jobs: int, ran: Schedule, at: float | None,
                  took: dict[str, float]) -> None:
    """What the record holds, the done jobs that took other than their estimate, what next."""
    placed = {s.job for s in ran.segments}
    running = {s.job for s in ran.segments if at is not None and s.end_s > at}
    again = [u.job for u in ran.unplaced if u.reason.startswith(ENDED)]
    console.print(f"wrote {args.output}: of {jobs} jobs, {len(placed) - len(running)} done, "
                  f"{len(running)} running, {len(ran.unplaced) - len(again)} not started, "
                  f"{len(again)} ended unsuccessfully (to run again)", markup=False)
    for job, share in list(took.items())[:5]:
        console.print(f"  {job} took {share:.3g} times its estimate", markup=False)
    if len(took) > 5:
        console.print(f"  ... and {len(took) - 5} more jobs took other than their estimate")
    if at is not None:
        console.print(f"re-plan from it: gpuplan replan {args.instance} {args.output} "
                      f"--changes CHANGES.yaml --at {at:g}", markup=False)


def _register_export(commands: Commands) -> None:
    parser = commands.add_parser(
        "export", help="write a verified plan for Slurm, Kueue or Volcano",
        description="Verify SCHEDULE against --instance and write the files that make the "
        "cluster manager run it: where, when and in what order the plan says (see README, "
        "'From plan to cluster'). Nothing is written when the schedule fails verification "
        "(exit 1) or names what the instance lacks (exit 2).")
    kinds = parser.add_subparsers(dest="exporter", required=True, metavar="TARGET")
    for name, exporter in EXPORTERS.items():
        sub = kinds.add_parser(name, help=exporter.description, description=(
            exporter.description + "."))
        if exporter.needs_schedule:
            sub.add_argument("schedule", metavar="SCHEDULE.json")
        sub.add_argument("--instance", required=True, help="the schedule's instance"
                         if exporter.needs_schedule else "the instance whose fleet to write")
        sub.add_argument("-o", "--output", required=True, metavar="DIR",
                         help="the folder to write into (made when missing)")
        for f in option_fields(exporter.options_type):
            choices = f.metadata["choices"]
            sub.add_argument(f.metadata["flag"], dest=f.name,
                             metavar=f.metadata["metavar"] or (None if choices else "VALUE"),
                             choices=choices, default=argparse.SUPPRESS,
                             help=f.metadata["help"].replace("%", "%%"))
        sub.set_defaults(run=export)


def export(args: argparse.Namespace) -> int:
    """Check the plan, build every file, then write them all."""
    exporter = EXPORTERS[args.exporter]
    given: dict[str, Any] = {f.name: getattr(args, f.name)
                             for f in option_fields(exporter.options_type) if f.name in args}
    options = part_options(exporter, "exporter", given)
    schedule_file = getattr(args, "schedule", None)
    inputs = [p for p in (args.instance, schedule_file) if p]
    instance = read_instance(args.instance)
    plan = None
    if schedule_file is not None:
        plan = check_plan(instance, Schedule.read(schedule_file), schedule_file,
                          getattr(options, "epoch", None))
    files = exporter().files(instance, plan, options)
    written = write_files(files, args.output, inputs, executable=tuple(
        name for name in files if name.endswith(".sh")))
    what = (f"{len(plan.jobs)} planned jobs of {instance.name}" if plan is not None
            else f"the fleet of {instance.name}")
    console.print(f"wrote {len(written)} files for {what} to {args.output} "
                  f"({exporter.name})", markup=False)
    return ExitCode.OK

"""``gpuplan hpc TRACE.swf --policy NAME``: HPC queue policies on SWF traces.

RLScheduler's evaluation protocol (:class:`~gpuplan.simulate.hpc.Protocol`): sequences of
consecutive jobs of a Parallel Workloads Archive trace, each on an empty machine of whole
nodes, scored by bounded slowdown and utilization. ``--policy`` names a queue policy: a
heuristic of :data:`~gpuplan.simulate.hpc.QUEUE_POLICIES`, ``replan``
(:class:`~gpuplan.simulate.hpc.ReplanOrder`), or ``rl:DIR``, a trained policy of
:mod:`gpuplan.rl`. Every sequence is verified; the report is written with ``-o``. The
command takes only its own flags (the GPU simulator's are ``gpuplan simulate``'s).

Exit codes: 0 every sequence verified (the report written with ``-o``); 1 a sequence
failed verification (a bug, nothing written); 2 bad input or flags, nothing written;
130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_settings,
    bounded,
    console,
    settings,
    summary_table,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output, write_text_atomic
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.methods import METHODS
from gpuplan.readers.swf import is_swf, read_swf
from gpuplan.simulate.hpc import (
    QUEUE_POLICIES,
    HpcWorkload,
    Protocol,
    ProtocolReport,
    QueuePolicy,
    ReplanOrder,
    run_protocol,
)


def register(commands: Commands) -> None:
    """Add ``hpc``: the protocol's flags, and the replan policy's."""
    defaults = Protocol()
    parser = commands.add_parser(
        "hpc", help="run a queue policy on an SWF trace under RLScheduler's protocol",
        description="Run an HPC queue policy over RLScheduler's evaluation sequences of an "
        "SWF trace (.swf, .swf.gz): consecutive jobs, each sequence on an empty machine, "
        "scored by bounded slowdown and utilization; every sequence is verified. Exit "
        "codes: 0 ok; 1 a sequence failed verification (a bug, nothing written); 2 bad "
        "input; 130 Ctrl-C.")
    parser.add_argument("input", metavar="TRACE", help="SWF trace (.swf, .swf.gz)")
    parser.add_argument("--policy", required=True, metavar="NAME",
                        help=f"the queue policy: {', '.join(QUEUE_POLICIES)}; replan (plans "
                        "the waiting jobs with --replan-method, default "
                        f"{REPLAN_METHOD}, --time-limit per decision, default "
                        f"{REPLAN_CALL_S:g} s); or rl:DIR, a policy `gpuplan rl train` wrote")
    parser.add_argument("--backfill", action="store_true",
                        help="waiting jobs that end before the picked job's reservation start "
                        "ahead of it (EASY backfilling, FCFS)")
    parser.add_argument("--sequences", type=bounded(int, 1, 10_000), metavar="N",
                        default=defaults.sequences,
                        help=f"sequences to run (default: {defaults.sequences})")
    parser.add_argument("--length", type=bounded(int, 2, 1_000_000), metavar="N",
                        default=defaults.length,
                        help=f"jobs per sequence (default: {defaults.length})")
    parser.add_argument("--first-jobs", dest="first_jobs", type=bounded(int, 0, 100_000_000),
                        metavar="N", default=defaults.first_jobs,
                        help="draw sequences from the first N jobs (RLScheduler: 10000 for "
                        "SDSC-SP2 and HPC2N; default: all)")
    add_settings(parser, "seed", "time_limit_s", "threads")
    parser.add_argument("--replan-method", dest="replan_method", metavar="NAME",
                        default=argparse.SUPPRESS, help="replan: the planning method "
                        f"(default: {REPLAN_METHOD})")
    parser.add_argument("-o", "--output", metavar="REPORT.json",
                        help="write the report (every sequence's starts and metrics)")
    parser.set_defaults(run=run_protocol_command)


#: Flags only ``--policy replan`` takes (dest, flag).
_REPLAN_FLAGS = (("time_limit_s", "--time-limit"), ("threads", "--threads"),
                 ("replan_method", "--replan-method"))
#: The method ``replan`` plans with unless --replan-method says otherwise.
REPLAN_METHOD = "cp"
#: Seconds per plan unless --time-limit says otherwise.
REPLAN_CALL_S = 1.0


def _replan(args: argparse.Namespace) -> ReplanOrder:
    method = getattr(args, "replan_method", REPLAN_METHOD)
    takers = [name for name, m in METHODS.items()
              if m.plans_outages and ObjectiveKind.WEIGHTED_COMPLETION in m.objectives]
    if method not in takers:
        raise InputError("--replan-method", "", f"{method!r} cannot plan waiting jobs around "
                         f"running ones for weighted completion; choose from "
                         f"{', '.join(takers)}")
    run = settings(args)
    if run.time_limit_s is None:
        run = dataclasses.replace(run, time_limit_s=REPLAN_CALL_S)
    return ReplanOrder(method, dataclasses.replace(run, threads=run.threads or 1))


def load_policy(args: argparse.Namespace, workload: HpcWorkload) -> QueuePolicy:
    """A registered heuristic, ``replan``, or ``rl:DIR``: a trained policy folder.

    Raises
    ------
    InputError
        An unknown name, a replan flag for another policy; for ``rl:DIR``, the extra not
        installed or a bad folder.
    """
    name = args.policy
    if name == "replan":
        return _replan(args)
    given = [flag for dest, flag in _REPLAN_FLAGS if hasattr(args, dest)]
    if given:
        raise InputError(given[0], "", "is a flag of --policy replan")
    if name.startswith("rl:"):
        from gpuplan.cli.rl import load_queue_policy

        return load_queue_policy(name.removeprefix("rl:"), workload)
    if name not in QUEUE_POLICIES:
        raise InputError("--policy", "", f"unknown queue policy {name!r}; "
                         f"choose from {', '.join(QUEUE_POLICIES)}, replan or rl:DIR")
    return QUEUE_POLICIES[name]


def _summary(report: ProtocolReport) -> list[tuple[str, str]]:
    rows = [(f"sequence {k + 1} (job {int(report.workload.job_number[r.first])})",
             f"bsld {r.bounded_slowdown:.2f}, utilization {r.utilization:.3f}")
            for k, r in enumerate(report.runs)]
    rows.append(("mean", f"bsld {report.bounded_slowdown:.2f}, utilization "
                 f"{report.utilization:.3f}"))
    rows.append(("wall time", f"{report.wall_time_s:.2f} s"))
    return rows


def run_protocol_command(args: argparse.Namespace) -> int:
    """Check flags and output, read the trace, run the policy over the sequences, write."""
    if not is_swf(args.input):
        raise InputError(args.input, "", "gpuplan hpc takes an SWF trace (.swf or .swf.gz); "
                         "instance files and Gavel traces run under gpuplan simulate")
    output = None if args.output is None else check_output(args.output, [args.input])
    protocol = Protocol(sequences=args.sequences, length=args.length,
                        seed=getattr(args, "seed", Protocol.seed),
                        first_jobs=args.first_jobs, backfill=args.backfill)
    workload = HpcWorkload.from_trace(read_swf(args.input))
    policy = load_policy(args, workload)
    report = run_protocol(workload, protocol, policy)
    document: dict[str, Any] = report.document()
    if output is not None:
        try:
            write_text_atomic(output, json.dumps(document, indent=1) + "\n")
        except OSError as exc:
            raise InputError(args.output, "", f"cannot write the report: {exc}") from None
    backfill = ", backfilling" if protocol.backfill else ""
    console.print(summary_table(
        f"{workload.name}: {args.policy}{backfill}, {protocol.sequences} x "
        f"{protocol.length} jobs on {workload.max_nodes} nodes (each verified)",
        _summary(report)))
    return ExitCode.OK

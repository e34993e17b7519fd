"""``gpuplan simulate TRACE.swf --protocol rlscheduler``: HPC queue policies on SWF traces.

The flags of the protocol (:func:`add_protocol_flags`) sit beside ``gpuplan simulate``'s;
:func:`run_protocol_command` runs a queue policy (a heuristic of
:data:`~gpuplan.simulate.hpc.QUEUE_POLICIES`, ``replan``
(:class:`~gpuplan.simulate.hpc.ReplanOrder`), or ``rl:DIR``, a trained policy of
:mod:`gpuplan.rl`) over the protocol's sequences, each verified, and writes the report.

Exit codes: 0 every sequence verified (the report written with ``-o``); 1 a sequence
failed verification (a bug, nothing written); 2 bad input or flags, nothing written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from gpuplan.cli.common import ExitCode, bounded, console, settings, summary_table
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

#: The protocols ``--protocol`` takes.
PROTOCOLS = (Protocol.NAME,)
#: Protocol flags (dest, flag), unset unless given.
_PROTOCOL_FLAGS = (("backfill", "--backfill"), ("sequences", "--sequences"),
                   ("length", "--length"), ("first_jobs", "--first-jobs"))
#: Flags of the engine's runs (dest, flag, default) that a protocol run does not take.
_ENGINE_FLAGS = (
    ("preset", "--preset", None), ("mode", "--mode", None), ("round_s", "--round", None),
    ("restart_overhead_s", "--restart-overhead", None),
    ("migration_overhead_s", "--migration-overhead", None), ("window", "--window", None),
    ("cluster", "--cluster", None), ("throughputs", "--throughputs", None),
    ("metrics_only", "--metrics-only", False), ("failures", "--failures", None),
    ("fail_per_day", "--fail-per-day", None), ("fail_for", "--fail-for", None),
    ("checkpoint", "--checkpoint", None), ("actual", "--actual", None),
    ("write_instance", "--write-instance", None), ("plot", "--plot", None),
)


def add_protocol_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--protocol`` and the protocol's own flags (unset unless given)."""
    unset = argparse.SUPPRESS
    defaults = Protocol()
    parser.add_argument("--protocol", choices=PROTOCOLS, default=None,
                        help="run an SWF trace (.swf, .swf.gz) under RLScheduler's "
                        "evaluation: sequences of consecutive jobs, each on an empty machine, "
                        "scored by bounded slowdown and utilization; --policy then names a "
                        f"queue policy ({', '.join(QUEUE_POLICIES)}), replan (plans the "
                        "waiting jobs with --replan-method, default cp, --time-limit per "
                        f"decision, default {REPLAN_CALL_S:g} s) or rl:DIR")
    parser.add_argument("--backfill", action="store_true", default=unset,
                        help="protocol: waiting jobs that end before the picked job's "
                        "reservation start ahead of it (EASY backfilling, FCFS)")
    parser.add_argument("--sequences", type=bounded(int, 1, 10_000), metavar="N",
                        default=unset, help=f"protocol: sequences to run (default: "
                        f"{defaults.sequences})")
    parser.add_argument("--length", type=bounded(int, 2, 1_000_000), metavar="N",
                        default=unset, help=f"protocol: jobs per sequence (default: "
                        f"{defaults.length})")
    parser.add_argument("--first-jobs", dest="first_jobs", type=bounded(int, 0, 100_000_000),
                        metavar="N", default=unset, help="protocol: draw sequences from the "
                        "first N jobs (RLScheduler: 10000 for SDSC-SP2 and HPC2N; default: "
                        "all)")


def protocol_flags_given(args: argparse.Namespace) -> list[str]:
    """The protocol flags given on the command line."""
    return [flag for dest, flag in _PROTOCOL_FLAGS if hasattr(args, dest)]


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
    name = args.scheduler
    if name == "replan":
        return _replan(args)
    given = [flag for dest, flag in _REPLAN_FLAGS if hasattr(args, dest)]
    if given:
        raise InputError(given[0], "", "is a flag of --policy replan")
    if name.startswith("rl:"):
        from gpuplan.cli.rl import load_queue_policy

        return load_queue_policy(name.removeprefix("rl:"), workload)
    if name not in QUEUE_POLICIES:
        raise InputError("--policy", "", f"unknown queue policy {name!r} for --protocol; "
                         f"choose from {', '.join(QUEUE_POLICIES)}, replan or rl:DIR")
    return QUEUE_POLICIES[name]


def _refuse_engine_flags(args: argparse.Namespace) -> None:
    from gpuplan.simulate import RunSpec

    spec = RunSpec()
    given = [flag for dest, flag, default in _ENGINE_FLAGS
             if getattr(args, dest, default) != default]
    given += [flag for flag, dest, default in (("--placement", "placement", spec.placement),
                                               ("--admission", "admission", spec.admission))
              if getattr(args, dest) != default]
    if given:
        raise InputError(given[0], "", f"--protocol {args.protocol} runs whole-node queue "
                         f"policies on an SWF trace; {given[0]} is a flag of the GPU "
                         "simulator and would do nothing here")


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
    if args.protocol is None:
        raise InputError(args.input, "", "an SWF trace runs under --protocol rlscheduler "
                         "(whole-node queue policies); the GPU simulator takes instance "
                         "files and Gavel traces")
    if not is_swf(args.input):
        raise InputError(args.input, "", f"--protocol {args.protocol} takes an SWF trace "
                         "(.swf or .swf.gz)")
    _refuse_engine_flags(args)
    output = None if args.output is None else check_output(args.output, [args.input])
    protocol = Protocol(sequences=getattr(args, "sequences", Protocol.sequences),
                        length=getattr(args, "length", Protocol.length),
                        seed=getattr(args, "seed", Protocol.seed),
                        first_jobs=getattr(args, "first_jobs", Protocol.first_jobs),
                        backfill=getattr(args, "backfill", False))
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
        f"{workload.name}: {args.scheduler}{backfill}, {protocol.sequences} x "
        f"{protocol.length} jobs on {workload.max_nodes} nodes (each verified)",
        _summary(report)))
    return ExitCode.OK

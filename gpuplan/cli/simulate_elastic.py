"""``gpuplan simulate --policy edf|tiresias|elasticflow|optimizer``: elastic jobs over time.

The elastic policies (:data:`~gpuplan.simulate.elastic.policies.ELASTIC_POLICIES`) run on
the elastic engine, which chooses each job's GPU count as the run goes and may decline a
job; their flags are added to ``gpuplan simulate`` from their options, and the flags of
the rigid engine that they do not take (placement, admission, mode, overheads, failures,
actual durations, windows, pictures, the instance written back) are refused.

Exit codes are those of ``gpuplan simulate``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from gpuplan.cli.common import ExitCode, console, settings, simulation_bug, summary_table
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output
from gpuplan.core.instance import Instance
from gpuplan.core.options import declared_options
from gpuplan.core.schedule import ResultSchedule
from gpuplan.simulate.elastic import ElasticSpec, simulate_elastic
from gpuplan.simulate.elastic.policies import ELASTIC_POLICIES
from gpuplan.simulate.engine import SimulationError

#: Flags of the rigid engine an elastic policy does not take, by their ``args`` names.
_RIGID_ONLY = {"preset": "--preset", "mode": "--mode", "round_s": "--round",
               "restart_overhead_s": "--restart-overhead",
               "migration_overhead_s": "--migration-overhead", "window": "--window",
               "cluster": "--cluster", "throughputs": "--throughputs"}
_RIGID_VALUED = {"failures": "--failures", "fail_per_day": "--fail-per-day",
                 "fail_for": "--fail-for", "checkpoint": "--checkpoint", "actual": "--actual",
                 "write_instance": "--write-instance", "plot": "--plot"}


def elastic_options() -> dict[str, tuple[Any, list[str]]]:
    """Every option of an elastic policy, once by flag, with the policies taking it."""
    return declared_options(ELASTIC_POLICIES.values())


def add_elastic_flags(parser: argparse.ArgumentParser, taken: set[str]) -> None:
    """Add the elastic policies' own flags not among ``taken`` (the rigid parts' flags)."""
    for flag, (f, takers) in elastic_options().items():
        if flag in taken:
            continue
        parser.add_argument(flag, dest=f.name, metavar=f.metadata["metavar"],
                            default=argparse.SUPPRESS,
                            help=f"{f.metadata['help']} (taken by: {', '.join(takers)})"
                            .replace("%", "%%"))


def check_flags(args: argparse.Namespace, rigid_defaults: dict[str, Any],
                rigid_options: dict[str, Any]) -> dict[str, Any]:
    """The chosen elastic policy's options from the flags; any other flag refused.

    Raises
    ------
    InputError
        Naming the first flag the policy does not take.
    """
    policy = ELASTIC_POLICIES.part(args.scheduler)
    refused = [flag for name, flag in _RIGID_ONLY.items() if hasattr(args, name)]
    refused += [flag for name, flag in _RIGID_VALUED.items() if getattr(args, name, None)]
    refused += [f"--{name}" for name, default in rigid_defaults.items()
                if getattr(args, name) != default]
    options: dict[str, Any] = {}
    mine = {f.name for f, takers in elastic_options().values() if policy.name in takers}
    for flag, (f, _) in {**rigid_options, **elastic_options()}.items():
        if hasattr(args, f.name):
            if f.name in mine:
                options[f.name] = getattr(args, f.name)
            else:
                refused.append(flag)
    if not policy.calls_solver:
        refused += [flag for name, flag in (("time_limit_s", "--time-limit"),
                                            ("threads", "--threads"))
                    if hasattr(args, name)]
    if refused:
        raise InputError(refused[0], "", f"the elastic policy {policy.name!r} does not take "
                         f"{refused[0]}; it takes "
                         + (", ".join(sorted(flag for flag, (f, takers) in
                                             elastic_options().items()
                                             if policy.name in takers)) or "no option")
                         + (", --time-limit, --threads" if policy.calls_solver else "")
                         + ", --seed, -o, --metrics-only, --progress")
    return options


def run_elastic(args: argparse.Namespace, instance: Instance, inputs: list[str],
                options: dict[str, Any]) -> int:
    """Simulate the instance under the elastic policy, write the log, print the summary."""
    log = None if args.output is None else check_output(args.output, inputs)
    run = settings(args)
    spec = ElasticSpec(policy=args.scheduler, options=options, settings=run, seed=run.seed)
    began = time.perf_counter()
    try:
        schedule = simulate_elastic(instance, spec)
    except SimulationError as exc:
        if args.debug:
            raise
        return simulation_bug(args.scheduler, exc)
    seconds = time.perf_counter() - began
    if log is not None:
        if args.metrics_only:
            schedule.summary().write(args.output)
        else:
            schedule.write(args.output)
    console.print(summary_table(f"{instance.name}: {instance.n_jobs} jobs on "
                                f"{instance.n_gpus} GPUs",
                                _summary(schedule, seconds, args.output)))
    return ExitCode.OK


def _summary(schedule: ResultSchedule, seconds: float,
             written: str | None) -> list[tuple[str, str]]:
    run = schedule.run
    assert run is not None  # simulate_elastic always records the run
    m = run.metrics
    rows = [
        ("policy", f"{run.scheduler} (elastic engine, buddy placement)"),
        ("deadlines met", f"{m['deadline_ratio']:.4f} ({m['met']:.0f} of {m['jobs']:.0f} "
         "jobs)"),
        ("declined", f"{m['declined']:.0f}"),
        ("mean JCT, jobs run", f"{m['mean_jct_h']:.4g} h"),
        ("GPU time held", f"{m['held_gpu_h']:.6g} GPU-h"),
        ("decisions", f"{m['decisions']:.0f}, p50 {m['decision_p50_s'] * 1e3:.2f} ms, p99 "
         f"{m['decision_p99_s'] * 1e3:.2f} ms, max {m['decision_max_s'] * 1e3:.1f} ms"),
    ]
    if "solves" in m:
        rows.append(("solver calls", f"{m['solves']:.0f}, {run.solver_s or 0:.3f} s in all, "
                     f"p50 {m['solve_p50_s'] * 1e3:.1f} ms, p99 {m['solve_p99_s'] * 1e3:.1f} "
                     f"ms, max {m['solve_max_s'] * 1e3:.1f} ms"))
    rows += [("wall time", f"{seconds:.3f} s"),
             ("written to", written or "- (use -o FILE to save)")]
    return rows

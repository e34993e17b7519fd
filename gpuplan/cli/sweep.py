"""``gpuplan sweep``: policies x arrival rates x seeds on generated Gavel workloads.

Each point is an independent task (:mod:`gpuplan.harness.sweep`) run in local worker
processes or on a Dask cluster by the machinery of ``gpuplan batch``; a rerun skips the
points already done. Exit codes: 0 every point verified; 1 a point failed (its row says
why); 2 bad input, nothing run; 130 Ctrl-C, the table lists the points finished.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_workers,
    bounded,
    console,
    run_with_table,
)
from gpuplan.cli.simulate import check_solver_flags, run_parser, run_spec, workload_parser
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output_folder
from gpuplan.core.instance import MAX_JOBS
from gpuplan.core.settings import MAX_SEED
from gpuplan.exporters.plot import write_figure
from gpuplan.harness.batch import batch_plan, check_scheduler, run_tasks
from gpuplan.harness.sweep import SWEEP, Workload, check_points, points, write_results
from gpuplan.simulate import SimulationError
from gpuplan.simulate.plots import load_curve_figure
from gpuplan.simulate.policies import SCHEDULERS
from gpuplan.simulate.workload import parse_cluster

#: Highest arrival rate, jobs per hour.
MAX_RATE = 1e6


def _listed(kind: Callable[[str], Any], what: str) -> Callable[[str], list[Any]]:
    """An argument type for ``a,b,...``, each item parsed by ``kind``."""
    def parse(text: str) -> list[Any]:
        try:
            return [kind(part) for part in text.split(",")]
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{what}: {exc}") from None
    return parse


def _policy(name: str) -> str:
    if name not in SCHEDULERS:
        raise argparse.ArgumentTypeError(f"unknown policy {name!r}; choose from "
                                         f"{', '.join(SCHEDULERS)}")
    return name


def register(commands: Commands) -> None:
    """Add ``sweep``."""
    parser = commands.add_parser(
        "sweep", help="simulate policies x arrival rates x seeds on Gavel workloads",
        parents=[run_parser(), workload_parser()],
        description="Every point (policy, rate, seed) draws a workload with Gavel's job "
        "generator on --cluster and simulates it: one verified run log per point in "
        "OUTDIR, results.csv and results.md (policy, rate, seed, mean and p95 JCT, "
        "makespan, utilisation, preemptions, migrations, seconds, peak memory) and "
        "load_curve.png. Points already in OUTDIR for the same settings are skipped. "
        "Exit codes: 0 ok; 1 a point failed; 2 bad input; 130 Ctrl-C.",
    )
    parser.add_argument("--policies", type=_listed(_policy, "--policies"), required=True,
                        metavar="NAME,...", help="schedulers: " + ", ".join(SCHEDULERS))
    parser.add_argument("--rates", type=_listed(bounded(float, 0, MAX_RATE), "--rates"),
                        required=True, metavar="R,...", help="arrival rates, jobs per hour "
                        "(0: every job at time 0)")
    parser.add_argument("--seeds", type=_listed(bounded(int, 0, MAX_SEED), "--seeds"),
                        default=[0], metavar="N,...", help="seeds of the workloads and runs "
                        "(default: 0)")
    parser.add_argument("--jobs", type=bounded(int, 1, MAX_JOBS), required=True,
                        metavar="N", help="jobs per workload")
    parser.add_argument("--multi-gpu", action="store_true",
                        help="Gavel's multi-GPU scale factors 1/2/4/8 (default: one GPU each)")
    parser.add_argument("--priorities", action="store_true",
                        help="Gavel's priority weights (20%% of jobs at weight 5)")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    parser.add_argument("--metrics-only", action="store_true",
                        help="write each point's run summary (POINT.metrics.json: its "
                        "record, metrics and verification) instead of its run log")
    add_workers(parser, "the points")
    parser.set_defaults(run=sweep)


def sweep(args: argparse.Namespace) -> int:
    """Check everything, run the points with a progress bar, write the table and plot."""
    for flag, name in (("--cluster", "cluster"), ("--throughputs", "throughputs")):
        if not hasattr(args, name):
            raise InputError(flag, "", "a sweep draws Gavel workloads: give --cluster V:P:K "
                             "and --throughputs FILE")
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    workers, threads = batch_plan(args.workers, args.scheduler)
    workload = Workload(args.throughputs, parse_cluster(args.cluster), args.jobs,
                        args.gpus_per_node, args.multi_gpu, args.priorities)
    check_solver_flags(args, args.policies)
    spec = run_spec(args, args.policies[0], threads=threads)
    tasks = points(args.policies, args.rates, args.seeds, workload, spec, Path(args.output),
                   args.metrics_only)
    try:
        check_points(tasks)
    except SimulationError as exc:
        console.print("[red bold]simulation bug[/red bold] (gpuplan's engine or a policy, not "
                      "the input; nothing run):")
        console.print(f"  {exc}", markup=False)
        return ExitCode.FAILED
    out = check_output_folder(args.output, [args.throughputs])
    rows, (as_csv, as_md) = run_with_table(
        "simulating", [t.target for t in tasks],
        lambda on_row: run_tasks(tasks, SWEEP, workers, args.scheduler, on_row=on_row),
        lambda finished: write_results(finished, out))
    done = [r for r in rows if r["status"] == "ok"]
    curve = out / "load_curve.png"
    write_figure(load_curve_figure(done, p95=True, source=str(as_csv)), curve)
    console.print(f"{len(rows)} points, {len(done)} simulated and verified, "
                  f"{sum(bool(r['resumed']) for r in rows)} up to date; results in {as_csv}, "
                  f"{as_md} and {curve}", markup=False)
    for row in [r for r in rows if r["status"] != "ok"][:10]:
        console.print(f"  {row['file']}: {row['error']}", markup=False)
    return ExitCode.OK if len(done) == len(rows) else ExitCode.FAILED

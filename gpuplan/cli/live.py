"""``gpuplan run``: carry a plan out on a live Slurm and keep it true (:mod:`gpuplan.live`)."""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    console,
    fmt,
    print_unplaced,
    print_verification,
    read,
    settings,
)
from gpuplan.cli.hybrid import _method_arguments
from gpuplan.cli.solve import given_options
from gpuplan.core.errors import InputError
from gpuplan.core.files import output_folder
from gpuplan.core.instance import Instance
from gpuplan.core.options import build_options, option_fields
from gpuplan.core.schedule import Schedule
from gpuplan.live.cluster import Cluster, DryRun, SlurmCluster
from gpuplan.live.operator import NoPlan, Operator, OperatorOptions, scaled, scratch_folder
from gpuplan.live.runlog import check_log, figures, verify_run
from gpuplan.live.state import JobRecord, RunState
from gpuplan.methods import METHODS, get_method
from gpuplan.readers import read_instance


def register(commands: Commands) -> None:
    """Add ``run``."""
    parser = commands.add_parser(
        "run", help="carry a plan out on a live Slurm and keep it true as the cluster "
        "changes",
        description="Plan INSTANCE (or take --plan), submit it to Slurm, then watch the "
        "cluster (squeue/scontrol/sinfo) until every job has ended. When a node fails or "
        "drains, a job ends early, late or fails, or (with --watch) jobs are added, re-plan "
        "from the running state (running jobs pinned, finished ones gone, durations "
        "corrected from what ran), verify, and change only what moved in Slurm (scontrol "
        "update of a begin time, or cancel and submit again). DIR/state.json is the state "
        "(resume with --resume DIR after Ctrl-C) and, once done, the run log that gpuplan "
        "check verifies (what ran, over the instance as observed). Exit 0 when every job "
        "completed, 1 when some were given up or the run failed verification, 130 when "
        "interrupted (the jobs stay queued in Slurm).")
    parser.add_argument("instance", nargs="?", help="the batch (not with --resume)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="the run's folder: state, scripts, job outputs")
    parser.add_argument("--resume", metavar="DIR", help="go on with the run in DIR")
    parser.add_argument("--plan", metavar="SCHEDULE.json",
                        help="carry out this verified plan of INSTANCE (every job run whole) "
                        "instead of planning")
    parser.add_argument("--slurm-conf", metavar="slurm.conf",
                        help="the cluster's slurm.conf (default: SLURM_CONF, or Slurm's own)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be submitted or changed now, and change "
                        "nothing (writes nothing)")
    able = [name for name, m in METHODS.items() if m.keeps and m.plans_outages]
    _method_arguments(parser, able, "cp")
    for f in option_fields(OperatorOptions):
        parser.add_argument(f.metadata["flag"], dest=f.name, metavar=f.metadata["metavar"],
                            default=argparse.SUPPRESS, help=f.metadata["help"])
    parser.set_defaults(run=run)


def _options(args: argparse.Namespace, base: OperatorOptions | None) -> OperatorOptions:
    given = {f.name: getattr(args, f.name) for f in option_fields(OperatorOptions)
             if f.name in args}
    options: OperatorOptions = build_options(OperatorOptions, given, "gpuplan run")
    if base is None:
        return options
    # Resuming: the run's own options, but for those given now.
    return dataclasses.replace(base, **{name: getattr(options, name) for name in given})


def _cluster(conf: str | None, folder: Path, dry: bool) -> Cluster:
    if not dry:
        return SlurmCluster(conf, folder)
    try:
        return DryRun(SlurmCluster(conf, folder))
    except InputError:
        return DryRun(None)


def run(args: argparse.Namespace) -> int:
    """Start or resume a run; watch it to its end; check and report it."""
    if args.resume is not None:
        return _resume(args)
    if args.instance is None:
        raise InputError("INSTANCE", "", "give the instance to run, or --resume DIR")
    if args.output is None and not args.dry_run:
        raise InputError("-o", "", "give the run's folder (-o DIR)")
    options = _options(args, None)
    if options.speedup != 1.0 and not options.rehearse:
        raise InputError("--speedup", "", "runs the batch faster than its seconds, which "
                         "only jobs that sleep their planned length do: add --rehearse true")
    method = get_method(args.method)
    method_options = given_options(args, method)
    instance = read(args, args.instance)
    if instance.objective.is_static:
        raise InputError(args.instance, "objective", f"objective "
                         f"{instance.objective.value!r} has no time to carry out; run a "
                         "time-based objective (makespan, weighted-completion, ...)")
    plan = None
    if args.plan is not None:
        plan = Schedule.read(args.plan)
        if plan.instance != instance.name:
            raise InputError(args.plan, "instance", f"plans instance {plan.instance!r}, not "
                             f"{instance.name!r} ({args.instance})")
    state = RunState(instance=args.instance, instance_name=instance.name,
                     epoch=datetime.now(UTC),
                     slurm_conf=args.slurm_conf, method=method.name,
                     time_limit_s=settings(args).time_limit_s or 0.0,
                     speedup=options.speedup, rehearse=options.rehearse,
                     tolerance_s=options.tolerance_s,
                     jobs={job: JobRecord() for job in instance.job_ids})
    if args.dry_run:
        with scratch_folder() as folder:
            cluster = _cluster(args.slurm_conf, folder, True)
            operator = Operator(scaled(instance, options.speedup), cluster, folder, state,
                                options, settings(args), method_options, _say)
            operator.start(plan, args.plan or "")
            _print_dry(cluster)
        return ExitCode.OK
    cluster = _cluster(args.slurm_conf, Path(args.output).resolve(), False)
    inputs = [args.instance, *([args.plan] if args.plan else [])]
    try:
        operator = _start(args, instance, cluster, state, options, method_options, plan,
                          inputs)
    except NoPlan as exc:
        console.print(f"[red]no plan[/red] ({exc}): nothing was submitted", markup=True)
        print_unplaced(exc.schedule)
        return ExitCode.FAILED
    console.print(f"submitted {sum(len(r.attempts) for r in state.jobs.values())} Slurm "
                  f"jobs; the batch starts at {state.epoch.isoformat()}; state in "
                  f"{operator.path}", markup=False)
    return _watch(operator, operator.folder)


def _start(args: argparse.Namespace, instance: Instance, cluster: Cluster, state: RunState,
           options: OperatorOptions, method_options: Any, plan: Schedule | None,
           inputs: list[str]) -> Operator:
    """The operator with its first plan submitted; no folder is left when that fails."""
    with output_folder(args.output, inputs) as folder:
        if (folder / "state.json").exists():
            raise InputError(args.output, "", "holds a run (state.json): go on with it with "
                             f"--resume {args.output}, or choose another folder")
        operator = Operator(scaled(instance, options.speedup), cluster, folder, state,
                            options, settings(args), method_options, _say,
                            _watcher(args.instance, options))
        operator.start(plan, args.plan or "")
        operator.save()
    return operator


def _resume(args: argparse.Namespace) -> int:
    if args.instance is not None or args.plan is not None or args.options is not None \
            or args.method != "cp":
        raise InputError("--resume", "", "goes on with a run as it was started: give no "
                         "instance, --plan or method flags")
    folder = Path(args.resume)
    state = RunState.read(folder / "state.json")
    if state.finished:
        console.print(f"{folder}: the run has ended; check it with gpuplan check "
                      f"{state.instance} {folder / 'state.json'}", markup=False)
        return ExitCode.OK
    base = OperatorOptions(speedup=state.speedup, rehearse=state.rehearse,
                           tolerance_s=state.tolerance_s)
    options = _options(args, base)
    instance = scaled(read_instance(state.instance), state.speedup)
    method = get_method(state.method)
    cluster = _cluster(args.slurm_conf or state.slurm_conf, folder, args.dry_run)
    operator = Operator(instance, cluster, folder, state, options, settings(args),
                        given_options(args, method), _say, _watcher(state.instance, options))
    if args.dry_run:
        operator.step()
        _print_dry(cluster)
        return ExitCode.OK
    state.interrupted = False
    console.print(f"resuming {folder}: {sum(r.outcome is None for r in state.jobs.values())} "
                  "job(s) left", markup=False)
    return _watch(operator, folder)


def _watcher(instance: str, options: OperatorOptions) -> Any:
    """With --watch: the instance file read again when its modification time changes."""
    if not options.watch:
        return None
    path = Path(instance)
    # None: the first look reads it, so a resumed run sees jobs added while it was stopped.
    seen: list[int | None] = [None]

    def reread() -> Instance | None:
        stamp = path.stat().st_mtime_ns
        if stamp == seen[0]:
            return None
        seen[0] = stamp
        try:
            return scaled(read_instance(path), options.speedup)
        except InputError as exc:
            _say(f"{path} changed but does not read ({exc}); going on with the jobs as they "
                 "were")
            return None
    return reread


def _say(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def _print_dry(cluster: Cluster) -> None:
    assert isinstance(cluster, DryRun)
    console.print(f"dry run: {len(cluster.actions)} change(s) would be made:", markup=False)
    for action in cluster.actions:
        console.print(f"  {action}", markup=False, highlight=False)


def _watch(operator: Operator, folder: Path) -> int:
    state = operator.run()
    instance = operator.instance
    _, verification = verify_run(instance, state)
    problems = check_log(instance, state)
    found = figures(instance, state)
    table = Table(title=f"gpuplan run of {state.instance_name} ({folder})")
    table.add_column("")
    table.add_column("value", justify="right")
    for name, value in (
            ("jobs completed", f"{found.completed} of {len(state.jobs)}"),
            ("given up", str(found.given_up)),
            ("past their deadline or due date", str(found.late)),
            ("makespan (s)", f"{found.makespan:.0f} (first plan {found.planned_makespan:.0f})"),
            ("mean completion (s)", f"{found.mean_completion:.1f}"),
            ("weighted completion (s)", f"{found.weighted_completion:.1f}"),
            ("GPU idle share", f"{found.idle_share:.3f}"),
            ("start error p50 / p90 (s)", f"{found.start_error_p50:.1f} / "
             f"{found.start_error_p90:.1f}"),
            ("starts decided by plan / Slurm", f"{found.by_plan} / {found.by_slurm}"),
            ("re-plans", str(found.replans)), ("pending jobs moved", str(found.moved)),
            ("objective (recomputed)", fmt(verification.objective))):
        table.add_row(name, value)
    console.print(table)
    print_verification(verification)
    for problem in problems:
        console.print(f"[red]run log:[/red] {problem}", markup=True, highlight=False)
    ok = verification.ok and not problems and found.given_up == 0
    return ExitCode.OK if ok else ExitCode.FAILED

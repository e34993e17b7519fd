"""``gpuplan check``: verify a schedule file against its instance."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    bounded,
    console,
    fmt,
    objective,
    print_verification,
    read,
    reading_parser,
)
from gpuplan.core.errors import InputError
from gpuplan.core.instance import MAX_TIME_S, Instance
from gpuplan.core.schedule import Schedule
from gpuplan.hybrid.replan import changed_instances
from gpuplan.live.operator import scaled
from gpuplan.live.runlog import check_log, verify_run
from gpuplan.live.state import RunState, is_run_log
from gpuplan.readers import load_data
from gpuplan.readers.changes import Changes
from gpuplan.simulate.check import check_run
from gpuplan.verify import verify_schedule


def register(commands: Commands) -> None:
    """Add ``check``."""
    parser = commands.add_parser(
        "check", help="verify a schedule file against its instance", parents=[reading_parser()],
        description="Recompute every constraint, the objective and the certificate (status, "
        "bound, gap) of SCHEDULE from INSTANCE alone, for the instance's objective (or "
        "--objective); exit 1 on any violation, and for a file that holds no plan "
        "(no_solution, infeasible). A run log of gpuplan simulate must also list its "
        "events, charge the overheads its run record states, name registered parts with "
        "options they take, keep "
        "the rules those parts promise (a non-preemptive scheduler never preempts, fifo's "
        "order, preemptions only to start a job, round boundaries), and state the metrics "
        "its segments give. A run log of gpuplan run (its state.json) is checked as what "
        "ran (every constraint, over the instance as observed: durations as run, nodes "
        "down when seen down) and for its claims (which starts were the plan's).",
    )
    parser.add_argument("instance")
    parser.add_argument("schedule", type=Path)
    parser.add_argument("--changes", metavar="CHANGES.yaml",
                        help="check a re-plan (gpuplan replan) against the instance with these "
                        "changes applied at --at")
    parser.add_argument("--at", type=bounded(float, 0, MAX_TIME_S), metavar="T",
                        help="the re-plan's time, with --changes")
    parser.add_argument(
        "--objective", type=objective, metavar="NAME",
        help="check for this objective instead of the instance file's (the schedule's own "
        "claim is never taken)",
    )
    parser.set_defaults(run=check)


def check(args: argparse.Namespace) -> int:
    """Verify and report; exit 1 on a violation or a file without a plan."""
    # The objective is the instance's, or the user's: never what the schedule claims.
    instance = read(args, args.instance, args.objective)
    if (args.changes is None) != (args.at is None):
        raise InputError("--changes" if args.changes is None else "--at", "",
                         "--changes and --at go together: a re-plan is checked against the "
                         "instance with its changes applied at its time")
    if args.changes is not None:
        changes = Changes.read(args.changes)
        document = load_data(Path(args.instance))
        if not isinstance(document, dict):
            raise InputError(args.instance, "", "an instance file holds one object")
        _, instance = changed_instances(document, args.instance, changes, args.at,
                                        args.changes)
        if args.objective is not None:
            instance = instance.with_objective(args.objective)
    if is_run_log(args.schedule):
        return _check_live(instance, args.schedule)
    schedule = Schedule.read(args.schedule)
    verification = verify_schedule(instance, schedule)
    console.print(
        f"{args.schedule}: status {schedule.status.value}, objective "
        f"{fmt(schedule.objective)} (recomputed {fmt(verification.objective)}) for "
        f"{instance.objective.value}", markup=False,
    )
    print_verification(verification, schedule.status.has_plan)
    if not schedule.status.has_plan:
        console.print(f"[yellow]not verified[/yellow]: status {schedule.status.value} holds "
                      "no plan to verify")
    # A run log is held to its record too: known parts, the rules they promise, and
    # metrics that are what its segments give.
    record = check_run(instance, schedule) if verification.ok else []
    for problem in record:
        console.print(f"[red]run record:[/red] {problem}", markup=True, highlight=False)
    ok = verification.ok and schedule.status.has_plan and not record
    return ExitCode.OK if ok else ExitCode.FAILED


def _check_live(instance: Instance, path: Path) -> int:
    """Verify what a live run ran and the claims of its log; exit 1 on any problem."""
    state = RunState.read(path)
    instance = scaled(instance, state.speedup)
    _, verification = verify_run(instance, state)
    console.print(f"{path}: gpuplan run of {state.instance_name}, "
                  f"{sum(r.outcome == 'completed' for r in state.jobs.values())} of "
                  f"{len(state.jobs)} jobs completed, {len(state.plans)} plan(s), "
                  f"{'finished' if state.finished else 'not finished'}; what ran: objective "
                  f"{fmt(verification.objective)} for {instance.objective.value}",
                  markup=False)
    print_verification(verification)
    problems = check_log(instance, state)
    for problem in problems:
        console.print(f"[red]run log:[/red] {problem}", markup=True, highlight=False)
    return ExitCode.OK if verification.ok and not problems else ExitCode.FAILED

"""``gpuplan replan``, ``diff``, ``whatif`` and ``eta``: plans that adapt, read side by side."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.table import Table

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_settings,
    bounded,
    console,
    fmt,
    print_verification,
    read,
    reading_parser,
    settings,
    summary_table,
)
from gpuplan.cli.solve import add_method_flag, given_options, method_flags
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output, write_text_atomic
from gpuplan.core.instance import MAX_JOBS, MAX_TIME_S
from gpuplan.core.schedule import Schedule
from gpuplan.hybrid.compare import HOW, diff, eta
from gpuplan.hybrid.replan import changed_instances, replan, whatif
from gpuplan.hybrid.residual import Costs, as_ran, is_record
from gpuplan.live.operator import scaled
from gpuplan.live.runlog import in_force
from gpuplan.live.state import RunState, is_run_log
from gpuplan.methods import METHODS, get_method
from gpuplan.readers import load_data
from gpuplan.readers.changes import Changes, changed_document


def _method_arguments(parser: argparse.ArgumentParser, able: list[str], default: str) -> None:
    parser.add_argument("--method", choices=able, default=default,
                        help=f"planning method (default: {default})")
    parser.add_argument("--options", metavar="FILE.toml|.yaml",
                        help="the method's settings by key; flags override the file")
    for flag, fields in method_flags().items():
        mine = {name: f for name, f in fields.items() if name in able}
        if mine:
            add_method_flag(parser, flag, mine)
    add_settings(parser, "time_limit_s", "iterations", "seed", "threads")


def register(commands: Commands) -> None:
    """Add ``replan``, ``diff``, ``whatif`` and ``eta``."""
    able = [name for name, m in METHODS.items() if m.keeps and m.plans_outages]
    parser = commands.add_parser(
        "replan", help="re-plan a verified plan after changes, with the least disruption",
        description="Split PREVIOUS at --at (jobs done stay done, running jobs go on where "
        "their GPUs stay up, the rest is free), apply the changes file, and plan what is "
        "left with --method, minimising the objective plus the price of every job moved "
        "(--move-s seconds of objective each) with at most --max-changes moves. PREVIOUS "
        "may be what a cluster ran and runs at --at (gpuplan import sacct or squeue with "
        "that --at): its jobs not started or to run again are planned, and its done jobs "
        "take what they took. The whole plan is verified against the changed instance "
        "before it is written.")
    parser.add_argument("instance")
    parser.add_argument("previous", type=Path, help="the previous schedule: a plan of INSTANCE, "
                        "or what ran (gpuplan import sacct or squeue)")
    parser.add_argument("--changes", required=True, metavar="CHANGES.yaml",
                        help="what changed (gpuplan schema changes)")
    parser.add_argument("--at", required=True, type=bounded(float, 0, MAX_TIME_S), metavar="T",
                        help="the instant of the change, in the plan's seconds")
    _method_arguments(parser, able, "cp")
    defaults = Costs()
    seconds = bounded(float, 0, MAX_TIME_S)
    parser.add_argument("--restore-s", type=seconds, default=defaults.restore_s, metavar="S",
                        help=f"restore seconds a stopped job pays (default {defaults.restore_s:g})")
    parser.add_argument("--migrate-s", type=seconds, default=defaults.migrate_s, metavar="S",
                        help="further seconds a stopped job pays on other GPUs (default "
                        f"{defaults.migrate_s:g})")
    parser.add_argument("--move-s", type=seconds, default=defaults.move_s, metavar="S",
                        help="seconds of objective each moved job costs, times its weight for "
                        f"weighted objectives (default {defaults.move_s:g})")
    parser.add_argument("--same-start-s", type=seconds, default=defaults.same_start_s,
                        metavar="S", help="a start moved by at most S seconds is no move "
                        f"(default {defaults.same_start_s:g})")
    parser.add_argument("--max-changes", type=bounded(int, 0, MAX_JOBS), metavar="N",
                        help="move at most N jobs that had a slot (default: no cap)")
    parser.add_argument("--json", action="store_true", help="print the disruption as JSON")
    parser.add_argument("-o", "--output", metavar="NEW.json", help="write the new schedule here")
    parser.add_argument("--write-instance", metavar="FILE",
                        help="also write the changed instance the new schedule plans (what "
                        "check, eta and export read beside it; from what ran, its done jobs "
                        "with the durations they took)")
    parser.set_defaults(run=_replan)

    parser = commands.add_parser(
        "diff", help="what changes between two schedules of one instance",
        description="Jobs moved (placed in both, and B runs them in other pieces: a piece on "
        "other GPUs or starting more than --same-start-s away, or more or fewer pieces) and "
        "how, the count of jobs unchanged, jobs in one schedule only, objective and bound "
        "deltas. Replan counts its moves the same way.")
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--same-start-s", type=bounded(float, 0, MAX_TIME_S),
                        default=defaults.same_start_s, metavar="S",
                        help="a start moved by at most S seconds is unchanged (default "
                        f"{defaults.same_start_s:g}, as replan's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=_diff)

    parser = commands.add_parser(
        "whatif", help="plan an instance as it is and with a changed fleet; the deltas",
        parents=[reading_parser()],
        description="Plan INSTANCE twice with the same method and settings: as it is, and "
        "with GPUs added (--add-gpus TYPE:N, a new node of N GPUs) or nodes removed "
        "(--remove-node ID); both plans are verified.")
    parser.add_argument("instance")
    parser.add_argument("--add-gpus", action="append", default=[], metavar="TYPE:N")
    parser.add_argument("--remove-node", action="append", default=[], metavar="ID")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _method_arguments(parser, [name for name, m in METHODS.items()], "greedy")
    parser.set_defaults(run=_whatif)

    parser = commands.add_parser(
        "eta", help="when a job starts and ends in a schedule, and what holds it back",
        parents=[reading_parser()])
    parser.add_argument("instance")
    parser.add_argument("schedule", type=Path)
    parser.add_argument("job")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=_eta)


def read_document(path: str) -> dict[str, Any]:
    """An instance file's document, as the commands that change an instance read it.

    Raises
    ------
    InputError
        Naming the file, if it does not parse or holds no object.
    """
    data = load_data(Path(path))
    if not isinstance(data, dict):
        raise InputError(path, "", "an instance file holds one object")
    return data


def _replan(args: argparse.Namespace) -> int:
    method = get_method(args.method)
    options = given_options(args, method)
    run = settings(args)
    inputs = [args.instance, args.previous, args.changes]
    if args.output is not None:
        check_output(args.output, inputs)
    if args.write_instance is not None:
        check_output(args.write_instance, inputs, "--write-instance")
        if args.output is not None and Path(args.write_instance).resolve() == Path(
                args.output).resolve():
            raise InputError("--write-instance", "", "names the same file as -o")
    changes = Changes.read(args.changes)
    previous = Schedule.read(args.previous)
    document = read_document(args.instance)
    if is_record(previous):
        # What ran took what it took: the instance re-planned says so.
        document, _ = as_ran(document, args.instance, previous, args.at)
    before, changed = changed_instances(document, args.instance, changes, args.at,
                                        args.changes)
    costs = Costs(args.restore_s, args.migrate_s, args.move_s, args.same_start_s)
    done = replan(before, changed, previous, args.at, changes, method.name, run, costs,
                  args.max_changes, (str(args.previous), args.changes), options)
    if done.schedule is None:
        console.print("[red]no plan[/red] for what is left:", markup=True)
        for job, reason in list(done.unplaced.items())[:10]:
            console.print(f"  {job}: {reason}", markup=False)
        return ExitCode.FAILED
    schedule = done.schedule
    if args.output is not None:
        try:
            schedule.write(args.output)
        except OSError as exc:
            raise InputError(args.output, "", f"cannot write the schedule: {exc}") from None
    if args.write_instance is not None:
        # The changed instance under the name the schedule plans, so that it reads beside it.
        written = {**changed_document(document, changes, args.changes), "name": before.name}
        write_text_atomic(Path(args.write_instance), json.dumps(written, indent=1) + "\n")
    hurt = done.disruption
    if args.json:
        sys.stdout.write(json.dumps({"objective": schedule.objective, "bound": schedule.bound,
                                     "disruption": hurt.as_dict()}, indent=2) + "\n")
        return ExitCode.OK
    console.print(summary_table(
        f"re-plan of {args.previous} at {args.at:g} s",
        [("method", f"{schedule.method} ({schedule.solver})"),
         ("objective", f"{fmt(previous.objective)} -> {fmt(schedule.objective)}"),
         ("bound", fmt(schedule.bound)),
         ("unchanged", f"{hurt.unchanged} job(s) keep their slot"),
         ("moved", f"{len(hurt.moved)} job(s) to other GPUs or times (start more than "
          f"{args.same_start_s:g} s away, or in other pieces)"),
         ("stopped", f"{len(hurt.stopped)} running job(s)"),
         ("migrated", f"{len(hurt.migrated)}"),
         ("re-planned", f"{len(hurt.replanned)} without a slot to keep"),
         ("disruption", f"{hurt.move_cost:g} of objective for moves, {hurt.overhead_s:g} s "
          "of overheads"),
         ("wall time", f"{done.wall_time_s:.3f} s"),
         ("written to", args.output or "- (use -o FILE to save)")]))
    assert schedule.verification is not None
    print_verification(schedule.verification)
    return ExitCode.OK


def _diff(args: argparse.Namespace) -> int:
    a, b = Schedule.read(args.a), Schedule.read(args.b)
    if a.instance != b.instance:
        raise InputError(str(args.b), "instance", f"plans instance {b.instance!r}, but "
                         f"{args.a} plans {a.instance!r}")
    found = diff(a, b, args.same_start_s).as_dict()
    if args.json:
        sys.stdout.write(json.dumps(found, indent=2) + "\n")
        return ExitCode.OK
    table = Table(title=f"{args.a} -> {args.b}")
    table.add_column("what")
    table.add_column("jobs", justify="right")
    table.add_column("first few")
    for key in ("moved", *HOW, "only_a", "only_b"):
        jobs = found[key]
        # How they moved is indented under moved: a job may move in several ways.
        label = ("  " if key in HOW else "") + key.replace("_", " ")
        table.add_row(label, str(len(jobs)), ", ".join(jobs[:5]))
    table.add_row("unchanged", str(found["unchanged"]), "")
    for key in ("objective", "bound"):
        row = found[key]
        table.add_row(key, fmt(row["a"]) + " -> " + fmt(row["b"]),
                      "delta " + fmt(row["delta"]))
    console.print(table)
    return ExitCode.OK


def _whatif(args: argparse.Namespace) -> int:
    method = get_method(args.method)
    options = given_options(args, method)
    found = whatif(read_document(args.instance), args.instance, args.add_gpus, args.remove_node,
                   method.name, settings(args), options)
    if args.json:
        sys.stdout.write(json.dumps(found.as_dict(), indent=2) + "\n")
        return ExitCode.OK
    table = Table(title=f"what if: {', '.join(found.what)}")
    for column in ("", "as it is", "changed", "delta"):
        table.add_column(column, justify="right")
    for name, (a, b) in found.measures().items():
        table.add_row(name, fmt(a), fmt(b), fmt(None if a is None or b is None else b - a))
    console.print(table)
    return ExitCode.OK if found.base.status.has_plan and found.changed.status.has_plan \
        else ExitCode.FAILED


def _eta(args: argparse.Namespace) -> int:
    instance = read(args, args.instance)
    if is_run_log(args.schedule):
        # A live run (gpuplan run's state.json): the plan as it stands now.
        state = RunState.read(args.schedule)
        instance = scaled(instance, state.speedup)
        schedule = in_force(instance, state)
    else:
        schedule = Schedule.read(args.schedule)
    if args.job not in instance.job_index:
        raise InputError(str(args.schedule), "", f"unknown job {args.job!r}")
    found = eta(instance, schedule, args.job)
    if args.json:
        sys.stdout.write(json.dumps({**found.as_dict(), "epoch": schedule.epoch.isoformat()
                                     if schedule.epoch else None}, indent=2) + "\n")
        return ExitCode.OK
    console.print(summary_table(f"job {found.job}", [
        ("start", "-" if found.start is None else _when(found.start, schedule)),
        ("end", "-" if found.end is None else _when(found.end, schedule)),
        ("GPUs", ", ".join(found.gpus) or "-"),
        ("held back by", "; ".join(found.held_by))]))
    return ExitCode.OK if found.start is not None else ExitCode.FAILED



def _when(seconds: float, schedule: Schedule) -> str:
    """Seconds after the plan's epoch, and the UTC time when the plan has an epoch."""
    if schedule.epoch is None:
        return f"{seconds:g} s"
    return f"{seconds:g} s ({(schedule.epoch + timedelta(seconds=seconds)).isoformat()})"

"""The ``gpuplan`` command line. The library logs; only this module prints.

Exit codes: 0 success; 1 no feasible schedule, or a schedule failed verification; 2 invalid
input (instance, schedule or command line).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from gpuplan._version import __version__
from gpuplan.backends import BACKENDS
from gpuplan.backends.pyomo import write_model
from gpuplan.batch import (
    check_scheduler,
    default_workers,
    expand_inputs,
    make_tasks,
    run_batch,
    write_summary,
)
from gpuplan.bench import (
    COLUMNS,
    NAMED,
    SUMMARY_COLUMNS,
    cells,
    load_suite,
    markdown,
    parse_method,
    run_bench,
    summary,
    summary_markdown,
    write_results,
)
from gpuplan.errors import BackendUnavailableError, ExitCode, InputError, VerificationError
from gpuplan.generate import SPEEDUP, generate_document
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.io import check_output, check_output_folder, write_bytes_atomic, write_text_atomic
from gpuplan.methods.base import CORES, MAX_SEED
from gpuplan.models.allocation import SPACE_SHARING, Policy
from gpuplan.models.assignment import AssignmentModel
from gpuplan.planning import WARM_HEURISTICS, plan, warm_start_from
from gpuplan.plot import plot_schedule
from gpuplan.readers import FORMATS, read_instance
from gpuplan.readers.gavel import (
    PHYSICAL_CLUSTER,
    PRICES,
    read_pair_speeds,
    read_throughputs,
    read_trace,
    trace_document,
)
from gpuplan.readers.instance_file import (
    MAX_GPUS,
    MAX_JOBS,
    MAX_TIME_S,
    InstanceDocument,
    build_instance,
    parse_document,
)
from gpuplan.readers.orlib_gap import gap_documents
from gpuplan.schedule import Schedule, Verification, ViolationKind
from gpuplan.search.lp_rounding import ROUNDINGS
from gpuplan.search.plan_encodings import CROSSOVERS, MOVES
from gpuplan.solvers import SOLVERS, SolveOptions, highs
from gpuplan.verify import verify_schedule

#: Human output goes to stderr so that ``-o -`` leaves stdout pure JSON.
console = Console(stderr=True, highlight=False, soft_wrap=True)


def _objective(value: str) -> ObjectiveKind:
    try:
        return ObjectiveKind(value)
    except ValueError:
        known = ", ".join(k.value for k in ObjectiveKind)
        raise argparse.ArgumentTypeError(
            f"unknown objective {value!r}; choose from {known}"
        ) from None


def _number(value: str, convert: Callable[[str], float], ok: Callable[[float], bool],
            expected: str) -> float:
    """``value`` converted, or an argparse error saying what was expected."""
    try:
        number = convert(value)
    except ValueError:
        number = float("nan")
    if not ok(number):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}")
    return number


def _positive_float(value: str) -> float:
    return _number(value, float, lambda x: 0 < x <= MAX_TIME_S,
                   f"a positive number of seconds up to {MAX_TIME_S:g}")


def _whole(low: int, high: int) -> Callable[[str], int]:
    """A parser of whole numbers from ``low`` to ``high``."""
    def parse(value: str) -> int:
        return int(_number(value, int, lambda x: low <= x <= high,
                           f"a whole number from {low} to {high}"))
    return parse


_seed = _whole(0, MAX_SEED)
_positive_int = _whole(1, 10**9)
_threads = _whole(1, CORES)


def _moves(value: str) -> list[str]:
    names = [v for v in value.split(",") if v]
    unknown = [v for v in names if v not in MOVES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected moves from {', '.join(MOVES)}, got "
                                         f"{value!r}")
    return names


def _share(value: str) -> float:
    return _number(value, float, lambda x: 0 <= x <= 1, "a share between 0 and 1")


def _seconds_or_zero(value: str) -> float:
    return _number(value, float, lambda x: 0 <= x <= MAX_TIME_S,
                   f"a number of seconds from 0 to {MAX_TIME_S:g}")


def _floor(value: str) -> float:
    return _number(value, float, lambda x: 0 <= x <= 1e6, "a multiple from 0 to 1e6")


def _summary_table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    # Text, not markup: an instance named "[/oops]" is a name, not a style tag.
    table = Table(title=Text(title), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, Text(value))
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _print_unplaced(schedule: Schedule) -> None:
    """List why jobs are unplaced, each distinct reason once."""
    by_reason: dict[str, list[str]] = {}
    for item in schedule.unplaced:
        by_reason.setdefault(item.reason, []).append(item.job)
    for reason, jobs in list(by_reason.items())[:10]:
        more = f" and {len(jobs) - 1} more" if len(jobs) > 1 else ""
        console.print(f"  unplaced {jobs[0]}{more}: {reason}", markup=False)
    if len(by_reason) > 10:
        console.print(f"  ... and {len(by_reason) - 10} more reasons")


def _print_verification(verification: Verification, has_plan: bool = True) -> None:
    if verification.ok:
        console.print("[green]verified[/green]: every constraint holds")
        return
    shown = verification.violations
    if not has_plan:
        # Missing jobs are what "no plan" means; the unplaced list already says why.
        shown = [v for v in shown if v.kind is not ViolationKind.UNPLACED]
        console.print("[yellow]no plan[/yellow]: the placements made are valid; jobs are missing")
    if shown:
        console.print(f"[red]{len(shown)} violation(s):[/red]")
    for violation in shown:
        console.print(f"  {violation}", markup=False)


def _file_of(instance: str) -> str:
    """The file an instance argument names (``FILE#k`` picks a problem of an orlib-gap file)."""
    return instance.rpartition("#")[0] if "#" in instance and not Path(instance).exists() \
        else instance


def _read(args: argparse.Namespace, path: str, objective: ObjectiveKind | None = None) -> Instance:
    return read_instance(path, objective=objective, file_format=args.format, sense=args.sense)


def _cmd_solve(args: argparse.Namespace) -> int:
    if args.output not in (None, "-"):
        check_output(args.output, [_file_of(args.instance),
                                   *([args.warm_start] if args.warm_start else [])])
    instance = _read(args, args.instance, args.objective)
    start = None
    warm = args.warm_start if args.warm_start in WARM_HEURISTICS else None
    if args.warm_start is not None and warm is None:
        start = warm_start_from(instance, Schedule.read(args.warm_start), args.warm_start)
    options = SolveOptions(
        time_limit_s=args.time_limit, seed=args.seed, threads=args.threads,
        backend=args.solver, rounding=args.rounding, warm_start=start, tick_s=args.tick,
        then=args.then, policy=args.policy, round_s=args.round, floor=args.floor,
        partitions=args.partitions, space_sharing=args.space_sharing,
        moves=tuple(args.moves), crossover=args.crossover, iterations=args.iterations,
    )
    if args.space_sharing:
        _check_space_sharing(args, instance)
    schedule = plan(instance, args.method, options, warm=warm)
    if args.output == "-":
        sys.stdout.write(schedule.to_json())
    elif args.output is not None:
        try:
            schedule.write(args.output)
        except OSError as exc:
            raise InputError(args.output, "", f"cannot write the schedule: {exc}") from None
    placed = len(schedule.placements)
    console.print(
        _summary_table(
            f"{instance.name}: {instance.n_jobs} jobs on {instance.n_gpus} GPUs, "
            f"objective {instance.objective.value}",
            [
                ("method", f"{schedule.method} ({schedule.solver})"),
                ("status", schedule.status.value),
                ("objective", _fmt(schedule.objective)),
                ("bound", _fmt(schedule.bound)),
                ("gap", "-" if schedule.gap is None else f"{schedule.gap:.2%}"),
                ("placed", f"{placed} of {instance.n_jobs}"),
                ("wall time", f"{schedule.wall_time_s:.3f} s"),
                ("written to", args.output or "- (use -o FILE to save)"),
            ],
        )
    )
    _print_unplaced(schedule)
    assert schedule.verification is not None  # plan() always verifies
    _print_verification(schedule.verification, schedule.status.has_plan)
    return ExitCode.OK if schedule.status.has_plan else ExitCode.FAILED


def _describe(instance: Instance) -> str:
    gangs = int((instance.gang > 1).sum())
    deps = sum(1 for p in instance.predecessors if p)
    return (
        f"{instance.n_jobs} jobs ({gangs} gangs, {deps} with dependencies), "
        f"{instance.n_gpus} GPUs of {instance.n_types} types on {instance.n_nodes} nodes, "
        f"resources {', '.join(instance.resources)}, objective {instance.objective.value}"
    )


def _check_space_sharing(args: argparse.Namespace, instance: Instance) -> None:
    """``--space-sharing`` needs colocation data, a max-min policy and no partitions."""
    if not instance.class_ids:
        raise InputError(instance.source, "colocation", "--space-sharing needs colocation "
                         "speeds and jobs' colocation_class (convert gavel --space-sharing "
                         "writes them)")
    if args.method != "balance" or args.policy not in SPACE_SHARING or args.partitions > 1:
        raise InputError("--space-sharing", "", "works with --method balance, --policy "
                         + " or ".join(p.value for p in SPACE_SHARING)
                         + ", without --partitions")


def _cmd_validate(args: argparse.Namespace) -> int:
    for path in args.instances:
        instance = _read(args, path)
        console.print(Text.assemble(("ok", "green"), f" {path}: {_describe(instance)}"))
    return ExitCode.OK


def _cmd_check(args: argparse.Namespace) -> int:
    # The objective is the instance's, or the user's: never what the schedule claims.
    instance = _read(args, args.instance, args.objective)
    schedule = Schedule.read(args.schedule)
    verification = verify_schedule(instance, schedule)
    console.print(
        f"{args.schedule}: status {schedule.status.value}, objective "
        f"{_fmt(schedule.objective)} (recomputed {_fmt(verification.objective)}) for "
        f"{instance.objective.value}", markup=False,
    )
    _print_verification(verification, schedule.status.has_plan)
    if not schedule.status.has_plan:
        console.print(f"[yellow]not verified[/yellow]: status {schedule.status.value} holds "
                      "no plan to verify")
    return ExitCode.OK if verification.ok and schedule.status.has_plan else ExitCode.FAILED


def _cmd_plot(args: argparse.Namespace) -> int:
    check_output(args.output, [args.schedule, *([args.instance] if args.instance else [])])
    schedule = Schedule.read(args.schedule)
    instance = None if args.instance is None else _read(args, args.instance)
    plot_schedule(schedule, Path(args.output), instance)
    console.print(f"wrote {args.output}", markup=False)
    return ExitCode.OK


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


def _gavel_documents(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.throughputs is None:
        raise InputError("--throughputs", "", "convert gavel needs Gavel's throughput file "
                         "(simulation_throughputs.json)")
    throughputs = read_throughputs(Path(args.throughputs))
    unknown = sorted(set(args.fleet) - set(throughputs))
    if unknown:
        raise InputError("--fleet", "", f"unknown worker type(s) {', '.join(unknown)}; the "
                         f"throughput file has {', '.join(sorted(throughputs))}")
    missing = sorted(set(args.fleet) - set(PRICES))
    if missing:
        raise InputError("--fleet", "", f"no price known for {', '.join(missing)}")
    trace = Path(args.file)
    pairs = read_pair_speeds(Path(args.throughputs)) if args.space_sharing else None
    return [trace_document(read_trace(trace), throughputs, args.fleet, args.gpus_per_node,
                           PRICES, name=trace.stem.replace(".", "_"), pair_speeds=pairs)]


def _cmd_convert(args: argparse.Namespace) -> int:
    inputs = [_file_of(args.file), *([args.throughputs] if args.throughputs else [])]
    out = check_output_folder(args.output, inputs)
    documents = (_gavel_documents(args) if args.source_format == "gavel"
                 else gap_documents(args.file, args.sense))
    # Validate every document and target before writing any: a converted file must load as
    # it is, and a bad one leaves nothing behind.
    targets = []
    for document in documents:
        build_instance(parse_document(document, args.file), args.file)
        targets.append(check_output(out / f"{document['name']}.json", inputs))
    for document, target in zip(documents, targets, strict=True):
        write_text_atomic(target, json.dumps(document, indent=1) + "\n")
        console.print(f"wrote {target}", markup=False)
    return ExitCode.OK


def _cmd_batch(args: argparse.Namespace) -> int:
    sources = expand_inputs(args.inputs)
    if not sources:
        raise InputError(" ".join(args.inputs), "", "no instance files found")
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    out = check_output_folder(args.output, sources)
    workers = args.workers or default_workers()
    # Solver threads times local workers never exceed the cores; on Dask every worker
    # thread runs one task, so each solve gets one thread.
    threads = 1 if args.scheduler else max(1, default_workers() // workers)
    options = SolveOptions(time_limit_s=args.time_limit, seed=args.seed, threads=threads)
    tasks = make_tasks(sources, out, args.method, options)
    inputs = {os.path.realpath(source) for source in sources}
    clash = next((t for t in tasks if os.path.realpath(t.target) in inputs), None)
    if clash is not None:
        raise InputError(str(out), "", f"the schedule of {clash.source} would be written over "
                         f"the input {clash.target}; choose another output folder")
    rows: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(f"planning ({args.method})", total=len(tasks))

        def advance(row: dict[str, Any]) -> None:
            rows.append(row)
            progress.advance(bar)

        started = True
        try:
            run_batch(tasks, workers, args.scheduler, on_row=advance)
        except InputError:
            # The cluster could not be reached: nothing ran, earlier summaries stay.
            started = False
            raise
        finally:
            # Also on Ctrl-C: the summary lists what finished, and every file is whole.
            if started:
                order = {t.source: i for i, t in enumerate(tasks)}
                rows.sort(key=lambda r: order.get(str(r["file"]), 0))
                as_json, as_csv = write_summary(rows, out)
    failed = [r for r in rows if not r["verified"]]
    console.print(f"{len(rows)} instances, {len(rows) - len(failed)} planned and verified, "
                  f"{sum(bool(r['resumed']) for r in rows)} up to date; summary in {as_json} "
                  f"and {as_csv}", markup=False)
    for row in failed[:10]:
        console.print(f"  {row['file']}: {row['status']} {row['error']}", markup=False)
    return ExitCode.OK if not failed else ExitCode.FAILED


def _cmd_bench(args: argparse.Namespace) -> int:
    methods = [m for m in args.methods.split(",") if m]
    if not methods:
        raise InputError("--methods", "", f"no method given; choose from {', '.join(SOLVERS)}")
    for method in methods:
        parse_method(method)
    if args.page is not None and (args.output is None or not Path(args.page).is_file()):
        raise InputError(args.page, "--page", "needs -o OUT.md, whose tables it quotes"
                         if args.output is None else "no such page")
    for given in (args.output, args.page):
        if given is not None:
            check_output(given, [args.suite], "-o" if given == args.output else "--page")
    problems = load_suite(args.suite, Path(args.benchmarks),
                          [n for n in (args.only or "").split(",") if n])
    options = SolveOptions(time_limit_s=args.time_limit, seed=args.seed, threads=args.threads)
    table = Table(title=Text(f"{args.suite}: {', '.join(methods)}"))
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("instance", "method", "status")
                         else "right")
    with Progress(*(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn()), console=console, transient=True) as progress:
        bar = progress.add_task("benchmarking", total=len(problems) * len(methods))
        rows = run_bench(problems, methods, options, on_row=lambda _: progress.advance(bar))
    for row in rows:
        table.add_row(*map(Text, cells(row)))
    console.print(table)
    totals = Table(title="summary")
    for column in SUMMARY_COLUMNS:
        totals.add_column(column, justify="left" if column in ("group", "method") else "right")
    for line in summary(rows):
        totals.add_row(*map(Text, line))
    console.print(totals)
    if args.output is not None:
        command = " ".join([f"gpuplan bench {args.suite} --methods {args.methods}",
                            *([f"--only {args.only}"] if args.only else []),
                            *([f"--time-limit {args.time_limit:g}"] if args.time_limit else []),
                            f"--seed {args.seed} --threads {args.threads}"])
        write_results(Path(args.output), f"# {args.suite}, {args.time_limit or '-'} s per run"
                      f"\n\nWritten by `{command}`.\n\n{summary_markdown(rows)}\n{markdown(rows)}",
                      None if args.page is None else Path(args.page))
        console.print(f"wrote {args.output}", markup=False)
    return ExitCode.OK


def _cmd_generate(args: argparse.Namespace) -> int:
    check_output(args.output)
    try:
        document = generate_document(
            args.jobs, args.nodes, tuple(args.types.split(",")), args.seed,
            args.gpus_per_node, args.dependencies, args.arrivals, args.deadlines,
            args.objective or "makespan")
    except ValueError as exc:
        raise InputError("--types" if "type" in str(exc) else "--jobs", "", str(exc)) from None
    # Validate before writing: a generated file must load as it is.
    build_instance(parse_document(document, args.output), args.output)
    write_text_atomic(Path(args.output), json.dumps(document, indent=1) + "\n")
    console.print(f"wrote {args.output}: {args.jobs} jobs on {args.nodes} nodes", markup=False)
    return ExitCode.OK


def _cmd_export_model(args: argparse.Namespace) -> int:
    target = check_output(args.output, [_file_of(args.instance)])
    instance = read_instance(args.instance, objective=args.objective,
                             file_format=args.input_format, sense=args.sense)
    if not AssignmentModel.supports(instance.objective):
        raise InputError(
            "--objective", "", f"export-model writes the assignment MILP, which has no "
            f"{instance.objective.value!r} objective; choose a static objective"
        )
    program = AssignmentModel.build(instance).program
    try:
        # Pyomo writes in place; write into a private folder, then move the whole file.
        with tempfile.TemporaryDirectory() as folder:
            written = Path(folder) / f"model.{args.format}"
            write_model(program, str(written), args.format)
            write_bytes_atomic(target, written.read_bytes())
    except OSError as exc:
        raise InputError(args.output, "", f"cannot write the model: {exc}") from None
    console.print(
        f"wrote {args.output}: {program.n_cols} columns, {program.n_rows} rows "
        f"({args.format.upper()})", markup=False,
    )
    return ExitCode.OK


def _cmd_schema(args: argparse.Namespace) -> int:
    model = InstanceDocument if args.which == "instance" else Schedule
    sys.stdout.write(json.dumps(model.model_json_schema(), indent=2) + "\n")
    return ExitCode.OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-command per task."""
    parser = argparse.ArgumentParser(
        prog="gpuplan",
        description="Plan deep-learning jobs onto GPU fleets; every schedule is verified. "
        "Exit codes: 0 ok, 1 no feasible schedule or verification failed, 2 invalid input.",
    )
    parser.add_argument("--version", action="version", version=f"gpuplan {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--format", choices=FORMATS, default="gpuplan",
        help="instance file format (default: gpuplan); orlib-gap takes FILE#k for problem k",
    )
    reading.add_argument(
        "--sense", choices=["min", "max"], default="min",
        help="orlib-gap only: minimise cost (default) or maximise profit",
    )

    solve = commands.add_parser(
        "solve", help="plan an instance and verify the schedule", parents=[reading],
        description="Plan an instance file, verify the schedule, print a summary and "
        "write the schedule JSON.",
    )
    solve.add_argument("instance", help="instance file (.json, .yaml; FILE#k for orlib-gap)")
    solve.add_argument(
        "--method", choices=sorted(SOLVERS), default="greedy",
        help="planning method (default: greedy); "
        + "; ".join(f"{name}: {s.description}" for name, s in SOLVERS.items()),
    )
    solve.add_argument(
        "--objective", type=_objective, metavar="NAME",
        help="override the file's objective: " + ", ".join(k.value for k in ObjectiveKind),
    )
    solve.add_argument(
        "--solver", choices=sorted(BACKENDS), default="highs",
        help="backend for milp and lp (default: highs)",
    )
    solve.add_argument(
        "--rounding", choices=sorted(ROUNDINGS), default="largest-share",
        help="how --method lp rounds its relaxation (default: largest-share)",
    )
    solve.add_argument(
        "--warm-start", metavar="greedy|ga|sa|SCHEDULE.json",
        help="start milp or cp from a heuristic's plan (it gets 30%% of --time-limit), or "
        "milp from this schedule's placements",
    )
    solve.add_argument(
        "--moves", type=_moves, default=list(MOVES), metavar="NAME,...",
        help=f"--method sa: neighbourhood moves ({', '.join(MOVES)}; default: all)",
    )
    solve.add_argument(
        "--crossover", choices=sorted(CROSSOVERS), default="uniform",
        help="--method ga: crossover operator (default: uniform, biased 70/30)",
    )
    solve.add_argument(
        "--iterations", type=_positive_int, metavar="N",
        help="--method sa|ga: moves or generations (default: until --time-limit, else the "
        "method's default budget)",
    )
    solve.add_argument(
        "--tick", type=_positive_float, metavar="S",
        help="seconds per time step of --method cp (default: the coarsest exact power of "
        "ten, else about 0.1%% of the shortest duration)",
    )
    solve.add_argument(
        "--then", type=_objective, metavar="NAME",
        help="--method cp: a second time-based objective, optimised with the first held at "
        "its best (e.g. --objective makespan --then cost)",
    )
    solve.add_argument(
        "--policy", choices=[p.value for p in Policy], default=Policy.MAX_MIN_FAIRNESS.value,
        help="--method balance: the allocation policy (default: max-min-fairness)",
    )
    solve.add_argument(
        "--round", type=_positive_float, default=360.0, metavar="S",
        help="--method balance: round length of the round-based plan (default: 360, Gavel's); "
        "a plan has at most 100,000 rounds",
    )
    solve.add_argument(
        "--floor", type=_floor, default=1.0, metavar="F",
        help="--method balance --policy min-cost: each job's throughput floor as a multiple "
        "of its equal-share throughput (default: 1)",
    )
    solve.add_argument(
        "--partitions", type=_positive_int, default=1, metavar="K",
        help="--method balance: solve the policy POP-style in K parts of the jobs and GPUs "
        "(at most the jobs and the GPUs; default: 1, exact)",
    )
    solve.add_argument(
        "--space-sharing", action="store_true",
        help="--method balance: let pairs of jobs share GPUs at the instance's colocation "
        "speeds (policies max-min-fairness and makespan, priced in by column generation)",
    )
    solve.add_argument("--time-limit", type=_positive_float, metavar="S", help="seconds")
    solve.add_argument("--seed", type=_seed, default=0,
                       help=f"random seed, 0 to {MAX_SEED} (default: 0)")
    solve.add_argument("--threads", type=_threads, default=min(2, CORES),
                       help=f"solver threads, 1 to {CORES} (this machine's cores; default: "
                       f"{min(2, CORES)})")
    solve.add_argument(
        "-o", "--output", metavar="OUT.json", help="write the schedule here ('-' for stdout)"
    )
    solve.set_defaults(run=_cmd_solve)

    validate = commands.add_parser(
        "validate", help="check instance files and describe them", parents=[reading],
        description="Validate instance files; exit 2 at the first invalid one.",
    )
    validate.add_argument("instances", nargs="+", metavar="INSTANCE")
    validate.set_defaults(run=_cmd_validate)

    check = commands.add_parser(
        "check", help="verify a schedule file against its instance", parents=[reading],
        description="Recompute every constraint, the objective and the certificate (status, "
        "bound, gap) of SCHEDULE from INSTANCE alone, for the instance's objective (or "
        "--objective); exit 1 on any violation, and for a file that holds no plan "
        "(no_solution, infeasible).",
    )
    check.add_argument("instance")
    check.add_argument("schedule", type=Path)
    check.add_argument(
        "--objective", type=_objective, metavar="NAME",
        help="check for this objective instead of the instance file's (the schedule's own "
        "claim is never taken)",
    )
    check.set_defaults(run=_cmd_check)

    plot = commands.add_parser(
        "plot", help="draw a schedule: Gantt chart per GPU and utilisation per type",
        parents=[reading],
        description="Draw SCHEDULE as a Gantt chart (one row per GPU, gangs joined, "
        "deadlines in red when --instance is given) above the busy share of each GPU type "
        "over time; write PNG, SVG or HTML (by the suffix of -o).",
    )
    plot.add_argument("schedule", type=Path)
    plot.add_argument("--instance", help="the schedule's instance, for deadlines and idle GPUs")
    plot.add_argument("-o", "--output", required=True, metavar="OUT.png|svg|html")
    plot.set_defaults(run=_cmd_plot)

    convert = commands.add_parser(
        "convert", help="convert OR-Library GAP files or Gavel traces to instance files",
        description="Write each problem of an OR-Library GAP file (or FILE#k), or a Gavel "
        "job trace timed by Gavel's measured throughputs, as gpuplan instance JSON files in "
        "OUTDIR.",
    )
    convert.add_argument("source_format", choices=["orlib-gap", "gavel"])
    convert.add_argument("file", help="GAP file (FILE#k for one problem), or Gavel trace")
    convert.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    convert.add_argument("--sense", choices=["min", "max"], default="min",
                         help="orlib-gap: minimise cost (default) or maximise profit")
    convert.add_argument("--throughputs", metavar="FILE",
                         help="gavel: Gavel's simulation_throughputs.json")
    convert.add_argument("--fleet", type=_fleet, default=dict(PHYSICAL_CLUSTER),
                         metavar="TYPE=N,...",
                         help="gavel: GPUs per worker type (default: Gavel's physical "
                         "cluster, v100=8,p100=16,k80=24)")
    convert.add_argument("--gpus-per-node", type=_whole(1, MAX_GPUS), default=4, metavar="N",
                         help="gavel: GPUs per server; a gang stays in one (default: 4)")
    convert.add_argument("--space-sharing", action="store_true",
                         help="gavel: add job classes and the measured pair speeds, for "
                         "solve --method balance --space-sharing")
    convert.set_defaults(run=_cmd_convert)

    batch = commands.add_parser(
        "batch", help="plan many instance files, locally or on a Dask cluster",
        description="Plan every instance file (files, folders, globs): one schedule JSON "
        "per instance in OUTDIR plus summary.json and summary.csv. A bad or infeasible file "
        "is recorded in the summary and never stops the batch; schedules already in OUTDIR, "
        "planned from the same file (path and content) by the same method and options, "
        "are kept if they still verify (resume).",
    )
    batch.add_argument("inputs", nargs="+", metavar="INPUT")
    batch.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    batch.add_argument("--method", choices=sorted(SOLVERS), default="greedy")
    batch.add_argument("--time-limit", type=_positive_float, metavar="S",
                       help="seconds per instance")
    batch.add_argument("--seed", type=_seed, default=0,
                       help=f"random seed, 0 to {MAX_SEED} (default: 0)")
    batch.add_argument("--workers", type=_positive_int, metavar="N",
                       help="local worker processes (default: one per core)")
    batch.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="send the work to this Dask scheduler instead")
    batch.set_defaults(run=_cmd_batch)

    bench = commands.add_parser(
        "bench", help="run methods side by side on a suite and compare",
        description="Plan every instance of a suite (a folder or pattern of instance files, "
        "or a named set of the shared benchmarks with known values: "
        f"{', '.join(NAMED)}) with each method at the same time limit; print and write "
        "the table (objective, reference: the best known value or else the tightest bound "
        "any method proved, gap %%, bound, seconds, verified) and a summary per group.",
    )
    bench.add_argument("suite", metavar="SUITE")
    bench.add_argument("--methods", default="greedy", metavar="M,...",
                       help=f"methods, from {', '.join(SOLVERS)}, each NAME[@WARM]"
                       "[:KEY=VALUE]... (milp@sa: warm-started by sa; milp:backend=cpsat: "
                       "another option; default: greedy)")
    bench.add_argument("--time-limit", type=_positive_float, metavar="S",
                       help="seconds per run")
    bench.add_argument("--only", metavar="NAME,...", help="only these instances")
    bench.add_argument("--benchmarks", default=str(Path("..") / "shared" / "benchmarks"),
                       metavar="DIR", help="the shared benchmarks (default: "
                       "../shared/benchmarks)")
    bench.add_argument("--seed", type=_seed, default=0, help=f"0 to {MAX_SEED} (default: 0)")
    bench.add_argument("--threads", type=_threads, default=min(2, CORES),
                       help=f"1 to {CORES} (default: {min(2, CORES)})")
    bench.add_argument("-o", "--output", metavar="OUT.md", help="write the tables here")
    bench.add_argument("--page", metavar="PAGE.md",
                       help="then refresh the tables PAGE.md quotes from results files "
                       "(<!-- table FILE N --> ... <!-- end table -->), such as "
                       "docs/benchmarks.md")
    bench.set_defaults(run=_cmd_bench)

    generate = commands.add_parser(
        "generate", help="write a seeded synthetic instance",
        description="Jobs as Gavel's generator draws them (gangs 1/2/4/8, run times, model "
        "memory) on nodes of GPU types with Gavel's measured speed-ups.",
    )
    generate.add_argument("--jobs", type=_whole(1, MAX_JOBS), required=True, metavar="N")
    generate.add_argument("--nodes", type=_whole(1, MAX_GPUS), required=True, metavar="K")
    generate.add_argument("--types", default="v100,p100,k80", metavar="T,...",
                          help=f"GPU types, from {', '.join(SPEEDUP)} (default: all)")
    generate.add_argument("--gpus-per-node", type=_whole(1, MAX_GPUS), default=8, metavar="N")
    generate.add_argument("--dependencies", type=_share, default=0.0, metavar="P",
                          help="share of jobs that depend on an earlier one (default: 0)")
    generate.add_argument("--arrivals", type=_seconds_or_zero, default=0.0, metavar="S",
                          help="release jobs uniformly over [0, S] seconds (default: 0)")
    generate.add_argument("--deadlines", type=_share, default=0.0, metavar="P",
                          help="share of jobs with a deadline (default: 0)")
    generate.add_argument("--objective", choices=[k.value for k in ObjectiveKind])
    generate.add_argument("--seed", type=_seed, default=0)
    generate.add_argument("-o", "--output", required=True, metavar="FILE.json")
    generate.set_defaults(run=_cmd_generate)

    export = commands.add_parser(
        "export-model", help="write the assignment MILP as an LP or MPS file",
        description="Build the assignment MILP of a static-objective instance and write it "
        "through Pyomo's LP or MPS writer, for any solver.",
    )
    export.add_argument("instance")
    export.add_argument("--format", choices=["lp", "mps"], default="lp")
    export.add_argument("--input-format", choices=FORMATS, default="gpuplan")
    export.add_argument("--sense", choices=["min", "max"], default="min")
    export.add_argument("--objective", type=_objective, metavar="NAME")
    export.add_argument("-o", "--output", required=True, metavar="FILE")
    export.set_defaults(run=_cmd_export_model)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of a file format",
        description="Print the JSON Schema of the instance or the schedule format.",
    )
    schema.add_argument("which", choices=["instance", "schedule"])
    schema.set_defaults(run=_cmd_schema)
    return parser


def _log_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
    logging.getLogger("py.warnings").debug("%s:%d: %s: %s", filename, lineno,
                                           category.__name__, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Parameters
    ----------
    argv
        Arguments without the program name; ``sys.argv[1:]`` by default.
    """
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        with warnings.catch_warnings():
            # Library warnings (numpy's RuntimeWarnings among them) are details for --debug.
            warnings.showwarning = _log_warning
            code: int = args.run(args)
    except InputError as exc:
        if args.debug:
            raise
        console.print(f"error: {exc}", markup=False)
        return ExitCode.BAD_INPUT
    except BackendUnavailableError as exc:
        if args.debug:
            raise
        console.print(f"error: {exc}", markup=False)
        return ExitCode.BAD_INPUT
    except VerificationError as exc:
        if args.debug:
            raise
        console.print(str(exc), markup=False)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    except Exception as exc:  # a bug: say so plainly, without a traceback unless asked
        if args.debug:
            raise
        console.print(
            f"internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
            markup=False,
        )
        return ExitCode.FAILED
    return code


def run() -> None:
    """The ``gpuplan`` entry point: :func:`main`, then exit with its code.

    A HiGHS solve left to finish on its own past the time limit would abort a normal
    exit (C++ teardown under a running solve), so then the process ends at once, after
    flushing what it wrote.
    """
    code = main()
    if highs.abandoned():
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()

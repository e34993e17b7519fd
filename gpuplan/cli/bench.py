"""``gpuplan bench``: run methods side by side on a suite and compare."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from gpuplan.cli.common import Commands, ExitCode, add_settings, console, settings
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output
from gpuplan.harness.bench import (
    COLUMNS,
    NAMED,
    SUMMARY_COLUMNS,
    cells,
    load_suite,
    markdown,
    parse_method,
    run_bench,
    split_specs,
    summary,
    summary_markdown,
    write_results,
)
from gpuplan.methods import DEFAULT_METHOD, METHODS


def register(commands: Commands) -> None:
    """Add ``bench``."""
    parser = commands.add_parser(
        "bench", help="run methods side by side on a suite and compare",
        description="Plan every instance of a suite (a folder or pattern of instance files, "
        "or a named set of the shared benchmarks with known values: "
        f"{', '.join(NAMED)}) with each method at the same time limit; print and write "
        "the table (objective, reference: the best known value or else the tightest bound "
        "any method proved, gap %, bound, seconds, verified) and a summary per group.",
    )
    parser.add_argument("suite", metavar="SUITE")
    parser.add_argument("--methods", default=DEFAULT_METHOD, metavar="M,...",
                        help=f"methods, from {', '.join(METHODS)}, each NAME[@WARM]"
                        "[:KEY=VALUE]... (milp@sa: warm-started by sa; milp:backend=cpsat: "
                        "another option of the method, by name or flag; default: "
                        f"{DEFAULT_METHOD})")
    add_settings(parser, "time_limit_s", "seed", "threads")
    parser.add_argument("--only", metavar="NAME,...", help="only these instances")
    parser.add_argument("--benchmarks", default=str(Path("..") / "shared" / "benchmarks"),
                        metavar="DIR", help="the shared benchmarks (default: "
                        "../shared/benchmarks)")
    parser.add_argument("-o", "--output", metavar="OUT.md", help="write the tables here")
    parser.add_argument("--page", metavar="PAGE.md",
                        help="then refresh the tables PAGE.md quotes from results files "
                        "(<!-- table FILE N --> ... <!-- end table -->), such as "
                        "docs/benchmarks.md")
    parser.set_defaults(run=bench)


def bench(args: argparse.Namespace) -> int:
    """Run the suite, print both tables, write them with the command that made them."""
    specs = [parse_method(m) for m in split_specs(args.methods)]
    if not specs:
        raise InputError("--methods", "", f"no method given; choose from {', '.join(METHODS)}")
    run = settings(args)
    if args.page is not None and (args.output is None or not Path(args.page).is_file()):
        raise InputError(args.page, "--page", "needs -o OUT.md, whose tables it quotes"
                         if args.output is None else "no such page")
    for given in (args.output, args.page):
        if given is not None:
            check_output(given, [args.suite], "-o" if given == args.output else "--page")
    problems = load_suite(args.suite, Path(args.benchmarks),
                          [n for n in (args.only or "").split(",") if n])
    table = Table(title=Text(f"{args.suite}: {', '.join(s.label for s in specs)}"))
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("instance", "method", "status")
                         else "right")
    with Progress(*(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn()), console=console, transient=True) as progress:
        bar = progress.add_task("benchmarking", total=len(problems) * len(specs))
        rows = run_bench(problems, specs, run, on_row=lambda _: progress.advance(bar))
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
        limit = run.time_limit_s
        command = " ".join([f"gpuplan bench {args.suite} --methods {args.methods}",
                            *([f"--only {args.only}"] if args.only else []),
                            *([f"--time-limit {limit:g}"] if limit else []),
                            f"--seed {run.seed} --threads {run.threads}"])
        write_results(Path(args.output), f"# {args.suite}, {limit or '-'} s per run"
                      f"\n\nWritten by `{command}`.\n\n{summary_markdown(rows)}\n{markdown(rows)}",
                      None if args.page is None else Path(args.page))
        console.print(f"wrote {args.output}", markup=False)
    return ExitCode.OK

"""``gpuplan batch``: plan many instance files, locally or on a Dask cluster."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gpuplan.cli.common import (
    Commands,
    ExitCode,
    add_settings,
    add_workers,
    console,
    options_file,
    run_with_table,
    settings,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import output_folder
from gpuplan.harness.batch import (
    Row,
    batch_plan,
    check_scheduler,
    expand_inputs,
    make_tasks,
    run_batch,
    write_summary,
)
from gpuplan.methods import DEFAULT_METHOD, METHODS, get_method


def register(commands: Commands) -> None:
    """Add ``batch``."""
    parser = commands.add_parser(
        "batch", help="plan many instance files, locally or on a Dask cluster",
        description="Plan every instance file (files, folders, globs): one schedule JSON "
        "per instance in OUTDIR plus summary.json and summary.csv. A bad or infeasible file "
        "is recorded in the summary and never stops the batch; schedules already in OUTDIR, "
        "planned from the same file (path and content) by the same method and options, "
        "are kept if they still verify (resume).",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    parser.add_argument("--method", choices=list(METHODS), default=DEFAULT_METHOD,
                        help=f"planning method (default: {DEFAULT_METHOD})")
    parser.add_argument("--options", metavar="FILE.toml|.yaml",
                        help="the method's settings, as for solve --options")
    add_settings(parser, "time_limit_s", "iterations", "seed")
    add_workers(parser, "the work")
    parser.set_defaults(run=batch)


def batch(args: argparse.Namespace) -> int:
    """Plan every file with a progress bar; exit 1 unless every one got a verified plan.

    Ctrl-C ends the batch with exit 130, after writing the summary of what finished and
    saying what is left.
    """
    sources = expand_inputs(args.inputs)
    if not sources:
        raise InputError(" ".join(args.inputs), "", "no instance files found")
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    method = get_method(args.method)
    options = {} if args.options is None else options_file(args.options, method)
    workers, threads = batch_plan(args.workers, args.scheduler)
    run = settings(args, threads=threads)
    # A folder made for the batch goes again, empty, when it fails before writing a file.
    with output_folder(args.output,
                       [*sources, *([args.options] if args.options else [])]) as out:
        tasks = make_tasks(sources, out, method.name, options, run)
        inputs = {os.path.realpath(source) for source in sources}
        clash = next((t for t in tasks if os.path.realpath(t.target) in inputs), None)
        if clash is not None:
            raise InputError(str(out), "", f"the schedule of {clash.source} would be written "
                             f"over the input {clash.target}; choose another output folder")
        # What was written, kept to report also when Ctrl-C ends the batch:
        # run_with_table writes the finished rows, then raises KeyboardInterrupt.
        written: list[tuple[list[Row], tuple[Path, Path]]] = []

        def write(finished: list[Row]) -> tuple[Path, Path]:
            written.append((finished, write_summary(finished, out)))
            return written[-1][1]

        try:
            run_with_table(f"planning ({method.name})", [t.source for t in tasks],
                           lambda on_row: run_batch(tasks, workers, args.scheduler,
                                                    on_row=on_row), write)
        except KeyboardInterrupt:
            if not written:  # ended before the summary was written: nothing to report
                raise
            _report(*written[-1], len(tasks), interrupted=True)
            return ExitCode.INTERRUPTED
    rows, summary = written[-1]
    _report(rows, summary, len(tasks), interrupted=False)
    return ExitCode.OK if all(r["verified"] for r in rows) else ExitCode.FAILED


def _report(rows: list[Row], summary: tuple[Path, Path], total: int,
            interrupted: bool) -> None:
    """Say what the batch did, what is left when it was interrupted, and what failed."""
    failed = [r for r in rows if not r["verified"]]
    done = (f"{len(rows) - len(failed)} planned and verified, "
            f"{sum(bool(r['resumed']) for r in rows)} up to date"
            + (f", {len(failed)} without a verified plan" if failed else ""))
    if interrupted:
        head = (f"interrupted after {len(rows)} of {total} instances: {done}; "
                f"{total - len(rows)} left, which the same command plans (keeping what is "
                "done)")
    else:
        head = f"{len(rows)} instances, {done}"
    console.print(f"{head}; summary in {summary[0]} and {summary[1]}", markup=False)
    for row in failed[:10]:
        console.print(f"  {row['file']}: {row['status']} {row['error']}", markup=False)

"""Run the methods on the instance library and record best known values and bounds.

Usage:
    python scripts/bench_library.py [--limit 10] [--threads 2] [--only NAME,...]
        [--methods SPEC,...] [--large-jobs 1000] [--skip-large cp,ga]
        [--out docs/results/library.md]

Every file of ``instances/library/`` (or those of ``--only``) is planned through the
``gpuplan bench`` harness (:mod:`gpuplan.harness.bench`, every plan verified) by each method of
:data:`TIME_METHODS` (time-based objectives) or :data:`STATIC_METHODS` (static ones)
that plans its objective (or of ``--methods``, bench specs such as ``cp@sa``), at
``--limit`` seconds and ``--threads`` threads; files of more
than ``--large-jobs`` jobs skip the methods of ``--skip-large``. Then
``instances/library/best_known.csv`` takes each verified plan strictly better than its
best known value and each bound strictly tighter than its best bound, with the method
that found it (:func:`~gpuplan.harness.bench.improve_best_known`: a recorded value never gets
worse), and ``--out`` gets the library's table (every file's record and gap) and this
run's rows, with the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from gpuplan.core.settings import RunSettings
from gpuplan.harness.bench import (
    BEST_KNOWN,
    Problem,
    gap_pct,
    improve_best_known,
    load_suite,
    markdown,
    parse_method,
    read_best_known,
    run_bench,
    split_specs,
    summary_markdown,
    write_best_known,
    write_results,
)
from gpuplan.methods import METHODS

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "instances" / "library"
#: Methods for time-based objectives and for static ones; each runs where it plans the
#: objective (textbook's makespan model, for example, not weighted completion) and, for
#: textbook, only on batches of single-GPU jobs.
TIME_METHODS = ("greedy", "sa", "ga", "cp", "balance", "textbook")
STATIC_METHODS = ("greedy", "milp", "milp:backend=cpsat", "lp", "sa", "textbook")


def _specs(problem: Problem, chosen: list[str], large_jobs: int, skip_large: set[str]
           ) -> list[str]:
    """The method specs that plan the problem's objective, without the skipped ones.

    ``chosen`` replaces :data:`TIME_METHODS` and :data:`STATIC_METHODS` when not empty.
    """
    instance = problem.load()
    methods = chosen or (STATIC_METHODS if instance.objective.is_static else TIME_METHODS)
    # textbook's models give each job one GPU: it refuses a batch with gangs.
    return [spec for spec in methods
            if instance.objective in METHODS[re.split(r"[@:]", spec)[0]].objectives
            and not (spec == "textbook" and int(instance.gang.max()) > 1)
            and not (instance.n_jobs > large_jobs and spec in skip_large)]


def _load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per solve")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="only these instances (file stems)")
    parser.add_argument("--methods", default="", metavar="SPEC,...",
                        help="bench specs to run instead of the lists of this script")
    parser.add_argument("--large-jobs", type=int, default=1000)
    parser.add_argument("--skip-large", default="", metavar="SPEC,...",
                        help="method specs not run on files of more than --large-jobs jobs")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "library.md")
    args = parser.parse_args()
    skip = {s for s in args.skip_large.split(",") if s}
    problems = [p.loaded() for p in load_suite(str(LIBRARY), ROOT,
                                                [n for n in args.only.split(",") if n])]
    settings = RunSettings(time_limit_s=args.limit, threads=args.threads)
    began, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()
    rows = []
    for problem in problems:
        specs = [parse_method(s) for s in _specs(problem, split_specs(args.methods),
                                                  args.large_jobs, skip)]
        rows += run_bench([problem], specs, settings, on_row=lambda r: print(
            r["instance"], r["method"], r.get("objective"), r.get("bound"), r.get("seconds"),
            flush=True))
    table = LIBRARY / BEST_KNOWN
    # A record names the time limit that found it, as well as the method.
    timed = [dict(row, method=f"{row['method']} ({args.limit:g} s)") for row in rows]
    records, changes = improve_best_known(read_best_known(table), timed)
    write_best_known(table, records)
    print("\n".join(changes) or "no record improved")
    jobs = {p.name: p.load().n_jobs for p in load_suite(str(LIBRARY), ROOT)}
    lines = [
        "# The instance library: best known values and bounds", "",
        "Written by `python scripts/bench_library.py "
        f"--limit {args.limit:g} --threads {args.threads}"
        + (f" --methods {args.methods}" if args.methods else "")
        + (f" --skip-large {args.skip_large} --large-jobs {args.large_jobs}" if skip else "")
        + (f" --only {args.only}" if args.only else "") + "` (the `gpuplan bench` harness), "
        f"which records in `instances/library/{BEST_KNOWN}` every verified plan strictly "
        "better than the best known value and every strictly tighter proven bound. Run "
        f"started {began} on a shared machine (2 cores) under load: load average "
        f"{load_before} before, {_load()} after (1, 5, 15 minutes).", "",
        "## Best known values and bounds", "",
        "Gap: (best known - bound) / best known, the most the best known plan can be "
        "above the optimum.", "",
        "| instance | jobs | objective | best known | method | bound | bound method | gap % |",
        "|---|---:|---|---:|---|---:|---|---:|",
    ]
    for name in sorted(records):
        record = records[name]
        gap = gap_pct(record.bound, record.value)
        lines.append(
            f"| {name} | {jobs.get(name, '-')} | {record.objective.value} | "
            f"{'-' if record.value is None else f'{record.value:.10g}'} | "
            f"{record.method or '-'} | "
            f"{'-' if record.bound is None else f'{record.bound:.10g}'} | "
            f"{record.bound_method or '-'} | {'-' if gap is None else f'{gap:.3g}'} |")
    lines += ["", "## This run", "",
              "Reference and gap %: to the best known value recorded before this run, or "
              "else to the tightest bound of this run's methods (marked bound); "
              f"{args.limit:g} s and {args.threads} threads per solve"
              + (f"; files of more than {args.large_jobs} jobs skip {', '.join(sorted(skip))}"
                 if skip else "") + ".", "",
              summary_markdown(rows), markdown(rows)]
    write_results(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()

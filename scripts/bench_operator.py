"""cp against greedy, sa and ga on the operator's 150-job batches (issue 19).

Usage:
    python scripts/bench_operator.py [--limit 10] [--threads 2] [--seed 0]
        [--only NAME,...] [--methods greedy,sa,ga,cp] [--out docs/results/operator.md]

The files are the library's 150-job operator batches with a time-based objective
(``instances/library/operator-150-s*.json`` and the variants ``operator-*-150-s*.json``:
tight deadlines, long chains, space sharing; makespan, weighted completion and weighted
tardiness), each planned through the ``gpuplan bench`` harness (:mod:`gpuplan.harness.bench`,
every plan verified) by every method at ``--limit`` seconds and ``--threads`` threads.
The page gets one row
per instance and objective: each method's value, the tightest bound any method reported,
cp against greedy and sa in %, cp's gap to that bound and its seconds, then the harness's
rows, with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path
from typing import Any

from gpuplan.core.settings import RunSettings
from gpuplan.harness.bench import load_suite, markdown, parse_method, run_bench, write_results

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "instances" / "library"
#: The batches: 150 jobs, base or a variant, any seed; max-weight files are static.
PATTERN = re.compile(r"operator(-[a-z]+)?-150-s\d+(-weighted|-tardiness)?")
METHODS = ("greedy", "sa", "ga", "cp")


def _load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def _percent(value: float | None, other: float | None) -> str:
    """``value`` against ``other`` in % of ``other`` (negative: below), or -."""
    if value is None or not other:
        return "-"
    return f"{100.0 * (value - other) / abs(other):+.2f}"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.10g}"


def comparison(rows: list[dict[str, Any]], methods: list[str]) -> list[str]:
    """The per-instance table: values, best bound, cp against greedy and sa, cp's gap."""
    lines = [
        f"| instance | objective | {' | '.join(methods)} | bound | cp vs greedy % | "
        "cp vs sa % | cp gap to bound % | cp s |",
        "|---|---|" + "---:|" * (len(methods) + 5),
    ]
    keys = list(dict.fromkeys((r["instance"], r.get("objective_kind")) for r in rows))
    for instance, kind in keys:
        mine = {r["method"].split(":")[0]: r for r in rows
                if r["instance"] == instance and r.get("objective_kind") == kind}
        value = {m: mine[m].get("objective") if m in mine else None for m in methods}
        bounds = [r["bound"] for r in mine.values() if r.get("bound") is not None]
        bound = max(bounds) if bounds else None
        cp = value.get("cp")
        seconds = mine["cp"].get("seconds") if "cp" in mine else None
        lines.append(
            f"| {instance} | {kind} | {' | '.join(_cell(value[m]) for m in methods)} | "
            f"{_cell(bound)} | {_percent(cp, value.get('greedy'))} | "
            f"{_percent(cp, value.get('sa'))} | {_percent(cp, bound)} | "
            f"{'-' if seconds is None else f'{seconds:.3g}'} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per solve")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="only these instances (file stems)")
    parser.add_argument("--methods", default=",".join(METHODS), metavar="NAME,...")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "operator.md")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    problems = [p for p in load_suite(str(LIBRARY), ROOT, [n for n in args.only.split(",")
                                                           if n])
                if PATTERN.fullmatch(p.name)]
    settings = RunSettings(time_limit_s=args.limit, threads=args.threads, seed=args.seed)
    began, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()

    def progress(row: dict[str, Any]) -> None:
        print(row["instance"], row["method"], row.get("objective"), row.get("bound"),
              row.get("seconds"), _load(), flush=True)

    rows = run_bench(problems, [parse_method(m) for m in methods], settings, on_row=progress)
    lines = [
        "# cp on the operator's batches (issue 19)", "",
        "Written by `python scripts/bench_operator.py "
        f"--limit {args.limit:g} --threads {args.threads} --seed {args.seed}"
        + (f" --methods {args.methods}" if args.methods != ",".join(METHODS) else "")
        + (f" --only {args.only}" if args.only else "") + "` (the `gpuplan bench` harness, "
        f"every plan verified): {args.limit:g} s and {args.threads} threads per solve. Run "
        f"started {began} on a shared machine (2 cores) under load: load average "
        f"{load_before} before, {_load()} after (1, 5, 15 minutes), so seconds-limited "
        "values vary from run to run.", "",
        "Bound: the tightest any method reported (each a proven bound). cp vs greedy and cp "
        "vs sa: cp's value against theirs in % (negative: cp is better); gap: cp above "
        "the bound in %.", "",
        *comparison(rows, methods), "",
        "## The harness's rows", "",
        markdown(rows),
    ]
    write_results(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()

"""Benchmark the makespan (and weighted-completion) bounds against the best plans known.

Usage:
    python scripts/bench_bounds.py [--limit 10] [--share 1] [--out docs/results/bounds.md]

For each makespan instance of the operator library (``instances/library``, the 150-job
batches and their variants) and of ``instances/`` (the Gavel clusters, ``quickstart``,
``gavel_makespan``), every bound gpuplan computes, with its seconds:

- *combinatorial*: :func:`~gpuplan.models.bounds.objective_bound` (chains, weighted area
  after heads and before tails), what greedy and sa report;
- *workload LP*: :func:`~gpuplan.models.scheduling.workload_program` (type shares,
  capacity per type and resource, each job's own run time), the bound cp reported
  before the window LPs;
- *window LP*: :func:`~gpuplan.models.energetic.window_program` (completion times,
  heads, tails, deadlines, packing rows with dual-feasible functions per type and gang);
- *energetic*: :func:`~gpuplan.parts.bounds.simple_bound` with no time limit (the
  window LP, then trial makespans refuted by energetic reasoning);
- *at share*: the same within ``--share`` seconds, what cp gets at 10 s (10% of it).

A second table does the same for the weighted-completion batches of the library: the
chains' bound and :func:`~gpuplan.models.bounds.mean_busy_bound`.

The plan is the best of greedy, sa and cp at ``--limit`` seconds (2 threads, seed 1,
through :func:`gpuplan.harness.bench.run_bench`, every plan verified) and the library's
``best_known.csv``; the gap is ``(plan - bound) / plan``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.settings import RunSettings
from gpuplan.core.status import Status
from gpuplan.harness.bench import Problem, load_suite, parse_method, run_bench, write_results
from gpuplan.models.bounds import earliest_completion, objective_bound
from gpuplan.models.energetic import packing_rows, window_program, windows
from gpuplan.models.scheduling import workload_program
from gpuplan.parts.bounds import lp_backend, simple_bound, solve_by_rows

ROOT = Path(__file__).resolve().parent.parent
SUITES = [
    str(ROOT / "instances" / "library" / "operator-150-s[0-9].json"),
    str(ROOT / "instances" / "library" / "operator-*-150-s[0-9].json"),
    str(ROOT / "instances" / "gavel_cluster_500*.json"),
    str(ROOT / "instances" / "quickstart.json"),
    str(ROOT / "instances" / "gavel_makespan.json"),
]
WEIGHTED = [str(ROOT / "instances" / "library" / "operator-150-s[0-9]-weighted.json")]
METHODS = ["greedy", "sa", "cp"]


def workload_bound(instance: Instance) -> float:
    """The combinatorial bound raised by the workload LP's optimum."""
    solution = lp_backend().solve_program(workload_program(instance),
                                                        Limits(Budget()))
    value = objective_bound(instance)
    if solution.status is Status.OPTIMAL and solution.objective is not None:
        value = max(value, solution.objective)
    return value


def window_bound(instance: Instance) -> float:
    """The combinatorial bound raised by the window LP's optimum (no trial makespans)."""
    frame = windows(instance)
    value = objective_bound(instance)
    if not frame.feasible:
        return value
    model = window_program(instance, packing_rows(instance), frame)
    solution = solve_by_rows(model, lp_backend(), Limits(Budget()))
    if solution.status is Status.OPTIMAL and solution.objective is not None:
        value = max(value, solution.objective * (1 - 1e-7))
    return value


def timed(bound: Callable[[Instance], float], instance: Instance) -> tuple[float, float]:
    """A bound's value and the seconds it took."""
    began = time.perf_counter()
    value = bound(instance)
    return value, time.perf_counter() - began


def gap_text(plan: float, bound: float) -> str:
    """``(plan - bound) / plan`` in percent; 0.0% where they agree to float noise."""
    gap = 0.0 if abs(plan - bound) <= 1e-9 * abs(plan) else (plan - bound) / plan
    return f"{100 * gap:.1f}%"


def problems(suites: list[str], objective: ObjectiveKind) -> list[Problem]:
    """The instances of ``suites`` with this objective, read once."""
    found = [p.loaded() for suite in suites for p in load_suite(suite, ROOT)]
    return [p for p in found if p.load().objective is objective]


def best_plan(problem: Problem, settings: RunSettings) -> tuple[float, str]:
    """The best verified plan of :data:`METHODS` and ``best_known.csv``, and its source."""
    rows = run_bench([problem], [parse_method(m) for m in METHODS], settings)
    limit = settings.time_limit_s
    plans = [(r["objective"], f"{r['method']} ({limit:g} s)") for r in rows
             if r.get("objective") is not None and r.get("verified")]
    if problem.best is not None:
        plans.append((problem.best, "best_known.csv"))
    return min(plans)


def weighted_table(settings: RunSettings) -> list[str]:
    """Weighted completion: the chains' bound, the mean-busy-time one, and the plans."""
    lines = ["| instance | jobs | chains | mean busy time | best plan | gap: chains "
             "| gap: mean busy time |", "|---|---:|---:|---:|---|---:|---:|"]
    for problem in problems(WEIGHTED, ObjectiveKind.WEIGHTED_COMPLETION):
        instance = problem.load()
        chains = timed(lambda i: float((i.weight * earliest_completion(i).time).sum()),
                       instance)
        busy = timed(objective_bound, instance)
        best, source = best_plan(problem, settings)
        lines.append(f"| {problem.name} | {instance.n_jobs} | {chains[0]:,.0f} "
                     f"({chains[1]:.2f} s) | {busy[0]:,.0f} ({busy[1]:.2f} s) | {best:,.0f} "
                     f"({source}) | {gap_text(best, chains[0])} | {gap_text(best, busy[0])} |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--share", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "bounds.md")
    args = parser.parse_args()
    settings = RunSettings(time_limit_s=args.limit, threads=2, seed=1)
    header = ("| instance | jobs | combinatorial | workload LP | window LP | energetic "
              f"| at {args.share:g} s | best plan | gap: workload LP | gap: energetic |")
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    loads = []
    for problem in problems(SUITES, ObjectiveKind.MAKESPAN):
        instance = problem.load()
        bounds = [timed(b, instance) for b in (
            objective_bound, workload_bound, window_bound,
            lambda i: simple_bound(i, Limits(Budget())))]
        share = simple_bound(instance, Limits(Budget(args.share)))
        best, source = best_plan(problem, settings)
        loads.append(os.getloadavg()[0])
        cells = [f"{v:,.0f} ({s:.2f} s)" for v, s in bounds]
        gap = [gap_text(best, bounds[k][0]) for k in (1, 3)]
        lines.append(f"| {problem.name} | {instance.n_jobs} | " + " | ".join(cells)
                     + f" | {share:,.0f} | {best:,.0f} ({source}) | " + " | ".join(gap) + " |")
        print(lines[-1], flush=True)
    weighted = weighted_table(settings)
    loads.append(os.getloadavg()[0])
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([
        "# Makespan bounds against the best plans known",
        "",
        f"`python scripts/bench_bounds.py --limit {args.limit:g} --share {args.share:g}`, "
        f"{stamp}, on a shared machine (2 cores; 1-minute load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the run): seconds are wall-clock under "
        "that load. Each bound is proven (see gpuplan/models/energetic.py); the plan is the "
        f"best verified one of {', '.join(METHODS)} at {args.limit:g} s (2 threads, seed 1) "
        "and the library's best_known.csv; gap = (plan - bound) / plan.",
        "",
        *lines,
        "",
        "## Weighted completion",
        "",
        "The combinatorial bound greedy, sa and cp report (gpuplan/models/bounds.py): the "
        "chains' sum of weighted earliest completions, and the mean-busy-time bound of the "
        "fleet as one machine (preemptive WSPT, Goemans), against the same plans.",
        "",
        *weighted,
        "",
    ])
    write_results(args.out, text)


if __name__ == "__main__":
    main()

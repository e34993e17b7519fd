"""Benchmark ``--method cp`` on unrelated parallel machines (R||Cmax) against the plain model.

Usage:
    python scripts/bench_cp.py [--families uniform,jobs-correlated,machines-correlated]
        [--machines 10,20,30] [--jobs 100,200,500] [--seeds 3] [--time-limit 10]
        [--out docs/results/rcmax.md]

Instances are generated as Fanjul-Peyro & Ruiz (2010) describe three of their families:
``uniform`` has processing times U(1, 100) per (job, machine); ``jobs-correlated`` has
``b_j + d_ij`` and ``machines-correlated`` ``a_i + d_ij``, with ``a_i, b_j`` U(1, 100)
and ``d_ij`` U(1, 20). Each machine is a GPU type with one GPU and each job a single-GPU
job, so gpuplan's ``cp`` solves exactly R||Cmax. The peer is the plain CP-SAT model a user
would write (one optional interval per job and machine, no-overlap per machine,
makespan), with the same time limit and 2 workers. "gap %" is to the best lower bound
gpuplan reports. The file gets every row, then means per family, size and method.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from gpuplan.planning import plan
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.solvers import SolveOptions

ROOT = Path(__file__).resolve().parent.parent


#: Fanjul-Peyro & Ruiz's families, as processing-time generators (jobs x machines).
FAMILIES = {
    "uniform": lambda rng, n, m: rng.integers(1, 101, size=(n, m)),
    "jobs-correlated": lambda rng, n, m: (rng.integers(1, 101, size=(n, 1))
                                          + rng.integers(1, 21, size=(n, m))),
    "machines-correlated": lambda rng, n, m: (rng.integers(1, 101, size=(1, m))
                                              + rng.integers(1, 21, size=(n, m))),
}


def rcmax_document(family: str, machines: int, jobs: int,
                   seed: int) -> tuple[dict[str, Any], np.ndarray]:
    """An R||Cmax instance of one family, as a gpuplan document, and its times."""
    times = FAMILIES[family](np.random.default_rng(seed), jobs, machines)
    document = {
        "name": f"rcmax_{family}_{machines}x{jobs}_{seed}",
        "gpu_types": [{"id": f"m{i}", "capacity": {"compute": 1.0}} for i in range(machines)],
        "nodes": [{"id": f"n{i}", "gpus": {f"m{i}": 1}} for i in range(machines)],
        "jobs": [{"id": f"j{j}", "demand": {"compute": 1.0},
                  "duration_s": {f"m{i}": int(times[j, i]) for i in range(machines)}}
                 for j in range(jobs)],
        "objective": "makespan",
    }
    return document, times


def plain_cpsat(times: np.ndarray, limit: float) -> float | None:
    """The textbook CP-SAT model of R||Cmax; its best makespan, or None."""
    model = cp_model.CpModel()
    n, m = times.shape
    horizon = int(times.min(axis=1).sum())
    makespan = model.new_int_var(0, horizon, "cmax")
    per_machine: list[list[Any]] = [[] for _ in range(m)]
    for j in range(n):
        start = model.new_int_var(0, horizon, f"s{j}")
        chosen = []
        for i in range(m):
            present = model.new_bool_var(f"x{j}_{i}")
            per_machine[i].append(model.new_optional_fixed_size_interval_var(
                start, int(times[j, i]), present, f"i{j}_{i}"))
            model.add(start + int(times[j, i]) <= makespan).only_enforce_if(present)
            chosen.append(present)
        model.add_exactly_one(chosen)
    for intervals in per_machine:
        model.add_no_overlap(intervals)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = 2
    status = solver.solve(model)
    return solver.objective_value if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def _row(name: str, method: str, makespan: float | None, bound: float, seconds: float,
         verified: str) -> tuple[str, dict[str, Any]]:
    gap = None if makespan is None or not bound else 100 * (makespan - bound) / bound
    line = (f"| {name} | {method} | {'-' if makespan is None else f'{makespan:g}'} | "
            f"{bound:g} | {'-' if gap is None else f'{gap:.2f}'} | {seconds:.2f} | "
            f"{verified} |")
    return line, {"method": method, "gap": gap, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--machines", default="10,20,30")
    parser.add_argument("--jobs", default="100,200,500")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "rcmax.md")
    args = parser.parse_args()
    lines = ["| instance | method | makespan | bound | gap % | seconds | verified |",
             "|---|---|---:|---:|---:|---:|---|"]
    groups: dict[tuple[str, int, int, str], list[dict[str, Any]]] = {}
    for family in args.families.split(","):
        for m in map(int, args.machines.split(",")):
            for n in map(int, args.jobs.split(",")):
                for seed in range(args.seeds):
                    document, times = rcmax_document(family, m, n, seed)
                    instance = build_instance(parse_document(document, "<generated>"),
                                              "<generated>")
                    rows = []
                    for method in ("greedy", "cp"):
                        began = time.perf_counter()
                        schedule = plan(instance, method, SolveOptions(
                            time_limit_s=args.time_limit, seed=seed))
                        seconds = time.perf_counter() - began
                        bound = float(schedule.bound or 0.0)
                        ok = schedule.verification is not None and schedule.verification.ok
                        rows.append((method, schedule.objective, seconds,
                                     "yes" if ok else "no"))
                    began = time.perf_counter()
                    peer = plain_cpsat(times, args.time_limit)
                    rows.append(("peer-cpsat", peer, time.perf_counter() - began, "-"))
                    # Every row is measured against cp's bound, the best gpuplan has.
                    for method, makespan, seconds, verified in rows:
                        line, record = _row(document["name"], method, makespan, bound,
                                            seconds, verified)
                        lines.append(line)
                        groups.setdefault((family, m, n, method), []).append(record)
                        print(line, flush=True)
    lines += ["", "Means per family, size and method (gap to cp's bound):", "",
              "| family | machines x jobs | method | instances | mean gap % | max gap % | "
              "mean seconds |", "|---|---|---|---:|---:|---:|---:|"]
    for (family, m, n, method), records in groups.items():
        gaps = [r["gap"] for r in records if r["gap"] is not None]
        mean = f"{np.mean(gaps):.2f}" if gaps else "-"
        worst = f"{max(gaps):.2f}" if gaps else "-"
        lines.append(f"| {family} | {m}x{n} | {method} | {len(records)} | {mean} | {worst} | "
                     f"{np.mean([r['seconds'] for r in records]):.2f} |")
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

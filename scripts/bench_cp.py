"""Benchmark ``--method cp`` on unrelated parallel machines (R||Cmax) against the plain model.

Usage:
    python scripts/bench_cp.py [--machines 10,20,30] [--jobs 100,200,500] [--seeds 3]
        [--time-limit 10] [--out docs/results/rcmax.md]

Instances are generated as Fanjul-Peyro & Ruiz (2010) describe their uncorrelated family:
processing times U(1, 100) per (job, machine). Each machine is a GPU type with one GPU and
each job a single-GPU job, so gpuplan's ``cp`` (CP-SAT over interval alternatives) solves
exactly R||Cmax. The peer is the plain CP-SAT model a user would write (one optional
interval per job and machine, no-overlap per machine, makespan), with the same time limit
and 2 workers. "gap %" is to the best lower bound gpuplan reports.
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


def rcmax_document(machines: int, jobs: int, seed: int) -> tuple[dict[str, Any], np.ndarray]:
    """An R||Cmax instance with U(1, 100) processing times, as a gpuplan document."""
    times = np.random.default_rng(seed).integers(1, 101, size=(jobs, machines))
    document = {
        "name": f"rcmax_{machines}x{jobs}_{seed}",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", default="10,20,30")
    parser.add_argument("--jobs", default="100,200,500")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "rcmax.md")
    args = parser.parse_args()
    lines = ["| instance | method | makespan | bound | gap % | seconds | verified |",
             "|---|---|---:|---:|---:|---:|---|"]
    for m in map(int, args.machines.split(",")):
        for n in map(int, args.jobs.split(",")):
            for seed in range(args.seeds):
                document, times = rcmax_document(m, n, seed)
                instance = build_instance(parse_document(document, "<generated>"),
                                          "<generated>")
                name = document["name"]
                bound = None
                for method in ("greedy", "cp"):
                    began = time.perf_counter()
                    schedule = plan(instance, method, SolveOptions(
                        time_limit_s=args.time_limit, seed=seed))
                    seconds = time.perf_counter() - began
                    bound = schedule.bound
                    ok = schedule.verification is not None and schedule.verification.ok
                    gap = 100 * (schedule.objective - bound) / bound if bound else None
                    lines.append(f"| {name} | {method} | {schedule.objective:g} | {bound:g} | "
                                 f"{gap:.2f} | {seconds:.2f} | {'yes' if ok else 'no'} |")
                    print(lines[-1], flush=True)
                began = time.perf_counter()
                peer = plain_cpsat(times, args.time_limit)
                seconds = time.perf_counter() - began
                gap_text = ("-" if peer is None or not bound
                            else f"{100 * (peer - bound) / bound:.2f}")
                lines.append(f"| {name} | peer-cpsat | {peer if peer is not None else '-'} | "
                             f"{bound:g} | {gap_text} | {seconds:.2f} | - |")
                print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

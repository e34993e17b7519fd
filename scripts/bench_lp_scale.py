"""LP relaxation and rounding at scale: 10,000 jobs on 1,000 GPUs of 4 types.

Usage: python scripts/bench_lp_scale.py [--jobs 10000] [--gpus 1000] [--seed 0] [--time-limit 60]

The fleet has 125 nodes of 8 GPUs, of four types (K80, P100, V100, A100 speed ratios; the
cheaper types are slower, so per-job cost differs by type). Jobs have gangs of 1/2/4/8,
memory and compute shares sized so that the batch fills about 80% of the fleet's compute:
the cheapest types run out and the LP must split jobs. Objective: total assignment cost
(GPU-seconds x price). Prints one Markdown row per rounding, and the greedy baseline.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from gpuplan.planning import plan
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.solvers import SolveOptions
from gpuplan.solvers.rounding import ROUNDINGS

TYPES = {  # memory GiB, relative speed, price per GPU-hour
    "k80": (12.0, 1.0, 0.45),
    "p100": (16.0, 2.6, 1.46),
    "v100": (32.0, 4.2, 2.48),
    "a100": (80.0, 9.0, 3.67),
}


def make_document(n_jobs: int, n_gpus: int, seed: int) -> dict[str, Any]:
    """A seeded fleet of four types and a batch that fills most of its compute."""
    rng = np.random.default_rng(seed)
    names = list(TYPES)
    nodes = [{"id": f"node{n:04d}", "gpus": {names[n % 4]: 8}} for n in range(n_gpus // 8)]
    gangs = rng.choice([1, 2, 4, 8], size=n_jobs, p=[0.7, 0.15, 0.1, 0.05])
    memory = rng.choice([1.0, 2.0, 4.0, 8.0, 11.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    shares = rng.choice([0.015, 0.035, 0.07, 0.14], size=n_jobs, p=[0.4, 0.3, 0.2, 0.1])
    base = rng.lognormal(mean=8.0, sigma=0.7, size=n_jobs)
    jobs = [
        {
            "id": f"job{j:05d}",
            "gpus": int(gangs[j]),
            "demand": {"memory_gib": float(memory[j] / 4), "compute": float(shares[j])},
            "duration_s": {t: round(float(base[j]) / speed, 1)
                           for t, (_, speed, _) in TYPES.items()},
        }
        for j in range(n_jobs)
    ]
    return {
        "name": f"lp-scale-{n_jobs}x{n_gpus}",
        "gpu_types": [
            {"id": t, "capacity": {"memory_gib": mem, "compute": 1.0}, "cost_per_hour": price}
            for t, (mem, _, price) in TYPES.items()
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "assign-cost",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    raw = make_document(args.jobs, args.gpus, args.seed)
    instance = build_instance(parse_document(raw, "synthetic"), "synthetic", raw["name"])
    load = (instance.demand[:, :, 1].min(axis=1) * instance.gang).sum() / instance.n_gpus
    print(f"{instance.name}: {instance.n_jobs} jobs, {instance.n_gpus} GPUs, compute load "
          f"{load:.0%} of the fleet at each job's least demand")
    print("| instance | method | rounding | status | objective | bound | gap | placed | "
          "seconds | verified |\n|---|---|---|---|---:|---:|---:|---:|---:|---|")
    runs = [("greedy", "-")] + [("lp", name) for name in ROUNDINGS]
    for method, rounding in runs:
        options = SolveOptions(time_limit_s=args.time_limit,
                               rounding=rounding if rounding != "-" else "largest-share")
        started = time.perf_counter()
        schedule = plan(instance, method, options)
        seconds = time.perf_counter() - started
        verified = schedule.verification is not None and schedule.verification.ok
        gap = "-" if schedule.gap is None else f"{schedule.gap:.2%}"
        value = "-" if schedule.objective is None else f"{schedule.objective:.6g}"
        bound = "-" if schedule.bound is None else f"{schedule.bound:.6g}"
        print(f"| {instance.name} | {method} | {rounding} | {schedule.status.value} | {value} "
              f"| {bound} | {gap} | {len(schedule.placements)} | {seconds:.1f} | "
              f"{'yes' if verified else 'no'} |", flush=True)


if __name__ == "__main__":
    main()

"""Time the greedy planners (and the verifier) on the example instances and at scale.

Usage: python scripts/bench_greedy.py [--jobs 10000] [--gpus 1000] [--seed 0]

The example instances are those in instances/. The scale instances are a seeded
10,000-job, 1,000-GPU fleet:

The fleet has three GPU types in the speed ratios of Gavel's K80/P100/V100 measurements,
8 GPUs per node. Jobs have gang sizes 1/2/4/8, memory by model size and a compute share, so
that several small jobs can share one GPU in the static problems. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.readers.instance_file import build_instance, parse_document

INSTANCES = Path(__file__).resolve().parent.parent / "instances"

TYPES = {  # memory GiB, relative speed, price per hour
    "k80": (12.0, 1.0, 0.45),
    "p100": (16.0, 2.6, 1.46),
    "v100": (16.0, 4.2, 2.48),
}


def make_document(n_jobs: int, n_gpus: int, seed: int, share: float = 1.0) -> dict:
    """A seeded fleet and batch; ``share`` scales per-GPU demands (small for static packing)."""
    rng = np.random.default_rng(seed)
    names = list(TYPES)
    nodes = [
        {"id": f"node{n:04d}", "gpus": {names[n % 3]: 8}} for n in range(n_gpus // 8)
    ]
    gangs = rng.choice([1, 2, 4, 8], size=n_jobs, p=[0.7, 0.15, 0.1, 0.05])
    memory = rng.choice([1.0, 2.0, 4.0, 8.0, 12.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    compute = rng.choice([0.05, 0.1, 0.25, 0.5, 1.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.1, 0.1])
    base = rng.lognormal(mean=8.0, sigma=0.5, size=n_jobs)
    jobs = []
    for j in range(n_jobs):
        jobs.append(
            {
                "id": f"job{j:05d}",
                "gpus": int(gangs[j]),
                "demand": {
                    "memory_gib": float(memory[j]) * share,
                    "compute": float(compute[j]) * share,
                },
                "duration_s": {
                    t: round(float(base[j]) / speed, 1) for t, (_, speed, _) in TYPES.items()
                },
                "weight": float(rng.integers(1, 10)),
            }
        )
    return {
        "name": f"synthetic-{n_jobs}x{n_gpus}",
        "gpu_types": [
            {"id": t, "capacity": {"memory_gib": mem, "compute": 1.0}, "cost_per_hour": price}
            for t, (mem, _, price) in TYPES.items()
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "makespan",
    }


HEADER = (
    "| instance | jobs | GPUs | objective | method | status | value | bound | gap | placed "
    "| plan + verify s |\n|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|"
)


def row(instance: Instance) -> None:
    """Plan with greedy, time plan() (solve and verify), print one Markdown row."""
    started = time.perf_counter()
    schedule = plan(instance, "greedy")
    seconds = time.perf_counter() - started
    assert schedule.verification is not None and schedule.verification.ok
    gap = "-" if schedule.gap is None else f"{schedule.gap:.2%}"
    value = "-" if schedule.objective is None else f"{schedule.objective:.6g}"
    bound = "-" if schedule.bound is None else f"{schedule.bound:.6g}"
    print(
        f"| {instance.name} | {instance.n_jobs} | {instance.n_gpus} "
        f"| {instance.objective.value} | greedy | {schedule.status.value} "
        f"| {value} | {bound} | {gap} | {len(schedule.placements)} "
        f"| {seconds:.3f} (solve {schedule.wall_time_s:.3f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    instances = {}
    for label, share in (("timeline", 1.0), ("packing", 0.15)):
        started = time.perf_counter()
        raw = make_document(args.jobs, args.gpus, args.seed, share)
        raw["name"] = f"{label}-{args.jobs}x{args.gpus}"
        instances[label] = build_instance(parse_document(raw, label), label)
        load = time.perf_counter() - started
        print(f"instance {raw['name']}: validated and indexed in {load:.2f} s")
    print(HEADER)
    for path in sorted(INSTANCES.glob("*.json")):
        row(read_instance(path))
    print()
    print(HEADER)
    for label, objective in (
        ("timeline", ObjectiveKind.MAKESPAN),
        ("timeline", ObjectiveKind.WEIGHTED_COMPLETION),
        ("timeline", ObjectiveKind.COST),
        ("timeline", ObjectiveKind.MAX_WEIGHT),
        ("packing", ObjectiveKind.MIN_GPUS),
        ("packing", ObjectiveKind.MIN_GPU_COST),
        ("packing", ObjectiveKind.MIN_MAX_LOAD),
    ):
        row(instances[label].with_objective(objective))


if __name__ == "__main__":
    main()

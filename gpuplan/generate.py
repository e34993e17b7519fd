"""Seeded synthetic instances with realistic shapes (``gpuplan generate``).

Jobs follow Gavel's workload generator (Narayanan et al., OSDI 2020), its job mix from
:mod:`gpuplan.readers.gavel`: gang sizes 1, 2, 4 and 8 with probabilities 0.7, 0.1, 0.15
and 0.05; run times on the slowest type ``60 * 10**U(1.5, 3)`` seconds (``10**U(3, 4)``
minutes for one job in five); model families with per-GPU memory from
:data:`~gpuplan.readers.gavel.MEMORY_GIB`. GPU types run faster by the median speed-ups
Gavel measured over a K80 for single-GPU jobs of its 26 job types (:data:`SPEEDUP`).
Optionally, a share of the jobs depends on an earlier job, jobs arrive over a window, and
some get deadlines with slack over their fastest run time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuplan.readers.gavel import (
    GPU_MEMORY_GIB,
    LONG_SHARE,
    MEMORY_GIB,
    PRICES,
    run_times_s,
    scale_factors,
)

#: Median throughput over a K80 of Gavel's single-GPU job types (simulation_throughputs.json).
SPEEDUP = {"k80": 1.0, "p100": 3.32, "v100": 4.05}

#: Batch sizes per model family, as in Gavel's job table.
BATCHES = {
    "ResNet-18": (16, 32, 64, 128, 256), "ResNet-50": (16, 32, 64, 128),
    "Transformer": (16, 32, 64, 128, 256), "LM": (5, 10, 20, 40, 80),
    "Recommendation": (512, 1024, 2048, 4096, 8192), "A3C": (0,), "CycleGAN": (0,),
}


def generate_document(
    jobs: int,
    nodes: int,
    types: tuple[str, ...] = ("v100", "p100", "k80"),
    seed: int = 0,
    gpus_per_node: int = 8,
    dependencies: float = 0.0,
    arrival_window_s: float = 0.0,
    deadlines: float = 0.0,
    objective: str = "makespan",
) -> dict[str, Any]:
    """A gpuplan instance document.

    Parameters
    ----------
    jobs
        Number of jobs.
    nodes
        Number of nodes; node ``i`` holds ``gpus_per_node`` GPUs of ``types[i % len(types)]``.
    types
        GPU types, from :data:`SPEEDUP`.
    seed
        Seed of the numpy generator: the same arguments give the same document.
    gpus_per_node
        GPUs per node (a gang stays within one node, so gangs above it are capped).
    dependencies
        Share of jobs (after the first) that depend on one uniformly chosen earlier job.
    arrival_window_s
        Jobs are released uniformly over ``[0, arrival_window_s]``.
    deadlines
        Share of jobs with a deadline: release plus 2 to 5 times what their dependency
        chain needs at the fastest type.
    objective
        The objective kind.

    Raises
    ------
    ValueError
        If a type is unknown or a count is not positive.
    """
    unknown = [t for t in types if t not in SPEEDUP]
    if unknown:
        raise ValueError(f"unknown GPU type {unknown[0]!r}; choose from {', '.join(SPEEDUP)}")
    if jobs < 1 or nodes < 1 or gpus_per_node < 1:
        raise ValueError("jobs, nodes and GPUs per node must be at least 1")
    rng = np.random.default_rng(seed)
    # Gavel's job mix, drawn for all jobs at once in this order so that a seed keeps
    # giving the same instance (the long and the short draws both, then the mode's).
    gang = np.minimum(scale_factors(rng.random(jobs)), gpus_per_node)
    long = rng.random(jobs) < LONG_SHARE
    long_draws, short_draws = rng.random(jobs), rng.random(jobs)
    slowest = run_times_s(long, np.where(long, long_draws, short_draws))
    families = list(BATCHES)
    family = rng.integers(len(families), size=jobs)
    release = rng.uniform(0, arrival_window_s, jobs) if arrival_window_s > 0 else np.zeros(jobs)
    slowest_type = min(SPEEDUP[t] for t in types)
    roomiest = max(GPU_MEMORY_GIB[t] for t in types)
    earliest = np.zeros(jobs)  # earliest completion along the job's dependency chain
    documents: list[dict[str, Any]] = []
    for j in range(jobs):
        name = families[int(family[j])]
        base, per_sample = MEMORY_GIB[name]
        # Only batch sizes that fit the roomiest type, so that every job can run.
        fitting = [b for b in BATCHES[name] if base + per_sample * b <= roomiest]
        batch = int(rng.choice(fitting or [0]))
        job: dict[str, Any] = {
            "id": f"job{j:05d}",
            "gpus": int(gang[j]),
            "demand": {"memory_gib": round(base + per_sample * batch, 2)},
            "duration_s": {t: round(float(slowest[j]) * slowest_type / SPEEDUP[t], 3)
                           for t in types},
            "release_s": round(float(release[j]), 3),
        }
        ready = float(release[j])
        if j > 0 and rng.random() < dependencies:
            before = int(rng.integers(j))
            job["depends_on"] = [f"job{before:05d}"]
            ready = max(ready, float(earliest[before]))
        earliest[j] = ready + min(job["duration_s"].values())
        if rng.random() < deadlines:
            # Slack of 2 to 5 times what the job's chain needs from its release.
            need = float(earliest[j]) - float(release[j])
            job["deadline_s"] = round(float(release[j]) + float(rng.uniform(2, 5)) * need, 3)
        documents.append(job)
    return {
        "name": f"generated_{jobs}x{nodes}_{seed}",
        "description": (f"gpuplan generate --jobs {jobs} --nodes {nodes} --types "
                        f"{','.join(types)} --seed {seed}: Gavel's job mix and speed-ups"),
        "gpu_types": [{"id": t, "capacity": {"memory_gib": GPU_MEMORY_GIB[t]},
                       "cost_per_hour": PRICES[t]} for t in types],
        "nodes": [{"id": f"node{i:04d}", "gpus": {types[i % len(types)]: gpus_per_node}}
                  for i in range(nodes)],
        "jobs": documents,
        "objective": objective,
    }

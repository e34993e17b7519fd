"""Seeded synthetic instances with realistic shapes (``gpuplan generate``).

Jobs follow Gavel's workload generator (Narayanan et al., OSDI 2020), its job mix from
:mod:`gpuplan.readers.gavel`: gang sizes 1, 2, 4 and 8 with probabilities 0.7, 0.1, 0.15
and 0.05; run times on the slowest type ``60 * 10**U(1.5, 3)`` seconds (``10**U(3, 4)``
minutes for one job in five); model families with per-GPU memory from
:data:`~gpuplan.readers.gavel.MEMORY_GIB`. GPU types run faster by the median speed-ups
Gavel measured over a K80 for single-GPU jobs of its 26 job types (:data:`SPEEDUP`).
Optionally, a share of the jobs depends on an earlier job, jobs arrive over a window, and
some get deadlines with slack over their fastest run time.

:func:`gavel_document` generates the workloads of Gavel's continuous-arrival experiments
instead: Poisson arrivals of its job types, timed by its measured throughputs, on a cluster
given as GPUs per worker type (:func:`cluster_document`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.gavel import (
    GPU_MEMORY_GIB,
    LONG_SHARE,
    MEMORY_GIB,
    PRICES,
    SCALE_FACTORS,
    TraceJob,
    run_times_s,
    scale_factors,
    trace_document,
)

#: Gavel's throughputs, from :func:`~gpuplan.readers.gavel.read_throughputs`.
Throughputs = dict[str, dict[tuple[str, int], float]]

#: Median throughput over a K80 of Gavel's single-GPU job types (simulation_throughputs.json).
SPEEDUP = {"k80": 1.0, "p100": 3.32, "v100": 4.05}

#: Batch sizes per model family, as in Gavel's job table.
BATCHES = {
    "ResNet-18": (16, 32, 64, 128, 256), "ResNet-50": (16, 32, 64, 128),
    "Transformer": (16, 32, 64, 128, 256), "LM": (5, 10, 20, 40, 80),
    "Recommendation": (512, 1024, 2048, 4096, 8192), "A3C": (0,), "CycleGAN": (0,),
}

#: Gavel's job table (``scheduler/job_table.py``) in its order: each model, and whether it
#: may run on several GPUs. Its generator draws from this list by position.
JOB_TABLE: tuple[tuple[str, bool], ...] = tuple(
    (f"{family} (batch size {batch})" if batch else family,
     family in ("ResNet-18", "ResNet-50", "Transformer", "LM"))
    for family, batches in BATCHES.items() for batch in batches)

#: GPUs per node (server) when none is given: room for Gavel's largest gang.
GPUS_PER_NODE = 8


def generate_document(
    jobs: int,
    nodes: int,
    types: tuple[str, ...] = ("v100", "p100", "k80"),
    seed: int = 0,
    gpus_per_node: int = GPUS_PER_NODE,
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


#: The worker type on which Gavel's generator draws a job's run time alone (``'v100'``).
REFERENCE_TYPE = "v100"
#: Gavel's weight of a high-priority job, and the share of jobs that get it when
#: ``generate_multi_priority_jobs`` is on.
HIGH_PRIORITY_WEIGHT = 5.0
HIGH_PRIORITY_SHARE = 0.2
#: What a Gavel workload's instance optimises: the mean job completion time of the run.
GAVEL_OBJECTIVE = ObjectiveKind.WEIGHTED_COMPLETION


def gavel_jobs(throughputs: Throughputs, fleet: Mapping[str, int], jobs: int,
               rate_per_hour: float, seed: int, multi_gpu: bool = False,
               priorities: bool = False, source: str = setting("throughputs")) -> list[TraceJob]:
    """Jobs drawn as Gavel's continuous-arrival experiments draw them, all at once.

    Gavel's ``generate_job`` and ``Scheduler.simulate``: a scale factor (1, 2, 4, 8 with
    probability 0.7, 0.1, 0.15, 0.05; 1 unless ``multi_gpu``); a run time alone on
    :data:`REFERENCE_TYPE` of ``60 * 10**U(1.5, 3)`` s, or ``60 * 10**U(3, 4)`` s with
    probability 0.2; a job type uniform among those measured at the scale factor (the 26
    of Gavel's job table for one GPU); total steps = run time x reference throughput; with
    ``priorities``, weight :data:`HIGH_PRIORITY_WEIGHT` with probability
    :data:`HIGH_PRIORITY_SHARE`. Job 0 arrives at 0 and the gaps are exponential with mean
    ``3600 / rate_per_hour`` seconds.

    The draws are Gavel's, in its order, from Python's Mersenne Twister seeded as its
    simulator seeds it: every job attribute from ``random.Random(seed + 2)`` (scale factor,
    drawn even for single-GPU workloads; mode; run time; job type from
    :data:`JOB_TABLE`, drawn again until a multi-GPU job gets a distributed model;
    priority), the arrival gaps from ``random.Random(seed + 3)``. A seed therefore gives
    the jobs Gavel's generator gives for it, and job ``k`` is the same whatever the rate
    and however many jobs follow it.

    Parameters
    ----------
    throughputs
        Gavel's measured throughputs.
    fleet
        GPUs per worker type of the cluster; a job type is drawn only if it has a
        throughput on one of them at its scale factor.
    jobs
        How many jobs.
    rate_per_hour
        Poisson arrival rate in jobs per hour; 0 puts every job at time 0, as Gavel's
        static (makespan) experiments do.
    seed
        Seed of the streams: the same arguments give the same jobs.
    multi_gpu
        Draw Gavel's multi-GPU scale factors (its ``--generate-multi-gpu-jobs``).
    priorities
        Draw Gavel's priority weights (its ``--generate-multi-priority-jobs``).
    source
        The throughput file, named in errors.

    Raises
    ------
    InputError
        Naming ``source`` when it has no :data:`REFERENCE_TYPE` throughputs, or no job
        type at a drawn scale factor that the cluster can run.
    """
    reference = throughputs.get(REFERENCE_TYPE)
    if not reference:
        raise InputError(source, "", f"Gavel's generator times jobs on "
                         f"{REFERENCE_TYPE!r}, which the throughput file does not measure")
    draw, gap = random.Random(seed + 2), random.Random(seed + 3)
    mean_gap_s = 3600.0 / rate_per_hour if rate_per_hour > 0 else 0.0
    arrival, trace = 0.0, []
    for k in range(jobs):
        if k:
            arrival += -math.log(1.0 - gap.random()) * mean_gap_s
        scale = int(scale_factors(draw.uniform(0, 1)))
        if not multi_gpu:
            scale = 1
        long = draw.random() >= 1.0 - LONG_SHARE
        run_time = float(run_times_s(long, draw.random()))
        while True:
            model, distributed = draw.choice(JOB_TABLE)
            if scale == 1 or distributed:
                break
        weight = (HIGH_PRIORITY_WEIGHT if priorities
                  and draw.uniform(0, 1) <= HIGH_PRIORITY_SHARE else 1.0)
        if not any(throughputs[w].get((model, scale), 0.0) > 0 for w in fleet) or \
                reference.get((model, scale), 0.0) <= 0:
            raise InputError(source, "", f"job {k}: {model!r} on {scale} GPU(s) has no "
                             f"throughput on {REFERENCE_TYPE} and a type of the cluster")
        steps = max(1, round(run_time * reference[(model, scale)]))
        trace.append(TraceJob(model, steps, scale, weight, round(arrival, 3)))
    return trace


def cluster_document(trace: list[TraceJob], throughputs: Throughputs,
                     cluster: Mapping[str, int], gpus_per_node: int, name: str,
                     source: str) -> dict[str, Any]:
    """The instance document of Gavel jobs on a cluster of GPUs per worker type.

    Types with no GPUs are left out; each type's GPUs fill nodes of ``gpus_per_node``
    (the last one holds the rest), as
    :func:`~gpuplan.readers.gavel.trace_document` builds them. Release times are the
    arrival times and the objective is :data:`GAVEL_OBJECTIVE`.

    Parameters
    ----------
    trace
        The jobs, each with a throughput at its scale factor on some type of the cluster.
    throughputs
        Gavel's measured throughputs.
    cluster
        GPUs per worker type, e.g. from :func:`gpuplan.simulate.workload.parse_cluster`.
    gpus_per_node
        GPUs per server (Gavel's ``--num_gpus_per_server``); a gang stays on one.
    name
        The instance name.
    source
        The throughput file, named when it does not measure a type of the cluster.

    Raises
    ------
    InputError
        Naming ``source`` for a worker type of the cluster it does not measure.
    """
    fleet = measured_fleet(cluster, throughputs, source)
    return trace_document(trace, throughputs, fleet, gpus_per_node, PRICES, name,
                          objective=GAVEL_OBJECTIVE.value)


def measured_fleet(cluster: Mapping[str, int], throughputs: Throughputs,
                   source: str) -> dict[str, int]:
    """The worker types of the cluster that have GPUs, each measured in ``throughputs``.

    Raises
    ------
    InputError
        Naming ``source`` for a worker type it does not measure.
    """
    fleet = {t: count for t, count in cluster.items() if count > 0}
    unmeasured = sorted(set(fleet) - set(throughputs))
    if unmeasured:
        raise InputError(source, "", f"no throughputs for worker type(s) "
                         f"{', '.join(unmeasured)} of the cluster")
    return fleet


def gavel_document(throughputs: Throughputs, cluster: Mapping[str, int], jobs: int,
                   rate_per_hour: float, *, gpus_per_node: int = GPUS_PER_NODE, seed: int = 0,
                   multi_gpu: bool = False, priorities: bool = False,
                   source: str = setting("throughputs")) -> dict[str, Any]:
    """The instance document of a generated Gavel workload (:func:`gavel_jobs`) on a cluster.

    Parameters
    ----------
    throughputs, cluster, gpus_per_node, source
        As for :func:`cluster_document`.
    jobs, rate_per_hour, seed, multi_gpu, priorities
        As for :func:`gavel_jobs`.

    Raises
    ------
    InputError
        Naming ``--gpus-per-node`` when multi-GPU jobs fit no node (a gang stays on one
        node here, where Gavel's simulator ignores servers), or ``source`` as
        :func:`gavel_jobs` and :func:`cluster_document` do.
    """
    fleet = measured_fleet(cluster, throughputs, source)
    roomiest = min(max(fleet.values()), gpus_per_node)
    widest = int(SCALE_FACTORS.max()) if multi_gpu else 1
    if roomiest < widest:
        raise InputError(setting("gpus_per_node"), "", f"multi-GPU jobs take up to {widest} GPUs "
                         f"on one node; the largest node of this cluster has {roomiest}")
    trace = gavel_jobs(throughputs, fleet, jobs, rate_per_hour, seed, multi_gpu, priorities,
                       source)
    counts = ":".join(str(count) for count in cluster.values())
    document = cluster_document(trace, throughputs, fleet, gpus_per_node,
                                f"gavel_{counts.replace(':', '_')}_{rate_per_hour:g}_{seed}",
                                source)
    flags = " --multi-gpu" * multi_gpu + " --priorities" * priorities
    document["description"] = (
        f"gpuplan generate --cluster {counts} --gpus-per-node {gpus_per_node} --jobs {jobs} "
        f"--arrival-rate {rate_per_hour:g} --seed {seed}{flags}: Gavel's job generator "
        f"(run times on {REFERENCE_TYPE}, Poisson arrivals). {document['description']}")
    return document

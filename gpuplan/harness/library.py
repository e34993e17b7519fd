"""Seeded operator-like GPU batches: the generator of ``instances/library/``.

The batch is the one a cluster operator writes from README: a fleet of A100-80GB, H100
and L4 nodes and a nightly batch of mixed-gang jobs with dependencies, deadlines, due
dates, releases and weights (:func:`operator_document`). Every draw comes from
``numpy.random.default_rng(seed)`` in a fixed order, so the same arguments give the same
document, byte for byte once written.

**Fleet.** :data:`FLEET`: per 150 jobs, 4 nodes x 8 A100-80GB, 2 x 8 H100 and 6 x 4 L4
(80, 80 and 24 GiB; compute 1.0 each; on-demand prices per GPU-hour). Other sizes scale
the node counts by ``jobs / 150`` (at least one node per type), so that every size loads
its GPUs alike.

**Jobs** (the :class:`Variant` fields name each parameter; :data:`VARIANTS` holds them):

- gang size 1, 2, 4 or 8 GPUs with ``gang_p`` (mostly 1);
- per-GPU memory: a job of at most 2 GPUs fits an L4 with ``l4_share``, then 8-24 GiB,
  else 25-75 GiB (whole GiB, uniform);
- compute share: single-GPU jobs with ``share_p[0]`` and 2-GPU jobs with ``share_p[1]``
  draw a share in ``share_range`` (multiples of 0.05), so that they may share a GPU; all
  others take 1.0;
- run time on an A100, log-uniform over ``small_s`` (gangs of 1-2) or ``large_s``
  (gangs of 4-8), whole minutes; an H100 takes 0.45-0.6 of it; an L4, only for jobs that
  fit its memory, 2.5-4 times; ``h100_only`` of the jobs may run on H100s only
  (``allowed_types``, e.g. FP8 training);
- weight 1, 2, 3 or 5 with probabilities 0.5, 0.25, 0.15, 0.1;
- a quarter of the jobs arrive over the first four hours (multiples of 5 minutes);
- ``dependencies`` of the jobs (exactly the rounded share, never the first) depend on
  earlier jobs, so the graph is acyclic: with ``chains`` off, on one of the 30 jobs before
  (and a second one with probability 0.2); with ``chains`` on, each job belongs to one of
  ``jobs // 8`` pipelines and a dependent job waits for the previous job of its pipeline
  (the first job of a pipeline waits for none), which makes long chains;
- deadlines and due dates come from a reference plan: list scheduling
  (:func:`~gpuplan.parts.construct.list_schedule`) of the batch without them, for the
  makespan. ``deadlines`` of the jobs get a deadline of their reference end times a
  slack drawn from ``slack``, rounded up to 5 minutes, so the reference plan meets every
  deadline and each instance is feasible by construction; 40% get a due date of 0.6-1.1
  times their reference end (soft, rounded to 5 minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.instance import FloatArray, Instance
from gpuplan.core.objectives import ALL_OBJECTIVES, TIME_OBJECTIVES, ObjectiveKind
from gpuplan.parts.construct import list_schedule
from gpuplan.readers.instance_file import instance_from_data

#: The library's generators, by the name ``gpuplan generate --library`` takes.
GENERATORS = ("operator", "racks")

#: GPU types of the fleet: id, memory in GiB, price per GPU-hour (USD, on-demand list
#: prices of 2024-2026 clouds), nodes per 150 jobs, GPUs per node.
FLEET = (
    ("A100-80GB", 80, 3.67, 4, 8),
    ("H100", 80, 6.98, 2, 8),
    ("L4", 24, 0.80, 6, 4),
)
#: The number of jobs the fleet is sized for.
BASE_JOBS = 150
#: Gang sizes.
GANGS = (1, 2, 4, 8)
#: Weights and their probabilities.
WEIGHTS = ((1, 2, 3, 5), (0.5, 0.25, 0.15, 0.1))
#: Share of jobs released late, and the window they arrive in, in seconds.
LATE_SHARE, ARRIVAL_WINDOW_S = 0.25, 4 * 3600.0
#: Share of jobs with a due date, and its factor over the reference end.
DUE_SHARE, DUE_FACTOR = 0.4, (0.6, 1.1)
#: H100 and L4 run times over the A100's.
H100_FACTOR, L4_FACTOR = (0.45, 0.6), (2.5, 4.0)
#: Times are whole minutes (durations) and multiples of 5 minutes (releases, deadlines,
#: due dates), as an operator writes them.
MINUTE_S, ROUND_S = 60.0, 300.0
#: Jobs per pipeline of the ``chains`` variant, and how far back a dependency reaches
#: otherwise.
PIPELINE_JOBS, DEPENDENCY_WINDOW = 8, 30
#: The factor a deadline that list scheduling misses grows by (:func:`_loosen`).
LOOSEN = 1.1
#: Objectives the batch has data for (it gives no profits), and general methods plan.
OBJECTIVES = tuple(k.value for k in ObjectiveKind if k in ALL_OBJECTIVES
                   and k is not ObjectiveKind.ASSIGN_PROFIT)
#: Short file-name suffixes of the objectives other than makespan.
OBJECTIVE_SUFFIX = {"weighted-completion": "weighted", "max-weight": "maxweight"}


@dataclass(frozen=True)
class Variant:
    """The distributions of one kind of batch (see the module's description).

    Attributes
    ----------
    description
        What the variant is for, one line.
    gang_p
        Probabilities of gangs of 1, 2, 4 and 8 GPUs.
    l4_share
        Probability that a job of at most 2 GPUs fits an L4 (8-24 GiB).
    share_p
        Probabilities that a 1-GPU and a 2-GPU job use less than a whole GPU's compute.
    share_range
        The compute share such a job uses.
    small_s, large_s
        Run time on an A100 of gangs of 1-2 and of 4-8 GPUs (log-uniform), seconds.
    h100_only
        Share of jobs that may run on H100s only.
    dependencies
        Share of jobs that depend on earlier ones.
    chains
        Whether dependencies follow pipelines (long chains) instead of recent jobs.
    deadlines
        Share of jobs with a deadline.
    slack
        A deadline over the job's end in the reference plan.
    fleet_jobs
        The number of jobs :data:`FLEET` is scaled from: more than :data:`BASE_JOBS` puts
        the batch on fewer GPUs.
    """

    description: str
    gang_p: tuple[float, float, float, float] = (0.55, 0.2, 0.15, 0.1)
    l4_share: float = 0.55
    share_p: tuple[float, float] = (0.5, 0.2)
    share_range: tuple[float, float] = (0.2, 0.8)
    small_s: tuple[float, float] = (900.0, 4 * 3600.0)
    large_s: tuple[float, float] = (1800.0, 6 * 3600.0)
    h100_only: float = 0.05
    dependencies: float = 35 / 150
    chains: bool = False
    deadlines: float = 0.15
    slack: tuple[float, float] = (1.2, 1.8)
    fleet_jobs: int = BASE_JOBS


#: The variants of the operator batch, by name.
VARIANTS = {
    "base": Variant("the operator's batch of issue 19"),
    "tight": Variant("40% of the jobs with deadlines 0-10% after their reference end",
                     deadlines=0.4, slack=(1.0, 1.1)),
    "chains": Variant(f"60% of the jobs in pipelines of about {PIPELINE_JOBS} jobs: long "
                      "dependency chains", dependencies=0.6, chains=True),
    "sharing": Variant("space sharing: 85% single-GPU jobs, 90% of them using 0.1-0.5 of a "
                       "GPU's compute, 80% small enough for an L4, on the fleet of 450 jobs",
                       gang_p=(0.85, 0.1, 0.05, 0.0), l4_share=0.8, share_p=(0.9, 0.5),
                       share_range=(0.1, 0.5), fleet_jobs=3 * BASE_JOBS),
}


def library_name(jobs: int, seed: int, variant: str = "base",
                 objective: str = "makespan") -> str:
    """The instance's name and file stem, e.g. ``operator-tight-150-s1-weighted``."""
    kind = "" if variant == "base" else f"-{variant}"
    suffix = OBJECTIVE_SUFFIX.get(objective, "" if objective == "makespan" else objective)
    return f"operator{kind}-{jobs}-s{seed}" + (f"-{suffix}" if suffix else "")


def command(jobs: int, seed: int, variant: str = "base", objective: str = "makespan") -> str:
    """The ``gpuplan generate`` command that writes this batch."""
    flags = "" if variant == "base" else f" --variant {variant}"
    flags += "" if objective == "makespan" else f" --objective {objective}"
    return f"gpuplan generate --library operator{flags} --jobs {jobs} --seed {seed}"


def _rounded(values: np.ndarray, step: float, up: bool = False) -> list[float]:
    """Values as multiples of ``step`` (rounded up when ``up``), at least one step."""
    steps = np.ceil(values / step) if up else np.round(values / step)
    return [float(s) * step for s in np.maximum(steps, 1.0)]


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float], size: int) -> Any:
    """Log-uniform draws over ``bounds``."""
    return np.exp(rng.uniform(math.log(bounds[0]), math.log(bounds[1]), size))


def operator_document(jobs: int = BASE_JOBS, seed: int = 0, variant: str = "base",
                      objective: str = "makespan") -> dict[str, Any]:
    """An operator-like batch as an instance document (the module's distributions).

    Parameters
    ----------
    jobs
        Number of jobs.
    seed
        Seed of ``numpy.random.default_rng``: the same arguments give the same document.
    variant
        A key of :data:`VARIANTS`.
    objective
        One of :data:`OBJECTIVES`; the jobs are the same whatever the objective.

    Raises
    ------
    ValueError
        For an unknown variant or objective, or fewer than one job.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"the batch has no data for objective {objective!r}; choose from "
                         f"{', '.join(OBJECTIVES)}")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    shape = VARIANTS[variant]
    rng = np.random.default_rng(seed)
    scale = jobs / shape.fleet_jobs
    nodes = [{"id": f"{gpu_type.lower()}-{i:03d}", "gpus": {gpu_type: per_node}}
             for gpu_type, _, _, count, per_node in FLEET
             for i in range(max(1, round(count * scale)))]
    # Every draw for all jobs at once, in a fixed order, so that a seed is one batch.
    gang = rng.choice(GANGS, size=jobs, p=shape.gang_p)
    small = gang <= 2
    fits_l4 = small & (rng.random(jobs) < shape.l4_share)
    memory = np.where(fits_l4, rng.integers(8, 25, jobs), rng.integers(25, 76, jobs))
    shared = rng.random(jobs) < np.select([gang == 1, gang == 2], shape.share_p, 0.0)
    compute = np.where(shared, np.round(rng.uniform(*shape.share_range, jobs) * 20) / 20, 1.0)
    a100 = np.where(small, _log_uniform(rng, shape.small_s, jobs),
                    _log_uniform(rng, shape.large_s, jobs))
    h100 = a100 * rng.uniform(*H100_FACTOR, jobs)
    l4 = a100 * rng.uniform(*L4_FACTOR, jobs)
    h100_only = rng.random(jobs) < shape.h100_only
    weight = rng.choice(WEIGHTS[0], size=jobs, p=WEIGHTS[1])
    late = rng.random(jobs) < LATE_SHARE
    release = np.where(late, rng.uniform(0, ARRIVAL_WINDOW_S, jobs), 0.0)
    predecessors = _dependencies(rng, jobs, shape)
    documents: list[dict[str, Any]] = []
    times = zip(_rounded(a100, MINUTE_S), _rounded(h100, MINUTE_S), _rounded(l4, MINUTE_S),
                strict=True)
    for j, (on_a100, on_h100, on_l4) in enumerate(times):
        duration = {"A100-80GB": on_a100, "H100": on_h100}
        if fits_l4[j]:
            duration["L4"] = on_l4
        job: dict[str, Any] = {
            "id": f"job{j:04d}", "gpus": int(gang[j]),
            "demand": {"memory_gib": int(memory[j]), "compute": float(compute[j])},
            "duration_s": duration, "weight": int(weight[j]),
        }
        if late[j]:
            job["release_s"] = float(round(release[j] / ROUND_S) * ROUND_S)
        if predecessors[j]:
            job["depends_on"] = [f"job{p:04d}" for p in predecessors[j]]
        if h100_only[j]:
            job["allowed_types"] = ["H100"]
        documents.append(job)
    name = library_name(jobs, seed, variant, objective)
    document: dict[str, Any] = {
        "name": name,
        "description": f"{command(jobs, seed, variant, objective)}: operator batch "
                       f"({shape.description}); see docs/library.md",
        # Jobs using a share of a GPU's compute share GPUs (the sharing variant's point);
        # every other batch holds whole GPUs.
        "gpu_types": [{"id": gpu_type, "capacity": {"memory_gib": memory_gib, "compute": 1.0},
                       "cost_per_hour": price, "sharing": bool((compute < 1).any())}
                      for gpu_type, memory_gib, price, _, _ in FLEET],
        "nodes": nodes, "jobs": documents, "objective": "makespan",
    }
    _add_deadlines(rng, document, shape)
    document["objective"] = objective
    return document


def _dependencies(rng: np.random.Generator, jobs: int, shape: Variant) -> list[list[int]]:
    """Each job's predecessors, all earlier jobs (so the graph is acyclic)."""
    dependent = np.zeros(jobs, dtype=bool)
    count = min(jobs - 1, round(shape.dependencies * jobs))
    dependent[1 + rng.choice(jobs - 1, size=count, replace=False)] = True
    pipeline = rng.integers(max(1, jobs // PIPELINE_JOBS), size=jobs)
    back = rng.integers(1, DEPENDENCY_WINDOW + 1, size=(jobs, 2))
    second = rng.random(jobs) < 0.2
    last: dict[int, int] = {}  # the latest job of each pipeline
    predecessors: list[list[int]] = []
    for j in range(jobs):
        before: list[int] = []
        if dependent[j] and shape.chains:
            # The pipeline's previous job; the first job of a pipeline has none (waiting
            # for another pipeline's would join two chains into one).
            before = [last[int(pipeline[j])]] if int(pipeline[j]) in last else []
        elif dependent[j]:
            before = sorted({max(0, j - int(b)) for b in back[j, : 1 + int(second[j])]})
        last[int(pipeline[j])] = j
        predecessors.append(before)
    return predecessors


def _add_deadlines(rng: np.random.Generator, document: dict[str, Any], shape: Variant) -> None:
    """Give jobs deadlines and due dates over their ends in a reference plan (in place).

    The reference plan is list scheduling's for the makespan of the batch without
    deadlines: a deadline at or after the job's end in it keeps that plan feasible. Then,
    so that ``greedy`` meets them all under every time-based objective, a deadline it
    misses grows by :data:`LOOSEN` until it meets it (:func:`_loosen`).
    """
    jobs = document["jobs"]
    end = _ends(document)
    deadline = rng.random(len(jobs)) < shape.deadlines
    slack = rng.uniform(*shape.slack, len(jobs))
    due = rng.random(len(jobs)) < DUE_SHARE
    factor = rng.uniform(*DUE_FACTOR, len(jobs))
    deadlines = _rounded(end * slack, ROUND_S, up=True)
    dues = _rounded(end * factor, ROUND_S)
    for j, job in enumerate(jobs):
        if deadline[j]:
            job["deadline_s"] = deadlines[j]
        if due[j]:
            job["due_s"] = dues[j]
    _loosen(document)


def _instance(document: dict[str, Any]) -> Instance:
    """The document as gpuplan reads it."""
    source = str(document["name"])
    return instance_from_data(document, source)


def _ends(document: dict[str, Any]) -> FloatArray:
    """Each job's end in list scheduling's plan of the document for the makespan."""
    reference = list_schedule(_instance(document))
    end = np.zeros(len(document["jobs"]))
    np.maximum.at(end, reference.job, reference.end)
    return end


def _loosen(document: dict[str, Any]) -> None:
    """Grow the deadlines list scheduling misses until it meets all (in place).

    List scheduling orders ready jobs by deadline first, so deadlines change its plan
    and it can miss one that the reference plan meets. Each round plans the batch for
    every time-based objective and multiplies each missed deadline by :data:`LOOSEN`
    (rounded up to 5 minutes). Deadlines only grow, and one at the end of the reference
    plan's horizon times the jobs is met by any list schedule, so the rounds end.
    """
    jobs = document["jobs"]
    instance = _instance(document)
    kinds = [k for k in ObjectiveKind if k in TIME_OBJECTIVES]
    while True:
        missed: set[int] = set()
        for kind in kinds:
            result = list_schedule(instance.with_objective(kind))
            # A job left out for a late predecessor is not late itself.
            missed |= {j for j in result.unplaced if np.isfinite(instance.deadline[j])
                       and not any(p in result.unplaced for p in instance.predecessors[j])}
        if not missed:
            return
        for j in sorted(missed):
            jobs[j]["deadline_s"] = _rounded(np.array([jobs[j]["deadline_s"] * LOOSEN]),
                                             ROUND_S, up=True)[0]
        instance = _instance(document)


#: The ``racks`` batch: jobs per node of the fleet, nodes per rack, GPUs (H100) per node,
#: and each node's CPUs (cores, as cpu_milli) and host memory (MiB).
RACK_JOBS_PER_NODE, RACK_NODES, RACK_GPUS = 12.5, 4, 8
RACK_CPU_MILLI, RACK_MEMORY_MIB = 96_000, 1_048_576
#: Gang sizes of the ``racks`` batch and their probabilities; gangs of 16 and 32 span
#: 2 and 4 whole nodes and must stay within one rack.
RACK_GANGS = ((1, 2, 4, 8, 16, 32), (0.45, 0.2, 0.15, 0.1, 0.06, 0.04))
#: Cores and host memory (GiB) per GPU a job asks for, with probabilities: on average
#: 16.6 cores a GPU where a node has 12, so its 96 cores run out before its 8 GPUs do.
RACK_CORES = ((8, 12, 16, 24, 32), (0.2, 0.25, 0.25, 0.2, 0.1))
RACK_MEMORY_GIB = ((32, 64, 128, 192), (0.3, 0.3, 0.25, 0.15))
#: Run time on an H100, log-uniform, seconds (whole minutes).
RACK_RUN_S = (600.0, 4 * 3600.0)


def racks_document(jobs: int = 200, seed: int = 0,
                   objective: str = "makespan") -> dict[str, Any]:
    """A nightly batch on a fleet in racks, where node CPUs and memory bind.

    The fleet: ``jobs / 12.5`` nodes (at least 4) of 8 H100s, 96 cores and 1 TiB each, in
    racks of 4 nodes. The jobs: gangs of 1-32 GPUs (:data:`RACK_GANGS`; those of 16 and 32
    spread over whole nodes and stay within one rack), each drawing per GPU on its node the
    cores and host memory of :data:`RACK_CORES` and :data:`RACK_MEMORY_GIB` (capped at a
    node's), run times log-uniform over :data:`RACK_RUN_S`, all released at 0. GPUs are
    held whole. Every draw comes from ``numpy.random.default_rng(seed)`` in a fixed order.

    Parameters
    ----------
    jobs
        Number of jobs.
    seed
        The seed: the same arguments give the same document.
    objective
        A time-based objective, or max-weight.

    Raises
    ------
    ValueError
        For an objective the batch has no data for, or fewer than one job.
    """
    usable = [k.value for k in ObjectiveKind
              if k in TIME_OBJECTIVES or k is ObjectiveKind.MAX_WEIGHT]
    if objective not in usable:
        raise ValueError(f"the batch has no data for objective {objective!r}; choose from "
                         f"{', '.join(usable)}")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    rng = np.random.default_rng(seed)
    n_nodes = max(RACK_NODES, round(jobs / RACK_JOBS_PER_NODE))
    nodes = [{"id": f"h{n:03d}", "gpus": {"H100": RACK_GPUS},
              "resources": {"cpu_milli": RACK_CPU_MILLI, "memory_mib": RACK_MEMORY_MIB},
              "topology": {"rack": f"r{n // RACK_NODES:02d}"}} for n in range(n_nodes)]
    # The last rack may be short: gangs bound to a rack fit the full ones.
    gang = rng.choice(RACK_GANGS[0], size=jobs, p=RACK_GANGS[1])
    cores = rng.choice(RACK_CORES[0], size=jobs, p=RACK_CORES[1])
    memory = rng.choice(RACK_MEMORY_GIB[0], size=jobs, p=RACK_MEMORY_GIB[1])
    run = _rounded(_log_uniform(rng, RACK_RUN_S, jobs), MINUTE_S)
    weight = rng.choice(WEIGHTS[0], size=jobs, p=WEIGHTS[1])
    documents: list[dict[str, Any]] = []
    for j in range(jobs):
        per_node = int(min(gang[j], RACK_GPUS))
        job: dict[str, Any] = {
            "id": f"job{j:04d}", "gpus": int(gang[j]), "duration_s": run[j],
            "node_demand": {
                "cpu_milli": min(RACK_CPU_MILLI, int(cores[j]) * per_node * 1000),
                "memory_mib": min(RACK_MEMORY_MIB, int(memory[j]) * per_node * 1024)},
            "weight": int(weight[j]),
        }
        if gang[j] > RACK_GPUS:
            job["gpus_per_node"] = RACK_GPUS
            job["topology"] = {"required": "rack"}
        documents.append(job)
    return {
        "name": f"racks-{jobs}-s{seed}" + (f"-{OBJECTIVE_SUFFIX.get(objective, objective)}"
                                           if objective != "makespan" else ""),
        "description": f"gpuplan generate --library racks --jobs {jobs} --seed {seed}"
                       + ("" if objective == "makespan" else f" --objective {objective}")
                       + f": {n_nodes} nodes of 8 H100, 96 cores and 1 TiB in racks of "
                       f"{RACK_NODES}; node CPUs and memory bind; see docs/library.md",
        "topology": {"levels": ["rack"]},
        "gpu_types": [{"id": "H100", "capacity": {"memory_gib": 80}, "cost_per_hour": 6.98}],
        "nodes": nodes, "jobs": documents, "objective": objective,
    }

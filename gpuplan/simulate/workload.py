"""How workloads reach the simulator: Gavel traces and generated Gavel workloads on a cluster.

A cluster is given as Gavel gives it, GPUs per worker type in the order
``v100:p100:k80`` (:func:`parse_cluster`), with ``gpus_per_node`` GPUs per server (Gavel's
``--num_gpus_per_server``; here a gang stays on one server, so multi-GPU jobs need
servers as large as their gangs). Jobs come from a Gavel trace file
(:func:`gavel_trace_instance`, built from :func:`gavel_trace_document`) or from Gavel's
job generator (:func:`gavel_workload_instance`, :func:`gpuplan.readers.generate.gavel_jobs`).
Either way a job's run time on a type is its total steps over Gavel's measured throughput
there, it is released at its arrival time, and the instance's objective is weighted
completion time, the simulator's measure. Any gpuplan instance file is a workload too
(its ``release_s`` are arrival times). :func:`run_document` gives the document of the
instance a run simulates, for ``gpuplan simulate --write-instance``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuplan.core.errors import InputError, setting
from gpuplan.core.files import read_text
from gpuplan.core.instance import MAX_GPUS, Instance
from gpuplan.readers.gavel import TraceJob, read_throughputs, read_trace
from gpuplan.readers.generate import (
    GPUS_PER_NODE,
    Throughputs,
    cluster_document,
    gavel_document,
    measured_fleet,
)
from gpuplan.readers.instance_file import instance_from_data

#: The worker types of a Gavel cluster string, in its order (``-c 36:36:36``).
CLUSTER_TYPES = ("v100", "p100", "k80")
_COUNT = re.compile(r"[0-9]{1,9}")


def parse_cluster(text: str, source: str = setting("cluster")) -> dict[str, int]:
    """GPUs per worker type from Gavel's ``v100:p100:k80`` count string.

    Parameters
    ----------
    text
        Three non-negative integers separated by colons, e.g. ``36:36:36`` or ``0:0:8``.
    source
        Named in the error, the flag or file the string came from.

    Returns
    -------
    dict
        ``{"v100": n, "p100": n, "k80": n}`` in that order, zero counts included.

    Raises
    ------
    InputError
        Naming ``source`` and what is wrong: not three counts, a count that is not a
        non-negative integer, too many GPUs, or no GPU at all.
    """
    form = f"expected Gavel's v100:p100:k80 GPU counts such as 36:36:36, got {text!r}"
    parts = text.split(":")
    if len(parts) != len(CLUSTER_TYPES):
        raise InputError(source, "", f"{form}: {len(parts)} count(s), not "
                         f"{len(CLUSTER_TYPES)}")
    for gpu_type, part in zip(CLUSTER_TYPES, parts, strict=True):
        if not _COUNT.fullmatch(part):
            raise InputError(source, "", f"{form}: the {gpu_type} count {part!r} is not a "
                             "non-negative integer")
    cluster = {t: int(part) for t, part in zip(CLUSTER_TYPES, parts, strict=True)}
    total = sum(cluster.values())
    if total == 0:
        raise InputError(source, "", f"{form}: a cluster needs at least one GPU")
    if total > MAX_GPUS:
        raise InputError(source, "", f"{form}: {total} GPUs; gpuplan simulates at most "
                         f"{MAX_GPUS}")
    return cluster


def check_trace(trace: list[TraceJob], path: Path, throughputs: Throughputs,
                fleet: Mapping[str, int], gpus_per_node: int,
                throughputs_path: Path | None = None) -> None:
    """Refuse a trace job the cluster cannot time or hold, naming its line and field.

    Parameters
    ----------
    trace
        From :func:`~gpuplan.readers.gavel.read_trace` of ``path``.
    path
        The trace file.
    throughputs
        Gavel's measured throughputs.
    fleet
        GPUs per worker type of the cluster, types without GPUs left out.
    gpus_per_node
        GPUs per server.
    throughputs_path
        The throughput file, blamed (with the trace line that needs it) for a job type or
        scale factor it has no throughput of; None: the trace is blamed.

    Raises
    ------
    InputError
        Naming the file, ``line N`` and the field: an unknown job type, a scale factor or
        total steps below 1, a scale factor with no throughput on any type of the
        cluster or larger than every server that has one, a priority weight that is not a
        positive number, or an arrival time that is negative or not finite.
    """
    known = {job_type for table in throughputs.values() for job_type, _ in table}
    # read_trace skips blank lines: the k-th job is on the k-th line with text.
    lines = [n for n, line in enumerate(read_text(path).splitlines(), start=1) if line.strip()]
    for job, number in zip(trace, lines, strict=True):
        key = (job.job_type, job.scale_factor)
        timed = [t for t in fleet if throughputs[t].get(key, 0.0) > 0]
        problem = None
        if job.job_type not in known:
            problem = (f"job_type: {job.job_type!r} is not a job type of the throughput file"
                       f"{'' if throughputs_path is None else f' {throughputs_path}'} (e.g. "
                       f"{min(known)!r})")
        elif job.total_steps < 1:
            problem = f"total_steps: {job.total_steps} is not a positive number of steps"
        elif job.scale_factor < 1:
            problem = f"scale_factor: {job.scale_factor} is not a positive number of GPUs"
        elif not timed:
            problem = (f"scale_factor: {job.job_type!r} has no throughput at scale factor "
                       f"{job.scale_factor} on any GPU type of the cluster "
                       f"({', '.join(fleet)})")
        elif all(min(fleet[t], gpus_per_node) < job.scale_factor for t in timed):
            problem = (f"scale_factor: {job.scale_factor} GPUs on one server, but the "
                       f"servers of {', '.join(timed)} hold at most "
                       f"{max(min(fleet[t], gpus_per_node) for t in timed)} "
                       "(a gang stays on one server; raise --gpus-per-node)")
        elif not (math.isfinite(job.priority_weight) and job.priority_weight > 0):
            problem = f"priority_weight: {job.priority_weight} is not a positive number"
        elif not (math.isfinite(job.arrival_time) and job.arrival_time >= 0):
            problem = (f"arrival_time: {job.arrival_time} is not a finite number of seconds "
                       "from 0")
        if problem is None:
            continue
        # A job type the file times at other scale factors, or on other types: the file
        # lacks the entry the line needs.
        lacking = job.job_type in known and not timed
        if lacking and throughputs_path is not None and job.total_steps >= 1 and (
                job.scale_factor >= 1):
            raise InputError(str(throughputs_path), "", f"has no throughput of "
                             f"{job.job_type!r} at scale factor {job.scale_factor} on any GPU "
                             f"type of the cluster ({', '.join(fleet)}), which {path}: line "
                             f"{number} runs")
        raise InputError(str(path), f"line {number}", problem)


def gavel_trace_document(trace: Path, throughputs: Path, cluster: Mapping[str, int], *,
                         gpus_per_node: int = GPUS_PER_NODE) -> dict[str, Any]:
    """The instance document of a Gavel trace file on a cluster.

    Parameters
    ----------
    trace
        A Gavel job trace, 10-column (``traces/physical_cluster/*.trace``) or 7-column;
        its stem (dots as underscores) names the instance.
    throughputs
        Gavel's ``simulation_throughputs.json``.
    cluster
        GPUs per worker type, from :func:`parse_cluster`.
    gpus_per_node
        GPUs per server; a gang stays on one.

    Raises
    ------
    InputError
        Naming the trace file, line and field of a job that cannot be read, timed or held
        (:func:`check_trace`), or the throughput file when it cannot be read or does not
        measure a type of the cluster.
    """
    measured = read_throughputs(throughputs)
    fleet = measured_fleet(cluster, measured, str(throughputs))
    jobs = read_trace(trace)
    check_trace(jobs, trace, measured, fleet, gpus_per_node, throughputs)
    return cluster_document(jobs, measured, fleet, gpus_per_node,
                            trace.stem.replace(".", "_"), str(throughputs))


def gavel_trace_instance(trace: Path, throughputs: Path, cluster: Mapping[str, int], *,
                         gpus_per_node: int = GPUS_PER_NODE) -> Instance:
    """The workload of a Gavel trace file on a cluster: :func:`gavel_trace_document` built.

    Raises
    ------
    InputError
        As :func:`gavel_trace_document`.
    """
    document = gavel_trace_document(trace, throughputs, cluster, gpus_per_node=gpus_per_node)
    return instance_from_data(document, str(trace))


def run_document(document: Mapping[str, Any], run: Instance) -> dict[str, Any]:
    """The instance document a run simulates: ``document`` with the times and objective of ``run``.

    :meth:`~gpuplan.core.instance.Instance.online` turns deadlines into due dates and a static
    objective into weighted completion time; this writes its outcome back into the
    document the instance was built from, so that ``gpuplan check`` on the document and
    the run log checks what was simulated. Everything else of the document is kept as
    it was given (the instance name is filled in when the document has none).

    Parameters
    ----------
    document
        A valid instance document (parsed JSON or YAML data).
    run
        ``Instance.online()`` of the instance built from ``document``: job ``j`` is the
        document's ``jobs[j]``.

    Returns
    -------
    dict
        A new document; ``document`` is not changed.
    """
    jobs = []
    for job, deadline, due in zip(document["jobs"], run.deadline, run.due, strict=True):
        times = {key: float(value) for key, value in (("deadline_s", deadline), ("due_s", due))
                 if math.isfinite(value)}
        kept = {key: value for key, value in job.items() if key not in ("deadline_s", "due_s")}
        jobs.append({**kept, **times})
    return {**document, "name": document.get("name") or run.name, "jobs": jobs,
            "objective": run.objective.value}


def gavel_workload_instance(throughputs: Path, cluster: Mapping[str, int], jobs: int,
                            rate_per_hour: float, *, gpus_per_node: int = GPUS_PER_NODE,
                            seed: int = 0, multi_gpu: bool = False,
                            priorities: bool = False) -> Instance:
    """A workload drawn by Gavel's job generator on a cluster.

    Parameters
    ----------
    throughputs
        Gavel's ``simulation_throughputs.json``.
    cluster
        GPUs per worker type, from :func:`parse_cluster`.
    jobs, rate_per_hour
        How many jobs, and their arrivals per hour (0: all at time 0).
    gpus_per_node
        GPUs per server; a gang stays on one.
    seed, multi_gpu, priorities
        As for :func:`gpuplan.readers.generate.gavel_jobs`: the seed, Gavel's multi-GPU scale
        factors and its priorities.

    Raises
    ------
    InputError
        Naming the throughput file when it cannot be read or lacks a type, or
        ``--gpus-per-node`` when multi-GPU gangs fit no server.
    """
    document = gavel_document(read_throughputs(throughputs), cluster, jobs, rate_per_hour,
                              gpus_per_node=gpus_per_node, seed=seed, multi_gpu=multi_gpu,
                              priorities=priorities, source=str(throughputs))
    source = f"generated Gavel workload (seed {seed})"
    return instance_from_data(document, source)

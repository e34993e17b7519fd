"""Keep topology domains whole: re-seat single-GPU jobs in the fullest domains, times kept.

A plan's single-GPU jobs may be spread over more racks than their number needs: list
scheduling appends jobs to GPUs in priority order, not in time order, and a rack whose GPUs
are promised to later jobs looks full to an earlier one. :func:`compact` takes every
single-GPU job run whole that draws nothing on its node, and gives it, in order of start,
a GPU of its type (on its partition's nodes) that is free over its whole interval (no
other job on it, no outage),
in the domain (widest level first) and then the node with the most GPUs busy at its
start, lowest index last. Nothing else moves, no time changes, so the objective stays;
the plan holds its single-GPU jobs in as few domains as interval colouring in start order
allows (on a fleet where only such jobs run: the fewest there can be, the most of them
running at once over a domain's GPUs). Where some job finds no GPU free over its interval
(held by a job that does not move), the plan is returned as it was.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.result import Result


def compact(instance: Instance, plan: Result) -> Result:
    """The plan with its movable single-GPU jobs re-seated in the fullest domains.

    A plan of an instance without topology levels, or with nothing to move, is returned as
    it is (see the module).
    """
    if not instance.levels or not plan.status.has_plan or plan.n_segments == 0:
        return plan
    job = plan.job
    count = np.bincount(job, minlength=instance.n_jobs)
    sizes = np.array([g.size for g in plan.gpus])
    movable = ((sizes == 1) & (count[job] == 1)
               & ~instance.node_demand[job].any(axis=1) if instance.node_demand.size
               else (sizes == 1) & (count[job] == 1))
    if not movable.any():
        return plan
    # What holds GPUs and does not move: the other jobs, and the outages (failed GPUs, a
    # re-plan's running work).
    fixed = np.flatnonzero(~movable)
    held = [(plan.gpus[k], float(plan.start[k]), float(plan.end[k])) for k in fixed.tolist()]
    held += [(o.gpus, o.start_s, o.end_s) for o in instance.outages]
    fixed_gpu = np.concatenate([g for g, _, _ in held] + [np.zeros(0, dtype=np.int64)])
    fixed_start = np.concatenate([np.full(g.size, a) for g, a, _ in held] + [np.zeros(0)])
    fixed_end = np.concatenate([np.full(g.size, b) for g, _, b in held] + [np.zeros(0)])
    gpus = list(plan.gpus)
    # Movable jobs in start order; each GPU free again from the end of its last one.
    free_from = np.full(instance.n_gpus, -np.inf)
    started = np.full(instance.n_gpus, np.inf)
    domain = instance.node_domain[instance.gpu_node]
    for k in np.flatnonzero(movable)[np.argsort(plan.start[movable], kind="stable")].tolist():
        start, end = float(plan.start[k]), float(plan.end[k])
        t = int(plan.gpu_type[k])
        clash = (fixed_start < end) & (fixed_end > start)
        blocked = np.zeros(instance.n_gpus, dtype=bool)
        blocked[fixed_gpu[clash]] = True
        free = (instance.gpu_type == t) & ~blocked & (free_from <= start)
        allowed = instance.allowed_nodes(int(job[k]))
        if allowed is not None:
            free &= allowed[instance.gpu_node]
        options = np.flatnonzero(free)
        if not options.size:
            return plan
        busy = _busy_at(start, free_from, started, fixed_gpu, fixed_start, fixed_end,
                        instance.n_gpus)
        keys: list[IntArray] = [options, -_per(busy, instance.gpu_node, options)]
        for level in range(len(instance.levels) - 1, -1, -1):
            keys.append(-_per(busy, domain[:, level], options))
        g = int(options[np.lexsort(tuple(keys))[0]])
        gpus[k] = np.array([g], dtype=np.int64)
        free_from[g] = end
        started[g] = start
    node = np.array([instance.gpu_node[g[0]] if g.size else n
                     for g, n in zip(gpus, plan.nodes(instance), strict=True)],
                    dtype=np.int64)
    return dataclasses.replace(plan, gpus=tuple(gpus), node=node)


def _busy_at(moment: float, free_from: np.ndarray, started: np.ndarray, fixed_gpu: IntArray,
             fixed_start: np.ndarray, fixed_end: np.ndarray, n_gpus: int) -> np.ndarray:
    """``(G,)`` whether each GPU is held at ``moment``, by a re-seated job or a fixed one."""
    busy: np.ndarray = (started <= moment) & (free_from > moment)
    held = (fixed_start <= moment) & (fixed_end > moment)
    busy[fixed_gpu[held]] = True
    return busy[:n_gpus]


def _per(busy: np.ndarray, group: IntArray, options: IntArray) -> IntArray:
    """Busy GPUs of each option's group (-1: a group of its own, counting only itself)."""
    labelled = group >= 0
    total = np.bincount(group[labelled], weights=busy[labelled],
                        minlength=int(group.max(initial=0)) + 1)
    mine = group[options]
    counts: IntArray = np.where(mine >= 0, total[np.maximum(mine, 0)], busy[options]).astype(
        np.int64)
    return counts

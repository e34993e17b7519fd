"""Heterogeneity-aware allocation policies (Gavel-style) over time shares ``X[job, type]``.

``X[j, t]`` is the share of time job ``j`` holds its gang of GPUs of type ``t``. A job runs on
one type at a time (``sum_t X[j, t] <= 1``) and a type has ``gpus_t`` GPUs
(``sum_j gang_j * X[j, t] <= gpus_t``: the gang scale factor). With ``rate[j, t]`` the share
of the job done per second on type ``t`` (one over its duration there), the job's
throughput is ``sum_t rate[j, t] * X[j, t]``. Every policy is a linear program over these
columns, or a sequence of them, except quadratic load balancing, a convex QP:

- ``max-min-fairness``: maximise the smallest throughput normalised by the job's
  equal-share throughput and divided by its weight (Gavel's LAS policy);
- ``finish-time-fairness``: minimise the largest ratio of a job's finish time under ``X``
  to its finish time under the equal share, both counted from time 0 with the job's
  release (Themis' rho), by bisection over LPs;
- ``makespan``: maximise the smallest throughput, so every job ends by ``1 / z``;
- ``max-throughput``: maximise the weighted sum of normalised throughputs;
- ``min-cost``: minimise the spend rate subject to a floor per job: the rate that meets
  its deadline from its release, and at least ``floor`` times its equal-share throughput;
- ``quadratic``: static balancing of work, ``y[j, t]`` being the share of job ``j``'s work
  done on type ``t``; minimise the sum over GPUs of squared loads (GPU-seconds per GPU),
  which on ``gpus_t`` identical GPUs is ``sum_t L_t**2 / gpus_t``.

The *equal share* gives every job the same slice of the whole fleet:
``X_eq[j, t] = gpus_t / G * min(1, G / sum_j gang_j)`` with ``G`` GPUs in all. It is
feasible, so the max-min value is at least 1 whenever each job runs on every type.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from gpuplan.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.models.linear import LinearProgram, RowBuilder


class Policy(StrEnum):
    """An allocation policy: what the time shares optimise."""

    MAX_MIN_FAIRNESS = "max-min-fairness"
    FINISH_TIME_FAIRNESS = "finish-time-fairness"
    MAKESPAN = "makespan"
    MAX_THROUGHPUT = "max-throughput"
    MIN_COST = "min-cost"
    QUADRATIC = "quadratic"


@dataclass(frozen=True)
class ThroughputData:
    """What the policies need of an instance, by index.

    Attributes
    ----------
    rate
        ``(J, T)`` share of the job done per second on its gang of type ``t``; 0 where
        the job cannot run there.
    gang
        ``(J,)`` GPUs the job holds at once (its scale factor).
    gpus
        ``(T,)`` GPUs of each type.
    weight
        ``(J,)`` priority weight.
    release
        ``(J,)`` release time in seconds.
    deadline
        ``(J,)`` deadline in seconds; ``inf`` where none.
    price_per_hour
        ``(T,)`` price of one GPU-hour; 0 where unknown.
    """

    rate: FloatArray
    gang: IntArray
    gpus: FloatArray
    weight: FloatArray
    release: FloatArray
    deadline: FloatArray
    price_per_hour: FloatArray

    @classmethod
    def from_instance(cls, instance: Instance) -> ThroughputData:
        """Rates from the instance's durations, one over the duration on each type."""
        rate = np.where(instance.eligible, 1.0 / np.where(instance.eligible,
                                                          instance.duration, 1.0), 0.0)
        return cls(rate=rate, gang=instance.gang.copy(),
                   gpus=instance.node_gpus.sum(axis=0).astype(float),
                   weight=instance.weight.copy(), release=instance.release.copy(),
                   deadline=instance.deadline.copy(),
                   price_per_hour=np.nan_to_num(instance.price_per_hour))

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return int(self.rate.shape[0])

    @property
    def eligible(self) -> BoolArray:
        """``(J, T)`` where each job can run."""
        allowed: BoolArray = self.rate > 0
        return allowed

    def equal_share(self) -> FloatArray:
        """``(J, T)`` the equal-share allocation ``X_eq`` (see the module docstring)."""
        total = float(self.gpus.sum())
        demand = float(self.gang.sum())
        scale = min(1.0, total / demand) if demand > 0 else 1.0
        share: FloatArray = np.broadcast_to(self.gpus / max(total, 1.0) * scale,
                                            self.rate.shape).copy()
        return share

    def equal_share_rate(self) -> FloatArray:
        """``(J,)`` each job's throughput under the equal share."""
        rate: FloatArray = (self.rate * self.equal_share()).sum(axis=1)
        return rate


@dataclass(frozen=True)
class AllocationProgram:
    """A policy's program and where its share columns are.

    Attributes
    ----------
    program
        The LP (or QP) in canonical form.
    job, gpu_type
        Job and type of each share column; the share columns come first.
    shape
        ``(J, T)``.
    """

    program: LinearProgram
    job: IntArray
    gpu_type: IntArray
    shape: tuple[int, int]

    def shares(self, values: FloatArray) -> FloatArray:
        """``(J, T)`` the share matrix of a solution's column values."""
        share = np.zeros(self.shape)
        share[self.job, self.gpu_type] = np.clip(values[:self.job.size], 0.0, None)
        return share


def _share_rows(data: ThroughputData, rows: RowBuilder) -> tuple[IntArray, IntArray]:
    """Columns of the eligible (job, type) pairs, with the time and capacity rows."""
    job, kind = np.nonzero(data.eligible)
    n = job.size
    rows.add(job, np.arange(n), np.ones(n), np.zeros(data.n_jobs), np.ones(data.n_jobs),
             [f"time[{j}]" for j in range(data.n_jobs)])
    n_types = data.gpus.size
    rows.add(kind, np.arange(n), data.gang[job].astype(float), np.zeros(n_types), data.gpus,
             [f"capacity[{t}]" for t in range(n_types)])
    return job, kind


def _floor_rows(data: ThroughputData, rows: RowBuilder, job: IntArray, kind: IntArray,
                scale: FloatArray, z: int | None, floor: FloatArray) -> None:
    """Rows ``sum_t scale_j * rate[j, t] * X[j, t] - (z if given) >= floor_j``."""
    n = job.size
    cols, values, where = np.arange(n), scale[job] * data.rate[job, kind], job
    if z is not None:
        cols = np.r_[cols, np.full(data.n_jobs, z)]
        values = np.r_[values, -np.ones(data.n_jobs)]
        where = np.r_[where, np.arange(data.n_jobs)]
    rows.add(where, cols, values, floor, np.full(data.n_jobs, np.inf),
             [f"throughput[{j}]" for j in range(data.n_jobs)])


def _program(data: ThroughputData, rows: RowBuilder, job: IntArray, kind: IntArray,
             sense: str, cost: FloatArray, extra: int,
             hessian: FloatArray | None = None) -> AllocationProgram:
    n = job.size
    upper = np.r_[np.ones(n), np.full(extra, np.inf)]
    program = rows.program(
        sense="max" if sense == "max" else "min", cost=cost,
        col_lower=np.r_[np.zeros(n), np.full(extra, -np.inf)], col_upper=upper,
        integer=np.zeros(n + extra, dtype=bool),
        col_names=(*(f"X[{j},{t}]" for j, t in zip(job, kind, strict=True)),
                   *(f"aux[{k}]" for k in range(extra))),
        hessian=hessian)
    return AllocationProgram(program, job, kind, (data.n_jobs, int(data.gpus.size)))


def rate_program(data: ThroughputData, scale: FloatArray, floor: FloatArray | None = None,
                 maximise_min: bool = True) -> AllocationProgram:
    """Maximise ``z`` with ``scale_j * throughput_j >= z`` (or ``>= floor_j`` when given).

    The shared form of max-min fairness (``scale = 1 / (weight * equal-share rate)``),
    makespan (``scale = 1``) and the finish-time fairness feasibility steps.
    """
    rows = RowBuilder()
    job, kind = _share_rows(data, rows)
    n = job.size
    if maximise_min:
        _floor_rows(data, rows, job, kind, scale, n, np.zeros(data.n_jobs))
        cost = np.r_[np.zeros(n), 1.0]
        return _program(data, rows, job, kind, "max", cost, 1)
    assert floor is not None
    _floor_rows(data, rows, job, kind, scale, None, floor)
    return _program(data, rows, job, kind, "max", np.zeros(n), 0)


def max_min_fairness_program(data: ThroughputData) -> AllocationProgram:
    """Gavel's max-min fairness: the smallest ``throughput / (weight * equal-share)``."""
    return rate_program(data, 1.0 / (data.weight * data.equal_share_rate()))


def makespan_program(data: ThroughputData) -> AllocationProgram:
    """Every job's throughput at least ``z``: all end by ``1 / z`` (in seconds)."""
    return rate_program(data, np.ones(data.n_jobs))


def finish_time_program(data: ThroughputData, rho: float) -> AllocationProgram:
    """Feasibility of finish-time ratio ``rho``: ``throughput_j >= 1 / (rho*T_eq_j - r_j)``.

    ``T_eq_j = r_j + 1 / equal-share rate`` is the job's finish time under the equal share.
    """
    finish_equal = data.release + 1.0 / data.equal_share_rate()
    floor = 1.0 / np.maximum(rho * finish_equal - data.release, 1e-12)
    return rate_program(data, np.ones(data.n_jobs), floor=floor, maximise_min=False)


def max_throughput_program(data: ThroughputData) -> AllocationProgram:
    """The weighted sum of throughputs normalised by the equal share."""
    rows = RowBuilder()
    job, kind = _share_rows(data, rows)
    scale = data.weight / data.equal_share_rate()
    return _program(data, rows, job, kind, "max", scale[job] * data.rate[job, kind], 0)


def min_cost_program(data: ThroughputData, floor: float) -> AllocationProgram:
    """The cheapest spend rate (per second) that gives every job its floor throughput.

    A job's floor is the larger of ``floor`` times its equal-share throughput and, when it
    has a deadline, the constant rate that ends it by then from its release.
    """
    rows = RowBuilder()
    job, kind = _share_rows(data, rows)
    window = data.deadline - data.release
    needed = np.where(np.isfinite(window), 1.0 / np.maximum(window, 1e-12), 0.0)
    floors = np.maximum(floor * data.equal_share_rate(), needed)
    _floor_rows(data, rows, job, kind, np.ones(data.n_jobs), None, floors)
    spend = data.price_per_hour[kind] * data.gang[job] / 3600.0
    return _program(data, rows, job, kind, "min", spend, 0)


def quadratic_program(data: ThroughputData) -> AllocationProgram:
    """Static balancing: ``y[j, t]`` of each job's work per type, min ``sum_t L_t^2 / gpus_t``.

    ``L_t = sum_j gang_j * y[j, t] / rate[j, t]`` are the type's GPU-seconds. Columns: the
    shares ``y``, then one load column per type, linked by equality rows; the objective is
    ``1/2 * sum_t (2 / gpus_t) * L_t^2`` (HiGHS' ``1/2 x'Qx`` with a diagonal ``Q``). The
    load columns count in units of :func:`load_unit` (GPU-seconds of the fastest plan per
    GPU): squared GPU-seconds reach 1e13 and stall HiGHS' QP solver; the objective in
    squared GPU-seconds is the program's times the unit squared.
    """
    rows = RowBuilder()
    job, kind = np.nonzero(data.eligible)
    n, n_types = job.size, data.gpus.size
    rows.add(job, np.arange(n), np.ones(n), np.ones(data.n_jobs), np.ones(data.n_jobs),
             [f"assign[{j}]" for j in range(data.n_jobs)])
    work = data.gang[job] / data.rate[job, kind] / load_unit(data)
    rows.add(np.r_[kind, np.arange(n_types)], np.r_[np.arange(n), n + np.arange(n_types)],
             np.r_[work, -np.ones(n_types)], np.zeros(n_types), np.zeros(n_types),
             [f"load[{t}]" for t in range(n_types)])
    hessian = np.r_[np.zeros(n), 2.0 / np.maximum(data.gpus, 1.0)]
    return _program(data, rows, job, kind, "min", np.zeros(n + n_types), n_types, hessian)


def load_unit(data: ThroughputData) -> float:
    """GPU-seconds per GPU if every job ran on its fastest type: the QP's load unit."""
    fastest = (data.gang / data.rate.max(axis=1, initial=0.0)).sum()
    return max(float(fastest / max(data.gpus.sum(), 1.0)), 1e-12)


def policy_value(data: ThroughputData, policy: Policy, share: FloatArray,
                 floor: float = 1.0) -> float:
    """A policy's objective for any share matrix, as the policy's program measures it.

    Used to score allocations that were not solved on ``data`` as a whole (partitioned
    solves). For ``min-cost`` the spend per hour is returned whether or not the floors
    hold; :func:`floors_met` tells.
    """
    throughput = (data.rate * share).sum(axis=1)
    match policy:
        case Policy.MAX_MIN_FAIRNESS:
            return float((throughput / (data.weight * data.equal_share_rate())).min())
        case Policy.FINISH_TIME_FAIRNESS:
            finish_equal = data.release + 1.0 / data.equal_share_rate()
            finish = data.release + 1.0 / np.maximum(throughput, 1e-300)
            return float((finish / finish_equal).max())
        case Policy.MAKESPAN:
            return float(1.0 / max(float(throughput.min()), 1e-300))
        case Policy.MAX_THROUGHPUT:
            return float((data.weight * throughput / data.equal_share_rate()).sum())
        case Policy.MIN_COST:
            return float((share * data.price_per_hour * data.gang[:, None]).sum())
        case Policy.QUADRATIC:
            work = data.gang[:, None] * share / np.where(data.rate > 0, data.rate, np.inf)
            return float((work.sum(axis=0) ** 2 / np.maximum(data.gpus, 1.0)).sum())
    raise AssertionError(policy)


def restrict(data: ThroughputData, jobs: IntArray, gpus: FloatArray) -> ThroughputData:
    """The sub-problem of some jobs on some GPUs of each type (a POP partition)."""
    return ThroughputData(rate=data.rate[jobs], gang=data.gang[jobs], gpus=gpus,
                          weight=data.weight[jobs], release=data.release[jobs],
                          deadline=data.deadline[jobs], price_per_hour=data.price_per_hour)

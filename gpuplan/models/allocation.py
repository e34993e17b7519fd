"""Heterogeneity-aware allocation policies (Gavel-style) over time shares ``X[job, type]``.

``X[j, t]`` is the share of time job ``j`` holds its gang of GPUs of type ``t``. A job runs on
one type at a time (``sum_t X[j, t] <= 1``) and a type has ``gpus_t`` GPUs
(``sum_j gang_j * X[j, t] <= gpus_t``: the gang scale factor). With ``rate[j, t]`` the share
of the job done per second on type ``t`` (one over its duration there), the job's
throughput is ``sum_t rate[j, t] * X[j, t]``. Every policy is a linear program over these
columns, or a sequence of them, except quadratic load balancing, a convex QP:

- ``max-min-fairness``: maximise the smallest throughput normalised by the job's fair-share
  throughput and divided by its weight (Gavel's LAS policy, ``MaxMinFairnessPolicyWithPerf``);
- ``finish-time-fairness``: minimise the largest ratio ``rho_j`` of a job's finish time
  under ``X`` to its finish time on its fair share, both counted from the job's own arrival
  (Themis' rho, Gavel's ``FinishTimeFairnessPolicyWithPerf``); one LP when no job has waited
  yet, else a fixed point over a few LPs;
- ``makespan``: maximise the smallest throughput over the work left, so every job ends by
  ``1 / z`` (solved in units of a typical run time, :func:`time_unit`); with heads and
  tails (releases, dependencies), the least makespan with each job's run inside its
  window (:func:`window_program`);
- ``max-throughput``: maximise the weighted sum of normalised throughputs;
- ``min-cost``: minimise the spend rate subject to a floor per job: the rate that meets
  its deadline from its release, and at least ``floor`` times its equal-share throughput;
- ``quadratic``: static balancing of work, ``y[j, t]`` being the share of job ``j``'s work
  done on type ``t``; minimise the sum over GPUs of squared loads (GPU-seconds per GPU),
  which on ``gpus_t`` identical GPUs is ``sum_t L_t**2 / gpus_t``.

**Fair shares** (:class:`FairShare`). With ``G`` GPUs in all and ``J`` jobs, the two
fairness policies measure a job against one of two shares:

- ``gpus`` (Gavel's, the default): each job is owed an equal share of the *GPUs*, so a gang
  of ``k`` GPUs is owed ``1/k`` of the time a single-GPU job is. Max-min fairness divides by
  ``sum_t rate[j, t] * gpus_t / G / gang_j`` (Gavel's proportional share times the scale
  factor), finish-time fairness by the isolated share
  ``X_iso[j, t] = gpus_t / (J * gang_j)``, scaled down where a row exceeds 1 (Gavel's
  ``IsolatedPolicy``). With a 1-GPU and a 4-GPU job on 4 GPUs the 1-GPU job gets all of the
  time.
- ``time``: each job is owed the same share of *time*, the equal share
  ``X_eq[j, t] = gpus_t / G * min(1, G / sum_j gang_j)``, whatever its gang; the same two
  jobs then get 80% of the time each.

The equal share also normalises ``max-throughput`` and ``min-cost``'s floors.

**Residual state.** An online scheduler re-solves a policy for the jobs present as jobs
come and go: :class:`ThroughputData` then carries each job's ``remaining`` share of work,
the seconds ``elapsed`` since its arrival, and optionally the seconds its done work would
have taken on its fair share (``isolated_elapsed``; Gavel accumulates these over its
allocation changes). Finish-time fairness then compares ``elapsed + remaining / throughput``
to ``isolated_elapsed + remaining / fair-share rate``; makespan ends the work left.
:meth:`ThroughputData.for_jobs` builds this state for some jobs of an instance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder


class Policy(StrEnum):
    """An allocation policy: what the time shares optimise."""

    MAX_MIN_FAIRNESS = "max-min-fairness"
    FINISH_TIME_FAIRNESS = "finish-time-fairness"
    MAKESPAN = "makespan"
    MAX_THROUGHPUT = "max-throughput"
    MIN_COST = "min-cost"
    QUADRATIC = "quadratic"


class FairShare(StrEnum):
    """What the fairness policies owe each job (see the module docstring)."""

    GPUS = "gpus"
    TIME = "time"


#: Policies that may pair jobs on GPUs (space sharing): the max-min ones, whose master LP
#: :func:`rate_program` takes pair columns.
SPACE_SHARING = (Policy.MAX_MIN_FAIRNESS, Policy.MAKESPAN)

#: Policies measured against a fair share (:class:`FairShare`).
FAIRNESS = (Policy.MAX_MIN_FAIRNESS, Policy.FINISH_TIME_FAIRNESS)


@dataclass(frozen=True)
class Colocation:
    """Space sharing (Gavel's): which jobs may share a GPU, and how fast each then runs.

    Attributes
    ----------
    job_class
        ``(J,)`` each job's class (index into ``speed``); -1 where the job never shares.
    speed
        ``(C, C, T)``: a class-``a`` job sharing a GPU of type ``t`` with a class-``b`` job
        runs at ``speed[a, b, t]`` times its speed alone; 0 where the pair may not share.
    """

    job_class: IntArray
    speed: FloatArray


@dataclass(frozen=True)
class ThroughputData:
    """What the policies need of an instance, by index.

    Attributes
    ----------
    rate
        ``(J, T)`` share of the job's whole work done per second on its gang of type
        ``t``; 0 where the job cannot run there.
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
    colocation
        Pair speeds for space sharing, or None when no job may share a GPU.
    remaining
        ``(J,)`` share of each job's work left, in ``(0, 1]``; None: all of it (a batch
        not started yet).
    elapsed
        ``(J,)`` seconds since each job's arrival; None: 0 for every job.
    isolated_elapsed
        ``(J,)`` seconds the work done so far would have taken on the job's fair share
        (finish-time fairness); None: ``(1 - remaining)`` over the fair-share rate now.
    whole
        ``(J,)`` jobs that run in one piece (not preemptible), whose work cannot be split
        over types: the makespan policy gives them no time on a type where they alone
        would outlast its makespan (:func:`whole_job_rates`); None: every job may move.
    head, tail
        ``(J,)`` seconds from now before which each job cannot start, and seconds its
        successors need after it ends, at least (:func:`chain_windows`): the makespan
        policy fits each job's run between them (:func:`window_program`); None: 0.
    """

    rate: FloatArray
    gang: IntArray
    gpus: FloatArray
    weight: FloatArray
    release: FloatArray
    deadline: FloatArray
    price_per_hour: FloatArray
    colocation: Colocation | None = None
    remaining: FloatArray | None = None
    elapsed: FloatArray | None = None
    isolated_elapsed: FloatArray | None = None
    whole: BoolArray | None = None
    head: FloatArray | None = None
    tail: FloatArray | None = None

    @classmethod
    def from_instance(cls, instance: Instance) -> ThroughputData:
        """Rates from the instance's durations, one over the duration on each type.

        The instance's colocation speeds come along for its preemptible jobs.
        """
        return cls.for_jobs(instance, np.arange(instance.n_jobs))

    @classmethod
    def for_jobs(cls, instance: Instance, jobs: IntArray, remaining: FloatArray | None = None,
                 now: float | None = None, isolated_elapsed: FloatArray | None = None,
                 gpus: FloatArray | None = None) -> ThroughputData:
        """The policies' view of some jobs of an instance, part way through (an online state).

        Costs ``O(len(jobs) * T)``: only the rows of ``jobs`` are read.

        Parameters
        ----------
        instance
            The instance the jobs come from (durations, gangs, weights, releases).
        jobs
            ``(K,)`` indices of the jobs present, in the order the rows should have.
        remaining
            ``(K,)`` share of each job's work left, in ``(0, 1]``; None: all of it.
        now
            The time in seconds; each job's ``elapsed`` is ``now`` less its release. None:
            the static case (no job has waited).
        isolated_elapsed
            ``(K,)`` seconds each job's done work would have taken on its fair share, for
            finish-time fairness as Gavel counts it (it adds, at each allocation change,
            the steps done since the last one over the fair-share throughput of then);
            None: ``(1 - remaining)`` over the fair-share rate of this state.
        gpus
            ``(T,)`` GPUs of each type the jobs may use; None: the whole fleet.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        eligible = instance.eligible[jobs]
        rate = np.where(eligible, 1.0 / np.where(eligible, instance.duration[jobs], 1.0), 0.0)
        colocation = None
        if instance.class_ids:
            # Only preemptible jobs share: pairs change from round to round.
            colocation = Colocation(np.where(instance.preemptible[jobs],
                                             instance.job_class[jobs], -1),
                                    instance.colocation_speed)
        release = instance.release[jobs].astype(float)
        return cls(rate=rate, gang=instance.gang[jobs],
                   gpus=(instance.node_gpus.sum(axis=0).astype(float) if gpus is None
                         else np.asarray(gpus, dtype=float)),
                   weight=instance.weight[jobs].astype(float), release=release,
                   deadline=instance.deadline[jobs].astype(float),
                   price_per_hour=np.nan_to_num(instance.price_per_hour),
                   colocation=colocation,
                   remaining=None if remaining is None else np.asarray(remaining, dtype=float),
                   elapsed=None if now is None else np.maximum(now - release, 0.0),
                   isolated_elapsed=(None if isolated_elapsed is None
                                     else np.asarray(isolated_elapsed, dtype=float)))

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return int(self.rate.shape[0])

    @property
    def eligible(self) -> BoolArray:
        """``(J, T)`` where each job can run."""
        allowed: BoolArray = self.rate > 0
        return allowed

    def work_left(self) -> FloatArray:
        """``(J,)`` share of each job's work left (1 in a static batch)."""
        return np.ones(self.n_jobs) if self.remaining is None else self.remaining

    def waited(self) -> FloatArray:
        """``(J,)`` seconds since each job's arrival (0 in a static batch)."""
        return np.zeros(self.n_jobs) if self.elapsed is None else self.elapsed

    def equal_share(self) -> FloatArray:
        """``(J, T)`` the equal share of time ``X_eq`` (see the module docstring)."""
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

    def isolated_share(self) -> FloatArray:
        """``(J, T)`` Gavel's isolated share: ``gpus_t / (J * gang_j)``, rows at most 1."""
        share = self.gpus[None, :] / (max(self.n_jobs, 1) * self.gang[:, None])
        isolated: FloatArray = share / np.maximum(share.sum(axis=1), 1.0)[:, None]
        return isolated

    def fair_share(self, basis: FairShare) -> FloatArray:
        """``(J, T)`` the fair share of finish-time fairness: isolated or equal."""
        return self.isolated_share() if basis is FairShare.GPUS else self.equal_share()

    def fair_share_rate(self, basis: FairShare) -> FloatArray:
        """``(J,)`` each job's throughput on its fair share (finish-time fairness's)."""
        rate: FloatArray = (self.rate * self.fair_share(basis)).sum(axis=1)
        return rate

    def isolated_time(self, basis: FairShare) -> FloatArray:
        """``(J,)`` each job's time from arrival to finish on its fair share.

        ``isolated_elapsed + remaining / fair-share rate``; with the default
        ``isolated_elapsed``, one over the fair-share rate.
        """
        fair = self.fair_share_rate(basis)
        if self.isolated_elapsed is None:
            return 1.0 / fair
        time: FloatArray = self.isolated_elapsed + self.work_left() / fair
        return time


@dataclass(frozen=True)
class AllocationProgram:
    """A policy's program and where its share columns are.

    Attributes
    ----------
    program
        The LP (or QP) in canonical form.
    job, gpu_type
        Job (or job group) and type of each share column; the share columns come first.
    shape
        ``(J, T)``.
    group
        ``(J,)`` each job's group when alike jobs share columns (:func:`job_groups`); None
        when every job has columns of its own.
    """

    program: LinearProgram
    job: IntArray
    gpu_type: IntArray
    shape: tuple[int, int]
    group: IntArray | None = None

    def shares(self, values: FloatArray) -> FloatArray:
        """``(J, T)`` the share matrix of a solution's column values."""
        rows = self.shape[0] if self.group is None else int(self.group.max(initial=-1)) + 1
        share = np.zeros((rows, self.shape[1]))
        share[self.job, self.gpu_type] = np.clip(values[:self.job.size], 0.0, None)
        return share if self.group is None else share[self.group]


def _names(kind: str, count: int) -> LazyNames:
    """Row or column names ``kind[k]``, spelled out only when asked for."""
    return LazyNames(count, lambda k: f"{kind}[{k}]")


def _share_rows(data: ThroughputData, rows: RowBuilder) -> tuple[IntArray, IntArray]:
    """Columns of the eligible (job, type) pairs, with the time and capacity rows."""
    job, kind = np.nonzero(data.eligible)
    n = job.size
    rows.add(job, np.arange(n), np.ones(n), np.zeros(data.n_jobs), np.ones(data.n_jobs),
             _names("time", data.n_jobs))
    n_types = data.gpus.size
    rows.add(kind, np.arange(n), data.gang[job].astype(float), np.zeros(n_types), data.gpus,
             _names("capacity", n_types))
    return job, kind


def _floor_rows(data: ThroughputData, rows: RowBuilder, job: IntArray, kind: IntArray,
                scale: FloatArray, z: int | None, floor: FloatArray) -> None:
    """Rows ``sum_t scale_j * rate[j, t] * X[j, t] - (z if given) >= floor_j``.

    Without ``z``, a row with a positive floor is divided by it, so that its entries are
    of order one whatever the rates' unit (HiGHS' tolerances are absolute); with ``z``,
    the caller scales the rows (``z`` counts alike in all of them).
    """
    n = job.size
    divide = np.where(floor > 0, floor, 1.0) if z is None else np.ones(data.n_jobs)
    floor = floor / divide
    scale = scale / divide
    cols, values, where = np.arange(n), scale[job] * data.rate[job, kind], job
    if z is not None:
        cols = np.r_[cols, np.full(data.n_jobs, z)]
        values = np.r_[values, -np.ones(data.n_jobs)]
        where = np.r_[where, np.arange(data.n_jobs)]
    rows.add(where, cols, values, floor, np.full(data.n_jobs, np.inf),
             _names("throughput", data.n_jobs))


def _program(data: ThroughputData, rows: RowBuilder, job: IntArray, kind: IntArray,
             sense: str, cost: FloatArray, extra: int,
             hessian: FloatArray | None = None) -> AllocationProgram:
    """The policy's program: share columns in [0, 1], then ``extra`` free columns."""
    n = job.size
    upper = np.r_[np.ones(n), np.full(extra, np.inf)]
    names = LazyNames(n + extra, lambda k: f"X[{job[k]},{kind[k]}]" if k < n
                      else f"aux[{k - n}]")
    program = rows.program(
        sense="max" if sense == "max" else "min", cost=cost,
        col_lower=np.r_[np.zeros(n), np.full(extra, -np.inf)], col_upper=upper,
        integer=np.zeros(n + extra, dtype=bool), col_names=names, hessian=hessian)
    return AllocationProgram(program, job, kind, (data.n_jobs, int(data.gpus.size)))


#: Jobs whose max-min rows agree to this relative difference (and whose gangs are equal)
#: share one set of columns (:func:`job_groups`). Instance files give durations to the
#: millisecond, so the rows of alike jobs differ by up to a few 1e-7; at 1e-6 they still
#: group, and the optimum is off by at most as much, as HiGHS' own tolerances allow.
GROUP_TOLERANCE = 1e-6


def job_groups(rows: FloatArray, gang: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Jobs alike in a max-min LP: equal gangs and rows equal to :data:`GROUP_TOLERANCE`.

    In ``max z`` subject to ``rows[j] @ X[j] >= z`` and the time and capacity rows, alike
    jobs are interchangeable, so an optimum gives them one share each (average their
    shares): one set of columns per group, whose capacity entries count the group's
    GPUs, solves it. Gavel's jobs of one (job type, scale factor, weight) are alike under
    Gavel's normalisation, whatever their lengths, so 2,048 jobs make about a hundred
    groups. Rows are compared on a logarithmic grid of :data:`GROUP_TOLERANCE`; two rows a
    grid line apart just make two groups.

    Returns
    -------
    tuple
        ``(J,)`` each job's group, ``(K,)`` one job of each group, ``(K,)`` group sizes.
    """
    positive = rows > 0
    grid = np.round(np.log(np.where(positive, rows, 1.0)) / GROUP_TOLERANCE)
    key = np.where(positive, grid.astype(np.int64), np.iinfo(np.int64).min)
    _, first, group, count = np.unique(np.column_stack([gang, key]), axis=0,
                                       return_index=True, return_inverse=True,
                                       return_counts=True)
    return group.ravel(), first, count


def rate_program(data: ThroughputData, scale: FloatArray, floor: FloatArray | None = None,
                 maximise_min: bool = True, grouped: bool = False) -> AllocationProgram:
    """Maximise ``z`` with ``scale_j * throughput_j - z >= floor_j`` (floor 0 if None).

    The shared form of max-min fairness (``scale = 1 / (weight * fair-share rate)``),
    makespan (``scale = unit / remaining``) and the finish-time fairness steps. Without
    ``maximise_min``, only the rows ``scale_j * throughput_j >= floor_j`` (each divided
    by its floor). With ``grouped``, alike jobs share columns (:func:`job_groups`;
    maximising ``z`` without floors only): the same optimum from a program as large as
    the groups. Space sharing's master is never grouped (its pair columns name jobs).
    """
    if grouped and maximise_min:
        assert floor is None, "grouped rows have no floors"
        weighted = scale[:, None] * data.rate
        group, first, count = job_groups(weighted, data.gang)
        # The largest row of each group (equal to GROUP_TOLERANCE): a relaxation whose
        # optimum, shared out, is optimal to that tolerance.
        top = np.zeros((first.size, weighted.shape[1]))
        np.maximum.at(top, group, weighted)
        classes = dataclasses.replace(restrict(data, first, data.gpus), rate=top,
                                      gang=data.gang[first] * count)
        built = rate_program(classes, np.ones(first.size))
        return dataclasses.replace(built, shape=(data.n_jobs, int(data.gpus.size)),
                                   group=group)
    rows = RowBuilder()
    job, kind = _share_rows(data, rows)
    n = job.size
    if maximise_min:
        _floor_rows(data, rows, job, kind, scale, n,
                    np.zeros(data.n_jobs) if floor is None else floor)
        cost = np.r_[np.zeros(n), 1.0]
        return _program(data, rows, job, kind, "max", cost, 1)
    assert floor is not None
    _floor_rows(data, rows, job, kind, scale, None, floor)
    return _program(data, rows, job, kind, "max", np.zeros(n), 0)


#: Max-min fairness counts a weight below this share of the largest as this share of it.
MIN_RELATIVE_WEIGHT = 1e-9


def fairness_scale(data: ThroughputData,
                   basis: FairShare = FairShare.GPUS) -> tuple[FloatArray, float]:
    """``(J,)`` max-min fairness row scale ``1 / (weight * fair-share rate)``, and its unit.

    The fair-share rate is ``sum_t rate[j, t] * gpus_t / G / gang_j`` for ``gpus``
    (Gavel's), the equal-share rate for ``time``. The weights are taken relative to the
    largest, and at least :data:`MIN_RELATIVE_WEIGHT` of it (a weight of 0 too): HiGHS
    drops matrix entries below 1e-9, and with weights 1 and 10^9 side by side the heavy
    jobs' rows lost every share column, which forced the value to 0. The program's ``z``
    is the policy's value times the unit (the largest weight; 1 when every weight is 0).
    """
    top = float(data.weight.max(initial=0.0))
    unit = top if top > 0 else 1.0
    relative = np.maximum(data.weight / unit if top > 0 else np.ones(data.n_jobs),
                          MIN_RELATIVE_WEIGHT)
    if basis is FairShare.GPUS:
        fair = data.rate @ (data.gpus / max(float(data.gpus.sum()), 1.0)) / data.gang
    else:
        fair = data.equal_share_rate()
    scale: FloatArray = 1.0 / (relative * fair)
    return scale, unit


def max_min_fairness_program(data: ThroughputData,
                             basis: FairShare = FairShare.GPUS) -> AllocationProgram:
    """Gavel's max-min fairness: the smallest ``throughput / (weight * fair share)``.

    Alike jobs share columns (:func:`job_groups`). The program's value is the policy's
    times the unit of :func:`fairness_scale`.
    """
    return rate_program(data, fairness_scale(data, basis)[0], grouped=True)


def makespan_program(data: ThroughputData) -> AllocationProgram:
    """Every job's throughput at least ``z * remaining / u``: all end by ``u / z`` seconds.

    ``u`` is :func:`time_unit`: rates per second are around 1e-6 for day-long jobs, below
    HiGHS' feasibility tolerance (1e-7) in relative terms, which once left the makespan
    above its true optimum (docs/benchmarks.md, "Allocation policies (`--method balance`,
    issue 5)"); in units of ``u`` the rows are of order one.
    """
    return rate_program(data, makespan_scale(data), grouped=True)


def whole_job_rates(data: ThroughputData, makespan: float) -> ThroughputData:
    """``data`` without the types where a job in one piece outlasts its window in ``makespan``.

    A job that is not preemptible runs whole on one type, so in a plan that ends by
    ``makespan`` it uses only types where its work left fits between its head and
    ``makespan`` less its tail (:func:`whole_job_need`): the makespan programs on these
    rates still bound every such plan (one GPU, one job at a time) from below, and are
    tighter than on all rates. Preemptible jobs keep every type.
    """
    outlast = ~(whole_job_need(data) <= makespan * (1 + 1e-9))
    return dataclasses.replace(data, rate=np.where(outlast, 0.0, data.rate))


def whole_job_need(data: ThroughputData) -> FloatArray:
    """``(J, T)`` the makespan each type needs of a whole job: head, run time and tail.

    ``inf`` where the job cannot run, and 0 for jobs that may move (no need of their own).
    """
    run_time = data.work_left()[:, None] / np.where(data.rate > 0, data.rate, np.nan)
    head = np.zeros(data.n_jobs) if data.head is None else data.head
    tail = np.zeros(data.n_jobs) if data.tail is None else data.tail
    need = np.nan_to_num(run_time + (head + tail)[:, None], nan=np.inf)
    whole = np.zeros(data.n_jobs, dtype=bool) if data.whole is None else data.whole
    result: FloatArray = np.where(whole[:, None], need, 0.0)
    return result


def chain_windows(instance: Instance, jobs: IntArray, remaining: FloatArray | None = None,
                  now: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """``(K,)`` heads and tails of some jobs: when each can start, what must follow it.

    A job's head is the seconds from ``now`` to its release or, if later, to the end of
    its predecessors' shortest runs of their work left, chained; its tail the longest
    chain of its successors' shortest runs. Jobs not in ``jobs`` count as done. Both are
    lower bounds in every plan, so windows built on them relax none. Costs
    ``O(J + dependencies)``, with a Python loop over the jobs only when there are
    dependencies.
    """
    n_jobs = instance.n_jobs
    jobs = np.asarray(jobs, dtype=np.int64)
    left = np.zeros(n_jobs)
    left[jobs] = instance.min_duration[jobs] * (1.0 if remaining is None else remaining)
    head = np.zeros(n_jobs)
    head[jobs] = np.maximum(instance.release[jobs] - now, 0.0)
    tail = np.zeros(n_jobs)
    if any(instance.predecessors):
        present = np.zeros(n_jobs, dtype=bool)
        present[jobs] = True
        order = instance.topological_order.tolist()
        for j in order:
            for p in instance.predecessors[j]:
                if present[p]:
                    head[j] = max(head[j], head[p] + left[p])
        for j in reversed(order):
            for q in instance.successors[j]:
                if present[q]:
                    tail[j] = max(tail[j], left[q] + tail[q])
    return head[jobs], tail[jobs]


def has_windows(data: ThroughputData) -> bool:
    """Whether some job has a head or a tail (:func:`chain_windows`)."""
    return any(v is not None and bool((v > 0).any()) for v in (data.head, data.tail))


def window_program(data: ThroughputData) -> AllocationProgram:
    """The least makespan ``C`` with each job's run inside its window: a bound, and shares.

    Columns: the seconds ``w[j, t]`` each job runs on each type, then ``C``, all in units
    of :func:`time_unit`. Rows: each job's work left is done
    (``sum_t rate[j, t] w[j, t] >= remaining_j``), it runs between its head and ``C``
    less its tail (``sum_t w[j, t] <= C - head_j - tail_j``), and each type serves at
    most ``C`` seconds per GPU (``sum_j gang_j w[j, t] <= gpus_t C``). Every plan that
    runs one job per GPU at a time gives a feasible point (its run times and makespan),
    so ``C`` bounds its makespan from below; with no heads or tails it is the makespan
    program's ``1 / z`` (:func:`makespan_program`), and with them it also covers the
    longest chain. :func:`window_shares` reads the shares off a solution.
    """
    unit = time_unit(data)
    rows = RowBuilder()
    job, kind = np.nonzero(data.eligible)
    n, n_types = job.size, int(data.gpus.size)
    left = data.work_left()
    rows.add(job, np.arange(n), data.rate[job, kind] * unit / left[job], np.ones(data.n_jobs),
             np.full(data.n_jobs, np.inf), _names("work", data.n_jobs))
    head = np.zeros(data.n_jobs) if data.head is None else data.head
    tail = np.zeros(data.n_jobs) if data.tail is None else data.tail
    rows.add(np.r_[job, np.arange(data.n_jobs)], np.r_[np.arange(n), np.full(data.n_jobs, n)],
             np.r_[np.ones(n), -np.ones(data.n_jobs)], np.full(data.n_jobs, -np.inf),
             -(head + tail) / unit, _names("window", data.n_jobs))
    rows.add(np.r_[kind, np.arange(n_types)], np.r_[np.arange(n), np.full(n_types, n)],
             np.r_[data.gang[job].astype(float), -data.gpus], np.full(n_types, -np.inf),
             np.zeros(n_types), _names("capacity", n_types))
    names = LazyNames(n + 1, lambda k: f"w[{job[k]},{kind[k]}]" if k < n else "makespan")
    program = rows.program(sense="min", cost=np.r_[np.zeros(n), 1.0],
                           col_lower=np.zeros(n + 1), col_upper=np.full(n + 1, np.inf),
                           integer=np.zeros(n + 1, dtype=bool), col_names=names)
    return AllocationProgram(program, job, kind, (data.n_jobs, n_types))


def window_shares(data: ThroughputData, built: AllocationProgram,
                  values: FloatArray) -> tuple[FloatArray, float]:
    """``(J, T)`` time shares within each job's window, and the makespan in seconds.

    A job's share of a type is its run time there over its window (``C`` less its head
    and tail): the rate at which it keeps to its window. Its throughput over the window
    then ends its work when the window closes.
    """
    unit = time_unit(data)
    makespan = float(values[built.job.size]) * unit
    head = np.zeros(data.n_jobs) if data.head is None else data.head
    tail = np.zeros(data.n_jobs) if data.tail is None else data.tail
    window = np.maximum(makespan - head - tail, 1e-12)
    share = np.minimum(built.shares(values) * unit / window[:, None], 1.0)
    return share, makespan


def time_unit(data: ThroughputData) -> float:
    """Mean over jobs of the shortest time to end the work left (seconds): makespan's unit."""
    fastest = data.work_left() / data.rate.max(axis=1, initial=0.0)
    finite = fastest[np.isfinite(fastest)]
    return float(finite.mean()) if finite.size else 1.0


def makespan_scale(data: ThroughputData) -> FloatArray:
    """``(J,)`` the makespan program's row scale: :func:`time_unit` over the work left."""
    scale: FloatArray = time_unit(data) / data.work_left()
    return scale


def finish_time_ratios(data: ThroughputData, throughput: FloatArray,
                       basis: FairShare = FairShare.GPUS) -> FloatArray:
    """``(J,)`` each job's finish-time ratio ``rho_j`` at these throughputs.

    ``(elapsed + remaining / throughput) / (isolated_elapsed + remaining / fair-share
    rate)``: both finish times counted from the job's own arrival.
    """
    finish = data.waited() + data.work_left() / np.maximum(throughput, 1e-300)
    ratio: FloatArray = finish / data.isolated_time(basis)
    return ratio


def finish_time_program(data: ThroughputData, rho: float,
                        basis: FairShare = FairShare.GPUS) -> AllocationProgram:
    """Feasibility of finish-time ratio ``rho``: ``throughput_j >= R_j / (rho*D_j - e_j)``.

    ``D_j`` is the job's :meth:`~ThroughputData.isolated_time`, ``R_j`` its work left and
    ``e_j`` its elapsed time; a job with ``rho * D_j <= e_j`` cannot meet ``rho``.
    """
    return rate_program(data, np.ones(data.n_jobs), floor=finish_time_need(data, rho, basis),
                        maximise_min=False)


def finish_time_need(data: ThroughputData, rho: float,
                     basis: FairShare = FairShare.GPUS) -> FloatArray:
    """``(J,)`` the throughput each job needs for a finish-time ratio ``rho``.

    ``R_j / (rho * D_j - e_j)`` (as in :func:`finish_time_program`); unbounded, in
    effect, where ``rho * D_j <= e_j``.
    """
    slack = rho * data.isolated_time(basis) - data.waited()
    need: FloatArray = data.work_left() / np.maximum(slack, 1e-12)
    return need


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
             _names("assign", data.n_jobs))
    work = data.gang[job] / data.rate[job, kind] / load_unit(data)
    rows.add(np.r_[kind, np.arange(n_types)], np.r_[np.arange(n), n + np.arange(n_types)],
             np.r_[work, -np.ones(n_types)], np.zeros(n_types), np.zeros(n_types),
             _names("load", n_types))
    hessian = np.r_[np.zeros(n), 2.0 / np.maximum(data.gpus, 1.0)]
    return _program(data, rows, job, kind, "min", np.zeros(n + n_types), n_types, hessian)


def load_unit(data: ThroughputData) -> float:
    """GPU-seconds per GPU if every job ran on its fastest type: the QP's load unit."""
    fastest = (data.gang / data.rate.max(axis=1, initial=0.0)).sum()
    return max(float(fastest / max(data.gpus.sum(), 1.0)), 1e-12)


def throughput_value(data: ThroughputData, policy: Policy, throughput: FloatArray,
                     basis: FairShare = FairShare.GPUS) -> float:
    """The value of a max-min, finish-time or makespan policy at these throughputs.

    The smallest weighted fair-share ratio, the largest finish-time ratio, or the latest
    end of the work left in seconds.
    """
    match policy:
        case Policy.MAX_MIN_FAIRNESS:
            scale, unit = fairness_scale(data, basis)
            return float((throughput * scale).min(initial=np.inf)) / unit
        case Policy.FINISH_TIME_FAIRNESS:
            return float(finish_time_ratios(data, throughput, basis).max(initial=0.0))
        case Policy.MAKESPAN:
            return float((data.work_left() / np.maximum(throughput, 1e-300)).max(initial=0.0))
    raise AssertionError(policy)


def policy_value(data: ThroughputData, policy: Policy, share: FloatArray,
                 floor: float = 1.0, basis: FairShare = FairShare.GPUS) -> float:
    """A policy's objective for any share matrix, as the policy's program measures it.

    Used to score allocations that were not solved on ``data`` as a whole (partitioned
    solves). For ``min-cost`` the spend per hour is returned whether or not the floors
    hold (a partitioned solve meets them, since each part does).
    """
    throughput = (data.rate * share).sum(axis=1)
    match policy:
        case Policy.MAX_MIN_FAIRNESS | Policy.FINISH_TIME_FAIRNESS | Policy.MAKESPAN:
            return throughput_value(data, policy, throughput, basis)
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
    colocation = None if data.colocation is None else Colocation(
        data.colocation.job_class[jobs], data.colocation.speed)

    def rows(values: FloatArray | None) -> FloatArray | None:
        return None if values is None else values[jobs]

    return ThroughputData(rate=data.rate[jobs], gang=data.gang[jobs], gpus=gpus,
                          weight=data.weight[jobs], release=data.release[jobs],
                          deadline=data.deadline[jobs], price_per_hour=data.price_per_hour,
                          colocation=colocation, remaining=rows(data.remaining),
                          whole=None if data.whole is None else data.whole[jobs],
                          head=rows(data.head), tail=rows(data.tail),
                          elapsed=rows(data.elapsed),
                          isolated_elapsed=rows(data.isolated_elapsed))


@dataclass(frozen=True)
class PairColumns:
    """Space-sharing columns of :func:`rate_program`: jobs ``a``, ``b`` sharing a gang.

    ``P[a, b, t]`` is the share of time the two jobs hold one gang of ``gang_a = gang_b``
    GPUs of type ``t`` together, each at its :class:`Colocation` speed. The column counts
    in both jobs' time rows, once in the type's capacity row, and in both throughput rows.

    Attributes
    ----------
    a, b, gpu_type
        ``(P,)`` the two jobs (``a < b``) and the type of each column.
    """

    a: IntArray
    b: IntArray
    gpu_type: IntArray

    @property
    def size(self) -> int:
        """Number of pair columns."""
        return int(self.a.size)

    def rates(self, data: ThroughputData) -> tuple[FloatArray, FloatArray]:
        """``(P,)`` each job's share done per second in each pair column."""
        assert data.colocation is not None
        cls, speed = data.colocation.job_class, data.colocation.speed
        t = self.gpu_type
        rate_a = data.rate[self.a, t] * speed[cls[self.a], cls[self.b], t]
        rate_b = data.rate[self.b, t] * speed[cls[self.b], cls[self.a], t]
        return rate_a, rate_b

    def matrix(self, data: ThroughputData, scale: FloatArray) -> tuple[IntArray, IntArray,
                                                                       FloatArray]:
        """The columns' entries in :func:`rate_program`'s rows: CSC start, row, value.

        Rows are laid out as :func:`rate_program` adds them: ``J`` time rows, ``T``
        capacity rows, then ``J`` throughput rows.
        """
        n_jobs, n_types = data.n_jobs, int(data.gpus.size)
        rate_a, rate_b = self.rates(data)
        row = np.stack([self.a, self.b, n_jobs + self.gpu_type, n_jobs + n_types + self.a,
                        n_jobs + n_types + self.b], axis=1)
        value = np.stack([np.ones(self.size), np.ones(self.size),
                          data.gang[self.a].astype(float), scale[self.a] * rate_a,
                          scale[self.b] * rate_b], axis=1)
        start = np.arange(0, 5 * self.size + 1, 5, dtype=np.int64)
        return start, row.ravel(), value.ravel()


def price_pairs(data: ThroughputData, scale: FloatArray, row_dual: FloatArray,
                per_kind: int = 1, tolerance: float = 1e-6,
                budget: Budget | None = None) -> PairColumns | None:
    """Pair columns of positive reduced cost in :func:`rate_program`'s max-min master.

    Pricing never lists all pairs. A pair column's reduced cost is ``0 - a' y`` (HiGHS'
    convention, ``c - A'y``, positive improves a maximisation), which splits into one
    score per job given the partner's class ``q``, plus the capacity row's price:

        score[j | q, t] = -y_time[j] - y_tput[j] * scale_j * rate[j, t] * speed[c_j, q, t]
        reduced cost = score[a | c_b, t] + score[b | c_a, t] - gang * y_cap[t]

    so for every (class, class, type, gang) the best pair is each class's best-scoring
    job: ``O(J * C * T)`` work per round instead of ``O(J^2 * T)``, and only the class
    pairs the instance lists are visited. ``per_kind`` best pairs of each kind are
    returned (the i-th best job of one class with the i-th of the other).

    Returns None if the ``budget`` is spent before every kind is priced (the columns
    found so far would not prove anything); without a budget, pricing always ends.
    """
    assert data.colocation is not None
    n_jobs, n_types = data.n_jobs, int(data.gpus.size)
    cls, speed = data.colocation.job_class, data.colocation.speed
    y_time, y_cap = row_dual[:n_jobs], row_dual[n_jobs:n_jobs + n_types]
    y_tput = row_dual[n_jobs + n_types:n_jobs + n_types + n_jobs]
    found: list[tuple[IntArray, IntArray, int]] = []
    sharing = np.flatnonzero(cls >= 0)
    for t in range(n_types):
        both_ways = (speed[:, :, t] > 0) & (speed[:, :, t].T > 0)
        for gang in np.unique(data.gang[sharing]):
            jobs = sharing[(data.gang[sharing] == gang) & (data.rate[sharing, t] > 0)]
            if jobs.size < 2:
                continue
            classes, where = np.unique(cls[jobs], return_inverse=True)
            # Class pairs (by position in ``classes``, p <= q) that may share type t.
            kinds_p, kinds_q = np.nonzero(np.triu(both_ways[np.ix_(classes, classes)]))
            if kinds_p.size == 0:
                continue
            # (jobs, classes): each job's score next to a partner of each class present.
            speeds = speed[cls[jobs][:, None], classes[None, :], t]
            score = (-y_time[jobs])[:, None] - (y_tput[jobs] * scale[jobs] * data.rate[jobs, t]
                                                )[:, None] * speeds
            score[speeds <= 0] = -np.inf
            order = np.argsort(where, kind="stable")
            bounds = np.r_[0, np.cumsum(np.bincount(where, minlength=classes.size))]
            rows = [order[bounds[c]:bounds[c + 1]] for c in range(classes.size)]
            for p, q in zip(kinds_p.tolist(), kinds_q.tolist(), strict=True):
                if budget is not None and budget.spent():
                    return None
                best_p = _best(score[rows[p], q], per_kind * (1 + (p == q)))
                best_q = best_p if p == q else _best(score[rows[q], p], per_kind)
                if p == q:
                    # Two distinct jobs of one class: the 1st with the 2nd, and so on.
                    left, right = best_p[0::2], best_p[1::2]
                else:
                    left, right = best_p, best_q
                k = min(left.size, right.size)
                left, right = left[:k], right[:k]
                value = (score[rows[p][left], q] + score[rows[q][right], p]
                         - gang * y_cap[t])
                good = value > tolerance
                if good.any():
                    found.append((jobs[rows[p][left[good]]], jobs[rows[q][right[good]]], t))
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return PairColumns(empty, empty, empty)
    a = np.concatenate([f[0] for f in found])
    b = np.concatenate([f[1] for f in found])
    kind = np.concatenate([np.full(f[0].size, f[2]) for f in found])
    return PairColumns(np.minimum(a, b), np.maximum(a, b), kind)


def _best(score: FloatArray, count: int) -> IntArray:
    """Positions of the ``count`` highest finite scores, best first."""
    count = min(count, score.size)
    top = np.argpartition(-score, count - 1)[:count] if count < score.size else np.arange(
        score.size)
    top = top[np.argsort(-score[top], kind="stable")]
    finite: IntArray = top[np.isfinite(score[top])]
    return finite

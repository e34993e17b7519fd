"""Which arrivals to admit: a MILP over the future timeline of elastic jobs with deadlines.

At a decision, some jobs are admitted already (they were promised their deadline) and some
have just arrived. The future, from now to the last deadline, is cut into periods at the
deadlines (at most ``periods`` of them; a deadline between two cuts counts from the cut
before it, so a plan of the model never runs past a deadline). In each period ``p`` each
job ``j`` holds ``g[j, p]`` GPUs on average and does ``it[j, p]`` iterations, at most what
its speed curve gives: the upper concave hull of its levels ``(count, iterations/s)`` and
``(0, 0)``, which running on neighbouring levels for parts of the period attains. Then

- in every period the jobs hold at most the cluster's GPUs on average;
- an arrival ``j`` admitted (``y[j] = 1``) does its remaining iterations by its deadline;
- an admitted job does too, or its shortfall ``s[j]`` costs, from 1% of its work on,
  more than all the arrivals together are worth (a promise is kept before a new job is
  taken in; a shortfall is there only because deadlines between cuts count from the cut
  before them, which may leave an admitted job fewer periods than its plan uses);
- maximise the arrivals admitted, less the shortfalls, less a small price per GPU-second
  held (of two plans admitting as many, the one holding fewer GPUs leaves more for the
  jobs still to come).

The model is a relaxation of what the cluster can do (average GPUs rather than a count
at each instant), so the policy checks its choice against a plan slot by slot before it
admits anyone (:mod:`gpuplan.simulate.elastic.policies.optimizer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, IntArray
from gpuplan.models.linear import LazyNames, LinearProgram

#: Objective price of holding every GPU over the whole horizon (well below one job).
GPU_TIME_PRICE = 0.01


@dataclass(frozen=True)
class AdmissionJob:
    """One job as the admission model sees it.

    Attributes
    ----------
    left_s
        Seconds from now to its deadline.
    need
        Iterations it has left.
    counts, rates
        Its levels, ascending, with their iterations per second (no 0 level).
    overhead_s
        Seconds it makes no progress at the start (a restart), taken from the first period.
    admitted
        Whether it was admitted already (else it is an arrival, ``y`` decides).
    planned
        For an admitted job, a plan meeting its deadline, step by step from now: each
        step's begin and end seconds, the GPU-seconds it holds and the iterations it does
        in it (the warm start); None without one.
    """

    left_s: float
    need: float
    counts: IntArray
    rates: FloatArray
    overhead_s: float
    admitted: bool
    planned: tuple[FloatArray, FloatArray, FloatArray, FloatArray] | None = None


@dataclass(frozen=True)
class AdmissionModel:
    """The program and how to read its solution.

    Attributes
    ----------
    program
        The MILP.
    admit_col
        Per job, the column of its ``y`` (-1 for an admitted job).
    start
        Column values admitting no arrival, the admitted jobs on their plans (None when
        some admitted job has none): a solution to start from.
    """

    program: LinearProgram
    admit_col: IntArray
    start: FloatArray | None

    def admitted(self, values: FloatArray) -> BoolArray:
        """Per job, whether the solution admits it (admitted jobs always)."""
        chosen: BoolArray = np.ones(self.admit_col.size, dtype=bool)
        arrivals = self.admit_col >= 0
        chosen[arrivals] = values[self.admit_col[arrivals]] > 0.5
        return chosen


def hull(counts: IntArray, rates: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Slopes and intercepts of the upper concave hull of ``(0, 0)`` and the levels."""
    xs = np.concatenate(([0.0], counts.astype(float)))
    ys = np.concatenate(([0.0], rates))
    keep: list[int] = [0]
    for i in range(1, xs.size):
        while len(keep) >= 2:
            a, b = keep[-2], keep[-1]
            # b lies on or under the chord from a to i: not on the hull.
            if (ys[b] - ys[a]) * (xs[i] - xs[a]) <= (ys[i] - ys[a]) * (xs[b] - xs[a]):
                keep.pop()
            else:
                break
        if ys[i] > ys[keep[-1]]:
            keep.append(i)
    points = np.array(keep)
    slope = np.diff(ys[points]) / np.diff(xs[points])
    intercept = ys[points[:-1]] - slope * xs[points[:-1]]
    return slope, intercept


def admission_model(jobs: list[AdmissionJob], gpus: int, periods: int) -> AdmissionModel:
    """The admission MILP for ``jobs`` on ``gpus`` GPUs over at most ``periods`` periods."""
    lefts = np.array([job.left_s for job in jobs])
    cuts = np.unique(lefts[lefts > 0])
    if cuts.size > periods:
        # The earliest deadline stays a cut, so that every job has a period.
        cuts = np.unique(np.concatenate((cuts[:1], np.quantile(
            cuts, np.linspace(0, 1, periods)[1:], method="inverted_cdf"))))
    starts = np.concatenate(([0.0], cuts[:-1]))
    lengths = cuts - starts
    horizon = float(cuts[-1]) if cuts.size else 1.0
    cost: list[float] = []
    upper: list[float] = []
    integer: list[bool] = []
    rows: list[tuple[list[int], list[float], float, float]] = []
    capacity: list[tuple[list[int], list[float]]] = [([], []) for _ in range(cuts.size)]
    admit_col = np.full(len(jobs), -1, dtype=np.int64)
    start: list[float] | None = []
    # 1% of an admitted job short costs more than admitting every arrival gains.
    promise = 100.0 * (1.0 + sum(not job.admitted for job in jobs))

    def column(price: float, top: float, whole: bool = False) -> int:
        cost.append(price)
        upper.append(top)
        integer.append(whole)
        return len(cost) - 1

    for j, job in enumerate(jobs):
        slope, intercept = hull(job.counts, job.rates)
        reach = int(np.searchsorted(cuts, job.left_s, side="right"))
        done_cols: list[int] = []
        held, did = _per_period(job, starts, cuts)
        for p in range(reach):
            length = max(float(lengths[p]) - (job.overhead_s if p == 0 else 0.0), 0.0)
            g = column(-GPU_TIME_PRICE * float(lengths[p]) / (gpus * horizon),
                       float(job.counts[-1]))
            it = column(0.0, job.need)
            if start is not None:
                start += ([0.0, 0.0] if held is None or did is None else
                          [float(held[p] / lengths[p]), float(did[p])])
            capacity[p][0].append(g)
            capacity[p][1].append(1.0)
            for a, b in zip(slope.tolist(), intercept.tolist(), strict=True):
                rows.append(([it, g], [1.0, -a * length], -np.inf, b * length))
            done_cols.append(it)
        ones = [1.0] * len(done_cols)
        if job.admitted:
            short = column(-promise / job.need, job.need)
            rows.append(([*done_cols, short], [*ones, 1.0], job.need, np.inf))
            if held is None or did is None:
                start = None
            elif start is not None:
                start.append(max(job.need - float(did[:reach].sum()), 0.0))
        else:
            y = column(1.0, 1.0, whole=True)
            if start is not None:
                start.append(0.0)
            admit_col[j] = y
            rows.append(([*done_cols, y], [*ones, -job.need], 0.0, np.inf))
    for cols, values in capacity:
        if cols:
            rows.append((cols, values, -np.inf, float(gpus)))
    sizes = np.array([len(r[0]) for r in rows], dtype=np.int64)
    program = LinearProgram(
        sense="max", cost=np.array(cost), col_lower=np.zeros(len(cost)),
        col_upper=np.array(upper), integer=np.array(integer, dtype=bool),
        row_lower=np.array([r[2] for r in rows]), row_upper=np.array([r[3] for r in rows]),
        row_start=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        col_index=np.array([c for r in rows for c in r[0]], dtype=np.int64),
        value=np.array([v for r in rows for v in r[1]], dtype=float),
        col_names=LazyNames(len(cost), lambda k: f"x{k}"),
        row_names=LazyNames(len(rows), lambda k: f"r{k}"))
    return AdmissionModel(program, admit_col, None if start is None else np.array(start))


def _per_period(job: AdmissionJob, starts: FloatArray, cuts: FloatArray
                ) -> tuple[FloatArray | None, FloatArray | None]:
    """The GPU-seconds and iterations of the job's plan in each period (None: no plan).

    A step's share of each is that of its time in the period.
    """
    if job.planned is None:
        return None, None
    begin, end, held, did = job.planned
    span = np.maximum(end - begin, 1e-12)
    overlap = np.clip(np.minimum(end[:, None], cuts[None, :])
                      - np.maximum(begin[:, None], starts[None, :]), 0.0, None) / span[:, None]
    per_held: FloatArray = held @ overlap
    per_did: FloatArray = did @ overlap
    return per_held, per_did

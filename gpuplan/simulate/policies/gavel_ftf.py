"""``gavel-ftf`` and ``gavel-ftf-agnostic``: Gavel's finish-time fairness in rounds.

Gavel's ``finish_time_fairness_perf`` and ``finish_time_fairness``: the allocation that
minimises the largest ratio ``rho_j`` of a job's finish time under the allocation to its
finish time on its isolated share (``gpus_t / (J * gang_j)`` of every type, at most all of
the time), both counted from the job's arrival::

    rho_j = (since_arrival_j + remaining_j / throughput_j)
            / (isolated_elapsed_j + remaining_j / isolated_throughput_j)

``isolated_elapsed_j`` is policy state, as in Gavel: at every recompute each job present
at the last one adds the work it did since over its isolated throughput of then
(``_cumulative_isolated_time``); the jobs of an emptied cluster are forgotten. Like
Gavel's, the policy ignores priority weights. The agnostic form counts every type at the
job's throughput on the fleet's fastest type (Gavel's V100) and visits the types in a
shuffled order each round. Its program then fixes only each job's total share, not how
the total is split over the types: gpuplan's LPs return a vertex (each job's share on one
type, and most jobs none), Gavel's ECOS an interior point that gives a job the same
share of every type of its 36:36:36 cluster. The agnostic form therefore spreads each
job's total over its types in proportion to their GPUs (:func:`spread_over_types`), an
optimum of the same program. The rounds follow Gavel's mechanism
(:mod:`gpuplan.simulate.gavel_rounds`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.models.allocation import FairShare, Policy, ThroughputData
from gpuplan.simulate.gavel_rounds import LpRates, LpRounds
from gpuplan.simulate.policy import PolicyContext, View


class GavelFtf(LpRounds):
    """Gavel's heterogeneity-aware finish-time fairness."""

    name: ClassVar[str] = "gavel-ftf"
    description: ClassVar[str] = (
        "Gavel's finish-time fairness (finish_time_fairness_perf): min max rho, times from "
        "each job's arrival, isolated time kept over recomputes; Gavel's round mechanism, "
        "types fastest first")
    aware: ClassVar[bool] = True
    policy: ClassVar[Policy] = Policy.FINISH_TIME_FAIRNESS

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        n = context.instance.n_jobs
        #: Seconds each job's done work would have taken on its isolated shares.
        self.isolated: FloatArray = np.zeros(n)
        # Work left and isolated throughput of the jobs of the last recompute.
        self.previous: IntArray = np.zeros(0, dtype=np.int64)
        self.previous_left: FloatArray = np.zeros(n)
        self.previous_rate: FloatArray = np.ones(n)

    def allocate(self, view: View, jobs: IntArray, now: float) -> FloatArray:
        """Credit the isolated time of the work done since the last recompute, then solve."""
        if jobs.size == 0:
            self.previous = jobs
            return np.zeros((0, self.instance.n_types))
        data = self.data(view, jobs, now)
        assert data.remaining is not None
        again = np.zeros(self.instance.n_jobs, dtype=bool)
        again[self.previous] = True
        seen = again[jobs]
        done = self.previous_left[jobs[seen]] - data.remaining[seen]
        self.isolated[jobs[seen]] += done / self.previous_rate[jobs[seen]]
        data = dataclasses.replace(data, isolated_elapsed=self.isolated[jobs])
        self.previous = jobs.copy()
        self.previous_left[jobs] = data.remaining
        self.previous_rate[jobs] = data.fair_share_rate(FairShare.GPUS)
        return self.solve(data, now)


def spread_over_types(share: FloatArray, data: ThroughputData) -> FloatArray:
    """Each job's total share spread over the types it may use in proportion to their GPUs.

    Where the program counts every type of a job at one speed, this keeps every job's
    throughput, so the program's value; a type's GPUs are not exceeded while the jobs'
    GPU-shares fit the fleet (else ``share`` is returned as it is).
    """
    weight = np.where(data.eligible, data.gpus[None, :], 0.0)
    total = weight.sum(axis=1, keepdims=True)
    spread: FloatArray = share.sum(axis=1, keepdims=True) * weight / np.where(total > 0,
                                                                              total, 1.0)
    used = (data.gang[:, None] * spread).sum(axis=0)
    if np.any(used > data.gpus * (1.0 + 1e-9) + 1e-9):
        return share
    return spread


class GavelFtfAgnostic(GavelFtf):
    """Gavel's heterogeneity-agnostic finish-time fairness: every type at the fastest's speed."""

    name: ClassVar[str] = "gavel-ftf-agnostic"
    description: ClassVar[str] = (
        "Gavel's agnostic finish-time fairness (finish_time_fairness): every type counted at "
        "the job's speed on the fastest type, types in a shuffled order every round")
    aware: ClassVar[bool] = False
    lp_rates: ClassVar[LpRates] = LpRates.REFERENCE

    def solve(self, data: ThroughputData, now: float) -> FloatArray:
        """The program's shares with each job's total spread over its types, as Gavel's are."""
        return spread_over_types(super().solve(data, now), data)

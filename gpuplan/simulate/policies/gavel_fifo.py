"""``gavel-fifo`` and ``gavel-fifo-agnostic``: Gavel's FIFO policies in rounds.

Both allocate whole types to jobs in arrival order (``X = 1`` on one type, 0 elsewhere) at
every recompute, and Gavel's round mechanism (:mod:`gpuplan.simulate.gavel_rounds`) runs
only jobs of positive priority, i.e. allocated ones, on their allocated type.

``gavel-fifo`` is Gavel's ``fifo_perf`` (``FIFOPolicyWithPerf``, "Gavel-FIFO"): the
allocation starts afresh at each recompute; each job in arrival order gets the type of
highest throughput among those with enough free GPUs, and the first job that fits nowhere
stops the pass (strict FIFO).

``gavel-fifo-agnostic`` is Gavel's ``fifo`` (``FIFOPolicy(mode='base')``, the "FIFO"
baseline), quirk included, because Gavel's published FIFO numbers come from it
(``scheduler/policies/fifo.py``, ``get_allocation``). The allocation is sticky: a job keeps
its type until it completes, and a completed job's type goes to the first job waiting if
its gang fits the GPUs counted free so far. Then the jobs still waiting are taken in
arrival order over the types with free GPUs, sorted by name; the code draws a random index
among the types with room for the job, but assigns the type *last by name with any free
GPU*, even when it lacks room for the gang (on Gavel's fleets: V100 first, then P100, then
K80); the random index only picks which type leaves the list when the assigned type's free
count reaches exactly 0, possibly another one. Once another type has left the list while
V100 is full, V100 is over-subscribed and every later job is assigned to it, so most jobs
share the V100s round by round while P100s and K80s idle. The random draws use Gavel's
``random.Random(seed)``.
"""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np

from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.simulate.gavel_rounds import GavelRounds
from gpuplan.simulate.policy import PolicyContext, View


class FifoRounds(GavelRounds):
    """Gavel's FIFO policies: run allocated jobs only; they list free types by name."""

    fifo: ClassVar[bool] = True

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        ids = context.instance.type_ids
        #: Gavel lists free types sorted by name; ties in throughput go to the first.
        self.by_name = sorted(range(len(ids)), key=lambda t: ids[t])


class GavelFifo(FifoRounds):
    """Gavel-FIFO: strict FIFO, each job on its fastest type with room, recomputed afresh."""

    name: ClassVar[str] = "gavel-fifo"
    description: ClassVar[str] = (
        "Gavel-FIFO (fifo_perf): jobs in arrival order, each on its fastest type with room, "
        "stopping at the first that fits nowhere; recomputed at most every 1920 s")
    aware: ClassVar[bool] = True

    def allocate(self, view: View, jobs: IntArray, now: float) -> FloatArray:
        """Each job in arrival order on its fastest type with room; stop at one that fits none."""
        share = np.zeros((jobs.size, self.instance.n_types))
        free = self.total.copy()
        open_types = [t for t in self.by_name if free[t] > 0]
        for k, job in enumerate(jobs.tolist()):
            if not open_types:
                break
            gang = int(self.gang[job])
            fits = [t for t in open_types if free[t] >= gang]
            if not fits:
                break
            best = max(fits, key=lambda t: float(self.rate[job, t]))
            if self.rate[job, best] > 0:
                share[k, best] = 1.0
                free[best] -= gang
                if free[best] == 0:
                    open_types.remove(best)
        return share


class GavelFifoAgnostic(FifoRounds):
    """Gavel's FIFO baseline, with its type-choice quirk (see the module docstring)."""

    name: ClassVar[str] = "gavel-fifo-agnostic"
    description: ClassVar[str] = (
        "Gavel's FIFO baseline (fifo, base mode), quirk included: a job gets the type last "
        "by name with any free GPU even without room (V100 over-subscribed), sticky until "
        "it completes")
    aware: ClassVar[bool] = False

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self.rng = random.Random(context.seed)
        #: Each allocated job's type, kept until the job completes.
        self.assigned: dict[int, int] = {}
        arrival = np.lexsort((np.arange(context.instance.n_jobs), context.instance.release))
        self.rank: IntArray = np.empty_like(arrival)
        self.rank[arrival] = np.arange(arrival.size)

    def allocate(self, view: View, jobs: IntArray, now: float) -> FloatArray:
        """Gavel's ``FIFOPolicy.get_allocation`` in base mode."""
        free = self.total.copy()
        present = set(jobs.tolist())
        queue = [job for job in jobs.tolist() if job not in self.assigned]
        for held in sorted(self.assigned, key=lambda j: int(self.rank[j])):
            kind = self.assigned[held]
            if held in present:
                free[kind] -= self.gang[held]
                continue
            # Completed: its type goes to the first job waiting, against the GPUs counted
            # free so far (jobs later in the loop are not subtracted yet).
            if queue:
                head = queue[0]
                if self.gang[head] <= free[kind] and self.rate[head, kind] > 0:
                    queue.pop(0)
                    self.assigned[head] = kind
                    free[kind] -= self.gang[head]
            del self.assigned[held]
        open_types = [t for t in self.by_name if free[t] > 0]
        while queue and open_types:
            head = queue.pop(0)
            gang = int(self.gang[head])
            fits = [i for i, t in enumerate(open_types) if free[t] >= gang]
            if not fits:
                break
            drawn = fits[self.rng.randrange(len(fits))]
            # Gavel's quirk: the type assigned is the loop variable left over from listing
            # the types with room, the last free type by name, whether or not it has room.
            kind = open_types[-1]
            if self.rate[head, kind] > 0:
                self.assigned[head] = kind
                free[kind] -= gang
                if free[kind] == 0:
                    open_types.pop(drawn)
        share = np.zeros((jobs.size, self.instance.n_types))
        for k, job in enumerate(jobs.tolist()):
            if job in self.assigned:
                share[k, self.assigned[job]] = 1.0
        return share

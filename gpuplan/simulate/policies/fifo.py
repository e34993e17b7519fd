"""``fifo``: first come, first served, non-preemptive, with greedy backfilling.

Jobs are offered GPUs in arrival order (release time, then index). A job that does not
fit now is skipped and a later one that fits may start, but never before an earlier one
that fits: the engine grants in the decision's order. Running jobs keep their GPUs.

:class:`Fifo` is also the base of the other priority-order schedulers (``sjf``, ``srtf``):
they differ only in the key jobs are sorted by (:meth:`Fifo.key`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View


class Fifo:
    """Arrival order, non-preemptive; every eligible type, fastest first."""

    name: ClassVar[str] = "fifo"
    description: ClassVar[str] = ("first come, first served; a later job starts only when "
                                  "the earlier ones do not fit (non-preemptive)")
    options_type: ClassVar[type[Any]] = NoOptions
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = False
    calls_solver: ClassVar[bool] = False
    preempts_to_start: ClassVar[bool] = True
    decides_in_fixed_order: ClassVar[bool] = True

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """Arrival order: release time, then index."""
        order: IntArray = np.lexsort((np.arange(instance.n_jobs), instance.release))
        return order

    def __init__(self, context: PolicyContext) -> None:
        del context

    def key(self, view: View, jobs: IntArray) -> FloatArray | None:
        """``(len(jobs),)`` sort key of ``jobs`` (active, in arrival order), smallest first.

        None: arrival order.
        """
        del view, jobs
        return None

    def decide(self, view: View) -> Decision:
        """The jobs that may start or keep running, by :meth:`key`, ties in arrival order."""
        jobs = view.jobs
        if not self.preemptive:
            # Running jobs keep their GPUs whatever the order says, and a waiting job
            # whose share of a gang on one node no node holds free of a type it may use
            # cannot start: leaving both out keeps the engine's walk over the order short
            # when the queue is long.
            instance = view.instance
            jobs = jobs[view.running_type[jobs] < 0]
            fits = instance.eligible[jobs] & (instance.gpus_per_node[jobs, None]
                                              <= view.largest)
            jobs = jobs[fits.any(axis=1)]
        key = self.key(view, jobs)
        if key is None:
            return Decision(jobs)
        # jobs are in arrival order, so a stable sort breaks ties by arrival.
        return Decision(jobs[np.argsort(key, kind="stable")])

    def wakeup(self, view: View) -> float | None:
        """None: the order changes only at arrivals and completions."""
        del view
        return None

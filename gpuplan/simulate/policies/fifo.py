"""``fifo``: first come, first served, non-preemptive, with greedy backfilling.

Jobs are offered GPUs in arrival order (release time, then index). A job that does not
fit now is skipped and a later one that fits may start, but never before an earlier one
that fits: the engine grants in the decision's order. Running jobs keep their GPUs.

:class:`Fifo` is also the base of the other priority-order schedulers (``sjf``, ``srtf``):
they differ only in the key jobs are sorted by (:meth:`Fifo.key`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from gpuplan.instance import FloatArray
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View


class Fifo:
    """Arrival order, non-preemptive; every eligible type, fastest first."""

    name: ClassVar[str] = "fifo"
    description: ClassVar[str] = ("first come, first served; a later job starts only when "
                                  "the earlier ones do not fit (non-preemptive)")
    takes: ClassVar[frozenset[str]] = frozenset()
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = False

    def __init__(self, context: PolicyContext) -> None:
        del context

    def key(self, view: View) -> FloatArray | None:
        """``(len(view.jobs),)`` sort key, smallest first; None: arrival order."""
        del view
        return None

    def decide(self, view: View) -> Decision:
        """The active jobs by :meth:`key`, ties in arrival order."""
        key = self.key(view)
        if key is None:
            return Decision(view.jobs)
        # view.jobs is in arrival order, so a stable sort breaks ties by arrival.
        return Decision(view.jobs[np.argsort(key, kind="stable")])

    def wakeup(self, view: View) -> float | None:
        """None: the order changes only at arrivals and completions."""
        del view
        return None

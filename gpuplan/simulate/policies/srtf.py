"""``srtf``: shortest remaining time first, preemptive.

At every decision the jobs are ordered by the seconds they still need on their fastest
eligible type (:meth:`~gpuplan.simulate.policy.View.remaining_s`), ties by arrival, and a
running job that no longer makes the cut is preempted (unless it is not preemptible or
still paying an overhead). It resumes later and pays the restore overhead then.
"""

from __future__ import annotations

from typing import ClassVar

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.simulate.policies.fifo import Fifo
from gpuplan.simulate.policy import View


class ShortestRemainingFirst(Fifo):
    """Shortest remaining time first, preemptive."""

    name: ClassVar[str] = "srtf"
    description: ClassVar[str] = ("shortest remaining time first (on its fastest type), "
                                  "preemptive")
    preemptive: ClassVar[bool] = True
    decides_in_fixed_order: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """None: the order follows the work left."""
        del instance
        return None

    def key(self, view: View, jobs: IntArray) -> FloatArray:
        """Each job's remaining seconds on its fastest eligible type."""
        return view.remaining_s(jobs)
